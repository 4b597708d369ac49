/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_cq(3) on the shared CQ engine, opened on a real tcp domain; the
 * concurrency cases also run under ThreadSanitizer (make check-tsan). */
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <poll.h>

#include "cq_fixture.h"

using namespace wu::test;
using wu::cq::completion;

namespace {

int poll_fd(int fd, int ms)
{
	pollfd p{fd, POLLIN, 0};
	return poll(&p, 1, ms);
}

/* A progress function that posts one completion on its nth call. */
struct fake_ep {
	fid_cq *cq = nullptr;
	std::atomic<int> calls{0};
	int post_at = -1;
	static void progress(void *arg) noexcept
	{
		auto *ep = static_cast<fake_ep *>(arg);
		int n = ++ep->calls;
		if (n == ep->post_at) {
			EXPECT_EQ(wu::cq::post(ep->cq, comp(77)), 0);
		}
	}
	wu::progress_fn fn() { return {progress, this}; }
};

} // namespace

/* ---- fi_cq_open ---- */

/* Suites run over every provider (prov_fixture.h). */
WU_PROVIDER_TEST_SUITE(cq_open)
WU_PROVIDER_TEST_SUITE(cq_read)
WU_PROVIDER_TEST_SUITE(cq_readfrom)
WU_PROVIDER_TEST_SUITE(cq_readerr)
WU_PROVIDER_TEST_SUITE(cq_sread)
WU_PROVIDER_TEST_SUITE(cq_sreadfrom)
WU_PROVIDER_TEST_SUITE(cq_progress)
WU_PROVIDER_TEST_SUITE(cq_strerror)
WU_PROVIDER_TEST_SUITE(cq_control)
WU_PROVIDER_TEST_SUITE(cq_close)
WU_PROVIDER_TEST_SUITE(cq_threads)

TEST_P(cq_open, defaults_and_formats)
{
	cq_domain d{prov()};
	for (int f = FI_CQ_FORMAT_UNSPEC; f <= FI_CQ_FORMAT_TAGGED; f++) {
		cq_ptr cq = d.cq(static_cast<fi_cq_format>(f), FI_WAIT_NONE, 0);
		ASSERT_TRUE(cq);
		EXPECT_TRUE(wu::cq::is_cq(&cq->fid));
	}
}

TEST_P(cq_open, unspec_format_reads_context_entries)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_UNSPEC);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(5)), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(6)), 0);
	fi_cq_entry e[3];
	memset(e, 0xff, sizeof e);
	ASSERT_EQ(fi_cq_read(cq.get(), e, 3), 2);
	EXPECT_EQ(e[0].op_context, reinterpret_cast<void *>(5));
	EXPECT_EQ(e[1].op_context, reinterpret_cast<void *>(6));
	EXPECT_EQ(e[2].op_context, reinterpret_cast<void *>(~uintptr_t{0})); /* untouched */
}

TEST_P(cq_open, rejects_bad_attributes)
{
	cq_domain d{prov()};
	fid_cq *cq = nullptr;
	fi_cq_attr a{};
	a.format = static_cast<fi_cq_format>(99);
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EINVAL);
	a = {};
	a.wait_obj = static_cast<fi_wait_obj>(42);
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EINVAL);
	a = {};
	a.wait_obj = FI_WAIT_SET; /* without a wait set */
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EINVAL);
	a = {};
	a.wait_cond = static_cast<fi_cq_wait_cond>(7);
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EINVAL);
	a = {};
	a.flags = FI_WRITE;
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EBADFLAGS);
	a = {};
	a.size = wu::cq::max_size + 1;
	EXPECT_EQ(d.open_cq(a, &cq), -FI_EINVAL);
	EXPECT_EQ(cq, nullptr);
	EXPECT_EQ(wu::cq::open(nullptr, &a, &cq, nullptr), -FI_EINVAL);
	EXPECT_EQ(wu::cq::open(d.dom(), nullptr, &cq, nullptr), -FI_EINVAL);
}

TEST_P(cq_open, affinity_is_a_hint)
{
	cq_domain d{prov()};
	fi_cq_attr a{};
	a.flags = FI_AFFINITY;
	a.signaling_vector = 100000;
	fid_cq *cq = nullptr;
	ASSERT_EQ(d.open_cq(a, &cq), 0);
	cq_ptr hold(cq);
}

