/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_cntr(3) on the shared counter engine, opened on a real tcp domain. */
#include <atomic>
#include <thread>
#include <vector>

#include <poll.h>

#include "cq_fixture.h"

using namespace wu::test;

namespace {

struct counting_ep {
	fid_cntr *cntr = nullptr;
	std::atomic<int> calls{0};
	int add_at = -1;
	static void progress(void *arg) noexcept
	{
		auto *ep = static_cast<counting_ep *>(arg);
		if (++ep->calls == ep->add_at)
			wu::cntr::add(ep->cntr, 5);
	}
	wu::progress_fn fn() { return {progress, this}; }
};

} // namespace

/* ---- fi_cntr_open ---- */

/* Suites run over every provider (prov_fixture.h). */
WU_PROVIDER_TEST_SUITE(cntr_open)
WU_PROVIDER_TEST_SUITE(cntr_values)
WU_PROVIDER_TEST_SUITE(cntr_progress)
WU_PROVIDER_TEST_SUITE(cntr_control)
WU_PROVIDER_TEST_SUITE(cntr_close)
WU_PROVIDER_TEST_SUITE(cntr_threads)

TEST_P(cntr_open, attributes)
{
	cq_domain d{prov()};
	for (fi_wait_obj w : {FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND,
			      FI_WAIT_YIELD}) {
		cntr_ptr c = d.cntr(w);
		ASSERT_TRUE(c);
		EXPECT_TRUE(wu::cntr::is_cntr(&c->fid));
		EXPECT_EQ(fi_cntr_read(c.get()), 0u);
		EXPECT_EQ(fi_cntr_readerr(c.get()), 0u);
	}
	fid_cntr *c = nullptr;
	ASSERT_EQ(wu::cntr::open(d.dom(), nullptr, &c, nullptr), 0); /* defaults */
	cntr_ptr hold(c);
	fi_cntr_attr a{};
	a.events = static_cast<fi_cntr_events>(3);
	EXPECT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), -FI_ENOSYS);
	a = {};
	a.flags = 1;
	EXPECT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), -FI_EBADFLAGS);
	a = {};
	a.wait_obj = static_cast<fi_wait_obj>(77);
	EXPECT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), -FI_EINVAL);
	a = {};
	a.wait_obj = FI_WAIT_SET;
	EXPECT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), -FI_EINVAL);
	EXPECT_EQ(wu::cntr::domain_cntr_open(nullptr, &a, &c, nullptr), -FI_EINVAL);
}

TEST_P(cntr_open, holds_the_domain)
{
	cq_domain d{prov()};
	int ctx;
	fi_cntr_attr a{};
	fid_cntr *c = nullptr;
	ASSERT_EQ(wu::cntr::domain_cntr_open(d.domain, &a, &c, &ctx), 0);
	EXPECT_EQ(c->fid.context, &ctx);
	EXPECT_EQ(fi_close(&d.domain->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&c->fid), 0);
}

/* ---- fi_cntr_add / set / read ---- */

TEST_P(cntr_values, add_set_and_errors)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr();
	EXPECT_EQ(fi_cntr_add(c.get(), 3), 0);
	wu::cntr::add(c.get());
	EXPECT_EQ(fi_cntr_read(c.get()), 4u);
	EXPECT_EQ(fi_cntr_set(c.get(), 100), 0);
	EXPECT_EQ(fi_cntr_read(c.get()), 100u);
	EXPECT_EQ(fi_cntr_adderr(c.get(), 2), 0);
	wu::cntr::add_err(c.get(), 3);
	EXPECT_EQ(fi_cntr_readerr(c.get()), 5u);
	EXPECT_EQ(fi_cntr_seterr(c.get(), 0), 0);
	EXPECT_EQ(fi_cntr_readerr(c.get()), 0u);
	EXPECT_EQ(fi_cntr_read(c.get()), 100u);
}

/* ---- fi_cntr_wait ---- */

struct cntr_blocking : ::wu::test::provider_test_with<fi_wait_obj> {};

TEST_P(cntr_blocking, wait_until_threshold)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr(arg());
	EXPECT_EQ(fi_cntr_wait(c.get(), 0, 0), 0);
	std::thread t([&] {
		for (int i = 0; i < 5; i++) {
			sleep_ms(5);
			wu::cntr::add(c.get());
		}
	});
	EXPECT_EQ(fi_cntr_wait(c.get(), 5, 5000), 0);
	EXPECT_GE(fi_cntr_read(c.get()), 5u);
	t.join();
}

TEST_P(cntr_blocking, timeout_leaves_the_error_value)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr(arg());
	auto t0 = clock::now();
	EXPECT_EQ(fi_cntr_wait(c.get(), 1, 40), -FI_ETIMEDOUT);
	EXPECT_GE(ms_since(t0), 35);
	EXPECT_EQ(fi_cntr_readerr(c.get()), 0u);
	EXPECT_EQ(fi_cntr_wait(c.get(), 1, 0), -FI_ETIMEDOUT);
}

TEST_P(cntr_blocking, an_error_unblocks_the_waiter)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr(arg());
	std::thread t([&] {
		sleep_ms(20);
		wu::cntr::add_err(c.get());
	});
	EXPECT_EQ(fi_cntr_wait(c.get(), 10, 5000), -FI_EAVAIL);
	t.join();
	/* seterr also counts as a change */
	std::thread t2([&] {
		sleep_ms(20);
		fi_cntr_seterr(c.get(), 0);
	});
	EXPECT_EQ(fi_cntr_wait(c.get(), 10, 5000), -FI_EAVAIL);
	t2.join();
}

