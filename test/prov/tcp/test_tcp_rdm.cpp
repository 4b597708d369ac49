/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider, FI_EP_RDM: its frames, a raw socket as a stray or
 * malformed peer, connections, rendezvous, and a fork()ed peer killed
 * mid-transfer (the rdm, tagged and rma suites of every provider are in
 * test_prov_rdm.cpp). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "prov/tcp/frame.h"
#include "prov/tcp/tcp_ep.h"
#include "../common/tcp_fixture.h"

using namespace wu::test;

namespace {

constexpr uint64_t pair_caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV;

/* Two tcp endpoints, for the tests of tcp's own connections and wire. */
struct pair_fixture : ::testing::Test, rdm_pair {
	pair_fixture() : rdm_pair("tcp", pair_caps) {}
};


/* FI_TCP_EAGER_WINDOW=0 for the fixture's endpoints: large messages always
 * go by rendezvous (test_tcp_window covers the eager window). */
struct no_window {
	no_window() { setenv("FI_TCP_EAGER_WINDOW", "0", 1); }
	~no_window() { unsetenv("FI_TCP_EAGER_WINDOW"); }
};
struct rndv_pair : no_window, pair_fixture {};

} // namespace

TEST(tcp_frame, round_trip_and_rejects)
{
	using namespace wu::tcp;
	frame::header h;
	h.type = frame::MSG;
	h.flags = frame::F_TAGGED | frame::F_CQ_DATA;
	h.len = 12;
	h.tag = 0x1234;
	h.data = 99;
	unsigned char buf[frame::hdr_size];
	frame::encode(h, buf);
	frame::header d;
	ASSERT_EQ(frame::decode(buf, sizeof buf, d), frame::error::ok);
	EXPECT_EQ(d.tag, 0x1234u);
	EXPECT_EQ(d.data, 99u);
	EXPECT_EQ(d.len, 12u);
	EXPECT_EQ(frame::decode(buf, sizeof buf - 1, d), frame::error::short_input);
	unsigned char bad[frame::hdr_size];
	memcpy(bad, buf, sizeof bad);
	bad[0] ^= 1;
	EXPECT_EQ(frame::decode(bad, sizeof bad, d), frame::error::bad_magic);
	memcpy(bad, buf, sizeof bad);
	bad[3] = 200;
	EXPECT_EQ(frame::decode(bad, sizeof bad, d), frame::error::bad_type);
	h.flags = frame::F_LAST; /* not a MSG flag */
	frame::encode(h, bad);
	EXPECT_EQ(frame::decode(bad, sizeof bad, d), frame::error::bad_flags);
	h = {};
	h.type = frame::CONNREQ;
	h.len = frame::connreq_auth + frame::max_cm_data + 1;
	frame::encode(h, bad);
	EXPECT_EQ(frame::decode(bad, sizeof bad, d), frame::error::bad_len);
}

/* ATOMIC: data names an operation the engine takes, len is exactly its
 * operands; ATOMIC_RESP: a status or old values, never both. */