TEST_P(cq_open, context_and_domain_reference)
{
	cq_domain d{prov()};
	int ctx;
	fi_cq_attr a{};
	fid_cq *cq = nullptr;
	ASSERT_EQ(wu::cq::domain_cq_open(d.domain, &a, &cq, &ctx), 0);
	EXPECT_EQ(cq->fid.context, &ctx);
	EXPECT_EQ(fi_close(&d.domain->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

/* ---- fi_cq_read ---- */

struct cq_format : ::wu::test::provider_test_with<fi_cq_format> {};

TEST_P(cq_format, read_copies_the_format_prefix)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(arg());
	ASSERT_EQ(wu::cq::post(cq.get(), comp(3, 0x1234, 0x55)), 0);
	fi_cq_tagged_entry e[2];
	memset(e, 0xee, sizeof e);
	ASSERT_EQ(fi_cq_read(cq.get(), e, 1), 1);
	EXPECT_EQ(e[0].op_context, reinterpret_cast<void *>(3));
	size_t size = 0;
	switch (arg()) {
	case FI_CQ_FORMAT_CONTEXT:
		size = sizeof(fi_cq_entry);
		break;
	case FI_CQ_FORMAT_MSG:
		size = sizeof(fi_cq_msg_entry);
		break;
	case FI_CQ_FORMAT_DATA:
		size = sizeof(fi_cq_data_entry);
		break;
	default:
		size = sizeof(fi_cq_tagged_entry);
	}
	if (size >= sizeof(fi_cq_msg_entry)) {
		EXPECT_EQ(e[0].flags, uint64_t{FI_TAGGED | FI_RECV});
		EXPECT_EQ(e[0].len, 30u);
	}
	if (size >= sizeof(fi_cq_data_entry)) {
		EXPECT_EQ(e[0].buf, reinterpret_cast<void *>(4));
		EXPECT_EQ(e[0].data, 0x55u);
	}
	if (size >= sizeof(fi_cq_tagged_entry)) {
		EXPECT_EQ(e[0].tag, 0x1234u);
	}
	auto *bytes = reinterpret_cast<unsigned char *>(e);
	EXPECT_EQ(bytes[size], 0xee) << "wrote past one entry";
}

WU_PROVIDER_SUITE_WITH(cq_format,
		       ::testing::Values(FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED))

TEST_P(cq_read, empty_is_eagain_and_count_limits)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	fi_cq_tagged_entry e[4];
	EXPECT_EQ(fi_cq_read(cq.get(), e, 4), -FI_EAGAIN);
	EXPECT_EQ(fi_cq_read(cq.get(), e, 0), -FI_EAGAIN);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(wu::cq::post(cq.get(), comp(i)), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), e, 0), 0); /* progress only */
	EXPECT_EQ(fi_cq_read(cq.get(), e, 2), 2);
	EXPECT_EQ(e[1].op_context, reinterpret_cast<void *>(1));
	EXPECT_EQ(fi_cq_read(cq.get(), e, 4), 1);
	EXPECT_EQ(e[0].op_context, reinterpret_cast<void *>(2));
	EXPECT_EQ(fi_cq_read(cq.get(), nullptr, 1), -FI_EINVAL);
}

TEST_P(cq_read, full_cq_refuses_and_drops_nothing)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 1000);
	for (int i = 0; i < 1000; i++) /* grows its ring past the first slots */
		ASSERT_EQ(wu::cq::post(cq.get(), comp(i)), 0) << i;
	EXPECT_EQ(wu::cq::post(cq.get(), comp(1000)), -FI_EOVERRUN);
	completion bad;
	EXPECT_EQ(wu::cq::post_error(cq.get(), bad, FI_EIO, 0, 0), -FI_EOVERRUN);
	std::vector<fi_cq_tagged_entry> e(1100);
	ASSERT_EQ(fi_cq_read(cq.get(), e.data(), e.size()), 1000);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(e[i].op_context, reinterpret_cast<void *>(i));
	EXPECT_EQ(wu::cq::post(cq.get(), comp(1000)), 0); /* the retry succeeds */
}

