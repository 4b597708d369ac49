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
#include <unordered_map>

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
		epoll_event e{};
		e.events = ev;
		e.data.u64 = id_of(w);
		if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &e) && errno == EEXIST)
			epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	void mod(watch *w, int fd, uint32_t ev)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		auto it = ids_.find(w);
		if (it == ids_.end())
			return; /* deleted: it stays off */
		epoll_event e{};
		e.events = ev;
		e.data.u64 = it->second;
		epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	/* After del returns the watch's function is not running and will not
	 * run again (callers must not hold an endpoint lock). */
	void del(watch *w, int fd)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		if (fd >= 0)
			epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
		if (auto it = ids_.find(w); it != ids_.end()) {
			live_.erase(it->second);
			ids_.erase(it);
		}
	}
	/* Runs f while no watch function runs; f may add, mod and del (same
	 * lock rule as del). */
	template <class F>
	void exclusive(F &&f)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		f();
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
				if (auto it = live_.find(ev[i].data.u64); it != live_.end())
					it->second->fn(it->second->arg, ev[i].events);
			}
		}
	}
	/* Events carry a registration number, not the watch's address: a
	 * watch freed and another allocated at its address within one
	 * epoll_wait batch must not get the first one's stale events. */
	uint64_t id_of(watch *w)
	{
		auto [it, fresh] = ids_.try_emplace(w, next_id_);
		if (fresh)
			live_.emplace(next_id_++, w);
		return it->second;
	}
	int epfd_ = -1;
	std::recursive_mutex mtx_;
	uint64_t next_id_ = 1;
	std::unordered_map<uint64_t, watch *> live_;
	std::unordered_map<watch *, uint64_t> ids_;
};

} // namespace wu::prov

#endif
