/* Idle yield policy (idle_yield.h). */
#include "config.h"
#include "prov/common/idle_yield.h"

#include <atomic>
#include <climits>
#include <ctime>

#include <sched.h>

#include "core/param.h"

namespace wu::idle_yield {

constinit thread_local state tls __attribute__((tls_model("initial-exec"))) = {};

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
	return policy{std::uint64_t(us) * 1000u, mono_ns, do_yield};
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

void slow(state &s, const policy *pp) noexcept
{
	const policy &p = pp ? *pp : global();
	if (!p.threshold_ns)
		return;
	if (s.empties & yielding) {
		p.yield();
		s.empties = yielding | (check_every - 1);
		return;
	}
	std::uint64_t now = p.now_ns();
	if (s.empties == check_every) {
		s.since_ns = now;
		return;
	}
	if (now - s.since_ns >= p.threshold_ns) {
		s.empties = yielding | (check_every - 1);
		p.yield();
		return;
	}
	if (s.empties >= yielding / 2) /* a long threshold: do not run into the flag */
		s.empties = 2 * check_every;
}

} // namespace wu::idle_yield
