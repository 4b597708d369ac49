/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm provider's split copy of LARGE messages (src/prov/shm/split.h):
 * the receiver reads chunks while the sender, progressing, writes others
 * into the posted buffer.  Two processes (forked before any fabric object
 * is opened, talking through pipes); the provider's test hook
 * (split_test_hook, the library is linked in statically) holds the
 * receiver after it published its buffers until the sender claimed a
 * chunk, so that the sender's side surely copies, or kills a side at a
 * chosen point.
 *  - sender_progressing: 64 KiB, 1 MiB and 4 MiB + 13 B, contiguous; the
 *    sender claims at least one chunk, the content arrives whole.
 *  - iovecs on both sides, cut differently; truncation into a shorter
 *    buffer (FI_ETRUNC, nothing written past it).
 *  - sender_not_progressing: the sender blocks in a pipe read after
 *    fi_tsend; the receiver copies everything alone, then the send
 *    completes once the sender polls.
 *  - receiver_without_cma: the receiver refuses single copy
 *    (FI_SHM_CMA=false): the offered split is ignored, the message is
 *    pulled through bounce slots.
 *  - sender_killed_mid_split: the sender dies holding a claimed chunk; the
 *    receive fails (never hangs, never reports success).
 *  - receiver_killed_mid_split: the receiver dies after publishing; the
 *    send fails within the bound.
 * Every wait is bounded (a failure, never a hang). */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <sys/uio.h>

#include <atomic>
#include <cstdlib>

#include "prov/shm/split.h"

using namespace wu::test::shm;

