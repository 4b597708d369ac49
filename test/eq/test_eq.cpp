/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_eq(3), one suite per section of the man page, single-threaded parts.
 * Blocking and concurrent behaviour is in test_eq_threads.cpp. */
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "core/info.h"
#include "eq_fixture.h"
#include "../util/leak_check.h"

using namespace wu::test;

namespace {

bool fd_readable(int fd)
{
	pollfd p{fd, POLLIN, 0};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

bool fd_readable_select(int fd)
{
	fd_set s;
	FD_ZERO(&s);
	FD_SET(fd, &s);
	timeval tv{0, 0};
	return select(fd + 1, &s, nullptr, nullptr, &tv) == 1;
}

fid dummy_fid(size_t fclass)
{
	fid f{};
	f.fclass = fclass;
	return f;
}

} // namespace

/* ---- fi_eq_open: struct fi_eq_attr ---- */

TEST(fi_eq_open, opens_with_zeroed_attr_and_sets_fid)
{
	fake_fabric fab;
	int ctx;
	fi_eq_attr a{};
	eq_ptr eq = open_eq(fab.get(), a, &ctx);
	ASSERT_TRUE(eq);
	EXPECT_EQ(eq->fid.fclass, size_t{FI_CLASS_EQ});
	EXPECT_EQ(eq->fid.context, &ctx);
	EXPECT_TRUE(wu::is_eq(&eq->fid));
	fi_wait_obj w = FI_WAIT_FD;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_NONE); /* the default */
}

TEST(fi_eq_open, null_arguments_are_einval)
{
	fake_fabric fab;
	fi_eq_attr a{};
	fid_eq *eq = reinterpret_cast<fid_eq *>(0x1);
	EXPECT_EQ(wu::eq_open(nullptr, FI_VERSION(1, 17), &a, &eq, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_eq_open(fab.get(), nullptr, &eq, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_eq_open(fab.get(), &a, nullptr, nullptr), -FI_EINVAL);
}

TEST(fi_eq_open, unknown_flags_are_ebadflags)
{
	fake_fabric fab;
	fid_eq *eq = nullptr;
	for (uint64_t bad : {FI_READ, FI_PEEK, 1ULL << 40, ~0ULL}) {
		fi_eq_attr a{};
		a.flags = bad | FI_WRITE;
		EXPECT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), -FI_EBADFLAGS) << bad;
		EXPECT_EQ(eq, nullptr);
	}
}

TEST(fi_eq_open, size_is_the_minimum_number_of_entries)
{
	fake_fabric fab;
	for (size_t size : {size_t{1}, size_t{3}, size_t{64}, size_t{100}, size_t{1000}}) {
		eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE, size);
		for (size_t i = 0; i < size; i++)
			ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, i), ssize_t{sizeof(fi_eq_entry)}) << i;
	}
}

TEST(fi_eq_open, size_zero_gets_the_default)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE, 0);
	for (size_t i = 0; i < wu::eq_default_size; i++)
		ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, i), ssize_t{sizeof(fi_eq_entry)});
	EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 0), -FI_EOVERRUN);
}

TEST(fi_eq_open, huge_size_is_einval_and_large_size_allocates_lazily)
{
	fake_fabric fab;
	fid_eq *eq = nullptr;
	fi_eq_attr a{};
	for (size_t huge : {wu::eq_max_size + 1, SIZE_MAX, SIZE_MAX / 64}) {
		a.size = huge;
		EXPECT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), -FI_EINVAL);
	}
	a.size = wu::eq_max_size; /* accepted: memory follows what is queued */
	eq_ptr big = open_eq(fab.get(), a);
	EXPECT_TRUE(big);
}

TEST(fi_eq_open, bad_wait_obj_is_einval)
{
	fake_fabric fab;
	fid_eq *eq = nullptr;
	fi_eq_attr a{};
	for (int bad : {77, -1, 7}) { /* raw bytes, as a C caller could pass */
		memcpy(&a.wait_obj, &bad, sizeof bad);
		EXPECT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), -FI_EINVAL) << bad;
	}
}

TEST(fi_eq_open, wait_set_needs_a_wait_set)
{
	fake_fabric fab;
	fid_eq *eq = nullptr;
	fi_eq_attr a{};
	a.wait_obj = FI_WAIT_SET;
	EXPECT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), -FI_EINVAL);
	fid_wait fake{};
	fake.fid.fclass = FI_CLASS_WAIT;
	a.wait_set = &fake;
	EXPECT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), -FI_EINVAL);
}

TEST(fi_eq_open, affinity_vector_is_only_a_hint)
{
	fake_fabric fab;
	for (int v : {0, 1, 100000, -5}) {
		fi_eq_attr a{};
		a.flags = FI_AFFINITY;
		a.signaling_vector = v;
		eq_ptr eq = open_eq(fab.get(), a);
		EXPECT_TRUE(eq) << v;
	}
}