TEST_P(cq_read, error_keeps_its_place)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	ASSERT_EQ(wu::cq::post(cq.get(), comp(1)), 0);
	ASSERT_EQ(wu::cq::post_error(cq.get(), comp(2), FI_ETRUNC, 0, 16), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(3)), 0);
	fi_cq_tagged_entry e[4];
	ASSERT_EQ(fi_cq_read(cq.get(), e, 4), 1); /* what came before the error */
	EXPECT_EQ(e[0].op_context, reinterpret_cast<void *>(1));
	EXPECT_EQ(fi_cq_read(cq.get(), e, 4), -FI_EAVAIL);
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq.get(), &err, 0), 1);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.olen, 16u);
	EXPECT_EQ(err.op_context, reinterpret_cast<void *>(2));
	ASSERT_EQ(fi_cq_read(cq.get(), e, 4), 1);
	EXPECT_EQ(e[0].op_context, reinterpret_cast<void *>(3));
	EXPECT_EQ(fi_cq_readerr(cq.get(), &err, 0), -FI_EAGAIN);
}

TEST_P(cq_read, error_first_is_eavail)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	ASSERT_EQ(wu::cq::post_error(cq.get(), comp(9), FI_ECANCELED, 0, 0), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(1)), 0);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAVAIL);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 0), -FI_EAVAIL);
	EXPECT_EQ(wu::cq::post_error(cq.get(), comp(9), 0, 0, 0), -FI_EINVAL);
}

/* Errors interleaved with entries while the ring grows (256 slots first):
 * each keeps its place, and the size limit counts them. */
TEST_P(cq_read, errors_keep_their_place_across_growth_and_count_in_the_limit)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 600);
	for (int i = 0; i < 600; i++) {
		int r = i % 200 == 150 ? wu::cq::post_error(cq.get(), comp(i), FI_EIO, 0, 0)
				       : wu::cq::post(cq.get(), comp(i));
		ASSERT_EQ(r, 0) << i;
	}
	EXPECT_EQ(wu::cq::post(cq.get(), comp(600)), -FI_EOVERRUN);
	EXPECT_EQ(wu::cq::post_error(cq.get(), comp(600), FI_EIO, 0, 0), -FI_EOVERRUN);
	std::vector<fi_cq_tagged_entry> e(700);
	int next = 0;
	while (next < 600) {
		ssize_t n = fi_cq_read(cq.get(), e.data(), e.size());
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			ASSERT_EQ(fi_cq_readerr(cq.get(), &err, 0), 1);
			ASSERT_EQ(err.op_context, reinterpret_cast<void *>(next));
			EXPECT_EQ(next % 200, 150);
			next++;
			continue;
		}
		ASSERT_GT(n, 0) << next;
		for (ssize_t i = 0; i < n; i++, next++)
			ASSERT_EQ(e[i].op_context, reinterpret_cast<void *>(next));
		if (next < 600) { /* stopped at an error, not at the end */
			EXPECT_EQ(next % 200, 150);
		}
	}
	EXPECT_EQ(fi_cq_read(cq.get(), e.data(), 1), -FI_EAGAIN);
	EXPECT_EQ(fi_cq_readerr(cq.get(), reinterpret_cast<fi_cq_err_entry *>(e.data()), 0), -FI_EAGAIN);
	EXPECT_EQ(wu::cq::post(cq.get(), comp(1)), 0);
}

/* The post that goes past its common case: a blocked sread is woken, a
 * handed-out fd follows the level, a mutex/cond waiter is woken. */
TEST_P(cq_read, post_wakes_every_kind_of_waiter)
{
	cq_domain d{prov()};
	/* A blocked sread returns the entry post (through post_if_leaf for a
	 * leaf CQ) queues. */
	auto wakes_sread = [](fid_cq *cq, bool leaf) {
		std::atomic<ssize_t> ret{0};
		std::thread t([&] {
			fi_cq_tagged_entry e;
			ret = fi_cq_sread(cq, &e, 1, nullptr, 10000);
		});
		sleep_ms(20);
		EXPECT_EQ(leaf ? wu::cq::post_if_leaf(cq, comp(1)) : wu::cq::post(cq, comp(1)), 0);
		t.join();
		EXPECT_EQ(ret.load(), 1);
	};
	{
		cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC);
		wakes_sread(cq.get(), true);
	}
	{
		cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_FD);
		int fd = -1;
		ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
		EXPECT_EQ(poll_fd(fd, 0), 0);
		ASSERT_EQ(wu::cq::post_if_leaf(cq.get(), comp(1)), 0);
		EXPECT_EQ(poll_fd(fd, 1000), 1);
		fi_cq_tagged_entry e;
		EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), 1);
		EXPECT_EQ(poll_fd(fd, 0), 0);
	}
	{
		cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_MUTEX_COND);
		EXPECT_FALSE(wu::cq::post_is_leaf(cq.get()));
		wakes_sread(cq.get(), false);
	}
}