TEST(tcp_frame, atomic_frames_round_trip_and_rejects)
{
	using namespace wu::tcp;
	frame::atomic_desc d;
	d.op = FI_CSWAP;
	d.datatype = FI_UINT32;
	d.family = 2;
	d.count = 3;
	frame::header h;
	h.type = frame::ATOMIC;
	h.tag = 5;
	h.aux = 0x1000;
	h.id = 8;
	h.data = frame::pack(d);
	h.len = frame::atomic_len(d);
	EXPECT_EQ(h.len, 24u);
	EXPECT_EQ(frame::atomic_resp_len(d), 12u);
	unsigned char buf[frame::hdr_size];
	frame::header out;
	auto dec = [&](const frame::header &x) {
		frame::encode(x, buf);
		return frame::decode(buf, sizeof buf, out);
	};
	ASSERT_EQ(dec(h), frame::error::ok);
	frame::atomic_desc back = frame::unpack_atomic(out.data);
	EXPECT_EQ(back.op, FI_CSWAP);
	EXPECT_EQ(back.datatype, FI_UINT32);
	EXPECT_EQ(back.family, 2);
	EXPECT_EQ(back.count, 3u);
	frame::header x = h;
	x.len = 12; /* the compare values are missing */
	EXPECT_EQ(dec(x), frame::error::bad_len);
	x = h;
	x.flags = frame::F_CQ_DATA;
	EXPECT_EQ(dec(x), frame::error::bad_flags);
	x = h;
	x.data |= uint64_t(1) << 20; /* reserved bits */
	EXPECT_EQ(dec(x), frame::error::bad_field);
	x = h;
	x.aux = ~0ull - 4; /* the range wraps */
	EXPECT_EQ(dec(x), frame::error::bad_field);
	auto with = [&](frame::atomic_desc e) {
		frame::header y = h;
		y.data = frame::pack(e);
		y.len = 0;
		return dec(y);
	};
	frame::atomic_desc e = d;
	e.family = 0; /* FI_CSWAP is no plain atomic */
	EXPECT_EQ(with(e), frame::error::bad_field);
	e = d;
	e.datatype = FI_FLOAT_COMPLEX;
	e.op = FI_CSWAP_LT; /* no ordering on complex */
	EXPECT_EQ(with(e), frame::error::bad_field);
	e = d;
	e.count = 0;
	EXPECT_EQ(with(e), frame::error::bad_field);
	e.count = 65536 / 4 + 1; /* above max_bytes */
	EXPECT_EQ(with(e), frame::error::bad_field);
	e = d;
	e.datatype = 16;
	EXPECT_EQ(with(e), frame::error::bad_field);
	e = d;
	e.op = FI_ATOMIC_OP_LAST;
	EXPECT_EQ(with(e), frame::error::bad_field);
	/* ATOMIC_READ carries no operands. */
	e = {};
	e.op = FI_ATOMIC_READ;
	e.datatype = FI_DOUBLE;
	e.family = 1;
	e.count = 2;
	EXPECT_EQ(frame::atomic_len(e), 0u);
	EXPECT_EQ(with(e), frame::error::ok);
	frame::header r;
	r.type = frame::ATOMIC_RESP;
	r.id = 8;
	r.len = 12;
	EXPECT_EQ(dec(r), frame::error::ok);
	r.data = FI_EACCES;
	EXPECT_EQ(dec(r), frame::error::bad_field);
	r.len = 0;
	EXPECT_EQ(dec(r), frame::error::ok);
	r.tag = 1;
	EXPECT_EQ(dec(r), frame::error::bad_field);
	r.tag = 0;
	r.len = 65536 + 1;
	r.data = 0;
	EXPECT_EQ(dec(r), frame::error::bad_len);
}

TEST_F(pair_fixture, getname_is_a_loopback_sockaddr_and_setname_rebinds_before_enable)
{
	ASSERT_EQ(a.name.size(), sizeof(sockaddr_in));
	sockaddr_in in;
	memcpy(&in, a.name.data(), sizeof in);
	EXPECT_EQ(in.sin_family, AF_INET);
	EXPECT_EQ(ntohl(in.sin_addr.s_addr), INADDR_LOOPBACK);
	EXPECT_NE(in.sin_port, 0);
	/* After enable the name is fixed. */
	EXPECT_EQ(fi_setname(&a.ep->fid, a.name.data(), a.name.size()), -FI_EOPBADSTATE);
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
	sockaddr_in want = in;
	want.sin_port = 0;
	EXPECT_EQ(fi_setname(&ep->fid, &want, sizeof want), 0);
	EXPECT_EQ(fi_enable(ep), -FI_ENOAV); /* RDM needs an AV */
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

TEST_F(pair_fixture, simultaneous_connects_resolve_to_one_connection_each_way_in_order)
{
	const int n = 50;
	uint32_t ra[n], rb[n];
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(fi_trecv(a.ep, &ra[i], 4, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
		ASSERT_EQ(fi_trecv(b.ep, &rb[i], 4, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
	}
	/* Both sides send before either makes progress: two connects race. */
	for (uint32_t i = 0; i < uint32_t(n); i++) {
		ASSERT_EQ(fi_tinject(a.ep, &i, 4, a_to_b, 1), 0);
		ASSERT_EQ(fi_tinject(b.ep, &i, 4, b_to_a, 1), 0);
	}
	fi_cq_tagged_entry e;
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(wait_rx(a, e), 1);
		ASSERT_EQ(wait_rx(b, e), 1);
	}
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(ra[i], uint32_t(i));
		EXPECT_EQ(rb[i], uint32_t(i));
	}
}

/* A raw socket to a's listening port: a wrong job key is refused and
 * counted; garbage is a protocol error; a and b keep talking. */
TEST_F(pair_fixture, stray_and_malformed_connections_are_refused_without_harm)
{
	using namespace wu::tcp;
	stats before = get_stats();
	auto raw = [&](const void *bytes, size_t n) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr *>(a.name.data()), socklen_t(a.name.size())), 0);
		ASSERT_EQ(write(fd, bytes, n), ssize_t(n));
		/* a closes it once progress sees it. */
		char c;
		for (int i = 0; i < 2000; i++) {
			spin({a.rx}, 1);
			if (recv(fd, &c, 1, MSG_DONTWAIT) == 0)
				break;
			usleep(500);
		}
		EXPECT_EQ(recv(fd, &c, 1, MSG_DONTWAIT), 0);
		::close(fd);
	};
	/* A HELLO whose proof is made under another key. */
	frame::header h;
	h.type = frame::HELLO;
	h.len = frame::min_hello;
	std::vector<unsigned char> hello(frame::hdr_size + frame::min_hello);
	frame::encode(h, hello.data());
	auth::session an;
	auth::prove(auth::key_from_text("not this job's key"), auth::role::connector, an, h, b.name.data(),
		    sizeof(sockaddr_in), hello.data() + frame::hdr_size + auth::nonce_len);
	memcpy(hello.data() + frame::hdr_size + auth::nonce_len + auth::mac_len, b.name.data(), sizeof(sockaddr_in));
	raw(hello.data(), hello.size());
	EXPECT_EQ(get_stats().refused_handshakes, before.refused_handshakes + 1);
	std::string junk(64, 'J');
	raw(junk.data(), junk.size());
	EXPECT_EQ(get_stats().bad_frames, before.bad_frames + 1);
	int v = 3, w = 0;
	ASSERT_EQ(fi_recv(a.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_rx(a, e), 1);
	EXPECT_EQ(w, 3);
}

