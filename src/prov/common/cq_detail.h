/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by cq.cpp and cntr.cpp (not for providers): the
 * progress-function registry, native wait objects (eventfd, mutex+cond,
 * wait-set attachment) and the quarantine for closed handles. */
#ifndef WU_PROV_COMMON_CQ_DETAIL_H
#define WU_PROV_COMMON_CQ_DETAIL_H

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include <rdma/fi_eq.h>

#include "core/child_ref.h"
#include "core/fd.h"
#include "core/wait.h"
#include "core/sync.h"
#include "prov/common/cq.h"

namespace wu::compl_detail {

/* Progress functions of the endpoints bound to one CQ or counter, and the
 * bind count that makes fi_close -FI_EBUSY.  run() never waits: when
 * another thread is already driving progress (or the list is changing) it
 * returns at once, since that thread's progress serves this reader too. */
class progress_set {
public:
	int add(progress_fn p);		/* 0 (may throw bad_alloc) */
	int remove(progress_fn p) noexcept; /* 0, or -FI_EINVAL when not bound */
	void run() noexcept
	{
		if (nfn_.load(std::memory_order_acquire) == 0) [[likely]]
			return;
		if (busy_.exchange(true, std::memory_order_acquire))
			return; /* someone else is driving progress right now */
		/* One endpoint (the usual case): its function, no loop. */
		if (one_.fn) [[likely]]
			one_.fn(one_.arg);
		else
			run_all();
		unlock();
	}
	bool has_fns() const noexcept { return nfn_.load(std::memory_order_acquire) != 0; }
	/* Calls every block hook (progress_fn::block); the first error. */
	int block_all() noexcept;
	int binds() const noexcept { return binds_.load(std::memory_order_acquire); }

private:
	struct entry {
		progress_fn p;
		int refs;
	};
	void run_all() noexcept;
	void set_one() noexcept; /* under busy_, after fns_ changed */
	void lock() noexcept;
	void unlock() noexcept { busy_.store(false, std::memory_order_release); }

	std::atomic<bool> busy_{false};
	std::atomic<int> nfn_{0};
	std::atomic<int> binds_{0};
	std::vector<entry> fns_; /* guarded by busy_ */
	progress_fn one_{};	  /* fns_[0] when it is the only one; guarded by busy_ */
};

/* The application-visible wait object of a CQ or counter.  Its level
 * ("something to report") is mirrored on the eventfd once FI_GETWAIT has
 * handed it out, and on the wait set through a hidden EQ attached to it,
 * so neither costs anything when unused.  set_level is called under the
 * owner's lock. */
class native_wait {
public:
	native_wait() = default;
	native_wait(const native_wait &) = delete;
	native_wait &operator=(const native_wait &) = delete;
	~native_wait();

	/* Validates obj (and set for FI_WAIT_SET) and creates what it needs. */
	int init(prov::domain *dom, int obj, fid_wait *set, const char *what) noexcept;
	fi_wait_obj obj() const noexcept { return obj_; }
	/* sread / fi_cntr_wait are allowed (not FI_WAIT_NONE / FI_WAIT_SET). */
	bool can_block() const noexcept { return obj_ != FI_WAIT_NONE && obj_ != FI_WAIT_SET; }
	bool yields() const noexcept { return obj_ == FI_WAIT_YIELD; }
	/* Anything to mirror?  (Read without the owner's lock as a hint.) */
	bool mirrored() const noexcept { return hooks_.load(std::memory_order_relaxed) != 0; }
	bool signaled() const noexcept { return signaled_; }
	void set_level(bool up) noexcept;
	/* After the owner's lock is dropped: wake mutex/cond waiters. */
	void broadcast() noexcept
	{
		if (mc_) [[unlikely]]
			mc_->broadcast();
	}
	/* FI_GETWAIT / FI_GETWAITOBJ, called without the owner's lock.  Before
	 * an eventfd is handed out, expose(owner) must take the owner's lock and
	 * call expose_fd_locked with the current level. */
	int control(int command, void *arg, const waitobj::names &n, void (*expose)(void *),
		    void *owner) noexcept
	{
		return waitobj::control(command, arg, n, obj_, efd_, mc_.get(), expose, owner);
	}
	void expose_fd_locked(bool level) noexcept;

private:
	enum : uint32_t { hook_fd = 1, hook_set = 2 };
	fi_wait_obj obj_ = FI_WAIT_NONE;
	unique_fd efd_;
	std::unique_ptr<waitobj::mutex_cond> mc_;
	fid_eq *set_eq_ = nullptr; /* hidden EQ attached to the wait set */
	std::atomic<uint32_t> hooks_{0};
	bool signaled_ = false;
};

/* Closed shells stay readable memory (their ops return -FI_EBADF) for the
 * next quarantine_max closes, so calls on a closed handle fail cleanly. */
inline constexpr size_t quarantine_max = 4096;

template <class Shell>
using graveyard = waitobj::graveyard<Shell, quarantine_max>;

} // namespace wu::compl_detail

#endif