TEST(fi_eq_open, fi_write_gates_fi_eq_write)
{
	fake_fabric fab;
	eq_ptr ro = open_eq(fab.get(), FI_WAIT_NONE, 0);
	EXPECT_EQ(write_entry(ro.get(), FI_NOTIFY, 1), -FI_EACCES);
	/* the provider's own path does not need FI_WRITE */
	fi_eq_entry e{nullptr, nullptr, 5};
	EXPECT_EQ(wu::eq_post(ro.get(), FI_MR_COMPLETE, &e, sizeof e), ssize_t{sizeof e});
	eq_ptr rw = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE);
	EXPECT_EQ(write_entry(rw.get(), FI_NOTIFY, 1), ssize_t{sizeof(fi_eq_entry)});
}

/* ---- fi_eq_write ---- */

TEST(fi_eq_write, bad_input_is_refused)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fi_eq_entry e{};
	EXPECT_EQ(fi_eq_write(eq.get(), FI_NOTIFY, nullptr, sizeof e, 0), -FI_EINVAL);
	EXPECT_EQ(fi_eq_write(eq.get(), FI_NOTIFY, &e, 0, 0), -FI_EINVAL);
	EXPECT_EQ(fi_eq_write(eq.get(), FI_NOTIFY, &e, sizeof e, FI_PEEK), -FI_EBADFLAGS);
	std::vector<char> big(wu::eq_max_event_bytes + 1);
	EXPECT_EQ(fi_eq_write(eq.get(), FI_NOTIFY, big.data(), big.size(), 0), -FI_EMSGSIZE);
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), -FI_EAGAIN); /* nothing queued */
}

TEST(fi_eq_write, returns_bytes_and_keeps_large_events_whole)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	std::vector<unsigned char> big(5000);
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<unsigned char>(i * 7);
	EXPECT_EQ(fi_eq_write(eq.get(), 1234, big.data(), big.size(), 0), ssize_t(big.size()));
	std::vector<unsigned char> out(big.size());
	uint32_t ev = 0;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, out.data(), out.size(), 0), ssize_t(big.size()));
	EXPECT_EQ(ev, 1234u);
	EXPECT_EQ(out, big);
}

/* ---- wait objects and fi_control ---- */

TEST(wait_obj, none_refuses_sread_and_has_no_native_object)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	write_entry(eq.get(), FI_NOTIFY, 1);
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 0, 0), -FI_ENOSYS);
	int fd = -7;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	EXPECT_EQ(fd, -7);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
}

TEST(wait_obj, unspec_is_usable_with_sread_only)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_UNSPEC);
	fi_wait_obj w = FI_WAIT_NONE;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_UNSPEC);
	int fd;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	write_entry(eq.get(), FI_NOTIFY, 9);
	fi_eq_entry e{};
	uint32_t ev;
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 1000, 0), ssize_t{sizeof e});
	EXPECT_EQ(e.data, 9u);
}

TEST(wait_obj, fd_is_readable_exactly_while_an_event_is_queued)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_FD);
	write_entry(eq.get(), FI_NOTIFY, 1); /* queued before the fd is fetched */
	int fd = -1;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	ASSERT_GE(fd, 0);
	EXPECT_TRUE(fd_readable(fd));
	EXPECT_TRUE(fd_readable_select(fd));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_event ee{};
	ee.events = EPOLLIN;
	ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);
	epoll_event out;
	EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 1);

	fi_eq_entry e;
	uint32_t ev;
	write_entry(eq.get(), FI_NOTIFY, 2);
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
	EXPECT_TRUE(fd_readable(fd)); /* one still queued */
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), ssize_t{sizeof e});
	EXPECT_TRUE(fd_readable(fd)); /* peek consumes nothing */
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_FALSE(fd_readable_select(fd));
	EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 0);
	fid trywait_fid = eq->fid;
	(void)trywait_fid;
	fid *fids[] = {&eq->fid};
	EXPECT_EQ(fi_trywait(fab.get(), fids, 1), 0);

	fi_eq_err_entry err{};
	err.err = FI_EIO;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &err), 0);
	EXPECT_TRUE(fd_readable(fd)); /* errors count too */
	EXPECT_EQ(fi_trywait(fab.get(), fids, 1), -FI_EAGAIN);
	fi_eq_err_entry got{};
	EXPECT_GT(fi_eq_readerr(eq.get(), &got, 0), 0);
	EXPECT_FALSE(fd_readable(fd));
	close(ep);
}

TEST(wait_obj, fd_sread_still_works)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_FD);
	fi_eq_entry e{};
	uint32_t ev;
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 10, 0), -FI_EAGAIN);
	write_entry(eq.get(), FI_NOTIFY, 3);
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, -1, 0), ssize_t{sizeof e});
}

TEST(wait_obj, pollfd_fills_one_pollfd)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_POLLFD);
	fi_wait_pollfd p{};
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAIT, &p), -FI_ETOOSMALL);
	EXPECT_EQ(p.nfds, 1u);
	pollfd pfd{};
	p.fd = &pfd;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &p), 0);
	EXPECT_GE(pfd.fd, 0);
	EXPECT_EQ(pfd.events, POLLIN);
	EXPECT_FALSE(fd_readable(pfd.fd));
	write_entry(eq.get(), FI_NOTIFY, 3);
	EXPECT_TRUE(fd_readable(pfd.fd));
}

