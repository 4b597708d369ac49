/* SPDX-License-Identifier: BSD-3-Clause */
/* FI_PROGRESS_AUTO on the cm engine (cm_engine.h) for a provider whose
 * progress is driven by one fd (an endpoint's own epoll fd) plus
 * deadlines.  Once switched on (fi_enable with an AUTO domain, or the
 * application about to sleep on a wait object), the engine's thread calls
 * the provider's event function when the fd is readable, and when a
 * timerfd fires for the next deadline (arm_in).  The provider's function
 * takes the endpoint's own lock; the engine calls it under its lock, so
 * finish() and stop() run without the endpoint's lock.  An endpoint never
 * switches back. */
#ifndef WU_PROV_COMMON_PROGRESS_H
#define WU_PROV_COMMON_PROGRESS_H

#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdint>

#include "core/fd.h"
#include "core/shim.h"
#include "prov/common/cm_engine.h"

namespace wu::prov {

class auto_runner {
public:
	/* timer: woken by the deadline timer (re-arm it if deadlines remain),
	 * else by the fd.  Must catch everything (wu::guard). */
	using event_fn = void (*)(void *arg, bool timer) noexcept;

	bool on() const noexcept { return on_; }

	/* Under the endpoint's lock: creates the timer; false if already on.
	 * Throws fi_error(FI_ENOMEM) when no timerfd can be had. */
	bool begin(event_fn fn, void *arg)
	{
		if (on_)
			return false;
		unique_fd tfd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
		if (tfd < 0)
			throw fi_error(FI_ENOMEM);
		timer_ = std::move(tfd);
		fn_ = fn;
		arg_ = arg;
		on_ = true;
		fdw_ = {fd_event, this};
		timerw_ = {timer_event, this};
		return true;
	}

	/* Without the endpoint's lock, after begin(): watches fd and the timer,
	 * and fires the timer once now, so what arrived before the watch is
	 * progressed and deadlines set before now are armed. */
	void finish(int fd)
	{
		cm_engine::get().add(&fdw_, fd, EPOLLIN);
		cm_engine::get().add(&timerw_, timer_, EPOLLIN);
		itimerspec its{};
		its.it_value.tv_nsec = 1;
		timerfd_settime(timer_, 0, &its, nullptr);
	}

	/* Without the endpoint's lock, at close before its progress state goes:
	 * once it returns no event runs or will run. */
	void stop(int fd)
	{
		if (!on_)
			return;
		cm_engine::get().del(&fdw_, fd);
		cm_engine::get().del(&timerw_, timer_);
		timer_.reset();
	}

	/* Under the endpoint's lock: a timer event in ms milliseconds; 0 (or
	 * less) disarms.  Nothing before begin(). */
	void arm_in(int64_t ms) noexcept
	{
		if (timer_ < 0)
			return;
		itimerspec its{};
		if (ms > 0) {
			its.it_value.tv_sec = ms / 1000;
			its.it_value.tv_nsec = long(ms % 1000) * 1000000L;
		}
		timerfd_settime(timer_, 0, &its, nullptr);
	}

private:
	static void fd_event(void *arg, uint32_t) noexcept
	{
		auto *r = static_cast<auto_runner *>(arg);
		r->fn_(r->arg_, false);
	}
	static void timer_event(void *arg, uint32_t) noexcept
	{
		auto *r = static_cast<auto_runner *>(arg);
		uint64_t ticks;
		ssize_t n = read(r->timer_, &ticks, sizeof ticks); /* level-triggered: drain it */
		(void)n;
		r->fn_(r->arg_, true);
	}

	bool on_ = false;
	event_fn fn_ = nullptr;
	void *arg_ = nullptr;
	unique_fd timer_;
	watch fdw_, timerw_;
};

} // namespace wu::prov

#endif
