/* SPDX-License-Identifier: BSD-3-Clause */
/* The matching engine (src/prov/common/match.h) alone: no transport, a fake
 * one records what the engine asks of it.  One case per matching rule, a
 * randomized differential run against a deque-scanning reference model,
 * and a threaded case for ThreadSanitizer under the documented locking
 * (the owner's one lock around every call). */
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "prov/common/match.h"

using namespace wu::match;

namespace {

struct started {
	recv *r;
	void *cookie;
	size_t off, into;
	bool discard;
};

/* Records every start and drop; optionally reports multi-recv bodies as
 * landed at once, as an eager copy does. */
struct fake_transport final : transport {
	std::vector<started> starts;
	std::vector<void *> drops;
	std::map<void *, fi_addr_t> resolved; /* cookie -> source known now */
	bool land_now = false;
	std::vector<recv *> released;

	void start(engine &e, recv *r, const message &m, size_t off, size_t into) override
	{
		starts.push_back({r, m.cookie, off, into, r->discard});
		if (land_now && (r->flags & FI_MULTI_RECV) && e.recv_done(r))
			released.push_back(r);
	}
	void drop(engine &, const message &m) override { drops.push_back(m.cookie); }
	fi_addr_t resolve(const message &m) override
	{
		auto it = resolved.find(m.cookie);
		return it == resolved.end() ? m.src : it->second;
	}
};

void *ck(uintptr_t i)
{
	return reinterpret_cast<void *>(i);
}

message msg_of(fake_transport *tp, uintptr_t cookie, uint64_t tag, fi_addr_t src, size_t len)
{
	message m;
	m.tp = tp;
	m.cookie = ck(cookie);
	m.tag = tag;
	m.src = src;
	m.len = len;
	return m;
}

recv tagged_recv(uint64_t tag, uint64_t ignore = 0, fi_addr_t src = FI_ADDR_UNSPEC, size_t len = 64)
{
	recv r;
	r.tag = tag;
	r.ignore = ignore;
	r.src = src;
	r.len = len;
	return r;
}

struct match_test : ::testing::Test {
	engine e;
	fake_transport tp;

	/* Arrives and returns the receive it matched (nullptr: queued). */
	recv *arrive(queue_kind q, uintptr_t cookie, uint64_t tag, fi_addr_t src = 1, size_t len = 8,
		     match_result *res = nullptr)
	{
		match_result out;
		EXPECT_EQ(e.arrive(q, msg_of(&tp, cookie, tag, src, len), &out), 0);
		if (res)
			*res = out;
		return out.r;
	}
	recv *tarrive(uintptr_t cookie, uint64_t tag, fi_addr_t src = 1, size_t len = 8)
	{
		return arrive(queue_kind::tagged, cookie, tag, src, len);
	}
};

TEST_F(match_test, exact_tag_matches_posted_receive)
{
	recv a = tagged_recv(5), b = tagged_recv(6);
	EXPECT_TRUE(e.post(queue_kind::tagged, &a));
	EXPECT_TRUE(e.post(queue_kind::tagged, &b));
	EXPECT_EQ(tarrive(1, 6), &b);
	EXPECT_EQ(tarrive(2, 7), nullptr); /* no receive for tag 7: queued */
	EXPECT_EQ(tarrive(3, 5), &a);
	EXPECT_EQ(e.posted_count(queue_kind::tagged), 0u);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 1u);
	EXPECT_TRUE(tp.starts.empty());
}

TEST_F(match_test, tag_and_ignore)
{
	recv r = tagged_recv(0x1200, 0xff);
	e.post(queue_kind::tagged, &r);
	EXPECT_EQ(tarrive(1, 0x1300), nullptr); /* differs outside the ignored bits */
	EXPECT_EQ(tarrive(2, 0x12ab), &r);
	/* A wildcard receive posted later takes the queued message. */
	recv w = tagged_recv(0x1000, 0x0f00);
	EXPECT_FALSE(e.post(queue_kind::tagged, &w));
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
	EXPECT_EQ(tp.starts[0].r, &w);
}

TEST_F(match_test, msg_and_tagged_are_separate_queues)
{
	recv m;
	m.len = 32;
	e.post(queue_kind::msg, &m);
	EXPECT_EQ(tarrive(1, 0), nullptr); /* a tagged message never takes a msg receive */
	EXPECT_EQ(arrive(queue_kind::msg, 2, 0xdead), &m); /* msg ignores tags */
	recv t = tagged_recv(0);
	EXPECT_FALSE(e.post(queue_kind::tagged, &t));
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
	EXPECT_EQ(e.queued_count(queue_kind::msg), 0u);
}