TEST(wait_obj, mutex_cond_is_handed_out)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_MUTEX_COND);
	fi_mutex_cond mc{};
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &mc), 0);
	ASSERT_NE(mc.mutex, nullptr);
	ASSERT_NE(mc.cond, nullptr);
	EXPECT_EQ(pthread_mutex_lock(mc.mutex), 0);
	EXPECT_EQ(pthread_mutex_unlock(mc.mutex), 0);
	fi_wait_obj w;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_MUTEX_COND);
}

TEST(wait_obj, yield_sread_times_out)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_YIELD);
	fi_eq_entry e{};
	uint32_t ev;
	auto t0 = clock::now();
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 30, 0), -FI_EAGAIN);
	EXPECT_GE(ms_since(t0), 30);
	write_entry(eq.get(), FI_NOTIFY, 3);
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 30, 0), ssize_t{sizeof e});
}

TEST(wait_obj, control_bad_input)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_FD);
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAIT, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAITOBJ, nullptr), -FI_EINVAL);
	int x;
	EXPECT_EQ(fi_control(&eq->fid, FI_ENABLE, &x), -FI_ENOSYS);
	EXPECT_EQ(fi_control(&eq->fid, 9999, &x), -FI_ENOSYS);
}

/* ---- wait sets (FI_WAIT_SET, fi_wait_open, fi_wait) ---- */

TEST(wait_set, open_validates_attr)
{
	fake_fabric fab;
	fid_wait *w = nullptr;
	fi_wait_attr a{FI_WAIT_UNSPEC, 1};
	EXPECT_EQ(fi_wait_open(fab.get(), &a, &w), -FI_EBADFLAGS);
	for (int bad : {int{FI_WAIT_NONE}, int{FI_WAIT_SET}, int{FI_WAIT_POLLFD}, 50}) {
		a = {FI_WAIT_UNSPEC, 0};
		memcpy(&a.wait_obj, &bad, sizeof bad);
		EXPECT_EQ(fi_wait_open(fab.get(), &a, &w), -FI_EINVAL) << bad;
	}
	EXPECT_EQ(fi_wait_open(fab.get(), nullptr, &w), -FI_EINVAL);
	a = {FI_WAIT_UNSPEC, 0};
	EXPECT_EQ(fi_wait_open(fab.get(), &a, nullptr), -FI_EINVAL);
}

class wait_set_objs : public ::testing::TestWithParam<fi_wait_obj> {};

TEST_P(wait_set_objs, signals_when_any_attached_eq_has_an_event)
{
	fake_fabric fab;
	fid_wait *raw = nullptr;
	fi_wait_attr wa{GetParam(), 0};
	ASSERT_EQ(fi_wait_open(fab.get(), &wa, &raw), 0);
	wait_ptr ws(raw);
	EXPECT_EQ(ws->fid.fclass, size_t{FI_CLASS_WAIT});
	fi_eq_attr a{};
	a.flags = FI_WRITE;
	a.wait_obj = FI_WAIT_SET;
	a.wait_set = ws.get();
	eq_ptr eq1 = open_eq(fab.get(), a);
	eq_ptr eq2 = open_eq(fab.get(), a);
	eq_ptr eq3 = open_eq(fab.get(), a);

	auto t0 = clock::now();
	EXPECT_EQ(fi_wait(ws.get(), 20), -FI_ETIMEDOUT);
	EXPECT_GE(ms_since(t0), 20);
	fid *fids[] = {&ws->fid};
	EXPECT_EQ(fi_trywait(fab.get(), fids, 1), 0);

	write_entry(eq2.get(), FI_NOTIFY, 2);
	EXPECT_EQ(fi_wait(ws.get(), 1000), 0);
	EXPECT_EQ(fi_trywait(fab.get(), fids, 1), -FI_EAGAIN);
	write_entry(eq3.get(), FI_NOTIFY, 3);

	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_sread(eq1.get(), &ev, &e, sizeof e, 0, 0), -FI_ENOSYS);
	EXPECT_EQ(fi_eq_read(eq2.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
	EXPECT_EQ(fi_wait(ws.get(), 0), 0); /* eq3 still has one */
	EXPECT_EQ(fi_eq_read(eq3.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
	EXPECT_EQ(fi_wait(ws.get(), 0), -FI_ETIMEDOUT);

	fi_wait_obj w;
	EXPECT_EQ(fi_control(&eq1->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, FI_WAIT_SET);
	EXPECT_EQ(fi_control(&ws->fid, FI_GETWAITOBJ, &w), 0);
	EXPECT_EQ(w, GetParam());

	/* a queued event on a closing EQ stops counting */
	write_entry(eq1.get(), FI_NOTIFY, 1);
	EXPECT_EQ(fi_wait(ws.get(), 0), 0);
	EXPECT_EQ(fi_close(&ws->fid), -FI_EBUSY);
	eq1.reset();
	EXPECT_EQ(fi_wait(ws.get(), 0), -FI_ETIMEDOUT);
	eq2.reset();
	eq3.reset();
}

INSTANTIATE_TEST_SUITE_P(objs, wait_set_objs,
			 ::testing::Values(FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND,
					   FI_WAIT_YIELD));

TEST(wait_set, fd_set_is_readable_while_any_member_has_events)
{
	fake_fabric fab;
	fid_wait *raw = nullptr;
	fi_wait_attr wa{FI_WAIT_FD, 0};
	ASSERT_EQ(fi_wait_open(fab.get(), &wa, &raw), 0);
	wait_ptr ws(raw);
	int fd = -1;
	ASSERT_EQ(fi_control(&ws->fid, FI_GETWAIT, &fd), 0);
	fi_eq_attr a{};
	a.flags = FI_WRITE;
	a.wait_obj = FI_WAIT_SET;
	a.wait_set = ws.get();
	eq_ptr eq1 = open_eq(fab.get(), a);
	eq_ptr eq2 = open_eq(fab.get(), a);
	EXPECT_FALSE(fd_readable(fd));
	write_entry(eq1.get(), FI_NOTIFY, 1);
	write_entry(eq2.get(), FI_NOTIFY, 2);
	EXPECT_TRUE(fd_readable(fd));
	fi_eq_entry e;
	uint32_t ev;
	fi_eq_read(eq1.get(), &ev, &e, sizeof e, 0);
	EXPECT_TRUE(fd_readable(fd));
	fi_eq_read(eq2.get(), &ev, &e, sizeof e, 0);
	EXPECT_FALSE(fd_readable(fd));
}

TEST(wait_set, mutex_cond_set_hands_out_its_pair)
{
	fake_fabric fab;
	fid_wait *raw = nullptr;
	fi_wait_attr wa{FI_WAIT_MUTEX_COND, 0};
	ASSERT_EQ(fi_wait_open(fab.get(), &wa, &raw), 0);
	wait_ptr ws(raw);
	fi_mutex_cond mc{};
	EXPECT_EQ(fi_control(&ws->fid, FI_GETWAIT, &mc), 0);
	EXPECT_NE(mc.mutex, nullptr);
	EXPECT_NE(mc.cond, nullptr);
	int fd;
	fi_wait_attr wu{FI_WAIT_UNSPEC, 0};
	fid_wait *raw2 = nullptr;
	ASSERT_EQ(fi_wait_open(fab.get(), &wu, &raw2), 0);
	wait_ptr ws2(raw2);
	EXPECT_EQ(fi_control(&ws2->fid, FI_GETWAIT, &fd), -FI_ENODATA);
}

TEST(fi_trywait, rejects_foreign_fids)
{
	fake_fabric fab;
	fid f = dummy_fid(FI_CLASS_CQ);
	fid *fids[] = {&f};
	EXPECT_EQ(fi_trywait(fab.get(), fids, 1), -FI_EINVAL);
	EXPECT_EQ(fi_trywait(fab.get(), nullptr, 1), -FI_EINVAL);
	EXPECT_EQ(fi_trywait(fab.get(), nullptr, 0), 0);
}

/* ---- fi_eq_read ---- */

TEST(fi_eq_read, empty_queue_is_eagain)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), -FI_EAGAIN);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), -FI_EAGAIN);
}