/* ---- fi_cq_readfrom ---- */

TEST_P(cq_readfrom, fills_source_addresses)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_MSG);
	completion a = comp(1);
	a.src_addr = 42;
	ASSERT_EQ(wu::cq::post(cq.get(), a), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(2)), 0); /* source unknown */
	fi_cq_msg_entry e[2];
	fi_addr_t src[2] = {0, 0};
	ASSERT_EQ(fi_cq_readfrom(cq.get(), e, 2, src), 2);
	EXPECT_EQ(src[0], 42u);
	EXPECT_EQ(src[1], FI_ADDR_NOTAVAIL);
}

/* ---- fi_cq_readerr ---- */

TEST_P(cq_readerr, api_117_writes_only_80_bytes)
{
	cq_domain d(prov(), FI_VERSION(1, 17));
	cq_ptr cq = d.cq();
	completion c = comp(4);
	c.src_addr = 7;
	const char blob[] = "detail";
	ASSERT_EQ(wu::cq::post_error(cq.get(), c, FI_EIO, -5, 0, blob, sizeof blob), 0);
	fi_cq_err_entry e;
	memset(&e, 0xab, sizeof e);
	e.err_data_size = 0;
	ASSERT_EQ(fi_cq_readerr(cq.get(), &e, 0), 1);
	EXPECT_EQ(e.err, FI_EIO);
	EXPECT_EQ(e.prov_errno, -5);
	EXPECT_EQ(e.op_context, reinterpret_cast<void *>(4));
	auto *tail = reinterpret_cast<unsigned char *>(&e) + 80;
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(tail[i], 0xab) << "byte " << 80 + i << " written for a 1.17 caller";
	ASSERT_EQ(e.err_data_size, sizeof blob); /* CQ-owned buffer */
	EXPECT_STREQ(static_cast<const char *>(e.err_data), "detail");
}

TEST_P(cq_readerr, api_20_adds_src_addr_and_uses_callers_buffer)
{
	cq_domain d(prov(), FI_VERSION(2, 0));
	cq_ptr cq = d.cq();
	completion c = comp(4);
	c.src_addr = 7;
	const char blob[] = "0123456789";
	ASSERT_EQ(wu::cq::post_error(cq.get(), c, FI_EIO, 0, 0, blob, sizeof blob), 0);
	char mine[4] = {};
	fi_cq_err_entry e{};
	e.err_data = mine;
	e.err_data_size = sizeof mine;
	ASSERT_EQ(fi_cq_readerr(cq.get(), &e, 0), 1);
	EXPECT_EQ(e.src_addr, 7u);
	EXPECT_EQ(e.err_data, mine);
	EXPECT_EQ(e.err_data_size, 4u);
	EXPECT_EQ(memcmp(mine, "0123", 4), 0);
	EXPECT_EQ(fi_cq_readerr(cq.get(), &e, FI_PEEK), -FI_EBADFLAGS);
	EXPECT_EQ(fi_cq_readerr(cq.get(), nullptr, 0), -FI_EINVAL);
}

TEST_P(cq_readerr, old_api_ignores_callers_size)
{
	cq_domain d(prov(), FI_VERSION(1, 4));
	if (!d.domain)
		GTEST_SKIP() << "no 1.4 domain";
	cq_ptr cq = d.cq();
	const char blob[] = "xyz";
	ASSERT_EQ(wu::cq::post_error(cq.get(), comp(1), FI_EIO, 0, 0, blob, sizeof blob), 0);
	char mine[8] = {};
	fi_cq_err_entry e{};
	e.err_data = mine;
	e.err_data_size = sizeof mine; /* garbage to a 1.4 caller: ignored */
	ASSERT_EQ(fi_cq_readerr(cq.get(), &e, 0), 1);
	EXPECT_NE(e.err_data, static_cast<void *>(mine));
	EXPECT_STREQ(static_cast<const char *>(e.err_data), "xyz");
}

/* ---- fi_cq_sread / fi_cq_signal ---- */

struct cq_blocking : ::wu::test::provider_test_with<fi_wait_obj> {};

TEST_P(cq_blocking, sread_waits_for_a_completion)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, arg());
	std::thread t([&] {
		sleep_ms(30);
		EXPECT_EQ(wu::cq::post(cq.get(), comp(8)), 0);
	});
	fi_cq_tagged_entry e{};
	auto t0 = clock::now();
	ASSERT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 5000), 1);
	EXPECT_GE(ms_since(t0), 20);
	EXPECT_EQ(e.op_context, reinterpret_cast<void *>(8));
	t.join();
}

