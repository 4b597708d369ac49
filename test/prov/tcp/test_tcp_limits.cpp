/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: what a peer may make this side do (issue 12).  A closed
 * memory region is closed: once fi_close(mr) returns, no remote operation
 * reads or writes it, in flight or later.  Raw peers speak the wire
 * directly, so that a frame can be cut in the middle of a close. */
#include "../common/tcp_fixture.h"

#include <cstdlib>
#include <string>
#include <vector>

using namespace wu::test;
namespace frame = wu::tcp::frame;

namespace {

constexpr size_t mib = size_t(1) << 20;

/* An RDM endpoint with RMA, a raw peer that said HELLO and read HELLO_ACK. */
struct target {
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
	rdm_ep a{env};
	raw_peer peer{a, 0};

	target()
	{
		frame::header ack;
		EXPECT_TRUE(peer.get(ack));
		EXPECT_EQ(ack.type, frame::HELLO_ACK);
	}
	uint64_t base(const void *p) const
	{
		return (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(p)) : 0;
	}
	/* The next frame of type t (skipping CREDIT and such). */
	bool next(frame::header &h, uint8_t t)
	{
		for (int i = 0; i < 8; i++) {
			if (!peer.get(h))
				return false;
			if (h.type == t)
				return true;
			EXPECT_EQ(h.len, 0u);
		}
		return false;
	}
	/* Reads up to n payload bytes into out; stops at EOF.  Bytes read. */
	size_t drain(std::vector<char> &out, size_t n)
	{
		out.resize(n);
		size_t have = 0;
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (have < n && std::chrono::steady_clock::now() < until) {
			spin({a.tx, a.rx}, 1);
			ssize_t r = recv(peer.fd, out.data() + have, n - have, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
				break;
			if (r > 0)
				have += size_t(r);
		}
		return have;
	}
};

} // namespace

/* An RMA write whose body is arriving when its region closes: what came
 * before the close landed, nothing after it does, and the initiator's write
 * fails with FI_EACCES. */
TEST(tcp_mr_close, write_body_after_close_does_not_land)
{
	target t;
	std::vector<char> buf(mib, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_WRITE, 0, 9, 0, &mr, nullptr), 0);
	const size_t first = 4096;
	std::vector<char> body(mib, char(0xab));
	frame::header h;
	h.type = frame::WRITE;
	h.tag = 9;
	h.aux = t.base(buf.data());
	h.len = mib;
	h.id = 5;
	t.peer.put(h, body.data(), first);
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (buf[first - 1] != char(0xab) && std::chrono::steady_clock::now() < until)
		spin({t.a.tx, t.a.rx}, 1);
	ASSERT_EQ(buf[first - 1], char(0xab)) << "the first part did not land";
	ASSERT_EQ(fi_close(&mr->fid), 0);
	ASSERT_TRUE(t.peer.put_raw(body.data() + first, mib - first));
	frame::header ack;
	ASSERT_TRUE(t.next(ack, frame::WRITE_ACK));
	EXPECT_EQ(ack.id, 5u);
	EXPECT_EQ(ack.data, uint64_t(FI_EACCES));
	size_t landed = 0;
	for (size_t i = first; i < mib; i++)
		landed += buf[i] != 0;
	EXPECT_EQ(landed, 0u) << "bytes written into a closed region";
	/* The connection still works: a later write to another region lands. */
	std::vector<char> buf2(64, 0);
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf2.data(), buf2.size(), FI_REMOTE_WRITE, 0, 10, 0, &mr, nullptr), 0);
	h.tag = 10;
	h.aux = t.base(buf2.data());
	h.len = buf2.size();
	h.id = 6;
	t.peer.put(h, body.data(), buf2.size());
	ASSERT_TRUE(t.next(ack, frame::WRITE_ACK));
	EXPECT_EQ(ack.id, 6u);
	EXPECT_EQ(ack.data, 0u);
	EXPECT_EQ(buf2[63], char(0xab));
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* A read response partly written when its region closes: no byte more is
 * read from the region (the frame cannot be finished, so the connection
 * ends), and a response not yet started becomes an FI_EACCES one. */
