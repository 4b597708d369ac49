/* SPDX-License-Identifier: BSD-3-Clause */
/* Idle yield: a thread whose polls (fi_cq_read, fi_cntr_read) have found
 * nothing for longer than FI_IDLE_YIELD_US, while no poll of the process
 * found anything either, gives the CPU away (sched_yield) on each further
 * empty poll.  A single-threaded MPI never yields while it waits, so with
 * more ranks than cores the rank it waits for sits runnable behind it.
 *
 * A poll that finds something only clears a process-wide flag when it is
 * set (a load, no store, while busy); the per-thread count of empty polls
 * lives in TLS touched by empty polls alone (initial-exec TLS would break
 * dlopen), and the clock is read once per check_every empty polls. */
#ifndef WU_PROV_COMMON_IDLE_YIELD_H
#define WU_PROV_COMMON_IDLE_YIELD_H

#include <atomic>
#include <cstdint>

namespace wu::idle_yield {

struct policy {
	std::uint64_t threshold_ns;	     /* 0: never yield */
	std::uint64_t (*now_ns)() noexcept; /* monotonic */
	void (*yield)() noexcept;
	/* Set while some thread times an idle stretch; cleared by any poll
	 * that finds something, which restarts every stretch. */
	std::atomic<std::uint32_t> *armed;
};

/* FI_IDLE_YIELD_US, read once; sched_yield counted in yields(). */
const policy &global() noexcept;
/* sched_yield calls made through global() in this process (tests). */
std::uint64_t yields() noexcept;
extern std::atomic<std::uint32_t> global_armed;

/* One thread's idle stretch. */
struct state {
	std::uint32_t empties;	/* empty polls since the last check */
	bool timing;		/* since_ns is this stretch's start */
	bool yielding;		/* the threshold has passed */
	std::uint64_t since_ns;
};
inline constexpr std::uint32_t check_every = 16;

/* An empty poll's check_every-th step, out of line (p null: global()). */
void empty_check(state &s, const policy *p) noexcept;

/* An empty poll (p null: global()). */
inline void empty(state &s, const policy *p) noexcept
{
	if (!s.yielding && ++s.empties < check_every) [[likely]]
		return;
	empty_check(s, p);
}

/* The calling thread's stretch: inline, since every empty poll counts in
 * it (constinit: no TLS wrapper call). */
extern constinit thread_local state tls_state;

/* An empty poll of the calling thread. */
inline void empty() noexcept
{
	empty(tls_state, nullptr);
}

inline void found(std::atomic<std::uint32_t> &armed) noexcept
{
	if (armed.load(std::memory_order_relaxed)) [[unlikely]]
		armed.store(0, std::memory_order_relaxed);
}

/* Tests: one poll against a policy of their own. */
inline void polled(state &s, bool got, const policy &p) noexcept
{
	if (got)
		found(*p.armed);
	else
		empty(s, &p);
}

/* The hook for fi_cq_read / fi_cntr_read. */
inline void polled(bool got) noexcept
{
	if (got)
		found(global_armed);
	else
		empty();
}

} // namespace wu::idle_yield

#endif