TEST_P(cq_blocking, sread_times_out_with_eagain)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, arg());
	fi_cq_tagged_entry e;
	auto t0 = clock::now();
	EXPECT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 50), -FI_EAGAIN);
	long ms = ms_since(t0);
	EXPECT_GE(ms, 45);
	EXPECT_LT(ms, 2000);
	EXPECT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 0), -FI_EAGAIN);
}

TEST_P(cq_blocking, signal_wakes_a_blocked_sread)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, arg());
	std::atomic<ssize_t> ret{1};
	std::thread t([&] {
		fi_cq_tagged_entry e;
		ret = fi_cq_sread(cq.get(), &e, 1, nullptr, -1);
	});
	sleep_ms(30);
	EXPECT_EQ(fi_cq_signal(cq.get()), 0);
	t.join();
	EXPECT_EQ(ret.load(), -FI_EAGAIN);
}

TEST_P(cq_blocking, sread_reports_an_error)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, arg());
	std::thread t([&] {
		sleep_ms(20);
		EXPECT_EQ(wu::cq::post_error(cq.get(), comp(1), FI_EIO, 0, 0), 0);
	});
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 5000), -FI_EAVAIL);
	t.join();
}

WU_PROVIDER_SUITE_WITH(cq_blocking,
		       ::testing::Values(FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD))

TEST_P(cq_sread, signal_before_sread_is_not_lost)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	ASSERT_EQ(fi_cq_signal(cq.get()), 0);
	fi_cq_tagged_entry e;
	auto t0 = clock::now();
	EXPECT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 5000), -FI_EAGAIN);
	EXPECT_LT(ms_since(t0), 1000);
}

TEST_P(cq_sread, threshold_waits_for_enough_entries)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, 0, FI_CQ_COND_THRESHOLD);
	std::atomic<int> posted{0};
	std::thread t([&] {
		for (int i = 0; i < 4; i++) {
			sleep_ms(10);
			EXPECT_EQ(wu::cq::post(cq.get(), comp(i)), 0);
			posted++;
		}
	});
	size_t cond = 4;
	fi_cq_tagged_entry e[8];
	ASSERT_EQ(fi_cq_sread(cq.get(), e, 8, &cond, 5000), 4);
	EXPECT_GE(posted.load(), 3); /* the 4th poster's count may lag its post */
	t.join();
	/* On timeout it returns what there is. */
	ASSERT_EQ(wu::cq::post(cq.get(), comp(9)), 0);
	EXPECT_EQ(fi_cq_sread(cq.get(), e, 8, &cond, 30), 1);
}

TEST_P(cq_sread, not_allowed_without_a_wait_object)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 10), -FI_ENOSYS);
	EXPECT_EQ(fi_cq_signal(cq.get()), -FI_ENOSYS);
}

TEST_P(cq_sreadfrom, fills_source_addresses)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	completion c = comp(1);
	c.src_addr = 3;
	ASSERT_EQ(wu::cq::post(cq.get(), c), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	ASSERT_EQ(fi_cq_sreadfrom(cq.get(), &e, 1, &src, nullptr, 100), 1);
	EXPECT_EQ(src, 3u);
}

/* ---- progress (FI_PROGRESS_MANUAL) ---- */

TEST_P(cq_progress, read_calls_bound_progress_functions)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	fake_ep ep;
	ep.cq = cq.get();
	ep.post_at = 2;
	ASSERT_EQ(wu::cq::bind(&cq->fid, ep.fn()), 0);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), 1); /* posted by the second call */
	EXPECT_EQ(ep.calls.load(), 2);
	fi_addr_t src;
	EXPECT_EQ(fi_cq_readfrom(cq.get(), &e, 1, &src), -FI_EAGAIN);
	EXPECT_EQ(ep.calls.load(), 3);
	EXPECT_EQ(wu::cq::unbind(&cq->fid, ep.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(ep.calls.load(), 3);
	EXPECT_EQ(wu::cq::unbind(&cq->fid, ep.fn()), -FI_EINVAL);
}

TEST_P(cq_progress, sread_keeps_driving_progress)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	fake_ep ep;
	ep.cq = cq.get();
	ep.post_at = 500; /* well past the first spin */
	ASSERT_EQ(wu::cq::bind(&cq->fid, ep.fn()), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_cq_sread(cq.get(), &e, 1, nullptr, 10000), 1);
	EXPECT_EQ(e.op_context, reinterpret_cast<void *>(77));
	EXPECT_GE(ep.calls.load(), 500);
	EXPECT_EQ(wu::cq::unbind(&cq->fid, ep.fn()), 0);
}