TEST_F(match_test, earlier_post_wins_across_exact_and_wildcard)
{
	recv w1 = tagged_recv(0, ~uint64_t(0)), e2 = tagged_recv(5);
	e.post(queue_kind::tagged, &w1);
	e.post(queue_kind::tagged, &e2);
	EXPECT_EQ(tarrive(1, 5), &w1); /* the wildcard was posted first */
	recv e3 = tagged_recv(5), w4 = tagged_recv(0, ~uint64_t(0));
	e.post(queue_kind::tagged, &e3);
	e.post(queue_kind::tagged, &w4);
	EXPECT_EQ(tarrive(2, 5), &e2);
	EXPECT_EQ(tarrive(3, 5), &e3); /* exact before the later wildcard */
	EXPECT_EQ(tarrive(4, 5), &w4);
}

/* MPICH's ch4:ofi ignores its protocol bits (52 to 54) in every receive
 * of a given tag (a synchronous send sets one of them): the first such receive
 * makes the hash key on the other bits, with exact receives posted and
 * messages queued, and the rules stay those of the wildcard list it would
 * otherwise have used. */
TEST_F(match_test, receives_ignoring_protocol_bits_keep_the_rules)
{
	constexpr uint64_t P = uint64_t(7) << 52, sync = uint64_t(1) << 52;
	/* Exact, posted before the first P receive (z stays posted, so that
	 * the last arrivals look in the hash, not at the only receive). */
	recv x = tagged_recv(5), y = tagged_recv(7 | sync), z = tagged_recv(11);
	for (recv *r : {&x, &y, &z})
		EXPECT_TRUE(e.post(queue_kind::tagged, r));
	EXPECT_EQ(tarrive(1, 9 | sync), nullptr);
	EXPECT_EQ(tarrive(2, 9), nullptr);
	EXPECT_EQ(tarrive(3, 8), nullptr);
	/* Takes the oldest message of tag 9 whatever its protocol bits. */
	recv a = tagged_recv(9, P);
	EXPECT_FALSE(e.post(queue_kind::tagged, &a));
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
	/* Still queued, and only for tag 8 (never a neighbour's bucket). */
	recv b = tagged_recv(9, P), c = tagged_recv(8, P);
	EXPECT_FALSE(e.post(queue_kind::tagged, &b));
	EXPECT_EQ(tp.starts[1].cookie, ck(2));
	EXPECT_FALSE(e.post(queue_kind::tagged, &c));
	EXPECT_EQ(tp.starts[2].cookie, ck(3));
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 0u);
	/* The exact receive is still found, and posting order wins across
	 * exact, P-ignoring, bit-54-ignoring and wildcard receives. */
	EXPECT_EQ(tarrive(4, 5 | sync), nullptr); /* x wants exactly 5 */
	EXPECT_EQ(tarrive(5, 5), &x);
	recv d = tagged_recv(6, P), w = tagged_recv(6, P | 0xff00), f = tagged_recv(6, uint64_t(1) << 54),
	     g = tagged_recv(6, P | (uint64_t(1) << 51)), h = tagged_recv(6);
	for (recv *r : {&d, &w, &f, &g, &h})
		EXPECT_TRUE(e.post(queue_kind::tagged, r));
	EXPECT_EQ(tarrive(6, 6 | sync), &d);
	EXPECT_EQ(tarrive(7, 6), &w);
	EXPECT_EQ(tarrive(8, 6 | sync), &g); /* f ignores only bit 54 */
	EXPECT_EQ(tarrive(9, 6), &f);
	EXPECT_EQ(tarrive(10, 6 | sync), nullptr); /* h wants exactly 6 */
	EXPECT_EQ(tarrive(11, 6), &h);
	/* Peek with the protocol bits ignored finds the queued one. */
	unexpected *u = e.peek(queue_kind::tagged, 5, P, FI_ADDR_UNSPEC);
	ASSERT_NE(u, nullptr);
	EXPECT_EQ(u->m.cookie, ck(4));
	u = e.peek(queue_kind::tagged, 6, P, FI_ADDR_UNSPEC);
	ASSERT_NE(u, nullptr);
	EXPECT_EQ(u->m.cookie, ck(10));
	EXPECT_EQ(e.peek(queue_kind::tagged, 6, 0, FI_ADDR_UNSPEC), nullptr);
	/* An exact receive with protocol bits, posted before the rekey. */
	EXPECT_EQ(tarrive(12, 7), nullptr);
	EXPECT_EQ(tarrive(13, 7 | sync), &y);
}