TEST(fi_eq_read, one_event_per_call_in_order_with_bytes_read)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fid av = dummy_fid(FI_CLASS_AV), mr = dummy_fid(FI_CLASS_MR), mc = dummy_fid(FI_CLASS_MC);
	int c1, c2, c3;
	ASSERT_EQ(wu::eq_post_entry(eq.get(), FI_AV_COMPLETE, &av, &c1, 10), 24);
	ASSERT_EQ(wu::eq_post_entry(eq.get(), FI_MR_COMPLETE, &mr, &c2, 20), 24);
	ASSERT_EQ(wu::eq_post_entry(eq.get(), FI_JOIN_COMPLETE, &mc, &c3, 30), 24);
	struct {
		uint32_t ev;
		fid *f;
		void *ctx;
		uint64_t data;
	} want[] = {{FI_AV_COMPLETE, &av, &c1, 10}, {FI_MR_COMPLETE, &mr, &c2, 20},
		    {FI_JOIN_COMPLETE, &mc, &c3, 30}};
	for (auto &w : want) {
		fi_eq_entry e[2]{};
		uint32_t ev = 99;
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, e, sizeof e, 0), ssize_t{sizeof(fi_eq_entry)});
		EXPECT_EQ(ev, w.ev);
		EXPECT_EQ(e[0].fid, w.f);
		EXPECT_EQ(e[0].context, w.ctx);
		EXPECT_EQ(e[0].data, w.data);
		EXPECT_EQ(e[1].fid, nullptr); /* one event per call */
	}
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), -FI_EAGAIN);
}

TEST(fi_eq_read, peek_reads_without_consuming)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	write_entry(eq.get(), FI_NOTIFY, 1);
	write_entry(eq.get(), FI_NOTIFY, 2);
	fi_eq_entry e{};
	uint32_t ev;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), 24);
		EXPECT_EQ(e.data, 1u);
	}
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
	EXPECT_EQ(e.data, 1u);
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
	EXPECT_EQ(e.data, 2u);
}

TEST(fi_eq_read, bad_input)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_UNSPEC);
	write_entry(eq.get(), FI_NOTIFY, 1);
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), nullptr, &e, sizeof e, 0), -FI_EINVAL);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, nullptr, sizeof e, 0), -FI_EINVAL);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_WRITE), -FI_EBADFLAGS);
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, 0, 1ULL << 50), -FI_EBADFLAGS);
	EXPECT_EQ(fi_eq_sread(eq.get(), nullptr, &e, sizeof e, 0, 0), -FI_EINVAL);
	/* too small for a fi_eq_entry: refused, the event stays queued */
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, 0, 0), -FI_ETOOSMALL);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e - 1, 0), -FI_ETOOSMALL);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
}

