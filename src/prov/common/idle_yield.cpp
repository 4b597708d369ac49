/* SPDX-License-Identifier: BSD-3-Clause */
/* Idle yield policy (idle_yield.h). */
#include "config.h"
#include "prov/common/idle_yield.h"

#include <ctime>

#include <sched.h>

#include "core/param.h"

namespace wu::idle_yield {

std::atomic<std::uint32_t> global_armed{0};
constinit thread_local state tls_state{};

namespace {

std::atomic<std::uint64_t> n_yields{0};

std::uint64_t mono_ns() noexcept
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return std::uint64_t(t.tv_sec) * 1000000000u + std::uint64_t(t.tv_nsec);
}

void do_yield() noexcept
{
	n_yields.fetch_add(1, std::memory_order_relaxed);
	sched_yield();
}

policy from_env() noexcept
{
	std::int64_t us = 50; /* the default of params.def, if reading fails */
	try {
		auto v = param::get_int(param::knob::idle_yield_us);
		if (v.src != param::source::unset)
			us = v.value < 0 ? 0 : v.value;
	} catch (...) {
	}
	return policy{std::uint64_t(us) * 1000u, mono_ns, do_yield, &global_armed};
}

} // namespace

const policy &global() noexcept
{
	static const policy p = from_env();
	return p;
}

std::uint64_t yields() noexcept
{
	return n_yields.load(std::memory_order_relaxed);
}

void empty_check(state &s, const policy *pp) noexcept
{
	s.empties = 0;
	const policy &p = pp ? *pp : global();
	if (!p.threshold_ns)
		return;
	if (s.timing && !p.armed->load(std::memory_order_relaxed)) {
		/* Something was found since the last check: a new stretch. */
		s.timing = false;
		s.yielding = false;
	}
	if (s.yielding) {
		p.yield();
		return;
	}
	std::uint64_t now = p.now_ns();
	if (!s.timing) {
		s.timing = true;
		s.since_ns = now;
		p.armed->store(1, std::memory_order_relaxed);
		return;
	}
	if (now - s.since_ns >= p.threshold_ns) {
		s.yielding = true;
		p.yield();
	}
}

} // namespace wu::idle_yield