TEST_F(match_test, unexpected_taken_in_arrival_order_per_source)
{
	/* Interleaved sources, one tag: an FI_ADDR_UNSPEC receive takes the
	 * oldest, a directed one the oldest of its source (a takes 1, b
	 * source 2's 2, c the oldest left, 3, and d source 2's 4). */
	EXPECT_EQ(tarrive(1, 9, 1), nullptr);
	EXPECT_EQ(tarrive(2, 9, 2), nullptr);
	EXPECT_EQ(tarrive(3, 9, 1), nullptr);
	EXPECT_EQ(tarrive(4, 9, 2), nullptr);
	recv a = tagged_recv(9), b = tagged_recv(9, 0, 2), c = tagged_recv(0, ~uint64_t(0)),
	     d = tagged_recv(9, 0, 2);
	EXPECT_FALSE(e.post(queue_kind::tagged, &a));
	EXPECT_FALSE(e.post(queue_kind::tagged, &b));
	EXPECT_FALSE(e.post(queue_kind::tagged, &c));
	EXPECT_FALSE(e.post(queue_kind::tagged, &d));
	ASSERT_EQ(tp.starts.size(), 4u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
	EXPECT_EQ(tp.starts[1].cookie, ck(2));
	EXPECT_EQ(tp.starts[2].cookie, ck(3));
	EXPECT_EQ(tp.starts[3].cookie, ck(4));
}

TEST_F(match_test, per_source_order_with_many_sources_and_unspec)
{
	/* 8 sources x 50 messages, each source's in sequence: whatever mix of
	 * FI_ADDR_UNSPEC and directed receives takes them, every source's
	 * messages come out in the order it sent them. */
	std::mt19937 rng(7);
	std::vector<int> sent(8, 0);
	for (int i = 0; i < 400; i++) {
		int s = rng() % 8;
		while (sent[s] == 50)
			s = (s + 1) % 8;
		tarrive((uintptr_t(s) << 16) | uintptr_t(sent[s]++), 3, fi_addr_t(s));
	}
	std::vector<recv> rs(400);
	for (auto &r : rs) {
		r = tagged_recv(3, rng() % 2 ? 0 : ~uint64_t(0), rng() % 3 ? FI_ADDR_UNSPEC : fi_addr_t(rng() % 8));
		e.post(queue_kind::tagged, &r);
	}
	/* Directed receives for a drained source stay posted; drain the rest. */
	std::vector<recv> more(400);
	for (auto &r : more) {
		r = tagged_recv(3);
		e.post(queue_kind::tagged, &r);
	}
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 0u);
	ASSERT_EQ(tp.starts.size(), 400u);
	std::vector<int> next(8, 0);
	for (auto &s : tp.starts) {
		uintptr_t c = reinterpret_cast<uintptr_t>(s.cookie);
		int src = int(c >> 16), n = int(c & 0xffff);
		EXPECT_EQ(n, next[src]++) << "source " << src;
	}
}

TEST_F(match_test, directed_receive_matches_only_its_source)
{
	recv r = tagged_recv(1, 0, 3);
	e.post(queue_kind::tagged, &r);
	EXPECT_EQ(tarrive(1, 1, 4), nullptr);
	EXPECT_EQ(tarrive(2, 1, FI_ADDR_NOTAVAIL), nullptr);
	EXPECT_EQ(tarrive(3, 1, 3), &r);
	/* Posted later, a directed receive skips the other sources' messages. */
	recv m;
	m.src = 4;
	m.len = 8;
	e.post(queue_kind::msg, &m);
	EXPECT_EQ(arrive(queue_kind::msg, 4, 0, 5), nullptr);
	EXPECT_EQ(arrive(queue_kind::msg, 5, 0, 4), &m);
}

TEST_F(match_test, unknown_source_is_resolved_when_a_directed_receive_asks)
{
	EXPECT_EQ(tarrive(1, 2, FI_ADDR_NOTAVAIL), nullptr);
	recv r = tagged_recv(2, 0, 6);
	EXPECT_TRUE(e.post(queue_kind::tagged, &r)); /* still unknown */
	e.unpost(&r);
	tp.resolved[ck(1)] = 6; /* the peer entered the AV */
	EXPECT_FALSE(e.post(queue_kind::tagged, &r));
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
}

TEST_F(match_test, truncation)
{
	recv r = tagged_recv(1, 0, FI_ADDR_UNSPEC, 10);
	e.post(queue_kind::tagged, &r);
	match_result res;
	EXPECT_EQ(arrive(queue_kind::tagged, 1, 1, 1, 25, &res), &r);
	EXPECT_EQ(res.off, 0u);
	EXPECT_EQ(res.into, 10u); /* 15 bytes truncated */
	EXPECT_TRUE(res.spent);
	tarrive(2, 1, 1, 40);
	recv s = tagged_recv(1, 0, FI_ADDR_UNSPEC, 16);
	e.post(queue_kind::tagged, &s);
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].into, 16u);
}

