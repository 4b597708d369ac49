/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_eq(3) blocking reads, signals and concurrent use (also run under
 * ThreadSanitizer: ../configure --enable-sanitizers=thread). */
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include <poll.h>
#include <pthread.h>

#include "core/sync.h"
#include "eq_fixture.h"

using namespace wu::test;

namespace {

/* Run on a second thread; the main thread drives the EQ. */
struct sreader {
	std::atomic<bool> started{false};
	std::atomic<bool> done{false};
	ssize_t ret = 0;
	long waited_ms = 0;
	fi_eq_entry e{};
	uint32_t ev = 0;
	std::thread t;

	void start(fid_eq *eq, int timeout)
	{
		t = std::thread([this, eq, timeout] {
			started = true;
			auto t0 = clock::now();
			ret = fi_eq_sread(eq, &ev, &e, sizeof e, timeout, 0);
			waited_ms = ms_since(t0);
			done = true;
		});
		while (!started)
			std::this_thread::yield();
	}
	void join() { t.join(); }
};

void sleep_ms(int ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

class blocking : public ::testing::TestWithParam<fi_wait_obj> {};

} // namespace

/* ---- fi_eq_sread ---- */

TEST_P(blocking, sread_blocks_until_an_event)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), GetParam());
	sreader r;
	r.start(eq.get(), -1);
	sleep_ms(50);
	EXPECT_FALSE(r.done);
	ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, 42), 24);
	r.join();
	EXPECT_EQ(r.ret, 24);
	EXPECT_EQ(r.e.data, 42u);
	EXPECT_EQ(r.ev, uint32_t{FI_NOTIFY});
}

TEST_P(blocking, sread_returns_eavail_for_an_error)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), GetParam());
	sreader r;
	r.start(eq.get(), 5000);
	sleep_ms(20);
	fi_eq_err_entry err{};
	err.err = FI_ECONNRESET;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &err), 0);
	r.join();
	EXPECT_EQ(r.ret, -FI_EAVAIL);
	EXPECT_LT(r.waited_ms, 4000);
}

TEST_P(blocking, sread_times_out_with_eagain_not_early)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), GetParam());
	fi_eq_entry e;
	uint32_t ev;
	auto t0 = clock::now();
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 0, 0), -FI_EAGAIN);
	EXPECT_LT(ms_since(t0), 50);
	t0 = clock::now();
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 60, 0), -FI_EAGAIN);
	EXPECT_GE(ms_since(t0), 60);
}

TEST_P(blocking, spurious_wakeups_do_not_cut_the_timeout)
{
	/* Two sleepers, one event: the loser is woken but must sleep on. */
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), GetParam());
	sreader a, b;
	a.start(eq.get(), 400);
	b.start(eq.get(), 400);
	sleep_ms(30);
	ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, 1), 24);
	a.join();
	b.join();
	sreader &winner = a.ret == 24 ? a : b;
	sreader &loser = a.ret == 24 ? b : a;
	EXPECT_EQ(winner.ret, 24);
	EXPECT_EQ(loser.ret, -FI_EAGAIN);
	EXPECT_GE(loser.waited_ms, 400);
}

INSTANTIATE_TEST_SUITE_P(objs, blocking,
			 ::testing::Values(FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND,
					   FI_WAIT_YIELD, FI_WAIT_POLLFD));

namespace {
std::atomic<int> signals_seen{0};
void on_usr1(int)
{
	signals_seen++;
}
} // namespace

class signalled : public ::testing::TestWithParam<int> {};

/* A handled signal ends the wait with -FI_EAGAIN, with or without
 * SA_RESTART and with or without a timeout. */
TEST_P(signalled, sread_returns_eagain_on_a_signal)
{
	struct sigaction sa{}, old{};
	sa.sa_handler = on_usr1;
	sa.sa_flags = GetParam();
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	fake_fabric fab;
	for (fi_wait_obj w : {FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND}) {
		for (int timeout : {-1, 20000}) {
			eq_ptr eq = open_eq(fab.get(), w);
			sreader r;
			int before = signals_seen;
			r.start(eq.get(), timeout);
			sleep_ms(50);
			ASSERT_FALSE(r.done);
			pthread_kill(r.t.native_handle(), SIGUSR1);
			r.join();
			EXPECT_EQ(r.ret, -FI_EAGAIN) << w << " " << timeout;
			EXPECT_LT(r.waited_ms, 10000);
			EXPECT_GT(signals_seen.load(), before);
		}
	}
	sigaction(SIGUSR1, &old, nullptr);
}

INSTANTIATE_TEST_SUITE_P(flags, signalled, ::testing::Values(0, SA_RESTART));

/* ---- wait objects used from other threads ---- */