namespace {

constexpr uint64_t tag = 11;
constexpr int bound_ms = 30000;
constexpr int pipe_ms = 60000;

enum send_mode : char {
	s_poll = 'p',    /* sends, polls its CQ until the completion */
	s_idle = 'i',    /* sends, then blocks on the pipe until told to poll */
	s_die = 'd',     /* sends, polls; dies (SIGKILL) once it claimed a chunk */
	r_die = 'r',     /* child is the receiver: posts, dies once it published */
};

struct spec {
	send_mode mode = s_poll;
	size_t len = 1 << 20;
	std::vector<size_t> tx_iov; /* sender's cut (empty: one buffer) */
};

/* The parent's hook: after publishing, wait (bounded) until the sender
 * claimed a chunk.  claimed_seen tells the test it did. */
std::atomic<bool> claimed_seen{false};
void wait_for_sender_claim(wu::shm::split_point where, wu::shm::split_ctl *ctl)
{
	if (where != wu::shm::SPLIT_RX_PUBLISHED)
		return;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	while (ctl->next.load() == 0 && clock::now() < deadline)
		usleep(20);
	if (ctl->next.load() > 0)
		claimed_seen = true;
}
void die_on_claim(wu::shm::split_point where, wu::shm::split_ctl *)
{
	if (where == wu::shm::SPLIT_TX_CLAIMED)
		raise(SIGKILL);
}
void die_on_publish(wu::shm::split_point where, wu::shm::split_ctl *)
{
	if (where == wu::shm::SPLIT_RX_PUBLISHED)
		raise(SIGKILL);
}

/* Sends s.len bytes of pattern(tag) to the parent as s says. */
[[noreturn]] void run_child(const spec &s, int in, int out)
{
	alarm(300); /* never outlive a failed parent */
	if (s.mode == s_die)
		wu::shm::split_test_hook = die_on_claim;
	if (s.mode == r_die)
		wu::shm::split_test_hook = die_on_publish;
	env v(FI_TAGGED);
	ep e(v);
	if (v.error || e.error)
		_exit(10);
	fi_addr_t to = meet_parent(v, e, in, out, pipe_ms);
	if (to == FI_ADDR_NOTAVAIL)
		_exit(14);
	std::vector<unsigned char> buf(s.len);
	fill(buf, tag);
	fi_context2 ctx;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	if (s.mode == r_die) {
		ssize_t r = fi_trecv(e.e, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, tag, 0, &ctx);
		char c = r ? 'F' : 'R';
		put(out, &c, 1);
		wait_cq(e.rx, &ce, &err, deadline); /* the hook kills us in here */
		_exit(15);
	}
	if (s.mode == s_idle) {
		/* The first cell to a peer waits for its answer, which needs our
		 * progress: 8 B first (it completes once pushed), so that the
		 * large one goes out from fi_tsendv itself. */
		uint64_t word = 1;
		if (fi_tsend(e.e, &word, sizeof word, nullptr, to, tag + 1, &ctx) ||
		    wait_cq(e.tx, &ce, &err, deadline) != 1)
			_exit(18);
	}
	std::vector<iovec> iov;
	size_t at = 0;
	for (size_t n : s.tx_iov) {
		iov.push_back({buf.data() + at, n});
		at += n;
	}
	if (at < s.len || iov.empty())
		iov.push_back({buf.data() + at, s.len - at});
	ssize_t r;
	while ((r = fi_tsendv(e.e, iov.data(), nullptr, iov.size(), to, tag, &ctx)) == -FI_EAGAIN &&
	       clock::now() < deadline)
		fi_cq_read(e.tx, nullptr, 0);
	char c = r ? 'F' : 'S';
	put(out, &c, 1);
	if (r)
		_exit(16);
	char go = 0;
	if (s.mode == s_idle && !get(in, &go, 1, pipe_ms)) /* no progress meanwhile */
		_exit(17);
	int done = wait_cq(e.tx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	c = done == 1 ? 'C' : done == -1 ? 'E' : 'T';
	put(out, &c, 1);
	child_done(e, in, pipe_ms);
}

using pair = duo;

/* Forks the child, then opens our side and swaps addresses. */
void start(pair &p, const spec &s)
{
	ASSERT_TRUE(fork_peer(p.ch, [&](int in, int out) { run_child(s, in, out); }));
}

void connect(pair &p)
{
	std::string bad = p.open(FI_TAGGED, pipe_ms);
	ASSERT_TRUE(bad.empty()) << bad;
}

/* The child's report, driving our progress meanwhile. */
char report(pair &p)
{
	char c = p.report(pipe_ms);
	EXPECT_NE(c, 0) << "the child said nothing";
	return c;
}

/* Lets the child go and reaps it. */
void finish_child(pair &p)
{
	int st = p.release(pipe_ms);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
}

/* A completion of cq, reaping the child (a dead one's pid must vanish for
 * the provider to call it gone) while we wait. */
int wait_reaping(pair &p, fid_cq *cq, fi_cq_tagged_entry *ce, fi_cq_err_entry *err)
{
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	for (;;) {
		int r = wait_cq(cq, ce, err, clock::now() + std::chrono::milliseconds(20));
		if (r || clock::now() > deadline)
			return r;
		int st;
		if (p.ch.pid > 0 && waitpid(p.ch.pid, &st, WNOHANG) == p.ch.pid)
			p.ch.pid = -1;
	}
}

struct hook_guard {
	explicit hook_guard(void (*h)(wu::shm::split_point, wu::shm::split_ctl *))
	{
		claimed_seen = false;
		wu::shm::split_test_hook = h;
	}
	~hook_guard() { wu::shm::split_test_hook = nullptr; }
};

/* Receives s from a sending child into rx_cut (the last part takes the
 * rest of room bytes) and checks what arrived. */
void receive_and_check(const spec &s, std::vector<size_t> rx_cut, size_t room, bool expect_claim,
		       bool refuse_cma = false)
{
	pair p;
	start(p, s);
	/* The child keeps single copy; we refuse it (read as we open). */
	if (refuse_cma)
		setenv("FI_SHM_CMA", "false", 1);
	connect(p);
	if (refuse_cma)
		unsetenv("FI_SHM_CMA");
	if (::testing::Test::HasFatalFailure())
		return;
	EXPECT_EQ(report(p), 'S') << "the child's fi_tsendv failed";
	/* Room plus a guard that must stay untouched. */
	const size_t guard = 4096;
	std::vector<unsigned char> buf(room + guard, 0xa5);
	std::vector<iovec> iov;
	size_t at = 0;
	for (size_t n : rx_cut) {
		iov.push_back({buf.data() + at, n});
		at += n;
	}
	if (at < room || iov.empty())
		iov.push_back({buf.data() + at, room - at});
	fi_context2 ctx;
	ASSERT_EQ(fi_trecvv(p.me->e, iov.data(), nullptr, iov.size(), p.a, tag, 0, &ctx), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_cq(p.me->rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	size_t into = std::min(room, s.len);
	if (room >= s.len) {
		ASSERT_EQ(r, 1) << "receive of " << s.len << " B: " << (r ? fi_strerror(err.err) : "nothing");
		EXPECT_EQ(ce.len, s.len);
		EXPECT_EQ(ce.op_context, &ctx);
	} else {
		ASSERT_EQ(r, -1) << "a truncated receive completed without an error";
		EXPECT_EQ(err.err, FI_ETRUNC);
		EXPECT_EQ(err.olen, s.len - room);
	}
	std::vector<unsigned char> want(s.len);
	fill(want, tag);
	EXPECT_EQ(memcmp(buf.data(), want.data(), into), 0) << "the bytes that landed differ";
	bool guard_ok = true;
	for (size_t i = room; i < buf.size(); i++)
		guard_ok &= buf[i] == 0xa5;
	EXPECT_TRUE(guard_ok) << "bytes written past the posted buffers";
	if (expect_claim) {
		EXPECT_TRUE(claimed_seen) << "the progressing sender never claimed a chunk";
	}
	if (s.mode == s_idle) {
		char go = 1;
		ASSERT_TRUE(put(p.ch.to, &go, 1));
	}
	EXPECT_EQ(report(p), 'C') << "the sender's completion";
	finish_child(p);
}

struct split_sizes : ::testing::TestWithParam<size_t> {};

} // namespace

TEST_P(split_sizes, sender_progressing)
{
	hook_guard h(wait_for_sender_claim);
	spec s;
	s.len = GetParam();
	receive_and_check(s, {}, s.len, true);
}

INSTANTIATE_TEST_SUITE_P(sizes, split_sizes, ::testing::Values(size_t{64} << 10, size_t{1} << 20, (size_t{4} << 20) + 13));

TEST(shm_split, iovecs_on_both_sides)
{
	hook_guard h(wait_for_sender_claim);
	spec s;
	s.tx_iov = {100000, 1, 500000};
	receive_and_check(s, {333333, 1, 444444}, s.len, true);
}

TEST(shm_split, truncation)
{
	hook_guard h(wait_for_sender_claim);
	spec s;
	receive_and_check(s, {}, 300007, true);
}

TEST(shm_split, sender_not_progressing)
{
	hook_guard h(nullptr);
	spec s;
	s.mode = s_idle;
	receive_and_check(s, {}, s.len, false);
}

TEST(shm_split, receiver_without_cma)
{
	hook_guard h(nullptr);
	spec s;
	receive_and_check(s, {}, s.len, false, true);
}

TEST(shm_split, sender_killed_mid_split)
{
	hook_guard h(wait_for_sender_claim);
	spec s;
	s.mode = s_die;
	pair p;
	start(p, s);
	connect(p);
	if (::testing::Test::HasFatalFailure())
		return;
	EXPECT_EQ(report(p), 'S');
	std::vector<unsigned char> buf(s.len, 0);
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(p.me->e, buf.data(), buf.size(), nullptr, p.a, tag, 0, &ctx), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_reaping(p, p.me->rx, &ce, &err);
	EXPECT_TRUE(claimed_seen) << "the sender never claimed a chunk";
	ASSERT_NE(r, 0) << "no completion within " << bound_ms / 1000 << " s of the sender's death";
	ASSERT_EQ(r, -1) << "a receive whose sender died holding a chunk reported success";
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_EHOSTDOWN);
}

TEST(shm_split, receiver_killed_mid_split)
{
	hook_guard h(nullptr);
	spec s;
	s.mode = r_die;
	pair p;
	start(p, s);
	connect(p);
	if (::testing::Test::HasFatalFailure())
		return;
	EXPECT_EQ(report(p), 'R');
	std::vector<unsigned char> buf(s.len);
	fill(buf, tag);
	fi_context2 ctx;
	ASSERT_EQ(fi_tsend(p.me->e, buf.data(), buf.size(), nullptr, p.a, tag, &ctx), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_reaping(p, p.me->tx, &ce, &err);
	ASSERT_NE(r, 0) << "no completion within " << bound_ms / 1000 << " s of the receiver's death";
	ASSERT_EQ(r, -1) << "a send whose receiver died before taking its bytes reported success";
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_NE(err.err, 0);
}

int main(int argc, char **argv)
{
	if (int r = skip_without_provider("test_shm_split"))
		return r;
	/* A dead peer is noticed sooner than the default second. */
	setenv("FI_SHM_DEAD_PEER_MS", "200", 1);
	/* This tests the split: never the pipelined path (test_shm_pipe), whatever the default. */
	setenv("FI_SHM_PIPE_MAX", "0", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
