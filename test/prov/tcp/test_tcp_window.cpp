/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: the eager window (FI_TCP_EAGER_WINDOW, frame.h).  A message
 * above the rendezvous size goes as one eager frame while the peer's window
 * has room, is held at the receiver if unexpected, and its bytes come back
 * by CREDIT once the receiver lets go of them; past the window, rendezvous.
 * A peer that overruns the window it was given, or gives back more than it
 * got, loses its connection. */
#include "../common/tcp_fixture.h"

#include <cstdlib>
#include <string>

using namespace wu::test;
using wu::tcp::get_stats;
using wu::tcp::stats;
namespace frame = wu::tcp::frame;

namespace {

constexpr size_t mib = size_t(1) << 20;

/* Sets FI_TCP_EAGER_WINDOW for the endpoints a fixture opens after it. */
struct window_env {
	explicit window_env(const char *v)
	{
		if (v)
			setenv("FI_TCP_EAGER_WINDOW", v, 1);
		else
			unsetenv("FI_TCP_EAGER_WINDOW");
	}
	~window_env() { unsetenv("FI_TCP_EAGER_WINDOW"); }
};

struct pair {
	window_env w;
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	rdm_ep a{env}, b{env};
	fi_addr_t a_to_b = a.insert(b), b_to_a = b.insert(a);

	explicit pair(const char *window = nullptr) : w(window) {}
	int wait_rx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr)
	{
		return wait_one(who.rx, e, err, {a.tx, b.tx, a.rx, b.rx});
	}
	int wait_tx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr)
	{
		return wait_one(who.tx, e, err, {a.rx, b.rx, a.tx, b.tx});
	}
	/* One small message each way: the connection is up on both sides. */
	void warm_up()
	{
		int v = 1, w = 0;
		fi_cq_tagged_entry e;
		ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
		ASSERT_EQ(wait_rx(b, e), 1);
		ASSERT_EQ(wait_tx(a, e), 1);
		ASSERT_EQ(fi_recv(a.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
		ASSERT_EQ(wait_rx(a, e), 1);
		ASSERT_EQ(wait_tx(b, e), 1);
	}
};

std::vector<char> pattern(size_t n, int seed)
{
	std::vector<char> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = char(i * 31 + size_t(seed) * 7 + 1);
	return v;
}

/* One endpoint with FI_TCP_EAGER_WINDOW = window and a raw peer that has
 * said HELLO (announcing peer_window) and read the endpoint's HELLO_ACK. */
struct raw_pair {
	window_env w;
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	rdm_ep a{env};
	raw_peer peer;
	frame::header ack;

	raw_pair(const char *window, uint64_t peer_window) : w(window), peer(a, peer_window)
	{
		EXPECT_TRUE(peer.get(ack));
		EXPECT_EQ(ack.type, frame::HELLO_ACK);
	}
};

} // namespace

TEST(tcp_window_frame, credit_frames_and_window_fields_are_checked)
{
	frame::header h, d;
	unsigned char buf[frame::hdr_size];
	h.type = frame::CREDIT;
	h.data = 4096;
	frame::encode(h, buf);
	ASSERT_EQ(frame::decode(buf, sizeof buf, d), frame::error::ok);
	EXPECT_EQ(d.data, 4096u);
	h.data = 0; /* gives back nothing */
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_field);
	h.data = frame::max_payload + 1;
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_field);
	h.data = 1;
	h.len = 1;
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_len);
	h.len = 0;
	h.tag = 5;
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_field);

	/* F_CREDIT belongs to MSG only. */
	h = {};
	h.type = frame::MSG;
	h.flags = frame::F_CREDIT;
	h.len = mib;
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::ok);
	h.type = frame::RTS;
	h.len = 0;
	h.aux = mib;
	frame::encode(h, buf);
	EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_flags);

	/* Handshake frames carry a window up to max_payload; REJECT none. */
	for (uint8_t t : {frame::HELLO_ACK, frame::CONNREQ, frame::ACCEPT, frame::REJECT}) {
		h = {};
		h.type = t;
		h.len = t == frame::HELLO_ACK ? frame::auth_mac : t == frame::CONNREQ ? frame::connreq_auth : frame::accept_auth;
		h.aux = 2 * mib;
		frame::encode(h, buf);
		EXPECT_EQ(frame::decode(buf, sizeof buf, d), t == frame::REJECT ? frame::error::bad_field : frame::error::ok)
			<< int(t);
		h.aux = frame::max_payload + 1;
		frame::encode(h, buf);
		EXPECT_EQ(frame::decode(buf, sizeof buf, d), frame::error::bad_field) << int(t);
	}
}

/* An expected large message goes as one eager frame straight into the
 * posted receive: no RTS, nothing staged. */