TEST_P(cq_progress, same_function_bound_twice_counts_twice)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	fake_ep ep;
	ep.cq = cq.get();
	ASSERT_EQ(wu::cq::bind(&cq->fid, ep.fn()), 0); /* FI_TRANSMIT */
	ASSERT_EQ(wu::cq::bind(&cq->fid, ep.fn()), 0); /* FI_RECV */
	fi_cq_tagged_entry e;
	(void)fi_cq_read(cq.get(), &e, 1);
	EXPECT_EQ(ep.calls.load(), 1); /* called once per read */
	EXPECT_EQ(wu::cq::unbind(&cq->fid, ep.fn()), 0);
	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
	EXPECT_EQ(wu::cq::unbind(&cq->fid, ep.fn()), 0);
}

/* One bound endpoint's progress is called directly; a second one bound
 * later (and either unbound again) is served as before. */
TEST_P(cq_progress, second_endpoint_bound_later_is_driven_too)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	fake_ep a, b;
	a.cq = b.cq = cq.get();
	b.post_at = 2;
	fi_cq_tagged_entry e;
	ASSERT_EQ(wu::cq::bind(&cq->fid, a.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(a.calls.load(), 1);
	ASSERT_EQ(wu::cq::bind(&cq->fid, b.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), 1); /* b's second call posted */
	EXPECT_EQ(e.op_context, reinterpret_cast<void *>(77));
	EXPECT_EQ(a.calls.load(), 3);
	EXPECT_EQ(b.calls.load(), 2);
	ASSERT_EQ(wu::cq::unbind(&cq->fid, a.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(a.calls.load(), 3);
	EXPECT_EQ(b.calls.load(), 3);
	ASSERT_EQ(wu::cq::bind(&cq->fid, a.fn()), 0);
	ASSERT_EQ(wu::cq::unbind(&cq->fid, b.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(a.calls.load(), 4);
	EXPECT_EQ(b.calls.load(), 3);
	ASSERT_EQ(wu::cq::unbind(&cq->fid, a.fn()), 0);
	EXPECT_EQ(fi_cq_read(cq.get(), &e, 1), -FI_EAGAIN);
	EXPECT_EQ(a.calls.load(), 4);
}

TEST_P(cq_progress, wake_rechecks_without_returning)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	std::atomic<ssize_t> ret{0};
	std::thread t([&] {
		fi_cq_tagged_entry e;
		ret = fi_cq_sread(cq.get(), &e, 1, nullptr, 5000);
	});
	sleep_ms(20);
	wu::cq::wake(cq.get()); /* nothing queued: keeps waiting */
	sleep_ms(20);
	EXPECT_EQ(ret.load(), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(1)), 0);
	t.join();
	EXPECT_EQ(ret.load(), 1);
}

/* ---- fi_cq_strerror ---- */

TEST_P(cq_strerror, prints_provider_errno)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	char buf[64];
	const char *s = fi_cq_strerror(cq.get(), ECONNRESET, nullptr, buf, sizeof buf);
	EXPECT_EQ(s, buf);
	EXPECT_STREQ(buf, fi_strerror(ECONNRESET));
	EXPECT_STREQ(fi_cq_strerror(cq.get(), -FI_ETRUNC, nullptr, nullptr, 0),
		     fi_strerror(FI_ETRUNC));
}

/* ---- fi_control ---- */

TEST_P(cq_control, getwaitobj_and_fd_follows_the_level)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_FD);
	fi_wait_obj w;
	ASSERT_EQ(fi_control(&cq->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_FD);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(1)), 0); /* before the fd is handed out */
	int fd = -1;
	ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(poll_fd(fd, 0), 1);
	EXPECT_EQ(wu::cq::trywait(&cq->fid), -FI_EAGAIN);
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_cq_read(cq.get(), &e, 1), 1);
	EXPECT_EQ(poll_fd(fd, 0), 0);
	EXPECT_EQ(wu::cq::trywait(&cq->fid), 0);
	ASSERT_EQ(wu::cq::post_error(cq.get(), comp(2), FI_EIO, 0, 0), 0);
	EXPECT_EQ(poll_fd(fd, 0), 1);
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq.get(), &err, 0), 1);
	EXPECT_EQ(poll_fd(fd, 0), 0);
}