TEST(fi_eq_read, cm_entries_carry_data_truncated_to_the_buffer)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fid ep = dummy_fid(FI_CLASS_EP);
	for (size_t datalen : {size_t{0}, size_t{8}, size_t{40}, size_t{41}, size_t{300}}) {
		std::vector<unsigned char> in(sizeof(fi_eq_cm_entry) + datalen);
		auto *cm = reinterpret_cast<fi_eq_cm_entry *>(in.data());
		cm->fid = &ep;
		cm->info = nullptr;
		for (size_t i = 0; i < datalen; i++)
			cm->data[i] = static_cast<uint8_t>(i + 1);
		for (uint32_t event : {FI_CONNECTED, FI_SHUTDOWN}) {
			ASSERT_EQ(wu::eq_post(eq.get(), event, in.data(), in.size()), ssize_t(in.size()));
			/* whole */
			std::vector<unsigned char> out(in.size() + 16, 0xee);
			uint32_t ev;
			ASSERT_EQ(fi_eq_read(eq.get(), &ev, out.data(), out.size(), FI_PEEK),
				  ssize_t(in.size()));
			EXPECT_EQ(ev, event);
			EXPECT_EQ(0, memcmp(out.data(), in.data(), in.size()));
			/* header only fits: refused below it */
			EXPECT_EQ(fi_eq_read(eq.get(), &ev, out.data(), sizeof(fi_eq_cm_entry) - 1, 0),
				  -FI_ETOOSMALL);
			/* truncated: return value tells how much data came */
			size_t room = sizeof(fi_eq_cm_entry) + datalen / 2;
			std::fill(out.begin(), out.end(), 0xee);
			ASSERT_EQ(fi_eq_read(eq.get(), &ev, out.data(), room, 0), ssize_t(room));
			EXPECT_EQ(0, memcmp(out.data(), in.data(), room));
			EXPECT_EQ(out[room], 0xee);
		}
	}
}

TEST(fi_eq_read, connreq_info_belongs_to_the_reader)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fid pep = dummy_fid(FI_CLASS_PEP);
	fi_info *info = wu::info_alloc();
	ASSERT_NE(info, nullptr);
	unsigned char buf[sizeof(fi_eq_cm_entry) + 4];
	auto *cm = reinterpret_cast<fi_eq_cm_entry *>(buf);
	cm->fid = &pep;
	cm->info = info;
	memcpy(cm->data, "abcd", 4);
	ASSERT_EQ(wu::eq_post(eq.get(), FI_CONNREQ, buf, sizeof buf), ssize_t{sizeof buf});
	unsigned char out[64];
	uint32_t ev;
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, out, sizeof out, 0), ssize_t{sizeof buf});
	EXPECT_EQ(ev, uint32_t{FI_CONNREQ});
	auto *got = reinterpret_cast<fi_eq_cm_entry *>(out);
	EXPECT_EQ(got->info, info);
	EXPECT_EQ(0, memcmp(got->data, "abcd", 4));
	wu::info_free(got->info); /* ours now; the sanitizer build catches a double free */
}

TEST(fi_eq_read, unread_connreq_info_is_freed_with_the_eq)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fid pep = dummy_fid(FI_CLASS_PEP);
	fi_eq_cm_entry cm{&pep, wu::info_alloc()};
	ASSERT_EQ(wu::eq_post(eq.get(), FI_CONNREQ, &cm, sizeof cm), ssize_t{sizeof cm});
	/* closing loses the event; the leak checker verifies info went too */
	EXPECT_EQ(fi_close(&eq.release()->fid), 0);
	EXPECT_FALSE(wu::test::leaks_now()) << "the unread event's info outlived the EQ";
}

/* ---- fi_eq_readerr and error entries ---- */

TEST(fi_eq_readerr, errors_are_out_of_band)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_UNSPEC);
	fid ep = dummy_fid(FI_CLASS_EP);
	int ctx;
	write_entry(eq.get(), FI_NOTIFY, 1);
	fi_eq_err_entry in{};
	in.fid = &ep;
	in.context = &ctx;
	in.data = 77;
	in.err = FI_ECONNREFUSED;
	in.prov_errno = 111;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &in), 0);
	fi_eq_entry e;
	uint32_t ev;
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), -FI_EAVAIL);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), -FI_EAVAIL);
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, -1, 0), -FI_EAVAIL);
	fi_eq_err_entry out{};
	ASSERT_EQ(fi_eq_readerr(eq.get(), &out, 0), ssize_t{sizeof out});
	EXPECT_EQ(out.fid, &ep);
	EXPECT_EQ(out.context, &ctx);
	EXPECT_EQ(out.data, 77u);
	EXPECT_EQ(out.err, FI_ECONNREFUSED);
	EXPECT_EQ(out.prov_errno, 111);
	EXPECT_EQ(out.err_data, nullptr);
	EXPECT_EQ(out.err_data_size, 0u);
	EXPECT_EQ(fi_eq_readerr(eq.get(), &out, 0), -FI_EAGAIN);
	EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), ssize_t{sizeof e});
}