TEST(tcp_window, expected_large_message_skips_the_rendezvous)
{
	pair p;
	p.warm_up();
	auto src = pattern(mib, 1);
	std::vector<char> dst(mib, 0);
	stats before = get_stats();
	int rctx, sctx;
	ASSERT_EQ(fi_trecv(p.b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, 9, 0, &rctx), 0);
	ASSERT_EQ(fi_tsend(p.a.ep, src.data(), src.size(), nullptr, p.a_to_b, 9, &sctx), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_EQ(e.len, mib);
	EXPECT_EQ(e.tag, 9u);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(e.op_context, &sctx);
	EXPECT_EQ(memcmp(src.data(), dst.data(), mib), 0);
	stats after = get_stats();
	EXPECT_EQ(after.rndv_sends, before.rndv_sends);
	EXPECT_EQ(after.staged_bytes, before.staged_bytes);
	/* The window comes back with the replies: a ping-pong of large pings
	 * and small pongs skips the rendezvous many times over (far more than
	 * the window in total). */
	int v = 0, w = 0;
	for (int i = 0; i < 12; i++) {
		ASSERT_EQ(fi_trecv(p.b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr), 0);
		ASSERT_EQ(fi_recv(p.a.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_tsend(p.a.ep, src.data(), src.size(), nullptr, p.a_to_b, 9, nullptr), 0);
		ASSERT_EQ(p.wait_rx(p.b, e), 1);
		ASSERT_EQ(p.wait_tx(p.a, e), 1);
		v = i;
		ASSERT_EQ(fi_send(p.b.ep, &v, sizeof v, nullptr, p.b_to_a, nullptr), 0);
		ASSERT_EQ(p.wait_rx(p.a, e), 1);
		ASSERT_EQ(p.wait_tx(p.b, e), 1);
		EXPECT_EQ(w, i);
	}
	EXPECT_EQ(get_stats().rndv_sends, before.rndv_sends);
}

/* Unexpected large messages: the window's worth is held at the receiver,
 * the one past it waits at the sender (rendezvous); all arrive whole and in
 * order, and once received the window is open again. */
TEST(tcp_window, unexpected_large_messages_are_held_up_to_the_window)
{
	pair p("2097152");
	p.warm_up();
	std::vector<std::vector<char>> src;
	for (int i = 0; i < 3; i++)
		src.push_back(pattern(mib, i + 2));
	stats before = get_stats();
	int sctx[3];
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(fi_send(p.a.ep, src[i].data(), mib, nullptr, p.a_to_b, &sctx[i]), 0);
	spin({p.a.tx, p.b.rx}, 3000);
	stats mid = get_stats();
	EXPECT_EQ(mid.rndv_sends, before.rndv_sends + 1);        /* the third */
	EXPECT_EQ(mid.staged_bytes, before.staged_bytes + 2 * mib); /* the first two */
	std::vector<std::vector<char>> dst(3, std::vector<char>(mib, 0));
	fi_cq_tagged_entry e;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(fi_recv(p.b.ep, dst[i].data(), mib, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(p.wait_rx(p.b, e), 1);
		EXPECT_EQ(e.len, mib);
	}
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(p.wait_tx(p.a, e), 1);
		EXPECT_EQ(e.op_context, &sctx[i]);
	}
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(memcmp(src[i].data(), dst[i].data(), mib), 0) << i;
	/* The credit rides back; then two more unexpected ones are held again. */
	spin({p.a.tx, p.b.rx, p.a.rx}, 500);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(fi_send(p.a.ep, src[i].data(), mib, nullptr, p.a_to_b, nullptr), 0);
	spin({p.a.tx, p.b.rx}, 3000);
	stats end = get_stats();
	EXPECT_EQ(end.rndv_sends, mid.rndv_sends);
	EXPECT_EQ(end.staged_bytes, mid.staged_bytes + 2 * mib);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(fi_recv(p.b.ep, dst[i].data(), mib, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(p.wait_rx(p.b, e), 1);
		ASSERT_EQ(p.wait_tx(p.a, e), 1);
		EXPECT_EQ(memcmp(src[i].data(), dst[i].data(), mib), 0) << i;
	}
}

/* A held message taken by a smaller receive is truncated (FI_ETRUNC) and
 * still gives its whole size back to the window. */
TEST(tcp_window, truncated_held_message_returns_its_window)
{
	pair p;
	p.warm_up();
	auto src = pattern(2 * mib, 5);
	stats before = get_stats();
	ASSERT_EQ(fi_send(p.a.ep, src.data(), src.size(), nullptr, p.a_to_b, nullptr), 0);
	spin({p.a.tx, p.b.rx}, 3000);
	EXPECT_EQ(get_stats().rndv_sends, before.rndv_sends);
	std::vector<char> small(1000);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_recv(p.b.ep, small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.olen, 2 * mib - small.size());
	EXPECT_EQ(memcmp(small.data(), src.data(), small.size()), 0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	spin({p.a.tx, p.b.rx, p.a.rx}, 500);
	std::vector<char> dst(2 * mib);
	ASSERT_EQ(fi_recv(p.b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, src.data(), src.size(), nullptr, p.a_to_b, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(memcmp(dst.data(), src.data(), dst.size()), 0);
	EXPECT_EQ(get_stats().rndv_sends, before.rndv_sends);
}

/* Held messages dropped by FI_PEEK | FI_DISCARD, or claimed and then
 * discarded, give their window back as well. */
TEST(tcp_window, discarded_held_messages_return_their_window)
{
	pair p("2097152");
	p.warm_up();
	auto src = pattern(mib, 6);
	stats before = get_stats();
	for (uint64_t tag : {1, 2})
		ASSERT_EQ(fi_tsend(p.a.ep, src.data(), mib, nullptr, p.a_to_b, tag, nullptr), 0);
	fi_cq_tagged_entry e;
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(p.wait_tx(p.a, e), 1); /* eager: complete once written */
	spin({p.b.rx}, 2000);
	EXPECT_EQ(get_stats().staged_bytes, before.staged_bytes + 2 * mib);
	auto peek = [&](uint64_t flags, fi_context *ctx, uint64_t tag) {
		fi_msg_tagged m{};
		m.addr = FI_ADDR_UNSPEC;
		m.tag = tag;
		m.context = ctx;
		return fi_trecvmsg(p.b.ep, &m, flags);
	};
	fi_context c1{}, c2{};
	ASSERT_EQ(peek(FI_PEEK | FI_DISCARD, &c1, 1), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.op_context, &c1);
	ASSERT_EQ(peek(FI_PEEK | FI_CLAIM, &c2, 2), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.len, mib);
	ASSERT_EQ(peek(FI_CLAIM | FI_DISCARD, &c2, 2), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.op_context, &c2);
	EXPECT_EQ(e.len, 0u);
	spin({p.a.tx, p.a.rx, p.b.rx}, 500); /* the CREDIT goes out and lands */
	for (uint64_t tag : {3, 4})
		ASSERT_EQ(fi_tsend(p.a.ep, src.data(), mib, nullptr, p.a_to_b, tag, nullptr), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(get_stats().rndv_sends, before.rndv_sends);
	std::vector<char> dst(mib);
	for (uint64_t tag : {3, 4}) {
		ASSERT_EQ(fi_trecv(p.b.ep, dst.data(), mib, nullptr, FI_ADDR_UNSPEC, tag, 0, nullptr), 0);
		ASSERT_EQ(p.wait_rx(p.b, e), 1);
		EXPECT_EQ(e.tag, tag);
		EXPECT_EQ(dst, src);
	}
}

/* FI_TCP_EAGER_WINDOW=0: every message above the rendezvous size waits for
 * its receive, as before the window existed. */
TEST(tcp_window, zero_window_always_uses_the_rendezvous)
{
	pair p("0");
	p.warm_up();
	auto src = pattern(mib, 3);
	std::vector<char> dst(mib, 0);
	stats before = get_stats();
	ASSERT_EQ(fi_send(p.a.ep, src.data(), mib, nullptr, p.a_to_b, nullptr), 0);
	spin({p.a.tx, p.b.rx}, 1000);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(p.a.tx, &e, 1), -FI_EAGAIN); /* waits for a receive */
	ASSERT_EQ(fi_recv(p.b.ep, dst.data(), mib, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(memcmp(src.data(), dst.data(), mib), 0);
	stats after = get_stats();
	EXPECT_EQ(after.rndv_sends, before.rndv_sends + 1);
	EXPECT_EQ(after.staged_bytes, before.staged_bytes);
}


/* On the wire: the endpoint's HELLO_ACK announces its window; sends to a
 * peer go eager (F_CREDIT) while the window it announced has room, by RTS
 * past it, and eager again once CREDIT gives bytes back. */
TEST(tcp_window, sender_keeps_to_the_window_the_peer_announced)
{
	raw_pair r("3000000", 300000);
	rdm_ep &a = r.a;
	raw_peer &peer = r.peer;
	EXPECT_EQ(r.ack.data, 0u);
	EXPECT_EQ(r.ack.aux, 3000000u);
	frame::header h;
	fi_addr_t to = peer.insert();
	auto src = pattern(200000, 4);
	std::vector<char> body(200000);
	int c1, c2, c3;
	ASSERT_EQ(fi_send(a.ep, src.data(), src.size(), nullptr, to, &c1), 0);
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::MSG);
	EXPECT_EQ(h.flags, frame::F_CREDIT);
	ASSERT_EQ(h.len, src.size());
	ASSERT_TRUE(peer.read_exact(body.data(), body.size()));
	EXPECT_EQ(body, src);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(a.tx, e), 1);
	EXPECT_EQ(e.op_context, &c1);
	/* 100000 of the window left: the next one asks first. */
	ASSERT_EQ(fi_send(a.ep, src.data(), src.size(), nullptr, to, &c2), 0);
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::RTS);
	EXPECT_EQ(h.aux, src.size());
	/* Given back, the window takes the next one eagerly again. */
	frame::header cr;
	cr.type = frame::CREDIT;
	cr.data = 200000;
	peer.put(cr, nullptr, 0);
	spin({a.tx, a.rx}, 200);
	ASSERT_EQ(fi_send(a.ep, src.data(), src.size(), nullptr, to, &c3), 0);
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::MSG);
	EXPECT_EQ(h.flags, frame::F_CREDIT);
	ASSERT_TRUE(peer.read_exact(body.data(), body.size()));
	ASSERT_EQ(wait_one(a.tx, e), 1);
	EXPECT_EQ(e.op_context, &c3);
	/* Giving back more than it was sent is a protocol error: the
	 * connection closes and the rendezvous still waiting fails. */
	uint64_t bad = get_stats().bad_frames;
	cr.data = 400000;
	peer.put(cr, nullptr, 0);
	EXPECT_TRUE(peer.closed_by_peer());
	EXPECT_EQ(get_stats().bad_frames, bad + 1);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(a.tx, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &c2);
}

/* A peer that sends more eager bytes than the window this side announced
 * loses its connection; what it sent within the window was delivered. */
TEST(tcp_window, receiver_closes_a_peer_that_overruns_its_window)
{
	raw_pair r("100000", 0);
	rdm_ep &a = r.a;
	rdm_ep b{r.env};
	raw_peer &peer = r.peer;
	EXPECT_EQ(r.ack.aux, 100000u);
	frame::header h;
	auto src = pattern(80000, 6);
	h = {};
	h.type = frame::MSG;
	h.flags = frame::F_CREDIT;
	h.len = src.size();
	peer.put(h, src.data(), src.size()); /* within: held */
	spin({a.tx, a.rx}, 500);
	uint64_t bad = get_stats().bad_frames;
	peer.put(h, src.data(), src.size()); /* 160000 > 100000 */
	EXPECT_TRUE(peer.closed_by_peer());
	EXPECT_EQ(get_stats().bad_frames, bad + 1);
	std::vector<char> dst(src.size());
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(a.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(wait_one(a.rx, e), 1);
	EXPECT_EQ(e.len, src.size());
	EXPECT_EQ(dst, src);
	/* Other peers are not affected. */
	fi_addr_t a_to_b = a.insert(b), b_to_a = b.insert(a);
	(void)a_to_b;
	int v = 7, got = 0;
	ASSERT_EQ(fi_recv(a.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	ASSERT_EQ(wait_one(a.rx, e, nullptr, {b.tx, b.rx}), 1);
	EXPECT_EQ(got, 7);
}

/* On the wire: the receiver owes released window bytes until it sends that
 * peer something, and they travel with it (CREDIT right before the frame);
 * once half its window is owed it gives them back unasked. */
TEST(tcp_window, credit_rides_on_the_next_frame_or_goes_at_half_the_window)
{
	raw_pair r("3000000", 0);
	rdm_ep &a = r.a;
	raw_peer &peer = r.peer;
	frame::header h;
	auto src = pattern(800000, 8);
	std::vector<char> dst(src.size());
	fi_cq_tagged_entry e;
	frame::header m;
	m.type = frame::MSG;
	m.flags = frame::F_CREDIT;
	m.len = src.size();
	ASSERT_EQ(fi_recv(a.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	peer.put(m, src.data(), src.size());
	ASSERT_EQ(wait_one(a.rx, e), 1);
	EXPECT_EQ(dst, src);
	/* 800000 owed, under half of 3000000: nothing comes back yet. */
	spin({a.tx, a.rx}, 300);
	char c;
	EXPECT_EQ(recv(peer.fd, &c, 1, MSG_DONTWAIT), -1);
	/* A message to that peer carries them. */
	fi_addr_t to = peer.insert();
	int v = 5;
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, to, nullptr), 0);
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::CREDIT);
	EXPECT_EQ(h.data, src.size());
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::MSG);
	int got = 0;
	ASSERT_TRUE(peer.read_exact(&got, sizeof got));
	EXPECT_EQ(got, 5);
	ASSERT_EQ(wait_one(a.tx, e), 1);
	/* Two more: 1600000 owed reaches half the window, CREDIT comes unasked. */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(fi_recv(a.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		peer.put(m, src.data(), src.size());
		ASSERT_EQ(wait_one(a.rx, e), 1);
	}
	ASSERT_TRUE(peer.get(h));
	EXPECT_EQ(h.type, frame::CREDIT);
	EXPECT_EQ(h.data, 2 * src.size());
}