TEST_P(cq_control, mutex_cond_and_no_native_object)
{
	cq_domain d{prov()};
	cq_ptr mc = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_MUTEX_COND);
	fi_mutex_cond m{};
	ASSERT_EQ(fi_control(&mc->fid, FI_GETWAIT, &m), 0);
	EXPECT_NE(m.mutex, nullptr);
	EXPECT_NE(m.cond, nullptr);
	cq_ptr un = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC);
	int fd;
	EXPECT_EQ(fi_control(&un->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	EXPECT_EQ(fi_control(&un->fid, FI_GETWAIT, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_control(&un->fid, FI_ENABLE, &fd), -FI_ENOSYS);
}

TEST_P(cq_control, wait_set_follows_the_cq)
{
	cq_domain d{prov()};
	fi_wait_attr wa{};
	wa.wait_obj = FI_WAIT_UNSPEC;
	fid_wait *ws = nullptr;
	ASSERT_EQ(fi_wait_open(d.fabric, &wa, &ws), 0);
	wait_ptr hold_ws(ws);
	fi_cq_attr a{};
	a.format = FI_CQ_FORMAT_TAGGED;
	a.wait_obj = FI_WAIT_SET;
	a.wait_set = ws;
	fid_cq *cq = nullptr;
	ASSERT_EQ(d.open_cq(a, &cq), 0);
	EXPECT_EQ(fi_wait(ws, 0), -FI_ETIMEDOUT);
	std::thread t([&] {
		sleep_ms(20);
		EXPECT_EQ(wu::cq::post(cq, comp(1)), 0);
	});
	EXPECT_EQ(fi_wait(ws, 5000), 0);
	t.join();
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_cq_read(cq, &e, 1), 1);
	EXPECT_EQ(fi_wait(ws, 0), -FI_ETIMEDOUT);
	EXPECT_EQ(fi_close(&ws->fid), -FI_EBUSY); /* the CQ uses it */
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

/* ---- fi_close ---- */

TEST_P(cq_close, busy_while_bound_then_bad_handle)
{
	cq_domain d{prov()};
	fi_cq_attr a{};
	fid_cq *cq = nullptr;
	ASSERT_EQ(d.open_cq(a, &cq), 0);
	ASSERT_EQ(wu::cq::bind(&cq->fid, {}), 0);
	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
	ASSERT_EQ(wu::cq::post(cq, comp(1)), 0); /* still usable */
	EXPECT_EQ(wu::cq::unbind(&cq->fid, {}), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0); /* queued completions are dropped */
	EXPECT_FALSE(wu::cq::is_cq(&cq->fid));
	fi_cq_entry e;
	EXPECT_EQ(fi_cq_read(cq, &e, 1), -FI_EBADF);
	EXPECT_EQ(wu::cq::post(cq, comp(1)), -FI_EBADF);
	EXPECT_EQ(wu::cq::bind(&cq->fid, {}), -FI_EINVAL);
}

/* ---- concurrency (TSan) ---- */

TEST_P(cq_threads, posters_and_readers_see_every_completion_once)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, 64);
	constexpr int posters = 3, readers = 2, per = 20000;
	std::atomic<int> got{0};
	std::vector<std::vector<uintptr_t>> seen(readers);
	std::vector<std::thread> ts;
	for (int p = 0; p < posters; p++)
		ts.emplace_back([&, p] {
			for (int i = 0; i < per; i++) {
				completion c = comp(static_cast<uintptr_t>(p) * per + i + 1);
				while (wu::cq::post(cq.get(), c) == -FI_EOVERRUN)
					std::this_thread::yield();
			}
		});
	for (int r = 0; r < readers; r++)
		ts.emplace_back([&, r] {
			fi_cq_tagged_entry e[16];
			while (got.load() < posters * per) {
				ssize_t n = r == 0 ? fi_cq_read(cq.get(), e, 16)
						   : fi_cq_sread(cq.get(), e, 16, nullptr, 10);
				for (ssize_t i = 0; i < n; i++)
					seen[r].push_back(reinterpret_cast<uintptr_t>(e[i].op_context));
				if (n > 0)
					got += static_cast<int>(n);
			}
		});
	for (auto &t : ts)
		t.join();
	std::set<uintptr_t> all;
	for (auto &v : seen)
		all.insert(v.begin(), v.end());
	EXPECT_EQ(all.size(), size_t{posters * per});
	EXPECT_EQ(got.load(), posters * per);
}

