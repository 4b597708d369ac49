/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint lock's own mutex (ep_base.h ep_lock): an uncontended
 * lock / unlock is one atomic instruction each and a handful of others,
 * where std::mutex goes through pthread_mutex_lock's type dispatch (the
 * 8-byte message path takes the endpoint lock three times).  Contended, a
 * waiter sleeps on a futex after a short spin: the lock may be held across
 * a large copy.  State: 0 free, 1 held, 2 held with sleepers. */
#ifndef WU_PROV_COMMON_EP_MUTEX_H
#define WU_PROV_COMMON_EP_MUTEX_H

#include <atomic>
#include <climits>
#include <cstdint>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sync.h"

namespace wu::prov {

class ep_mutex {
public:
	void lock() noexcept
	{
		uint32_t c = 0;
		if (v_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) [[likely]]
			return;
		slow(c);
	}
	bool try_lock() noexcept
	{
		uint32_t c = 0;
		return v_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed);
	}
	void unlock() noexcept
	{
		if (v_.exchange(0, std::memory_order_release) == 2) [[unlikely]]
			syscall(SYS_futex, reinterpret_cast<uint32_t *>(&v_), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1,
				nullptr, nullptr, 0);
	}

private:
	void slow(uint32_t c) noexcept
	{
		(void)c;
		for (int n = 0; n < 100; n++) {
			eqd::cpu_relax();
			uint32_t z = 0;
			if (v_.load(std::memory_order_relaxed) == 0 &&
			    v_.compare_exchange_strong(z, 1, std::memory_order_acquire, std::memory_order_relaxed))
				return;
		}
		/* Announce a sleeper (2); whoever unlocks then wakes one. */
		while (v_.exchange(2, std::memory_order_acquire) != 0)
			syscall(SYS_futex, reinterpret_cast<uint32_t *>(&v_), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2, nullptr,
				nullptr, 0);
	}
	std::atomic<uint32_t> v_{0};
};

} // namespace wu::prov

#endif