TEST(tcp_mr_close, read_response_stops_reading_at_close)
{
	target t;
	const size_t big = 64 * mib; /* far more than the socket buffers hold */
	std::vector<char> buf(big, char(0x11));
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_READ, 0, 11, 0, &mr, nullptr), 0);
	frame::header h;
	h.type = frame::READ_REQ;
	h.tag = 11;
	h.aux = t.base(buf.data());
	h.data = big;
	h.id = 7;
	t.peer.put(h, nullptr, 0);
	spin({t.a.tx, t.a.rx}, 2000);
	ASSERT_EQ(fi_close(&mr->fid), 0);
	/* No longer the region's: what the response carries from here on
	 * was read after the close. */
	std::fill(buf.begin(), buf.end(), char(0x22));
	frame::header r;
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 7u);
	std::vector<char> got;
	size_t n = t.drain(got, big);
	EXPECT_LT(n, big) << "the whole response was sent from a closed region";
	size_t late = 0;
	for (size_t i = 0; i < n; i++)
		late += got[i] == char(0x22);
	EXPECT_EQ(late, 0u) << "bytes read from a closed region";
}

TEST(tcp_mr_close, queued_read_response_becomes_an_access_error)
{
	target t;
	const size_t big = 64 * mib;
	std::vector<char> buf(big, char(0x11)), small(4096, char(0x33));
	fid_mr *mr = nullptr, *mr2 = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_READ, 0, 12, 0, &mr, nullptr), 0);
	ASSERT_EQ(fi_mr_reg(t.env.domain, small.data(), small.size(), FI_REMOTE_READ, 0, 13, 0, &mr2, nullptr), 0);
	frame::header h;
	h.type = frame::READ_REQ;
	h.tag = 12;
	h.aux = t.base(buf.data());
	h.data = big;
	h.id = 8;
	t.peer.put(h, nullptr, 0);
	h.tag = 13;
	h.aux = t.base(small.data());
	h.data = small.size();
	h.id = 9;
	t.peer.put(h, nullptr, 0);
	spin({t.a.tx, t.a.rx}, 2000);
	/* The second response waits behind the first, which the socket
	 * cannot take yet. */
	ASSERT_EQ(fi_close(&mr2->fid), 0);
	frame::header r;
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 8u);
	EXPECT_EQ(r.data, 0u);
	std::vector<char> got;
	ASSERT_EQ(t.drain(got, big), big);
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 9u);
	EXPECT_EQ(r.data, uint64_t(FI_EACCES));
	EXPECT_EQ(r.len, 0u);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* max_msg_size is a real limit, and a send, RMA or read above it fails
 * when posted (-FI_EMSGSIZE) rather than never completing. */
TEST(tcp_limits, max_msg_size_is_enforced_at_post_time)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
	ASSERT_NE(env.info, nullptr);
	EXPECT_EQ(env.info->ep_attr->max_msg_size, frame::max_payload);
	EXPECT_LT(env.info->ep_attr->max_msg_size, uint64_t(SIZE_MAX));
	rdm_ep a{env}, b{env};
	fi_addr_t to_b = a.insert(b);
	char buf[64] = {};
	const size_t huge = size_t(1) << 40, over = size_t(frame::max_payload) + 1;
	for (size_t len : {huge, over}) {
		EXPECT_EQ(fi_send(a.ep, buf, len, nullptr, to_b, nullptr), -FI_EMSGSIZE) << len;
		EXPECT_EQ(fi_tsend(a.ep, buf, len, nullptr, to_b, 1, nullptr), -FI_EMSGSIZE) << len;
		EXPECT_EQ(fi_write(a.ep, buf, len, nullptr, to_b, 0, 1, nullptr), -FI_EMSGSIZE) << len;
		EXPECT_EQ(fi_read(a.ep, buf, len, nullptr, to_b, 0, 1, nullptr), -FI_EMSGSIZE) << len;
	}
	/* iovecs whose lengths wrap around do not get past the check. */
	iovec v[2] = {{buf, SIZE_MAX}, {buf, 2}};
	EXPECT_EQ(fi_sendv(a.ep, v, nullptr, 2, to_b, nullptr), -FI_EMSGSIZE);
	/* Nothing went out: a normal message still arrives first. */
	int x = 5, y = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(b.ep, &y, sizeof y, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &x, sizeof x, nullptr, to_b, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx}), 1);
	EXPECT_EQ(y, 5);
	EXPECT_EQ(e.len, sizeof x);
}

/* The decoder bounds every length a peer sends by max_msg_size before the
 * receiver sizes anything from it. */