TEST_P(cq_threads, per_poster_order_is_kept)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, 128);
	constexpr int posters = 2, per = 20000;
	std::vector<std::thread> ts;
	for (int p = 0; p < posters; p++)
		ts.emplace_back([&, p] {
			for (int i = 0; i < per; i++) {
				completion c = comp(static_cast<uintptr_t>(i), static_cast<uint64_t>(p));
				while (wu::cq::post(cq.get(), c) == -FI_EOVERRUN)
					std::this_thread::yield();
			}
		});
	std::vector<uintptr_t> next(posters, 0);
	int total = 0;
	fi_cq_tagged_entry e[32];
	while (total < posters * per) {
		ssize_t n = fi_cq_sread(cq.get(), e, 32, nullptr, 100);
		for (ssize_t i = 0; i < n; i++) {
			auto &want = next[e[i].tag];
			ASSERT_EQ(reinterpret_cast<uintptr_t>(e[i].op_context), want);
			want++;
		}
		if (n > 0)
			total += static_cast<int>(n);
	}
	for (auto &t : ts)
		t.join();
}

TEST_P(cq_threads, signal_races_with_sread)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	std::atomic<bool> stop{false};
	std::thread sig([&] {
		while (!stop)
			fi_cq_signal(cq.get());
	});
	fi_cq_tagged_entry e;
	for (int i = 0; i < 2000; i++) {
		ssize_t r = fi_cq_sread(cq.get(), &e, 1, nullptr, 1000);
		ASSERT_EQ(r, -FI_EAGAIN);
	}
	stop = true;
	sig.join();
}

TEST_P(cq_threads, bind_unbind_while_reading)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq();
	std::atomic<bool> stop{false};
	std::thread reader([&] {
		fi_cq_tagged_entry e;
		while (!stop)
			(void)fi_cq_sread(cq.get(), &e, 1, nullptr, 1);
	});
	for (int i = 0; i < 2000; i++) {
		auto ep = std::make_unique<fake_ep>();
		ep->cq = cq.get();
		ASSERT_EQ(wu::cq::bind(&cq->fid, ep->fn()), 0);
		std::this_thread::yield();
		ASSERT_EQ(wu::cq::unbind(&cq->fid, ep->fn()), 0);
		/* ep freed here: unbind waited for any progress call in flight */
	}
	stop = true;
	reader.join();
}

/* A reader polling with one endpoint's progress while that endpoint's
 * thread posts straight to the CQ, and second endpoints come and go (the
 * one-endpoint call and the loop over several take turns): every
 * completion once, in order. */
TEST_P(cq_threads, one_poster_reading_while_endpoints_come_and_go)
{
	cq_domain d{prov()};
	cq_ptr cq = d.cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 64);
	fake_ep a;
	a.cq = cq.get();
	ASSERT_EQ(wu::cq::bind(&cq->fid, a.fn()), 0);
	constexpr int per = 20000;
	std::atomic<bool> stop{false};
	std::thread poster([&] {
		for (int i = 0; i < per; i++)
			while (wu::cq::post_if_leaf(cq.get(), comp(static_cast<uintptr_t>(i))) == -FI_EOVERRUN)
				std::this_thread::yield();
	});
	std::thread binder([&] {
		while (!stop) {
			auto b = std::make_unique<fake_ep>();
			b->cq = cq.get();
			ASSERT_EQ(wu::cq::bind(&cq->fid, b->fn()), 0);
			std::this_thread::yield();
			ASSERT_EQ(wu::cq::unbind(&cq->fid, b->fn()), 0);
		}
	});
	uintptr_t next = 0;
	fi_cq_tagged_entry e[8];
	while (next < per) {
		ssize_t n = fi_cq_read(cq.get(), e, 8);
		ASSERT_TRUE(n > 0 || n == -FI_EAGAIN) << n;
		for (ssize_t i = 0; i < n; i++, next++)
			ASSERT_EQ(reinterpret_cast<uintptr_t>(e[i].op_context), next);
	}
	stop = true;
	poster.join();
	binder.join();
	EXPECT_GT(a.calls.load(), 0);
	ASSERT_EQ(wu::cq::unbind(&cq->fid, a.fn()), 0);
}