TEST(fi_eq_readerr, bad_input)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	fi_eq_err_entry out{};
	EXPECT_EQ(fi_eq_readerr(eq.get(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_eq_readerr(eq.get(), &out, FI_PEEK), -FI_EBADFLAGS);
	EXPECT_EQ(fi_eq_readerr(eq.get(), &out, 0), -FI_EAGAIN);
	fi_eq_err_entry bad{};
	EXPECT_EQ(wu::eq_post_error(eq.get(), &bad), -FI_EINVAL); /* err must be set */
	EXPECT_EQ(wu::eq_post_error(eq.get(), nullptr), -FI_EINVAL);
	EXPECT_EQ(wu::eq_post(nullptr, FI_NOTIFY, &out, 8), -FI_EBADF);
}

TEST(fi_eq_readerr, err_data_into_the_callers_buffer)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	const char detail[] = "remote side said no";
	fi_eq_err_entry in{};
	in.err = FI_EIO;
	in.err_data = const_cast<char *>(detail);
	in.err_data_size = sizeof detail;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &in), 0);
	ASSERT_EQ(wu::eq_post_error(eq.get(), &in), 0);

	char mine[64] = {};
	fi_eq_err_entry out{};
	out.err_data = mine;
	out.err_data_size = sizeof mine;
	ASSERT_EQ(fi_eq_readerr(eq.get(), &out, 0), ssize_t{sizeof out});
	EXPECT_EQ(out.err_data, mine);
	EXPECT_EQ(out.err_data_size, sizeof detail);
	EXPECT_STREQ(mine, detail);

	char tiny[6] = {};
	out.err_data = tiny;
	out.err_data_size = 5;
	ASSERT_EQ(fi_eq_readerr(eq.get(), &out, 0), ssize_t{sizeof out});
	EXPECT_EQ(out.err_data_size, 5u);
	EXPECT_EQ(std::string(tiny, 5), std::string(detail, 5));
	EXPECT_EQ(tiny[5], 0);
}

TEST(fi_eq_readerr, err_data_owned_by_the_eq_when_size_is_zero)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	const char detail[] = "first";
	fi_eq_err_entry in{};
	in.err = FI_EIO;
	in.err_data = const_cast<char *>(detail);
	in.err_data_size = sizeof detail;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &in), 0);
	fi_eq_err_entry out{};
	ASSERT_EQ(fi_eq_readerr(eq.get(), &out, 0), ssize_t{sizeof out});
	ASSERT_NE(out.err_data, nullptr);
	EXPECT_NE(out.err_data, static_cast<const void *>(detail)); /* a copy */
	EXPECT_EQ(out.err_data_size, sizeof detail);
	EXPECT_STREQ(static_cast<char *>(out.err_data), detail);
	char buf[64];
	EXPECT_STREQ(fi_eq_strerror(eq.get(), out.prov_errno, out.err_data, buf, sizeof buf), buf);
}

TEST(fi_eq_readerr, api_below_1_5_uses_eq_buffer_and_old_entry_size)
{
	fake_fabric fab(FI_VERSION(1, 4));
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	const char detail[] = "old api";
	fi_eq_err_entry in{};
	in.err = FI_EIO;
	in.err_data = const_cast<char *>(detail);
	in.err_data_size = sizeof detail;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &in), 0);
	char mine[64] = {};
	fi_eq_err_entry out{};
	out.err_data = mine;
	out.err_data_size = 12345; /* not a member in 1.4: must be neither read nor written */
	ssize_t n = fi_eq_readerr(eq.get(), &out, 0);
	EXPECT_EQ(n, ssize_t(offsetof(fi_eq_err_entry, err_data_size)));
	EXPECT_EQ(out.err_data_size, 12345u);
	ASSERT_NE(out.err_data, static_cast<void *>(mine));
	EXPECT_STREQ(static_cast<char *>(out.err_data), detail);
	EXPECT_EQ(mine[0], 0);
}

TEST(fi_eq_strerror, makes_text)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	const char *s = fi_eq_strerror(eq.get(), FI_ECONNREFUSED, nullptr, nullptr, 0);
	ASSERT_NE(s, nullptr);
	EXPECT_STREQ(s, fi_strerror(FI_ECONNREFUSED));
	char buf[8];
	EXPECT_EQ(fi_eq_strerror(eq.get(), FI_ECONNREFUSED, nullptr, buf, sizeof buf), buf);
	EXPECT_EQ(std::string(buf), std::string(s).substr(0, 7));
	EXPECT_NE(fi_eq_strerror(eq.get(), -123456, nullptr, nullptr, 0), nullptr);
}

/* ---- overrun (NOTES) ---- */

