/* SPDX-License-Identifier: BSD-3-Clause */
/* The switch to auto progress (src/prov/common/progress.h) alone: a pipe
 * stands in for a provider's epoll fd.  Events are awaited with a generous
 * bound (a hang fails, speed is not measured). */
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "prov/common/progress.h"

using wu::prov::auto_runner;

namespace {

struct state {
	std::mutex m;
	std::condition_variable cv;
	int fd_events = 0, timer_events = 0;
	int rd = -1;
	std::mutex ep_lock; /* the provider's lock, taken in the event function */
};

void on_event(void *arg, bool timer) noexcept
{
	auto *s = static_cast<state *>(arg);
	std::lock_guard<std::mutex> eg(s->ep_lock);
	if (!timer) {
		char b[16];
		while (read(s->rd, b, sizeof b) > 0) /* level-triggered: take what woke us */
			;
	}
	std::lock_guard<std::mutex> g(s->m);
	(timer ? s->timer_events : s->fd_events)++;
	s->cv.notify_all();
}

bool wait_for(state &s, int *counter, int at_least)
{
	std::unique_lock<std::mutex> g(s.m);
	return s.cv.wait_for(g, std::chrono::seconds(20), [&] { return *counter >= at_least; });
}

TEST(auto_runner, fd_and_timer_events_reach_the_provider)
{
	int p[2];
	ASSERT_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	state s;
	s.rd = p[0];
	auto_runner r;
	r.arm_in(5); /* before begin: nothing to arm, no crash */
	EXPECT_FALSE(r.on());
	{
		std::lock_guard<std::mutex> g(s.ep_lock);
		ASSERT_TRUE(r.begin(on_event, &s));
		EXPECT_TRUE(r.on());
		EXPECT_FALSE(r.begin(on_event, &s)); /* once on, stays on */
	}
	r.finish(p[0]);
	/* finish fires the timer once: what came before the watch is progressed. */
	ASSERT_TRUE(wait_for(s, &s.timer_events, 1));

	ASSERT_EQ(write(p[1], "x", 1), 1);
	ASSERT_TRUE(wait_for(s, &s.fd_events, 1));

	{
		std::lock_guard<std::mutex> g(s.ep_lock);
		r.arm_in(1);
	}
	ASSERT_TRUE(wait_for(s, &s.timer_events, 2));

	r.stop(p[0]);
	int fd_after, timer_after;
	{
		std::lock_guard<std::mutex> g(s.m);
		fd_after = s.fd_events;
		timer_after = s.timer_events;
	}
	/* Stopped: the timer is gone and the fd no longer watched. */
	r.arm_in(1);
	ASSERT_EQ(write(p[1], "y", 1), 1);
	{
		std::lock_guard<std::mutex> g(s.m);
		EXPECT_EQ(s.fd_events, fd_after);
		EXPECT_EQ(s.timer_events, timer_after);
	}
	close(p[0]);
	close(p[1]);
}

} // namespace