/* A peer process killed while our sends are in flight: every send gets an
 * error completion, nothing hangs. */
TEST(tcp_rdm_fault, peer_killed_mid_transfer_gives_error_completions)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* The peer: an endpoint that never reads (its socket buffers fill). */
		::close(p[0]);
		tcp_env env{FI_EP_RDM};
		rdm_ep ep{env};
		uint32_t n = uint32_t(ep.name.size());
		if (write(p[1], &n, 4) != 4 || write(p[1], ep.name.data(), n) != ssize_t(n))
			_exit(1);
		for (int i = 0; i < 2000; i++) {
			spin({ep.rx}, 1); /* accept the connection, then stop reading */
			if (i > 50)
				break;
			usleep(1000);
		}
		alarm(30); /* never outlive a failed parent */
		pause();
		_exit(0);
	}
	::close(p[1]);
	uint32_t n = 0;
	ASSERT_EQ(read(p[0], &n, 4), 4);
	std::vector<char> name(n);
	ASSERT_EQ(read(p[0], name.data(), n), ssize_t(n));
	tcp_env env{FI_EP_RDM};
	rdm_ep me{env};
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(me.av, name.data(), 1, &peer, 0, nullptr), 1);
	const int sends = 8;
	std::vector<char> big(8 << 20, 'k');
	for (int i = 0; i < sends; i++)
		ASSERT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, nullptr), 0);
	spin({me.tx}, 3000);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	int ok = 0, failed = 0;
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	for (int i = 0; i < sends; i++) {
		int r = wait_one(me.tx, e, &err);
		ASSERT_NE(r, -FI_ETIMEDOUT) << "a send to a dead peer never completed";
		if (r == 1)
			ok++;
		else {
			failed++;
			EXPECT_NE(err.err, 0);
		}
	}
	EXPECT_GE(failed, 1);
	EXPECT_EQ(ok + failed, sends);
	::close(p[0]);
}

/* fi_av_remove closes the connection to that peer: a send still queued on
 * it fails with an error completion; inserting the address again and
 * sending dials a new connection. */
TEST_F(pair_fixture, av_remove_closes_the_connection_and_reinsert_reconnects)
{
	int v = 1, w = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	ASSERT_EQ(wait_tx(a, e), 1);
	uint64_t connects = wu::tcp::get_stats().connects;

	/* A send b never makes room for: it stays in flight. */
	std::vector<char> big(64 << 20, 'r');
	int ctx;
	ASSERT_EQ(fi_send(a.ep, big.data(), big.size(), nullptr, a_to_b, &ctx), 0);
	spin({a.tx}, 200);
	ASSERT_EQ(fi_av_remove(a.av, &a_to_b, 1, 0), 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(a.tx, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECONNABORTED);
	/* The removed fi_addr names nothing now. */
	EXPECT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), -FI_EINVAL);

	/* b notices the closed connection (its partial message is dropped),
	 * then a re-inserts b and a send dials again. */
	spin({b.rx}, 200);
	fi_addr_t again = a.insert(b);
	v = 2;
	w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, again, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 2);
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(wu::tcp::get_stats().connects, connects + 1);

	/* The other way: b removes a (b only ever received from it); b's
	 * connection closes, and a's next send reconnects transparently. */
	ASSERT_EQ(fi_av_remove(b.av, &b_to_a, 1, 0), 0);
	spin({a.tx, a.rx}, 200);
	v = 3;
	w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, again, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 3);
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(wu::tcp::get_stats().connects, connects + 2);
}

