/* SPDX-License-Identifier: BSD-3-Clause */
/* Small synchronisation pieces for event queues, wait sets, CQs and
 * counters (core: every part above may use them): a spin lock
 * for the very short queue critical sections, futex waits that always
 * report a signal as EINTR, and monotonic deadlines. */
#ifndef WU_CORE_SYNC_H
#define WU_CORE_SYNC_H

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace wu::eqd {

inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	asm volatile("yield" ::: "memory");
#endif
}

/* Test-and-test-and-set lock.  Unlock is a plain release store, so an
 * uncontended lock/unlock pair costs one atomic exchange: the queue paths
 * hold it for a few dozen instructions.  Waiters yield after a short spin
 * so a preempted holder gets the CPU back. */
class spinlock {
public:
	void lock() noexcept
	{
		if (!f_.exchange(true, std::memory_order_acquire)) [[likely]]
			return;
		slow();
	}
	void unlock() noexcept { f_.store(false, std::memory_order_release); }

private:
	void slow() noexcept
	{
		for (unsigned n = 0;; n++) {
			if (!f_.load(std::memory_order_relaxed) &&
			    !f_.exchange(true, std::memory_order_acquire))
				return;
			if (n < 128)
				cpu_relax();
			else
				sched_yield();
		}
	}
	std::atomic<bool> f_{false};
};

/* True once this process may use membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED). */
bool membarrier_ready() noexcept;
/* A full memory barrier on every running thread of the process. */
void membarrier_all() noexcept;

/* A lock biased to the first thread that takes it (biased locking, as in
 * JVMs): that thread locks and unlocks with plain stores, no atomic
 * read-modify-write, which is all a queue used by one thread pays.  The
 * first time another thread wants it the bias is revoked for good, with one
 * membarrier(2) standing in for the fence the owner's fast path omits;
 * from then on everyone takes the spin lock.  Without membarrier(2) it is
 * the spin lock from the start. */
class biased_lock {
public:
	[[gnu::always_inline]] void lock() noexcept
	{
		uintptr_t me = self();
		if (try_fast(me)) [[likely]] {
			fast_ = true;
			return;
		}
		lock_slow(me);
	}
	void unlock() noexcept
	{
		if (fast_)
			owner_in_.store(0, std::memory_order_release);
		else
			lk_.unlock();
	}
	/* For tests: true while the bias is held by some thread. */
	bool biased() const noexcept { return bias_.load(std::memory_order_relaxed) > revoked; }

private:
	static constexpr uintptr_t unclaimed = 0, revoking = 1, revoked = 2;

	static uintptr_t self() noexcept
	{
		return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
	}

	[[gnu::always_inline]] bool try_fast(uintptr_t me) noexcept
	{
		if (bias_.load(std::memory_order_relaxed) != me)
			return false;
		owner_in_.store(1, std::memory_order_relaxed);
		/* Only a compiler barrier: a revoker's membarrier orders this store
		 * before the re-check on this CPU. */
		std::atomic_signal_fence(std::memory_order_seq_cst);
		if (bias_.load(std::memory_order_relaxed) == me) [[likely]]
			return true;
		owner_in_.store(0, std::memory_order_release);
		return false;
	}

	[[gnu::noinline]] void lock_slow(uintptr_t me) noexcept
	{
		for (;;) {
			uintptr_t b = bias_.load(std::memory_order_acquire);
			if (b == revoked)
				break;
			if (b == revoking) {
				cpu_relax();
			} else if (b == me) {
				if (try_fast(me)) {
					fast_ = true;
					return;
				}
			} else if (b == unclaimed) {
				uintptr_t want = membarrier_ready() ? me : uintptr_t{revoked};
				bias_.compare_exchange_strong(b, want, std::memory_order_acq_rel);
			} else if (bias_.compare_exchange_strong(b, revoking, std::memory_order_acq_rel)) {
				/* Another thread owns the bias: take it away once. */
				membarrier_all();
				while (owner_in_.load(std::memory_order_acquire))
					cpu_relax();
				bias_.store(revoked, std::memory_order_release);
				break;
			}
		}
		lk_.lock();
		fast_ = false;
	}

