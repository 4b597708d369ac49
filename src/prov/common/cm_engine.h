/* SPDX-License-Identifier: BSD-3-Clause */
/* The process-wide connection/progress event loop: one thread in epoll_wait
 * that calls a watch's function when its fd is ready.  Providers hang
 * listening sockets, connection setup, timers (timerfd) and auto progress
 * (an endpoint's own epoll fd) on it; it knows nothing of any transport.
 * Lock order: engine -> whatever the watch function takes. */
#ifndef WU_PROV_COMMON_CM_ENGINE_H
#define WU_PROV_COMMON_CM_ENGINE_H

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "core/owned.h"

namespace wu::prov {

struct watch {
	void (*fn)(void *arg, uint32_t events) noexcept = nullptr;
	void *arg = nullptr;
};

class cm_engine {
public:
	static cm_engine &get()
	{
		/* Never destroyed: the thread may still be in epoll_wait at exit.
		 * A fork()ed child has no copy of the thread: it starts its own
		 * (the parent's engine is abandoned there). */
		static std::mutex m;
		static cm_engine *e = nullptr;
		static pid_t owner = 0;
		std::lock_guard<std::mutex> g(m);
		if (!e || owner != getpid()) {
			e = &make_immortal<cm_engine>();
			owner = getpid();
		}
		return *e;
	}
	void add(watch *w, int fd, uint32_t ev)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		live_.insert(w);
		epoll_event e{};
		e.events = ev;
		e.data.ptr = w;
		if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &e) && errno == EEXIST)
			epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	void mod(watch *w, int fd, uint32_t ev)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		epoll_event e{};
		e.events = ev;
		e.data.ptr = w;
		epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	/* After del returns the watch's function is not running and will not
	 * run again (callers must not hold an endpoint lock). */
	void del(watch *w, int fd)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		if (fd >= 0)
			epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
		live_.erase(w);
	}

private:
	friend cm_engine &wu::make_immortal<cm_engine>();
	cm_engine()
	{
		epfd_ = epoll_create1(EPOLL_CLOEXEC);
		if (epfd_ < 0)
			throw std::system_error(errno, std::generic_category(), "epoll_create1");
		std::thread([this] { run(); }).detach();
	}
	void run() noexcept
	{
		epoll_event ev[16];
		for (;;) {
			int n = epoll_wait(epfd_, ev, 16, -1);
			if (n < 0 && errno != EINTR)
				return;
			for (int i = 0; i < n; i++) {
				std::lock_guard<std::recursive_mutex> g(mtx_);
				auto *w = static_cast<watch *>(ev[i].data.ptr);
				if (live_.count(w))
					w->fn(w->arg, ev[i].events);
			}
		}
	}
	int epfd_ = -1;
	std::recursive_mutex mtx_;
	std::unordered_set<watch *> live_;
};

} // namespace wu::prov

#endif