TEST_F(match_test, multi_recv_consumes_and_is_released)
{
	recv m;
	m.flags = FI_MULTI_RECV;
	m.len = 100;
	m.min_free = 30;
	EXPECT_TRUE(e.post(queue_kind::msg, &m));
	match_result a, b;
	EXPECT_EQ(arrive(queue_kind::msg, 1, 0, 1, 40, &a), &m);
	EXPECT_EQ(a.off, 0u);
	EXPECT_EQ(a.into, 40u);
	EXPECT_FALSE(a.spent);
	EXPECT_TRUE(m.queued());
	EXPECT_EQ(arrive(queue_kind::msg, 2, 0, 1, 50, &b), &m);
	EXPECT_EQ(b.off, 40u);
	EXPECT_EQ(b.into, 50u);
	EXPECT_TRUE(b.spent); /* 10 left < 30 */
	EXPECT_FALSE(m.queued());
	EXPECT_EQ(e.cancel(m.context), nullptr); /* bodies still landing */
	EXPECT_FALSE(e.recv_done(&m));
	EXPECT_TRUE(e.recv_done(&m)); /* the last body landed: released */
	EXPECT_EQ(arrive(queue_kind::msg, 3, 0), nullptr);
}

TEST_F(match_test, multi_recv_takes_queued_messages)
{
	tp.land_now = true;
	for (uintptr_t i = 1; i <= 4; i++)
		arrive(queue_kind::msg, i, 0, 1, 30);
	recv m;
	m.flags = FI_MULTI_RECV;
	m.len = 100;
	m.min_free = 25;
	EXPECT_FALSE(e.post(queue_kind::msg, &m)); /* 10 left after three */
	ASSERT_EQ(tp.starts.size(), 3u);
	EXPECT_EQ(tp.starts[0].off, 0u);
	EXPECT_EQ(tp.starts[1].off, 30u);
	EXPECT_EQ(tp.starts[2].off, 60u);
	ASSERT_EQ(tp.released.size(), 1u); /* released by the third landing */
	EXPECT_EQ(tp.released[0], &m);
	EXPECT_EQ(e.queued_count(queue_kind::msg), 1u);
	/* With room left it stays posted for later messages. */
	recv n;
	n.flags = FI_MULTI_RECV;
	n.len = 1000;
	n.min_free = 25;
	EXPECT_TRUE(e.post(queue_kind::msg, &n));
	EXPECT_EQ(n.used, 30u);
	EXPECT_EQ(n.busy, 0);
	EXPECT_EQ(e.cancel(n.context), &n); /* nothing landing: cancellable */
}

TEST_F(match_test, peek_claim_discard)
{
	int ctx1, ctx2, ctx3;
	EXPECT_EQ(e.peek(queue_kind::tagged, 4, 0, FI_ADDR_UNSPEC), nullptr);
	tarrive(1, 4, 2, 20);
	tarrive(2, 4, 3, 30);
	tarrive(3, 5, 3, 40);
	unexpected *u = e.peek(queue_kind::tagged, 4, 0, 3);
	ASSERT_NE(u, nullptr);
	EXPECT_EQ(u->m.cookie, ck(2));
	EXPECT_EQ(u->m.len, 30u);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 3u); /* peek removes nothing */
	EXPECT_EQ(e.peek(queue_kind::tagged, 4, 0, 3), u);

	/* FI_CLAIM: off the queues, bound to the context. */
	ASSERT_EQ(e.hold(u, &ctx2), 0);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 2u);
	EXPECT_EQ(e.peek(queue_kind::tagged, 4, 0, 3), nullptr);
	recv any = tagged_recv(4, 0, 3);
	EXPECT_TRUE(e.post(queue_kind::tagged, &any)); /* a claimed message is no one else's */
	e.unpost(&any);
	EXPECT_EQ(e.held(u, &ctx1), nullptr);     /* wrong context */
	EXPECT_EQ(e.held(&ctx3, &ctx2), nullptr); /* not a held message at all */
	ASSERT_EQ(e.held(u, &ctx2), u);
	recv c = tagged_recv(0, 0, FI_ADDR_UNSPEC, 16);
	e.claim(u, &c);
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(2));
	EXPECT_EQ(tp.starts[0].into, 16u);
	EXPECT_EQ(e.held(u, &ctx2), nullptr); /* claimed once only */

	/* FI_DISCARD: the receive drops it. */
	unexpected *v = e.peek(queue_kind::tagged, 0, ~uint64_t(0), FI_ADDR_UNSPEC);
	ASSERT_NE(v, nullptr);
	EXPECT_EQ(v->m.cookie, ck(1));
	ASSERT_EQ(e.hold(v, &ctx3), 0);
	recv d;
	d.discard = true;
	e.claim(e.held(v, &ctx3), &d);
	ASSERT_EQ(tp.starts.size(), 2u);
	EXPECT_TRUE(tp.starts[1].discard);
	EXPECT_EQ(tp.starts[1].into, 0u);
	EXPECT_EQ(e.held_count(), 0u);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 1u);
}