TEST(tcp_limits, wire_lengths_above_max_msg_size_are_refused)
{
	unsigned char b[frame::hdr_size];
	frame::header h, out;
	h.type = frame::MSG;
	h.flags = frame::F_CREDIT;
	h.len = frame::max_payload + 1;
	frame::encode(h, b);
	EXPECT_EQ(frame::decode(b, sizeof b, out), frame::error::bad_len);
	h = {};
	h.type = frame::RTS;
	h.aux = frame::max_payload + 1;
	frame::encode(h, b);
	EXPECT_EQ(frame::decode(b, sizeof b, out), frame::error::bad_field);
	h = {};
	h.type = frame::READ_REQ;
	h.data = frame::max_payload + 1;
	frame::encode(h, b);
	EXPECT_EQ(frame::decode(b, sizeof b, out), frame::error::bad_field);
	/* Outside the eager window a MSG carries at most max_eager bytes. */
	h = {};
	h.type = frame::MSG;
	h.len = frame::max_eager + 1;
	frame::encode(h, b);
	EXPECT_EQ(frame::decode(b, sizeof b, out), frame::error::bad_len);
	h.len = frame::max_eager;
	frame::encode(h, b);
	EXPECT_EQ(frame::decode(b, sizeof b, out), frame::error::ok);
}

namespace {
/* Sets an FI_TCP_* variable for the endpoints opened while it lives. */
struct env_var {
	const char *name;
	env_var(const char *n, const char *v) : name(n) { setenv(n, v, 1); }
	~env_var() { unsetenv(name); }
};
} // namespace

/* A sender told to send everything eagerly (FI_TCP_RNDV_SIZE=0) still
 * keeps to the receiver's window: with a zero window, an unexpected 1 MiB
 * message waits at the sender (rendezvous), nothing is held here. */
TEST(tcp_limits, receiver_window_holds_whatever_the_sender_settings)
{
	env_var r("FI_TCP_RNDV_SIZE", "0"), w("FI_TCP_EAGER_WINDOW", "0");
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	rdm_ep a{env}, b{env};
	fi_addr_t to_b = a.insert(b);
	std::vector<char> src(mib), dst(mib, 0);
	for (size_t i = 0; i < mib; i++)
		src[i] = char(i * 13 + 5);
	wu::tcp::stats before = wu::tcp::get_stats();
	ASSERT_EQ(fi_send(a.ep, src.data(), mib, nullptr, to_b, nullptr), 0);
	spin({a.tx, a.rx, b.tx, b.rx}, 3000);
	wu::tcp::stats mid = wu::tcp::get_stats();
	EXPECT_EQ(mid.staged_bytes, before.staged_bytes) << "the receiver held an unexpected message beyond its window";
	EXPECT_EQ(mid.rndv_sends, before.rndv_sends + 1);
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(b.ep, dst.data(), mib, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx}), 1);
	EXPECT_EQ(e.len, mib);
	EXPECT_EQ(dst, src);
}

/* A raw peer that sends a large message outside the window (no F_CREDIT)
 * loses its connection instead of making the receiver hold it. */
TEST(tcp_limits, large_message_outside_the_window_is_a_protocol_error)
{
	target t;
	uint64_t bad = wu::tcp::get_stats().bad_frames;
	uint64_t staged = wu::tcp::get_stats().staged_bytes;
	std::vector<char> body(mib, 1);
	frame::header h;
	h.type = frame::MSG;
	h.len = mib;
	unsigned char hb[frame::hdr_size];
	frame::encode(h, hb);
	ASSERT_EQ(send(t.peer.fd, hb, sizeof hb, MSG_NOSIGNAL), ssize_t(sizeof hb));
	(void)t.peer.put_raw(body.data(), body.size());
	EXPECT_TRUE(t.peer.closed_by_peer());
	EXPECT_EQ(wu::tcp::get_stats().bad_frames, bad + 1);
	EXPECT_EQ(wu::tcp::get_stats().staged_bytes, staged);
}

/* Rendezvous requests waiting for a receive are bounded per peer. */
TEST(tcp_limits, too_many_waiting_rendezvous_requests_are_a_protocol_error)
{
	target t;
	uint64_t bad = wu::tcp::get_stats().bad_frames;
	const size_t n = frame::max_queued + 1;
	std::vector<unsigned char> all(n * frame::hdr_size);
	frame::header h;
	h.type = frame::RTS;
	h.flags = frame::F_TAGGED;
	h.aux = mib;
	for (size_t i = 0; i < n; i++) {
		h.tag = 1000 + i;
		h.id = i + 1;
		frame::encode(h, all.data() + i * frame::hdr_size);
	}
	(void)t.peer.put_raw(all.data(), all.size());
	EXPECT_TRUE(t.peer.closed_by_peer());
	EXPECT_EQ(wu::tcp::get_stats().bad_frames, bad + 1);
}