	std::atomic<uintptr_t> bias_{unclaimed};
	std::atomic<uint32_t> owner_in_{0};
	bool fast_ = false; /* how the current holder got in; guarded by the lock */
	spinlock lk_;
};

template <class Lock> class lock_guard {
public:
	explicit lock_guard(Lock &l) noexcept : l_(l) { l_.lock(); }
	~lock_guard() { l_.unlock(); }
	lock_guard(const lock_guard &) = delete;
	lock_guard &operator=(const lock_guard &) = delete;

private:
	Lock &l_;
};

inline timespec now_mono() noexcept
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

inline timespec add_ms(timespec t, long ms) noexcept
{
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

inline bool before(const timespec &a, const timespec &b) noexcept
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* An absolute CLOCK_MONOTONIC deadline from a millisecond timeout
 * (negative: none). */
struct deadline {
	bool infinite;
	timespec at;
	explicit deadline(int timeout_ms) noexcept : infinite(timeout_ms < 0), at{}
	{
		if (!infinite)
			at = add_ms(now_mono(), timeout_ms);
	}
	bool passed() const noexcept { return !infinite && !before(now_mono(), at); }
	/* What to hand the kernel: an infinite wait still gets a (far) deadline
	 * because a timed futex wait is never restarted after a signal handler
	 * ran, whatever SA_RESTART says, so a signal always surfaces as EINTR. */
	timespec kernel_at() const noexcept
	{
		return infinite ? add_ms(now_mono(), 3600L * 1000) : at;
	}
};

/* An absolute deadline no later than d and `ns` from now: a sleep slice. */
inline deadline slice(const deadline &d, long ns) noexcept
{
	deadline s(0);
	timespec t = now_mono();
	t.tv_nsec += ns;
	while (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	s.at = (!d.infinite && before(d.at, t)) ? d.at : t;
	return s;
}

/* Sleeps while *word == expect, until woken, the deadline or a signal.
 * Returns 0 (woken or value changed: re-check), ETIMEDOUT or EINTR. */
inline int futex_wait(std::atomic<uint32_t> *word, uint32_t expect, const deadline &d) noexcept
{
	timespec at = d.kernel_at();
	long r = syscall(SYS_futex, reinterpret_cast<uint32_t *>(word),
			 FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expect, &at, nullptr,
			 FUTEX_BITSET_MATCH_ANY);
	if (r == 0)
		return 0;
	if (errno == EINTR)
		return EINTR;
	if (errno == ETIMEDOUT)
		return d.infinite ? 0 : ETIMEDOUT;
	return 0; /* EAGAIN: the value already changed */
}

inline void futex_wake_all(std::atomic<uint32_t> *word) noexcept
{
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
		INT_MAX, nullptr, nullptr, 0);
}

/* The futex word of a queue and its sleeper count, which the owner's lock
 * guards.  Writers bump the word only when someone sleeps, so an unwatched
 * post costs one plain load; the wake itself comes after the unlock. */
struct wake_word {
	uint32_t sleepers = 0;
	std::atomic<uint32_t> seq{0};

	/* Under the lock: register a sleeper; returns the value to sleep on. */
	uint32_t enter_locked() noexcept
	{
		sleepers++;
		return seq.load(std::memory_order_relaxed);
	}
	/* Under the lock: true when wake() must follow the unlock. */
	bool bump_locked() noexcept
	{
		if (!sleepers) [[likely]]
			return false;
		seq.fetch_add(1, std::memory_order_release);
		return true;
	}
	void wake() noexcept { futex_wake_all(&seq); }
	/* Without the lock: see futex_wait. */
	int sleep(uint32_t expect, const deadline &d) noexcept { return futex_wait(&seq, expect, d); }
};

} // namespace wu::eqd

#endif