WU_PROVIDER_SUITE_WITH(cntr_blocking,
		       ::testing::Values(FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD))

/* ---- progress ---- */

TEST_P(cntr_progress, read_and_wait_drive_progress)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr();
	counting_ep ep;
	ep.cntr = c.get();
	ep.add_at = 300;
	ASSERT_EQ(wu::cntr::bind(&c->fid, ep.fn()), 0);
	EXPECT_EQ(fi_cntr_read(c.get()), 0u);
	EXPECT_EQ(fi_cntr_readerr(c.get()), 0u);
	EXPECT_EQ(ep.calls.load(), 2);
	EXPECT_EQ(fi_cntr_wait(c.get(), 5, 10000), 0);
	EXPECT_GE(ep.calls.load(), 300);
	EXPECT_EQ(fi_close(&c->fid), -FI_EBUSY);
	EXPECT_EQ(wu::cntr::unbind(&c->fid, ep.fn()), 0);
	EXPECT_EQ(wu::cntr::unbind(&c->fid, ep.fn()), -FI_EINVAL);
}

/* ---- fi_control ---- */

TEST_P(cntr_control, fd_fires_on_change_until_read)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr(FI_WAIT_FD);
	int fd = -1;
	ASSERT_EQ(fi_control(&c->fid, FI_GETWAIT, &fd), 0);
	pollfd p{fd, POLLIN, 0};
	EXPECT_EQ(poll(&p, 1, 0), 0);
	EXPECT_EQ(wu::cntr::trywait(&c->fid), 0);
	wu::cntr::add(c.get());
	EXPECT_EQ(poll(&p, 1, 0), 1);
	EXPECT_EQ(wu::cntr::trywait(&c->fid), -FI_EAGAIN);
	EXPECT_EQ(fi_cntr_read(c.get()), 1u);
	EXPECT_EQ(poll(&p, 1, 0), 0);
	fi_wait_obj w;
	ASSERT_EQ(fi_control(&c->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_FD);
}

TEST_P(cntr_control, ops_flags)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr();
	uint64_t f = FI_TRANSMIT;
	ASSERT_EQ(fi_control(&c->fid, FI_SETOPSFLAG, &f), 0);
	f = 0;
	ASSERT_EQ(fi_control(&c->fid, FI_GETOPSFLAG, &f), 0);
	EXPECT_EQ(f, uint64_t{FI_TRANSMIT});
	int fd;
	EXPECT_EQ(fi_control(&c->fid, FI_GETWAIT, &fd), -FI_ENODATA);
}

TEST_P(cntr_control, wait_set)
{
	cq_domain d{prov()};
	fi_wait_attr wa{};
	wa.wait_obj = FI_WAIT_UNSPEC;
	fid_wait *ws = nullptr;
	ASSERT_EQ(fi_wait_open(d.fabric, &wa, &ws), 0);
	wait_ptr hold_ws(ws);
	fi_cntr_attr a{};
	a.wait_obj = FI_WAIT_SET;
	a.wait_set = ws;
	fid_cntr *c = nullptr;
	ASSERT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), 0);
	cntr_ptr hold(c);
	EXPECT_EQ(fi_wait(ws, 0), -FI_ETIMEDOUT);
	wu::cntr::add(c);
	EXPECT_EQ(fi_wait(ws, 1000), 0);
	EXPECT_EQ(fi_cntr_read(c), 1u);
	EXPECT_EQ(fi_wait(ws, 0), -FI_ETIMEDOUT);
	EXPECT_EQ(fi_cntr_wait(c, 1, 0), 0); /* polls: allowed here */
}

/* ---- fi_close ---- */

TEST_P(cntr_close, closed_handle)
{
	cq_domain d{prov()};
	fid_cntr *c = nullptr;
	fi_cntr_attr a{};
	ASSERT_EQ(wu::cntr::open(d.dom(), &a, &c, nullptr), 0);
	ASSERT_EQ(fi_close(&c->fid), 0);
	EXPECT_FALSE(wu::cntr::is_cntr(&c->fid));
	EXPECT_EQ(fi_cntr_add(c, 1), -FI_EBADF);
	EXPECT_EQ(fi_cntr_read(c), 0u);
	EXPECT_EQ(fi_close(&c->fid), -FI_EBADF);
}

/* ---- concurrency (TSan) ---- */

TEST_P(cntr_threads, adders_and_waiters)
{
	cq_domain d{prov()};
	cntr_ptr c = d.cntr(FI_WAIT_UNSPEC);
	constexpr int adders = 3, per = 20000;
	std::vector<std::thread> ts;
	for (int a = 0; a < adders; a++)
		ts.emplace_back([&] {
			for (int i = 0; i < per; i++)
				wu::cntr::add(c.get());
		});
	std::thread waiter([&] {
		for (uint64_t t = 1000; t <= adders * per; t += 1000)
			ASSERT_EQ(fi_cntr_wait(c.get(), t, 10000), 0) << t;
	});
	for (auto &t : ts)
		t.join();
	waiter.join();
	EXPECT_EQ(fi_cntr_read(c.get()), uint64_t{adders * per});
}