/* A peer that keeps asking for reads without reading the replies is cut
 * off once max_queued frames wait for it, instead of queueing without end. */
TEST(tcp_limits, requests_from_a_peer_that_reads_no_replies_are_bounded)
{
	target t;
	std::vector<char> buf(mib, 7);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_READ, 0, 21, 0, &mr, nullptr), 0);
	uint64_t bad = wu::tcp::get_stats().bad_frames;
	const size_t n = frame::max_queued + 256; /* the socket buffers take some replies */
	std::vector<unsigned char> all(n * frame::hdr_size);
	frame::header h;
	h.type = frame::READ_REQ;
	h.tag = 21;
	h.aux = t.base(buf.data());
	h.data = mib;
	for (size_t i = 0; i < n; i++) {
		h.id = i + 1;
		frame::encode(h, all.data() + i * frame::hdr_size);
	}
	(void)t.peer.put_raw(all.data(), all.size());
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (wu::tcp::get_stats().bad_frames == bad && std::chrono::steady_clock::now() < until)
		spin({t.a.tx, t.a.rx}, 1);
	EXPECT_EQ(wu::tcp::get_stats().bad_frames, bad + 1);
	t.peer.close();
	spin({t.a.tx, t.a.rx}, 200);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* A flood of small unexpected messages (each under the rendezvous size, so
 * outside the eager window) is held only up to FI_TCP_UNEXP_LIMIT per
 * peer: past it the receiver stops reading that connection and TCP holds
 * the sender back.  Nothing is lost: once receives are posted every
 * message arrives, whole and in order. */
namespace {
void small_flood(fi_progress progress)
{
	env_var l("FI_TCP_UNEXP_LIMIT", "1048576");
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED, progress};
	rdm_ep a{env}, b{env};
	fi_addr_t to_b = a.insert(b);
	constexpr size_t n = 400, len = 60000;
	std::vector<char> src(n * len), dst(n * len, 0);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = char(i * 7 + i / len);
	uint64_t before = wu::tcp::get_stats().staged_bytes;
	size_t sent = 0, sends_done = 0;
	fi_cq_tagged_entry e;
	auto reap_tx = [&] {
		while (fi_cq_read(a.tx, &e, 1) == 1)
			sends_done++;
	};
	for (int round = 0; round < 3000; round++) {
		while (sent < n && fi_send(a.ep, src.data() + sent * len, len, nullptr, to_b, nullptr) == 0)
			sent++;
		reap_tx();
		(void)fi_cq_read(b.rx, &e, 0);
	}
	uint64_t held = wu::tcp::get_stats().staged_bytes - before;
	EXPECT_LE(held, (1 << 20) + len + 64) << "the receiver held more unexpected bytes than FI_TCP_UNEXP_LIMIT";
	EXPECT_LT(sends_done, n) << "the sender was never held back";
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(fi_recv(b.ep, dst.data() + i * len, len, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	size_t got = 0;
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while ((got < n || sends_done < n) && std::chrono::steady_clock::now() < until) {
		while (sent < n && fi_send(a.ep, src.data() + sent * len, len, nullptr, to_b, nullptr) == 0)
			sent++;
		reap_tx();
		while (fi_cq_read(b.rx, &e, 1) == 1) {
			EXPECT_EQ(e.len, len);
			got++;
		}
	}
	EXPECT_EQ(got, n);
	EXPECT_EQ(sends_done, n);
	EXPECT_TRUE(dst == src) << "a message was lost, cut or reordered";
}
} // namespace

TEST(tcp_limits, small_unexpected_messages_are_held_up_to_the_limit)
{
	small_flood(FI_PROGRESS_MANUAL);
}

/* The same with a provider thread reading: it must stop reading too, and
 * start again (no application call wakes it) once receives free room. */
TEST(tcp_limits, small_unexpected_messages_are_held_up_to_the_limit_auto_progress)
{
	small_flood(FI_PROGRESS_AUTO);
}
