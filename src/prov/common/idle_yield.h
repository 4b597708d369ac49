/* Idle yield: a thread whose polls (fi_cq_read, fi_cntr_read) have found
 * nothing for longer than FI_IDLE_YIELD_US gives the CPU away
 * (sched_yield) on each further empty poll.  A single-threaded MPI never
 * yields while it waits, so with more ranks than cores the rank it waits
 * for sits runnable behind it.  The clock is read once per check_every
 * empty polls; a poll that finds something costs one store. */
#ifndef WU_PROV_COMMON_IDLE_YIELD_H
#define WU_PROV_COMMON_IDLE_YIELD_H

#include <cstdint>

namespace wu::idle_yield {

struct policy {
	std::uint64_t threshold_ns;	     /* 0: never yield */
	std::uint64_t (*now_ns)() noexcept; /* monotonic */
	void (*yield)() noexcept;
};

/* FI_IDLE_YIELD_US, read once; sched_yield counted in yields(). */
const policy &global() noexcept;
/* sched_yield calls made through global() in this process (tests). */
std::uint64_t yields() noexcept;

/* One poller.  empties counts empty polls in a row; its top bit says the
 * threshold has passed, and the low bits are then kept at all ones so
 * every further empty poll takes the slow path. */
struct state {
	std::uint32_t empties;
	std::uint64_t since_ns; /* clock at this idle stretch's first check */
};
inline constexpr std::uint32_t check_every = 16;
inline constexpr std::uint32_t yielding = 1u << 31;

/* p null: global(), read only here, off the fast path. */
void slow(state &s, const policy *p) noexcept;

inline void polled(state &s, bool found, const policy *p = nullptr) noexcept
{
	if (found) {
		s.empties = 0;
		return;
	}
	if ((++s.empties & (check_every - 1)) == 0) [[unlikely]]
		slow(s, p);
}

/* The calling thread's state: idleness is per thread, so a thread that
 * polls a busy CQ and an idle one never yields. */
extern constinit thread_local state tls __attribute__((tls_model("initial-exec")));

inline void polled(bool found) noexcept
{
	polled(tls, found);
}

} // namespace wu::idle_yield

#endif