TEST(wait_obj_threads, mutex_cond_wakes_an_application_waiter)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_MUTEX_COND);
	fi_mutex_cond mc{};
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &mc), 0);
	std::atomic<bool> got{false};
	std::thread t([&] {
		fid *fids[] = {&eq->fid};
		pthread_mutex_lock(mc.mutex);
		while (fi_trywait(fab.get(), fids, 1) == 0)
			pthread_cond_wait(mc.cond, mc.mutex);
		pthread_mutex_unlock(mc.mutex);
		fi_eq_entry e;
		uint32_t ev;
		got = fi_eq_read(eq.get(), &ev, &e, sizeof e, 0) == 24;
	});
	sleep_ms(30);
	write_entry(eq.get(), FI_NOTIFY, 1);
	t.join();
	EXPECT_TRUE(got);
}

TEST(wait_obj_threads, fd_wakes_a_poller)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_FD);
	int fd;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	std::thread t([&] {
		sleep_ms(30);
		write_entry(eq.get(), FI_NOTIFY, 1);
	});
	pollfd p{fd, POLLIN, 0};
	EXPECT_EQ(poll(&p, 1, 5000), 1);
	t.join();
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
}

TEST(wait_set_threads, fi_wait_wakes_for_any_member)
{
	fake_fabric fab;
	for (fi_wait_obj w : {FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD}) {
		fid_wait *raw = nullptr;
		fi_wait_attr wa{w, 0};
		ASSERT_EQ(fi_wait_open(fab.get(), &wa, &raw), 0);
		wait_ptr ws(raw);
		fi_eq_attr a{};
		a.flags = FI_WRITE;
		a.wait_obj = FI_WAIT_SET;
		a.wait_set = ws.get();
		std::vector<eq_ptr> eqs;
		for (int i = 0; i < 4; i++)
			eqs.push_back(open_eq(fab.get(), a));
		std::thread t([&] {
			sleep_ms(30);
			write_entry(eqs[2].get(), FI_NOTIFY, 1);
		});
		auto t0 = clock::now();
		EXPECT_EQ(fi_wait(ws.get(), 5000), 0) << w;
		EXPECT_LT(ms_since(t0), 4000);
		t.join();
		fi_eq_entry e;
		uint32_t ev;
		EXPECT_EQ(fi_eq_read(eqs[2].get(), &ev, &e, sizeof e, 0), 24);
		eqs.clear();
	}
}

/* ---- concurrency ---- */

namespace {

/* writers x readers on one EQ: every event arrives exactly once. */
void run_mpmc(fi_wait_obj w, int writers, int readers, bool use_sread)
{
	constexpr uint64_t per_writer = 20000;
	fake_fabric fab;
	const uint64_t total = per_writer * writers;
	/* sized so a slow reader never overruns it */
	eq_ptr eq = open_eq(fab.get(), w, FI_WRITE, total);
	std::vector<std::atomic<uint8_t>> seen(total);
	std::atomic<uint64_t> got{0};
	std::atomic<bool> dup{false}, bad{false};
	std::vector<std::thread> ts;
	for (int r = 0; r < readers; r++) {
		ts.emplace_back([&] {
			fi_eq_entry e;
			uint32_t ev;
			while (got.load() < total) {
				ssize_t n = use_sread ? fi_eq_sread(eq.get(), &ev, &e, sizeof e, 10, 0)
						      : fi_eq_read(eq.get(), &ev, &e, sizeof e, 0);
				if (n == -FI_EAGAIN)
					continue;
				if (n != 24 || e.data >= total) {
					bad = true;
					return;
				}
				if (seen[e.data].exchange(1))
					dup = true;
				got++;
			}
		});
	}
	for (int wi = 0; wi < writers; wi++) {
		ts.emplace_back([&, wi] {
			for (uint64_t i = 0; i < per_writer; i++) {
				uint64_t id = wi * per_writer + i;
				if (write_entry(eq.get(), FI_NOTIFY, id) != 24) {
					bad = true;
					return;
				}
				if ((i & 1023) == 1023)
					std::this_thread::yield();
			}
		});
	}
	for (auto &t : ts)
		t.join();
	EXPECT_FALSE(bad);
	EXPECT_FALSE(dup);
	EXPECT_EQ(got.load(), total);
}

} // namespace

TEST(concurrency, writers_and_polling_readers)
{
	run_mpmc(FI_WAIT_NONE, 2, 2, false);
}

TEST(concurrency, writers_and_sreaders)
{
	run_mpmc(FI_WAIT_UNSPEC, 2, 3, true);
	run_mpmc(FI_WAIT_FD, 1, 2, true);
	run_mpmc(FI_WAIT_MUTEX_COND, 2, 1, true);
}