TEST_F(match_test, cancel_posted_receive)
{
	int c1, c2, c3;
	recv a = tagged_recv(1), b = tagged_recv(2), m;
	a.context = &c1;
	b.context = &c2;
	m.context = &c2;
	e.post(queue_kind::tagged, &a);
	e.post(queue_kind::tagged, &b);
	e.post(queue_kind::msg, &m);
	EXPECT_EQ(e.cancel(&c3), nullptr);
	EXPECT_EQ(e.cancel(&c2), &m); /* msg queue first */
	EXPECT_EQ(e.cancel(&c2), &b);
	EXPECT_FALSE(b.queued());
	EXPECT_EQ(tarrive(1, 2), nullptr); /* the canceled receive is gone */
	EXPECT_EQ(tarrive(2, 1), &a);
	EXPECT_EQ(e.cancel(&c1), nullptr);
}

TEST_F(match_test, many_tags_in_reverse)
{
	/* Distinct tags posted, messages in reverse: each its own receive; and
	 * the same with the messages first (the hash grows under both). */
	const size_t n = 65536;
	std::vector<recv> rs(n);
	for (size_t i = 0; i < n; i++) {
		rs[i] = tagged_recv(i * 0x10000 + 7);
		e.post(queue_kind::tagged, &rs[i]);
	}
	for (size_t i = n; i-- > 0;)
		ASSERT_EQ(tarrive(i, i * 0x10000 + 7), &rs[i]);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(tarrive(i, i * 0x10000 + 7), nullptr);
	for (size_t i = n; i-- > 0;) {
		rs[i] = tagged_recv(i * 0x10000 + 7);
		ASSERT_FALSE(e.post(queue_kind::tagged, &rs[i]));
		ASSERT_EQ(tp.starts.back().cookie, ck(i));
	}
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 0u);
	EXPECT_EQ(e.posted_count(queue_kind::tagged), 0u);
}

TEST_F(match_test, unexpected_pool_grows_past_its_largest_chunk)
{
	/* The pool's chunk size was 64 << chunks, capped after the shift: the
	 * 59th chunk's shift wrapped to 0 and the node after about 217,000
	 * queued messages was read from a null free list (SIGSEGV, issue 32).
	 * Both queues, well past that, then every one taken in order. */
	const size_t n = 300000;
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(arrive(i % 2 ? queue_kind::tagged : queue_kind::msg, i, 5), nullptr) << i;
	EXPECT_EQ(e.queued_count(queue_kind::msg) + e.queued_count(queue_kind::tagged), n);
	for (size_t i = 0; i < n; i++) {
		recv r = tagged_recv(5);
		ASSERT_FALSE(e.post(i % 2 ? queue_kind::tagged : queue_kind::msg, &r));
		ASSERT_EQ(tp.starts.back().cookie, ck(i));
	}
	EXPECT_EQ(e.queued_count(queue_kind::msg) + e.queued_count(queue_kind::tagged), 0u);
	/* Freed nodes are reused: as many again fit without a crash. */
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(arrive(queue_kind::msg, i, 0), nullptr);
	EXPECT_EQ(e.queued_count(queue_kind::msg), n);
}

TEST_F(match_test, receive_posted_when_the_hash_grows_is_linked_once)
{
	/* The receive whose post grows the exact-tag hash (the 65th) was
	 * linked into its bucket twice, its own successor: once taken it
	 * still matched, and a bucket walk past it never ended (tcp hung). */
	std::vector<recv> rs(65);
	for (size_t i = 0; i < rs.size(); i++) {
		rs[i] = tagged_recv(1000 + i);
		ASSERT_TRUE(e.post(queue_kind::tagged, &rs[i]));
	}
	ASSERT_EQ(tarrive(1, 1064), &rs[64]);
	EXPECT_EQ(tarrive(2, 1064), nullptr); /* queued, not the taken receive again */
	for (size_t i = 64; i-- > 0;)
		ASSERT_EQ(tarrive(10 + i, 1000 + i), &rs[i]);
	EXPECT_EQ(e.posted_count(queue_kind::tagged), 0u);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 1u);
}

TEST_F(match_test, two_transports_share_one_engine)
{
	fake_transport shm;
	match_result res;
	ASSERT_EQ(e.arrive(queue_kind::tagged, msg_of(&tp, 1, 8, 1, 4), &res), 0);
	ASSERT_EQ(e.arrive(queue_kind::tagged, msg_of(&shm, 2, 8, 2, 4), &res), 0);
	ASSERT_EQ(e.arrive(queue_kind::tagged, msg_of(&tp, 3, 8, 1, 4), &res), 0);
	ASSERT_EQ(e.arrive(queue_kind::tagged, msg_of(&shm, 4, 8, 2, 4), &res), 0);
	recv a = tagged_recv(8), b = tagged_recv(8, 0, 2);
	e.post(queue_kind::tagged, &a);
	e.post(queue_kind::tagged, &b);
	/* Each message is started by its own transport. */
	ASSERT_EQ(tp.starts.size(), 1u);
	EXPECT_EQ(tp.starts[0].cookie, ck(1));
	ASSERT_EQ(shm.starts.size(), 1u);
	EXPECT_EQ(shm.starts[0].cookie, ck(2));
	/* tcp leaves: its queued message is dropped, shm's stays. */
	e.detach(&tp);
	ASSERT_EQ(tp.drops.size(), 1u);
	EXPECT_EQ(tp.drops[0], ck(3));
	EXPECT_TRUE(shm.drops.empty());
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 1u);
	recv c = tagged_recv(8);
	EXPECT_FALSE(e.post(queue_kind::tagged, &c));
	EXPECT_EQ(shm.starts.back().cookie, ck(4));
}