/* Rendezvous (above FI_TCP_RNDV_SIZE, 64 KiB by default): a large
 * unexpected message waits at the sender and lands straight in the
 * receive once it is posted; nothing of it is staged at the receiver. */
TEST_F(rndv_pair, large_unexpected_message_goes_by_rendezvous_without_staging)
{
	using namespace wu::tcp;
	const size_t n = 3 << 20;
	std::vector<char> src(n), dst(n + 10, 0);
	for (size_t i = 0; i < n; i++)
		src[i] = char(i * 13 + 1);
	stats before = get_stats();
	int sctx, rctx;
	ASSERT_EQ(fi_tsenddata(a.ep, src.data(), n, nullptr, 0xabcdef, a_to_b, 0x77, &sctx), 0);
	spin({a.tx, b.rx}, 500);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(a.tx, &e, 1), -FI_EAGAIN); /* no receive yet: the send waits */
	ASSERT_EQ(fi_trecv(b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, 0x70, 0xf, &rctx), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_EQ(e.len, n);
	EXPECT_EQ(e.tag, 0x77u);
	EXPECT_EQ(e.data, 0xabcdefu);
	EXPECT_EQ(e.flags, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(memcmp(src.data(), dst.data(), n), 0);
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(e.op_context, &sctx);
	stats after = get_stats();
	EXPECT_EQ(after.rndv_sends, before.rndv_sends + 1);
	EXPECT_EQ(after.staged_bytes, before.staged_bytes); /* no full-size staging copy */

	/* Several in a row, expected and unexpected, keep their order. */
	std::vector<std::vector<char>> got(4, std::vector<char>(200000, 0));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(fi_recv(b.ep, got[i].data(), got[i].size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(fi_send(a.ep, src.data() + i, 200000, nullptr, a_to_b, nullptr), 0);
	spin({a.tx, b.rx}, 300);
	for (int i = 2; i < 4; i++)
		ASSERT_EQ(fi_recv(b.ep, got[i].data(), got[i].size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(wait_rx(b, e), 1);
		ASSERT_EQ(wait_tx(a, e), 1);
	}
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(memcmp(got[i].data(), src.data() + i, 200000), 0) << i;
	EXPECT_EQ(get_stats().staged_bytes, before.staged_bytes);
}

TEST_F(rndv_pair, rendezvous_truncation_is_etrunc_and_the_connection_stays)
{
	const size_t n = 1 << 20, room = 100000;
	std::vector<char> src(n, 'z'), dst(room, 0);
	int ctx;
	ASSERT_EQ(fi_send(a.ep, src.data(), n, nullptr, a_to_b, nullptr), 0);
	spin({a.tx, b.rx}, 200);
	ASSERT_EQ(fi_recv(b.ep, dst.data(), room, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_rx(b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.len, room);
	EXPECT_EQ(err.olen, n - room);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(dst[room - 1], 'z');
	ASSERT_EQ(wait_tx(a, e), 1); /* the sender's side went fine */
	/* Expected this time, and truncated too. */
	ASSERT_EQ(fi_recv(b.ep, dst.data(), room, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	ASSERT_EQ(fi_send(a.ep, src.data(), n, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETRUNC);
	ASSERT_EQ(wait_tx(a, e), 1);
	int v = 9, w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 9);
}

/* A sender that dies halfway through its RDATA (a raw socket speaking the
 * protocol): the receive it was cleared into gets an error completion. */
TEST_F(pair_fixture, peer_dying_mid_rendezvous_fails_the_receive)
{
	using namespace wu::tcp;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr *>(a.name.data()), socklen_t(a.name.size())), 0);
	auto put = [&](const frame::header &h, const void *body, size_t n) {
		std::vector<unsigned char> buf(frame::hdr_size + n);
		frame::encode(h, buf.data());
		if (n)
			memcpy(buf.data() + frame::hdr_size, body, n);
		ASSERT_EQ(write(fd, buf.data(), buf.size()), ssize_t(buf.size()));
	};
	auto get = [&](frame::header &h) {
		unsigned char buf[frame::hdr_size];
		size_t have = 0;
		for (int i = 0; i < 20000 && have < sizeof buf; i++) {
			spin({a.rx}, 1);
			ssize_t r = recv(fd, buf + have, sizeof buf - have, MSG_DONTWAIT);
			if (r > 0)
				have += size_t(r);
			else
				usleep(200);
		}
		ASSERT_EQ(have, sizeof buf);
		ASSERT_EQ(frame::decode(buf, sizeof buf, h), frame::error::ok);
	};
	sockaddr_in fake{};
	fake.sin_family = AF_INET;
	fake.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fake.sin_port = htons(1);
	auto get_body = [&](void *p, size_t n) {
		size_t have = 0;
		for (int i = 0; i < 20000 && have < n; i++) {
			spin({a.rx}, 1);
			ssize_t r = recv(fd, static_cast<char *>(p) + have, n - have, MSG_DONTWAIT);
			if (r > 0)
				have += size_t(r);
			else
				usleep(200);
		}
		ASSERT_EQ(have, n);
	};
	frame::header h;
	get(h);
	ASSERT_EQ(h.type, frame::CHALLENGE);
	auth::session an;
	auth::bind_ends(an, fd, auth::role::connector);
	get_body(an.acc, sizeof an.acc);
	h = {};
	h.type = frame::HELLO;
	unsigned char body[frame::min_hello];
	memcpy(body, an.con, auth::nonce_len);
	auth::prove(test_job_key(), auth::role::connector, an, h, &fake, sizeof fake, body + auth::nonce_len);
	memcpy(body + auth::nonce_len + auth::mac_len, &fake, sizeof fake);
	h.len = sizeof body;
	put(h, body, sizeof body);
	frame::header ack;
	get(ack);
	ASSERT_EQ(ack.type, frame::HELLO_ACK);
	ASSERT_EQ(ack.data, 0u);
	unsigned char mac[auth::mac_len];
	get_body(mac, sizeof mac);
	const size_t n = 1 << 20;
	h = {};
	h.type = frame::RTS;
	h.aux = n;
	h.id = 42;
	put(h, nullptr, 0);
	std::vector<char> dst(n);
	int ctx;
	ASSERT_EQ(fi_recv(a.ep, dst.data(), n, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	frame::header cts;
	get(cts);
	ASSERT_EQ(cts.type, frame::CTS);
	EXPECT_EQ(cts.id, 42u);
	h = {};
	h.type = frame::RDATA;
	h.flags = frame::F_LAST;
	h.len = n;
	h.aux = cts.aux;
	std::vector<char> half(n / 2, 'h');
	put(h, half.data(), half.size());
	spin({a.rx}, 200);
	::close(fd);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_rx(a, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECONNRESET);
	/* An RTS from a peer that then vanishes leaves nothing behind: a later
	 * receive waits for real traffic. */
	int v = 4, w = 0;
	ASSERT_EQ(fi_recv(a.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	ASSERT_EQ(wait_rx(a, e), 1);
	EXPECT_EQ(w, 4);
}

/* FI_TCP_CONN_TIMEOUT: sends to an address that never answers fail with
 * FI_ETIMEDOUT instead of waiting for the kernel's SYN retries. */
TEST(tcp_rdm_timeout, lazy_connect_to_a_silent_address_times_out)
{
	setenv("FI_TCP_CONN_TIMEOUT", "300", 1);
	tcp_env env{FI_EP_RDM};
	rdm_ep me{env};
	unsetenv("FI_TCP_CONN_TIMEOUT");
	silent_listener quiet;
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(me.av, &quiet.addr, 1, &peer, 0, nullptr), 1);
	uint64_t timeouts = wu::tcp::get_stats().timeouts;
	auto t0 = std::chrono::steady_clock::now();
	int v = 1, ctx1, ctx2;
	std::vector<char> big(1 << 20, 'b');
	ASSERT_EQ(fi_send(me.ep, &v, sizeof v, nullptr, peer, &ctx1), 0);
	ASSERT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, &ctx2), 0);
	fi_cq_tagged_entry e;
	for (void *want : {(void *)&ctx1, (void *)&ctx2}) {
		fi_cq_err_entry err{};
		ASSERT_EQ(wait_one(me.tx, e, &err), -FI_EAVAIL);
		EXPECT_EQ(err.err, FI_ETIMEDOUT);
		EXPECT_EQ(err.op_context, want);
	}
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
	EXPECT_GE(ms, 250);
	EXPECT_LT(ms, 5000);
	EXPECT_EQ(wu::tcp::get_stats().timeouts, timeouts + 1);
}