TEST(overrun, valid_events_then_a_sticky_overrun_error)
{
	fake_fabric fab;
	int ctx;
	fi_eq_attr a{};
	a.size = 4;
	a.flags = FI_WRITE;
	a.wait_obj = FI_WAIT_FD;
	eq_ptr eq = open_eq(fab.get(), a, &ctx);
	int fd;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	for (uint64_t i = 0; i < 4; i++)
		ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, i), 24);
	EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 4), -FI_EOVERRUN);
	EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 5), -FI_EOVERRUN);
	fi_eq_err_entry err{};
	err.err = FI_EIO;
	EXPECT_EQ(wu::eq_post_error(eq.get(), &err), -FI_EOVERRUN);
	fi_eq_entry e;
	uint32_t ev;
	for (uint64_t i = 0; i < 4; i++) {
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
		EXPECT_EQ(e.data, i); /* nothing lost, nothing twice */
	}
	EXPECT_TRUE(fd_readable(fd));
	for (int round = 0; round < 3; round++) {
		EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), -FI_EAVAIL);
		fi_eq_err_entry out{};
		ASSERT_EQ(fi_eq_readerr(eq.get(), &out, 0), ssize_t{sizeof out});
		EXPECT_EQ(out.err, FI_EOVERRUN);
		EXPECT_EQ(out.fid, &eq->fid);
		EXPECT_EQ(out.context, &ctx);
	}
	EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 9), -FI_EOVERRUN); /* fatal */
	EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof e, -1, 0), -FI_EAVAIL);
}

TEST(overrun, errors_count_against_the_size)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE, 2);
	fi_eq_err_entry err{};
	err.err = FI_EIO;
	ASSERT_EQ(wu::eq_post_error(eq.get(), &err), 0);
	ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, 1), 24);
	EXPECT_EQ(write_entry(eq.get(), FI_NOTIFY, 2), -FI_EOVERRUN);
	fi_eq_err_entry out{};
	ASSERT_GT(fi_eq_readerr(eq.get(), &out, 0), 0);
	EXPECT_EQ(out.err, FI_EIO);
	fi_eq_entry e;
	uint32_t ev;
	ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
	EXPECT_EQ(e.data, 1u);
	ASSERT_GT(fi_eq_readerr(eq.get(), &out, 0), 0);
	EXPECT_EQ(out.err, FI_EOVERRUN);
}

TEST(overrun, ring_growth_keeps_order)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE, FI_WRITE, 5000);
	fi_eq_entry e;
	uint32_t ev;
	uint64_t next_read = 0, next_write = 0;
	/* interleave so the ring wraps before it grows */
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 90; i++)
			ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, next_write++), 24);
		for (int i = 0; i < 40; i++) {
			ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, 0), 24);
			ASSERT_EQ(e.data, next_read++);
		}
	}
	while (fi_eq_read(eq.get(), &ev, &e, sizeof e, 0) == 24)
		ASSERT_EQ(e.data, next_read++);
	EXPECT_EQ(next_read, next_write);
}

/* ---- fi_close, binding, purge ---- */

TEST(fi_close, loses_queued_events_and_frees_everything)
{
	fake_fabric fab;
	for (fi_wait_obj w : {FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_MUTEX_COND,
			      FI_WAIT_YIELD, FI_WAIT_POLLFD}) {
		SCOPED_TRACE(w);
		eq_ptr eq = open_eq(fab.get(), w);
		ASSERT_TRUE(eq);
		int fd = -1;
		if (w == FI_WAIT_FD) {
			ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
		}
		std::vector<char> big(300, 'x');
		fi_eq_entry e;
		ASSERT_EQ(write_entry(eq.get(), FI_NOTIFY, 1), ssize_t{sizeof e});
		ASSERT_EQ(fi_eq_write(eq.get(), FI_NOTIFY, big.data(), big.size(), 0), ssize_t(big.size()));
		uint32_t ev;
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), ssize_t{sizeof e});
		fi_eq_err_entry err{};
		err.err = FI_EIO;
		err.err_data = big.data();
		err.err_data_size = big.size();
		ASSERT_EQ(wu::eq_post_error(eq.get(), &err), 0);
		ASSERT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof e, FI_PEEK), -FI_EAVAIL)
			<< "the error is queued too when the EQ closes";
		EXPECT_EQ(fi_close(&eq.release()->fid), 0);
		if (fd >= 0) {
			EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the wait fd is closed with the EQ";
		}
		EXPECT_FALSE(wu::test::leaks_now()) << "queued events outlived their EQ (LeakSanitizer builds)";
	}
}

TEST(fi_close, busy_while_bound)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_NONE);
	ASSERT_EQ(wu::eq_bind(&eq->fid), 0); /* an AV */
	ASSERT_EQ(wu::eq_bind(&eq->fid), 0); /* an endpoint */
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBUSY);
	EXPECT_EQ(wu::eq_unbind(&eq->fid), 0);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBUSY);
	EXPECT_EQ(wu::eq_unbind(&eq->fid), 0);
	EXPECT_EQ(wu::eq_unbind(&eq->fid), -FI_EINVAL); /* not bound any more */
	fid other = dummy_fid(FI_CLASS_CQ);
	EXPECT_EQ(wu::eq_bind(&other), -FI_EINVAL);
	EXPECT_EQ(wu::eq_bind(nullptr), -FI_EINVAL);
}