TEST_F(match_test, bad_arguments)
{
	EXPECT_EQ(e.arrive(queue_kind::tagged, message(), nullptr), -FI_EINVAL);
	EXPECT_EQ(e.hold(nullptr, nullptr), -FI_EINVAL);
	EXPECT_EQ(e.held(nullptr, nullptr), nullptr);
	e.unpost(nullptr);
	e.unqueue(nullptr);
	EXPECT_FALSE(e.post(queue_kind::tagged, nullptr));
	EXPECT_FALSE(e.recv_done(nullptr));
	/* A receive posted twice stays posted once. */
	recv r = tagged_recv(3);
	EXPECT_TRUE(e.post(queue_kind::tagged, &r));
	EXPECT_TRUE(e.post(queue_kind::tagged, &r));
	EXPECT_EQ(e.posted_count(queue_kind::tagged), 1u);
	/* claim() takes only a held message. */
	EXPECT_EQ(tarrive(1, 4), nullptr);
	unexpected *u = e.peek(queue_kind::tagged, 4, 0, FI_ADDR_UNSPEC);
	ASSERT_NE(u, nullptr);
	recv c = tagged_recv(0);
	e.claim(u, &c); /* peeked, not held */
	EXPECT_TRUE(tp.starts.empty());
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 1u);
	EXPECT_EQ(tarrive(2, 3), &r);
}

/* ---- randomized differential test against a deque-scanning model ---- */

struct model {
	struct mrecv {
		int id;
		uint64_t tag, ignore;
		fi_addr_t src;
		size_t len, used = 0, min_free;
		bool multi;
		int busy = 0;
		bool spent = false;
	};
	struct mux {
		int id;
		uint64_t tag;
		fi_addr_t src;
		size_t len;
	};
	struct event {
		int recv, ux;
		size_t off, into;
		bool operator==(const event &o) const = default;
	};
	std::deque<mrecv *> posted[2];
	std::deque<mux> ux[2];
	std::map<int, mux> held;
	std::map<int, std::unique_ptr<mrecv>> recvs;
	std::vector<event> events;

	static bool tmatch(uint64_t want, uint64_t ign, uint64_t got) { return ((want ^ got) & ~ign) == 0; }
	static bool ok(int q, const mrecv *r, uint64_t tag, fi_addr_t src)
	{
		return (q == 0 || tmatch(r->tag, r->ignore, tag)) && (r->src == FI_ADDR_UNSPEC || r->src == src);
	}
	void take(mrecv *r, size_t len, size_t *off, size_t *into, bool *spent)
	{
		*off = r->used;
		*into = std::min(r->len - r->used, len);
		if (r->multi) {
			r->used += *into;
			r->busy++;
			*spent = r->len - r->used < r->min_free;
		} else {
			*spent = true;
		}
		r->spent = *spent;
	}
	/* Returns the receive id that took it, or -1. */
	int arrive(int q, int id, uint64_t tag, fi_addr_t src, size_t len)
	{
		auto &p = posted[q];
		for (auto it = p.begin(); it != p.end(); ++it) {
			mrecv *r = *it;
			if (!ok(q, r, tag, src))
				continue;
			size_t off, into;
			bool spent;
			take(r, len, &off, &into, &spent);
			if (spent)
				p.erase(it);
			events.push_back({r->id, id, off, into});
			return r->id;
		}
		ux[q].push_back({id, tag, src, len});
		return -1;
	}
	bool post(int q, mrecv *r)
	{
		auto &u = ux[q];
		for (auto it = u.begin(); it != u.end();) {
			if (!ok(q, r, it->tag, it->src)) {
				++it;
				continue;
			}
			size_t off, into;
			bool spent;
			take(r, it->len, &off, &into, &spent);
			events.push_back({r->id, it->id, off, into});
			it = u.erase(it);
			if (spent)
				return false;
		}
		posted[q].push_back(r);
		return true;
	}
	int cancel(int id)
	{
		for (auto &p : posted)
			for (auto it = p.begin(); it != p.end(); ++it)
				if ((*it)->id == id && (*it)->busy == 0) {
					p.erase(it);
					return id;
				}
		return -1;
	}
	const mux *peek(uint64_t tag, uint64_t ignore, fi_addr_t src)
	{
		for (auto &m : ux[1])
			if (tmatch(tag, ignore, m.tag) && (src == FI_ADDR_UNSPEC || src == m.src))
				return &m;
		return nullptr;
	}
};

