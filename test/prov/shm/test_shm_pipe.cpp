/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm provider's pipelined eager path (src/prov/shm/pipe.cpp):
 * messages above one bounce slot up to FI_SHM_PIPE_MAX travel in
 * fragments through several of the sender's slots, copied out by the
 * receiver as they arrive.  Two processes (forked before any fabric
 * object is opened, talking through pipes); the parent receives.
 *  - expected: the receive is posted first; 16 KiB + 1 B .. 256 KiB, the
 *    content arrives whole.
 *  - unexpected: the message arrives (whole) before the receive.
 *  - iovecs on both sides, cut differently; truncation into a shorter
 *    buffer (FI_ETRUNC, nothing written past it), posted first or late.
 *  - posted_mid_stream: the sender has 2 slots, so only part of the
 *    message goes out before its progress stalls; the receive is posted
 *    then (it must not complete yet), and completes whole once the sender
 *    progresses again.
 *  - unexp_limit: several messages past FI_SHM_UNEXP_LIMIT arrive before
 *    any receive (set aside, then delivered in order).
 *  - sender_killed: the sender dies (SIGKILL) with part of the message
 *    out, the receive posted before or after: an FI_EHOSTDOWN error
 *    completion within the bound, never success, never a hang.
 * Every wait is bounded (a failure, never a hang). */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <sys/uio.h>

#include <cstdlib>

using namespace wu::test::shm;