TEST(fi_close, closed_handles_fail_cleanly)
{
	fake_fabric fab;
	fid_eq *eq = nullptr;
	fi_eq_attr a{};
	a.flags = FI_WRITE;
	a.wait_obj = FI_WAIT_UNSPEC;
	ASSERT_EQ(fi_eq_open(fab.get(), &a, &eq, nullptr), 0);
	write_entry(eq, FI_NOTIFY, 1);
	ASSERT_EQ(fi_close(&eq->fid), 0);
	fi_eq_entry e;
	uint32_t ev;
	fi_eq_err_entry err{};
	EXPECT_EQ(fi_eq_read(eq, &ev, &e, sizeof e, 0), -FI_EBADF);
	EXPECT_EQ(fi_eq_sread(eq, &ev, &e, sizeof e, -1, 0), -FI_EBADF);
	EXPECT_EQ(fi_eq_readerr(eq, &err, 0), -FI_EBADF);
	EXPECT_EQ(write_entry(eq, FI_NOTIFY, 1), -FI_EBADF);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBADF);
	int fd;
	EXPECT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_EBADF);
	EXPECT_NE(fi_eq_strerror(eq, 1, nullptr, nullptr, 0), nullptr);
	EXPECT_FALSE(wu::is_eq(&eq->fid));
	EXPECT_EQ(wu::eq_post_entry(eq, FI_NOTIFY, nullptr, nullptr, 0), -FI_EBADF);
	EXPECT_EQ(wu::eq_bind(&eq->fid), -FI_EINVAL);

	fid_wait *w = nullptr;
	fi_wait_attr wa{FI_WAIT_UNSPEC, 0};
	ASSERT_EQ(fi_wait_open(fab.get(), &wa, &w), 0);
	ASSERT_EQ(fi_close(&w->fid), 0);
	EXPECT_EQ(fi_wait(w, 0), -FI_EBADF);
	EXPECT_EQ(fi_close(&w->fid), -FI_EBADF);
}

TEST(fi_close, closing_objects_purge_their_events)
{
	fake_fabric fab;
	eq_ptr eq = open_eq(fab.get(), FI_WAIT_FD);
	int fd;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	fid av = dummy_fid(FI_CLASS_AV), ep = dummy_fid(FI_CLASS_EP);
	for (uint64_t i = 0; i < 100; i++)
		wu::eq_post_entry(eq.get(), FI_AV_COMPLETE, (i % 3) ? &av : &ep, nullptr, i);
	fi_eq_cm_entry cm{&ep, wu::info_alloc()};
	wu::eq_post(eq.get(), FI_CONNREQ, &cm, sizeof cm); /* info freed by the purge */
	std::vector<unsigned char> big(200);
	fid *epp = &ep;
	memcpy(big.data(), &epp, sizeof epp);
	wu::eq_post(eq.get(), FI_NOTIFY, big.data(), big.size());
	fi_eq_err_entry err{};
	err.err = FI_EIO;
	err.fid = &ep;
	wu::eq_post_error(eq.get(), &err);
	err.fid = &av;
	wu::eq_post_error(eq.get(), &err);

	EXPECT_EQ(wu::eq_purge(eq.get(), &ep), 34u + 1 + 1 + 1);
	fi_eq_err_entry out{};
	ASSERT_GT(fi_eq_readerr(eq.get(), &out, 0), 0);
	EXPECT_EQ(out.fid, &av);
	fi_eq_entry e;
	uint32_t ev;
	size_t n = 0;
	while (fi_eq_read(eq.get(), &ev, &e, sizeof e, 0) == 24) {
		EXPECT_EQ(e.fid, &av);
		EXPECT_NE(e.data % 3, 0u);
		n++;
	}
	EXPECT_EQ(n, 66u);
	EXPECT_FALSE(fd_readable(fd));
	wu::eq_post_entry(eq.get(), FI_AV_COMPLETE, &av, nullptr, 1);
	EXPECT_TRUE(fd_readable(fd));
	EXPECT_EQ(wu::eq_purge(eq.get(), &av), 1u);
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(wu::eq_purge(eq.get(), &av), 0u);
}

TEST(fi_close, parent_reference_is_held_until_close)
{
	fake_fabric fab;
	wu::refs parent;
	fid_eq *eq = nullptr;
	fi_eq_attr a{};
	ASSERT_EQ(wu::eq_open(fab.get(), FI_VERSION(1, 17), &a, &eq, nullptr, wu::child_ref(parent)), 0);
	EXPECT_EQ(parent.count(), 1);
	ASSERT_EQ(wu::eq_bind(&eq->fid), 0);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBUSY);
	EXPECT_EQ(parent.count(), 1);
	wu::eq_unbind(&eq->fid);
	EXPECT_EQ(fi_close(&eq->fid), 0);
	EXPECT_EQ(parent.count(), 0);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBADF);
	EXPECT_EQ(parent.count(), 0);
	/* A refused open drops the reference it was handed. */
	fi_eq_attr bad{};
	bad.flags = ~uint64_t{0};
	EXPECT_EQ(wu::eq_open(fab.get(), FI_VERSION(1, 17), &bad, &eq, nullptr, wu::child_ref(parent)),
		  -FI_EBADFLAGS);
	EXPECT_EQ(parent.count(), 0);
	fid_wait *w = nullptr;
	fi_wait_attr wa{FI_WAIT_UNSPEC, 0};
	ASSERT_EQ(wu::wait_open(fab.get(), &wa, &w, wu::child_ref(parent)), 0);
	EXPECT_EQ(parent.count(), 1);
	EXPECT_EQ(fi_close(&w->fid), 0);
	EXPECT_EQ(parent.count(), 0);
}