TEST(match_random, agrees_with_a_deque_scanning_model)
{
	/* Seeds 7 to 12 draw tags and masks as MPICH does: protocol bits
	 * on some messages, ignored (with or without the low bits: MPI_ANY_TAG)
	 * by most receives, so the engine rekeys its hash partway. */
	for (unsigned seed = 1; seed <= 12; seed++) {
		SCOPED_TRACE("seed " + std::to_string(seed));
		bool mpich = seed > 6;
		constexpr uint64_t P = uint64_t(7) << 52;
		std::mt19937 rng(seed);
		engine e;
		fake_transport tp;
		model ref;
		std::map<int, std::unique_ptr<recv>> real;
		std::map<int, unexpected *> held_real; /* model ux id -> handle */
		std::vector<int> landing;              /* multi-recv ids with a body landing */
		int next_id = 1;
		auto draw_tag = [&] {
			uint64_t t = rng() % 6;
			if (mpich && rng() % 3 == 0)
				t |= uint64_t(rng() % 8) << 52;
			return t;
		};
		auto draw_ignore = [&]() -> uint64_t {
			if (!mpich)
				return rng() % 3 == 0 ? (rng() % 2 ? 3 : ~uint64_t(0)) : 0;
			switch (rng() % 8) {
			case 0: return 0;
			case 1: return P | 3;
			case 2: return uint64_t(1) << 54;
			case 3: return P | (uint64_t(1) << 51);
			case 4: return ~uint64_t(0);
			default: return P;
			}
		};
		auto draw_src = [&] { return fi_addr_t(rng() % 4); };
		auto rec = [&](int id, uint64_t tag, uint64_t ign, fi_addr_t src, size_t len, bool multi, size_t minf) {
			auto r = std::make_unique<recv>();
			r->owner = reinterpret_cast<void *>(uintptr_t(id));
			r->context = r.get();
			r->tag = tag;
			r->ignore = ign;
			r->src = src;
			r->len = len;
			r->min_free = minf;
			r->flags = multi ? FI_MULTI_RECV : 0;
			auto m = std::make_unique<model::mrecv>(
				model::mrecv{id, tag, ign, src, len, 0, minf, multi, 0, false});
			ref.recvs[id] = std::move(m);
			recv *p = r.get();
			real[id] = std::move(r);
			return p;
		};
		std::vector<model::event> arrive_events;
		for (int step = 0; step < 5000; step++) {
			/* MPICH seeds: messages queued first, so that the rekey
			 * (at the first receive ignoring only protocol bits) has
			 * some to rehash. */
			int op = mpich && step < 40 ? 0 : int(rng() % 100);
			int q = rng() % 2;
			if (op < 35) { /* arrive */
				int id = next_id++;
				uint64_t tag = draw_tag();
				fi_addr_t src = draw_src();
				size_t len = rng() % 64;
				match_result res;
				ASSERT_EQ(e.arrive(queue_kind(q), msg_of(&tp, uintptr_t(id), tag, src, len), &res), 0);
				int want = ref.arrive(q, id, tag, src, len);
				int got = res.r ? int(reinterpret_cast<uintptr_t>(res.r->owner)) : -1;
				ASSERT_EQ(got, want) << "step " << step;
				if (res.r) {
					arrive_events.push_back({got, id, res.off, res.into});
					ASSERT_EQ(arrive_events.back(), ref.events.back());
					if (res.r->flags & FI_MULTI_RECV)
						landing.push_back(got);
				}
			} else if (op < 65) { /* post */
				int id = next_id++;
				bool multi = q == 0 && rng() % 3 == 0;
				uint64_t ign = q == 0 ? 0 : draw_ignore();
				fi_addr_t src = rng() % 3 == 0 ? draw_src() : FI_ADDR_UNSPEC;
				recv *r = rec(id, draw_tag(), ign, src, multi ? 40 + rng() % 100 : rng() % 64, multi,
					      multi ? rng() % 40 : 0);
				size_t before = tp.starts.size();
				bool got = e.post(queue_kind(q), r);
				size_t ev_before = ref.events.size();
				bool want = ref.post(q, ref.recvs[id].get());
				ASSERT_EQ(got, want) << "step " << step;
				ASSERT_EQ(tp.starts.size() - before, ref.events.size() - ev_before) << "step " << step;
				for (size_t i = before; i < tp.starts.size(); i++) {
					model::event ev{id, int(reinterpret_cast<uintptr_t>(tp.starts[i].cookie)),
							tp.starts[i].off, tp.starts[i].into};
					ASSERT_EQ(ev, ref.events[ev_before + (i - before)]) << "step " << step;
					if (multi)
						landing.push_back(id);
				}
			} else if (op < 75) { /* a multi-recv body lands */
				if (landing.empty())
					continue;
				size_t k = rng() % landing.size();
				int id = landing[k];
				landing.erase(landing.begin() + long(k));
				bool got = e.recv_done(real[id].get());
				auto *m = ref.recvs[id].get();
				m->busy--;
				ASSERT_EQ(got, m->busy == 0 && m->spent) << "step " << step;
			} else if (op < 83) { /* cancel a random receive */
				if (real.empty())
					continue;
				auto it = real.begin();
				std::advance(it, long(rng() % real.size()));
				recv *got = e.cancel(it->second->context);
				int want = ref.cancel(it->first);
				ASSERT_EQ(got ? int(reinterpret_cast<uintptr_t>(got->owner)) : -1, want) << "step " << step;
			} else if (op < 95) { /* peek, maybe claim */
				uint64_t ign = mpich ? draw_ignore() : rng() % 2 ? 0 : 3;
				fi_addr_t src = rng() % 2 ? draw_src() : FI_ADDR_UNSPEC;
				uint64_t tag = draw_tag();
				unexpected *u = e.peek(queue_kind::tagged, tag, ign, src);
				const model::mux *m = ref.peek(tag, ign, src);
				ASSERT_EQ(u ? int(reinterpret_cast<uintptr_t>(u->m.cookie)) : -1, m ? m->id : -1)
					<< "step " << step;
				if (u && rng() % 2) {
					int id = m->id;
					ASSERT_EQ(e.hold(u, reinterpret_cast<void *>(uintptr_t(id))), 0);
					ref.held[id] = *m;
					for (auto it = ref.ux[1].begin(); it != ref.ux[1].end(); ++it)
						if (it->id == id) {
							ref.ux[1].erase(it);
							break;
						}
					held_real[id] = u;
				}
			} else { /* claim a held message */
				if (held_real.empty())
					continue;
				auto it = held_real.begin();
				std::advance(it, long(rng() % held_real.size()));
				void *ctx = reinterpret_cast<void *>(uintptr_t(it->first));
				ASSERT_EQ(e.held(it->second, ctx), it->second);
				int id = next_id++;
				bool discard = rng() % 3 == 0;
				recv *r = rec(id, 0, 0, FI_ADDR_UNSPEC, discard ? 0 : rng() % 64, false, 0);
				r->discard = discard;
				size_t before = tp.starts.size();
				e.claim(it->second, r);
				ASSERT_EQ(tp.starts.size(), before + 1);
				EXPECT_EQ(tp.starts.back().discard, discard);
				EXPECT_EQ(tp.starts.back().into, std::min(r->len, ref.held[it->first].len));
				ref.held.erase(it->first);
				held_real.erase(it);
			}
			ASSERT_EQ(e.queued_count(queue_kind::msg), ref.ux[0].size());
			ASSERT_EQ(e.queued_count(queue_kind::tagged), ref.ux[1].size());
			ASSERT_EQ(e.posted_count(queue_kind::msg), ref.posted[0].size());
			ASSERT_EQ(e.posted_count(queue_kind::tagged), ref.posted[1].size());
		}
		e.detach(&tp);
		EXPECT_EQ(tp.drops.size(), ref.ux[0].size() + ref.ux[1].size());
	}
}