TEST(concurrency, errors_peeks_and_purges_race_cleanly)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_UNSPEC, FI_WRITE, 1u << 20);
	fid a{}, b{};
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> normal{0}, errors{0};
	std::thread writer([&] {
		for (int i = 0; i < 20000; i++) {
			wu::eq_post_entry(eq.get(), FI_AV_COMPLETE, (i & 1) ? &a : &b, nullptr, i);
			if (i % 100 == 0) {
				fi_eq_err_entry err{};
				err.err = FI_EIO;
				err.fid = &a;
				const char d[] = "detail";
				err.err_data = const_cast<char *>(d);
				err.err_data_size = sizeof d;
				wu::eq_post_error(eq.get(), &err);
			}
		}
		stop = true;
	});
	std::thread purger([&] {
		while (!stop) {
			wu::eq_purge(eq.get(), &b);
			std::this_thread::yield();
		}
	});
	std::thread reader([&] {
		fi_eq_entry e;
		uint32_t ev;
		char buf[16];
		for (;;) {
			/* Read stop first: an empty read after the writer finished ends
			 * the loop, one from before it does not. */
			bool done = stop;
			ssize_t n = fi_eq_read(eq.get(), &ev, &e, sizeof e, (normal & 1) ? FI_PEEK : 0);
			if (n == 24) {
				normal++;
			} else if (n == -FI_EAVAIL) {
				fi_eq_err_entry err{};
				err.err_data = buf;
				err.err_data_size = sizeof buf;
				if (fi_eq_readerr(eq.get(), &err, 0) > 0)
					errors++;
			} else if (done) {
				break;
			}
		}
	});
	writer.join();
	purger.join();
	reader.join();
	wu::eq_purge(eq.get(), &a);
	EXPECT_EQ(errors.load(), 200u);
}

TEST(concurrency, overrun_under_contention_loses_nothing_silently)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_UNSPEC, FI_WRITE, 1000);
	std::atomic<uint64_t> accepted{0};
	std::vector<std::thread> ws;
	for (int w = 0; w < 3; w++)
		ws.emplace_back([&] {
			for (int i = 0; i < 1000; i++)
				if (write_entry(eq.get(), FI_NOTIFY, i) == 24)
					accepted++;
		});
	uint64_t read = 0;
	fi_eq_entry e;
	uint32_t ev;
	for (int i = 0; i < 300; i++)
		if (fi_eq_read(eq.get(), &ev, &e, sizeof e, 0) == 24)
			read++;
	for (auto &t : ws)
		t.join();
	ssize_t n;
	while ((n = fi_eq_read(eq.get(), &ev, &e, sizeof e, 0)) == 24)
		read++;
	EXPECT_EQ(n, -FI_EAVAIL);
	EXPECT_EQ(read, accepted.load());
	fi_eq_err_entry err{};
	ASSERT_GT(fi_eq_readerr(eq.get(), &err, 0), 0);
	EXPECT_EQ(err.err, FI_EOVERRUN);
}

/* The queue lock: biased to its first user, revoked once another thread
 * comes, and exclusive throughout (a plain counter loses no increment). */
TEST(biased_lock, first_thread_owns_it_until_another_comes)
{
	wu::eqd::biased_lock l;
	l.lock();
	l.unlock();
	if (!wu::eqd::membarrier_ready())
		GTEST_SKIP() << "membarrier(2) unavailable: the lock is a plain spin lock here";
	EXPECT_TRUE(l.biased());
	std::thread([&] {
		l.lock();
		l.unlock();
	}).join();
	EXPECT_FALSE(l.biased());
	l.lock(); /* the former owner now takes the spin lock */
	l.unlock();
}

TEST(biased_lock, revocation_while_the_owner_hammers_it_loses_nothing)
{
	for (int round = 0; round < 20; round++) {
		wu::eqd::biased_lock l;
		long counter = 0;
		std::atomic<bool> owner_started{false};
		constexpr long per_thread = 20000;
		std::thread owner([&] {
			for (long i = 0; i < per_thread; i++) {
				l.lock();
				counter++;
				l.unlock();
				if (i == 0)
					owner_started = true;
			}
		});
		while (!owner_started)
			std::this_thread::yield();
		std::vector<std::thread> others;
		for (int t = 0; t < 2; t++)
			others.emplace_back([&] {
				for (long i = 0; i < per_thread; i++) {
					l.lock();
					counter++;
					l.unlock();
				}
			});
		owner.join();
		for (auto &t : others)
			t.join();
		EXPECT_EQ(counter, 3 * per_thread);
		EXPECT_FALSE(l.biased());
	}
}

TEST(biased_lock, single_thread_queue_then_a_second_reader)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE, 64);
	fi_eq_entry e;
	uint32_t ev;
	for (int i = 0; i < 1000; i++) {
		ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, i), 24);
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
		ASSERT_EQ(e.data, static_cast<uint64_t>(i));
	}
	ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, 7), 24);
	std::thread([&] {
		fi_eq_entry e2;
		uint32_t ev2;
		EXPECT_EQ(fi_eq_read(eq.get(), &ev2, &e2, sizeof e2, 0), 24);
		EXPECT_EQ(e2.data, 7u);
		EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 8), 24);
	}).join();
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
	EXPECT_EQ(e.data, 8u);
}