namespace {

constexpr uint64_t tag = 21;
constexpr int bound_ms = 30000;
constexpr int pipe_ms = 60000;

enum send_mode : char {
	s_poll = 'p', /* sends when told, polls until the completion */
	s_stall = 's', /* 2 slots: sends when told, then blocks until told to poll */
};

struct spec {
	send_mode mode = s_poll;
	size_t len = 65536;
	int count = 1; /* messages, tags tag, tag + 1, ... */
	std::vector<size_t> tx_iov;
};

[[noreturn]] void run_child(const spec &s, int in, int out)
{
	alarm(300); /* never outlive a failed parent */
	if (s.mode == s_stall)
		setenv("FI_SHM_BOUNCE_SLOTS", "2", 1);
	env v(FI_TAGGED);
	ep e(v);
	if (v.error || e.error)
		_exit(10);
	fi_addr_t to = meet_parent(v, e, in, out, pipe_ms);
	if (to == FI_ADDR_NOTAVAIL)
		_exit(14);
	fi_context2 ctx;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	/* 8 B first: the first cell to a peer waits for its answer, which
	 * needs our progress; after it the large one goes out at once. */
	uint64_t word = 1;
	if (fi_tsend(e.e, &word, sizeof word, nullptr, to, tag + 100, &ctx) || wait_cq(e.tx, &ce, &err, deadline) != 1)
		_exit(18);
	char go = 0;
	if (!get_progress(in, &go, 1, pipe_ms, {e.tx, e.rx}))
		_exit(17);
	std::vector<std::vector<unsigned char>> bufs(size_t(s.count), std::vector<unsigned char>(s.len));
	int sent = 0;
	for (int i = 0; i < s.count; i++) {
		fill(bufs[size_t(i)], tag + uint64_t(i));
		std::vector<iovec> iov;
		size_t at = 0;
		for (size_t n : s.tx_iov) {
			iov.push_back({bufs[size_t(i)].data() + at, n});
			at += n;
		}
		if (at < s.len || iov.empty())
			iov.push_back({bufs[size_t(i)].data() + at, s.len - at});
		ssize_t r;
		while ((r = fi_tsendv(e.e, iov.data(), nullptr, iov.size(), to, tag + uint64_t(i), &ctx)) == -FI_EAGAIN &&
		       clock::now() < deadline)
			fi_cq_read(e.tx, nullptr, 0);
		if (r) {
			char c = 'F';
			put(out, &c, 1);
			_exit(16);
		}
		sent++;
	}
	char c = 'S';
	put(out, &c, 1);
	if (s.mode == s_stall && !get(in, &go, 1, pipe_ms)) /* no progress meanwhile */
		_exit(19);
	int done = 0;
	for (int i = 0; i < sent; i++) {
		int r = wait_cq(e.tx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
		if (r == 1)
			done++;
	}
	c = done == sent ? 'C' : 'E';
	put(out, &c, 1);
	child_done(e, in, pipe_ms);
}

using pair = duo;

void start(pair &p, const spec &s)
{
	ASSERT_TRUE(fork_peer(p.ch, [&](int in, int out) { run_child(s, in, out); }));
	std::string bad = p.open(FI_TAGGED, pipe_ms);
	ASSERT_TRUE(bad.empty()) << bad;
	/* The child's first 8 B. */
	uint64_t word = 0;
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(p.me->e, &word, sizeof word, nullptr, p.a, tag + 100, 0, &ctx), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	ASSERT_EQ(wait_cq(p.me->rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms)), 1);
}

char report(pair &p)
{
	char c = p.report(pipe_ms);
	EXPECT_NE(c, 0) << "the child said nothing";
	return c;
}

void go(pair &p)
{
	char g = 1;
	ASSERT_TRUE(put(p.ch.to, &g, 1));
}

/* The child's byte without our progress: a stalled sender's slots stay
 * taken while it sends (released ones it would reuse at once). */
char report_quiet(pair &p)
{
	char c = 0;
	EXPECT_TRUE(get(p.ch.from, &c, 1, pipe_ms)) << "the child said nothing";
	return c;
}

void finish_child(pair &p)
{
	int st = p.release(pipe_ms);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
}

/* Progress for ms without expecting a completion on rx. */
int idle_rx(pair &p, int ms, fi_cq_tagged_entry *ce, fi_cq_err_entry *err)
{
	return wait_cq(p.me->rx, ce, err, clock::now() + std::chrono::milliseconds(ms));
}

struct posted {
	std::vector<unsigned char> buf;
	std::vector<iovec> iov;
	fi_context2 ctx;
	size_t room = 0;
	static constexpr size_t guard = 4096;
};

void post(pair &p, posted &r, size_t room, const std::vector<size_t> &cut, uint64_t t = tag)
{
	r.room = room;
	r.buf.assign(room + posted::guard, 0xa5);
	size_t at = 0;
	for (size_t n : cut) {
		r.iov.push_back({r.buf.data() + at, n});
		at += n;
	}
	if (at < room || r.iov.empty())
		r.iov.push_back({r.buf.data() + at, room - at});
	ASSERT_EQ(fi_trecvv(p.me->e, r.iov.data(), nullptr, r.iov.size(), p.a, t, 0, &r.ctx), 0);
}

/* The receive's completion and its bytes, as message len of tag t. */
void check_landed(pair &p, posted &r, size_t len, uint64_t t = tag)
{
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int n = wait_cq(p.me->rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	if (r.room >= len) {
		ASSERT_EQ(n, 1) << "receive of " << len << " B: " << (n ? fi_strerror(err.err) : "nothing");
		EXPECT_EQ(ce.len, len);
		EXPECT_EQ(ce.tag, t);
		EXPECT_EQ(ce.op_context, &r.ctx);
	} else {
		ASSERT_EQ(n, -1) << "a truncated receive completed without an error";
		EXPECT_EQ(err.err, FI_ETRUNC);
		EXPECT_EQ(err.olen, len - r.room);
		EXPECT_EQ(err.op_context, &r.ctx);
	}
	std::vector<unsigned char> want(len);
	fill(want, t);
	size_t into = std::min(r.room, len);
	EXPECT_EQ(memcmp(r.buf.data(), want.data(), into), 0) << "the bytes that landed differ";
	bool guard_ok = true;
	for (size_t i = r.room; i < r.buf.size(); i++)
		guard_ok &= r.buf[i] == 0xa5;
	EXPECT_TRUE(guard_ok) << "bytes written past the posted buffers";
}

/* One message of s, the receive posted before (early) or after it
 * arrived whole. */
void one(const spec &s, bool early, size_t room, const std::vector<size_t> &rx_cut = {})
{
	pair p;
	start(p, s);
	if (::testing::Test::HasFatalFailure())
		return;
	posted r;
	if (early)
		post(p, r, room, rx_cut);
	go(p);
	EXPECT_EQ(report(p), 'S');
	/* Eager: the send completes without our receive. */
	EXPECT_EQ(report(p), 'C');
	if (!early)
		post(p, r, room, rx_cut);
	check_landed(p, r, s.len);
	finish_child(p);
}

struct pipe_sizes : ::testing::TestWithParam<size_t> {};

} // namespace

TEST_P(pipe_sizes, expected)
{
	spec s;
	s.len = GetParam();
	one(s, true, s.len);
}

TEST_P(pipe_sizes, unexpected)
{
	spec s;
	s.len = GetParam();
	one(s, false, s.len);
}

INSTANTIATE_TEST_SUITE_P(sizes, pipe_sizes, ::testing::Values(size_t{16385}, size_t{65536}, size_t{200001}, size_t{262144}));

TEST(shm_pipe, iovecs_on_both_sides)
{
	spec s;
	s.len = 100000;
	s.tx_iov = {10000, 1, 50000};
	one(s, true, s.len, {33333, 1, 16384});
	one(s, false, s.len, {1, 40000});
}

TEST(shm_pipe, truncation)
{
	spec s;
	s.len = 65536;
	one(s, true, 30001);
	one(s, false, 40000, {16385});
}

TEST(shm_pipe, posted_mid_stream)
{
	spec s;
	s.mode = s_stall;
	s.len = 262144; /* 16 fragments; 2 slots let out 2 */
	pair p;
	start(p, s);
	if (::testing::Test::HasFatalFailure())
		return;
	go(p);
	EXPECT_EQ(report_quiet(p), 'S');
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	/* The first fragments arrive unmatched... */
	EXPECT_EQ(idle_rx(p, 100, &ce, &err), 0);
	posted r;
	post(p, r, s.len, {});
	/* ...the receive takes them but must wait for the rest. */
	EXPECT_EQ(idle_rx(p, 100, &ce, &err), 0) << "completed before its sender sent the rest";
	go(p);
	check_landed(p, r, s.len);
	EXPECT_EQ(report(p), 'C');
	finish_child(p);
}

TEST(shm_pipe, unexp_limit)
{
	/* 3 x 64 KiB against a limit of 100000 B: the second and third are set aside. */
	setenv("FI_SHM_UNEXP_LIMIT", "100000", 1);
	spec s;
	s.count = 3;
	pair p;
	start(p, s);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	if (::testing::Test::HasFatalFailure())
		return;
	go(p);
	EXPECT_EQ(report(p), 'S');
	EXPECT_EQ(report(p), 'C');
	for (int i = 0; i < s.count; i++) {
		posted r;
		post(p, r, s.len, {}, tag + uint64_t(i));
		check_landed(p, r, s.len, tag + uint64_t(i));
	}
	finish_child(p);
}

namespace {

void killed(bool post_first)
{
	spec s;
	s.mode = s_stall;
	s.len = 262144;
	pair p;
	start(p, s);
	if (::testing::Test::HasFatalFailure())
		return;
	posted r;
	if (post_first)
		post(p, r, s.len, {});
	go(p);
	EXPECT_EQ(report_quiet(p), 'S');
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	EXPECT_EQ(idle_rx(p, 100, &ce, &err), 0) << "the whole message arrived: nothing was mid-stream";
	p.ch.kill9();
	if (!post_first)
		post(p, r, s.len, {});
	int n = wait_cq(p.me->rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	ASSERT_NE(n, 0) << "no completion within " << bound_ms / 1000 << " s of the sender's death";
	ASSERT_EQ(n, -1) << "a receive whose sender died mid-message reported success";
	EXPECT_EQ(err.op_context, &r.ctx);
	EXPECT_EQ(err.err, FI_EHOSTDOWN);
}

} // namespace

TEST(shm_pipe, sender_killed_receive_posted)
{
	killed(true);
}

TEST(shm_pipe, sender_killed_receive_late)
{
	killed(false);
}

int main(int argc, char **argv)
{
	if (int r = skip_without_provider("test_shm_pipe"))
		return r;
	/* A dead peer is noticed sooner than the default second. */
	setenv("FI_SHM_DEAD_PEER_MS", "200", 1);
	/* The default, pinned so the tests keep running the path if it changes. */
	setenv("FI_SHM_PIPE_MAX", "262144", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