/* ---- the documented locking, for ThreadSanitizer ---- */

struct locked_transport final : transport {
	size_t starts = 0;
	void start(engine &, recv *, const message &, size_t, size_t) override { starts++; }
};

TEST(match_threads, one_lock_around_every_call)
{
	engine e;
	locked_transport tp;
	std::mutex mtx;
	const size_t n = 2000;
	std::vector<recv> rs(n);
	size_t matched_on_arrival = 0;
	std::thread sender([&] {
		for (size_t i = 0; i < n; i++) {
			message m;
			m.tp = &tp;
			m.tag = i;
			m.src = 1;
			m.len = 8;
			match_result res;
			std::lock_guard<std::mutex> g(mtx);
			ASSERT_EQ(e.arrive(queue_kind::tagged, m, &res), 0);
			if (res.r)
				matched_on_arrival++;
		}
	});
	std::thread receiver([&] {
		for (size_t i = 0; i < n; i++) {
			rs[i].tag = n - 1 - i;
			rs[i].len = 8;
			std::lock_guard<std::mutex> g(mtx);
			e.post(queue_kind::tagged, &rs[i]);
		}
	});
	sender.join();
	receiver.join();
	std::lock_guard<std::mutex> g(mtx);
	EXPECT_EQ(matched_on_arrival + tp.starts, n);
	EXPECT_EQ(e.queued_count(queue_kind::tagged), 0u);
	EXPECT_EQ(e.posted_count(queue_kind::tagged), 0u);
}

} // namespace
