/* SPDX-License-Identifier: BSD-3-Clause */
/* The wireup provider's own behaviour (issue 15): it is the first fi_info
 * for RDM, routes a peer on this host through shm and one with another
 * host id through tcp (counted by the endpoint's route_stats), merges both
 * transports in one matching engine (wildcard receives, per-source order,
 * FI_SOURCE), re-routes after fi_av_remove, and refuses corrupt addresses
 * and peers it cannot reach. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <rdma/fi_tagged.h>

#include "prov/common/sub_ep.h"
#include "prov/tcp/tcp.h"
#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_ep.h"
#include "prov/wireup/wx_addr.h"
#include "../common/tcp_fixture.h"

namespace {

using namespace wu::test;
using wu::wireup::route_stats;

route_stats stats(const rdm_ep &e)
{
	route_stats s;
	EXPECT_EQ(wu::wireup::stats_of(e.ep, &s), 0);
	return s;
}

/* Joins a test's helper thread on every way out (a failed ASSERT too),
 * after telling it to stop. */
struct joined {
	std::atomic<bool> &stop;
	std::thread t;
	~joined()
	{
		stop = true;
		if (t.joinable())
			t.join();
	}
};

route_stats stats_of_ep(fid_ep *ep)
{
	route_stats s;
	EXPECT_EQ(wu::wireup::stats_of(ep, &s), 0);
	return s;
}

/* ep's name with another host id: peers must reach it through tcp. */
std::vector<char> other_host(const rdm_ep &e, bool keep_tcp = true)
{
	wu::wireup::parts p;
	EXPECT_GT(wu::wireup::decode(e.name.data(), e.name.size(), &p), 0);
	p.host ^= 0x5a5a5a5a5a5a5a5aULL;
	if (!keep_tcp) {
		p.tcp = nullptr;
		p.tcp_len = 0;
	}
	std::vector<char> out(wu::wireup::addr_max);
	long n = wu::wireup::encode(p, out.data(), out.size());
	EXPECT_GT(n, 0);
	out.resize(n > 0 ? size_t(n) : 0);
	return out;
}

fi_addr_t insert_raw(rdm_ep &e, const std::vector<char> &a)
{
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(fi_av_insert(e.av, a.data(), 1, &fa, 0, nullptr), 1);
	return fa;
}

struct wireup_env : ::testing::Test {
	prov_env env{"wireup", FI_EP_RDM, FI_TAGGED | FI_MSG | FI_SOURCE | FI_DIRECTED_RECV};
};

TEST(wireup_getinfo, first_for_rdm_requests)
{
	fi_info *got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &got), 0);
	ASSERT_NE(got, nullptr);
	EXPECT_STREQ(got->fabric_attr->prov_name, "wireup");
	EXPECT_EQ(got->ep_attr->type, FI_EP_RDM);
	EXPECT_EQ(got->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM), FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi_freeinfo(got);

	fi_info *h = fi_allocinfo();
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM;
	got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), 0);
	EXPECT_STREQ(got->fabric_attr->prov_name, "wireup");
	EXPECT_LE(got->tx_attr->inject_size, 64u); /* the stricter of tcp's and shm's */
	fi_freeinfo(got);

	/* A provider asked by name still answers alone. */
	h->fabric_attr->prov_name = strdup("tcp");
	got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), 0);
	for (fi_info *i = got; i; i = i->next)
		EXPECT_STREQ(i->fabric_attr->prov_name, "tcp");
	fi_freeinfo(got);

	/* MSG endpoints are not wireup's. */
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("wireup");
	h->ep_attr->type = FI_EP_MSG;
	got = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), -FI_ENODATA);
	fi_freeinfo(h);
}

TEST_F(wireup_env, routes_this_host_through_shm_and_another_host_through_tcp)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t via_shm = a.insert(b);
	fi_addr_t via_tcp = insert_raw(a, other_host(b));
	b.insert(a);
	uint64_t x = 1, y = 2, r1 = 0, r2 = 0;
	ASSERT_EQ(fi_trecv(b.ep, &r1, sizeof r1, nullptr, FI_ADDR_UNSPEC, 7, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(b.ep, &r2, sizeof r2, nullptr, FI_ADDR_UNSPEC, 8, 0, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &x, sizeof x, nullptr, via_shm, 7, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &y, sizeof y, nullptr, via_tcp, 8, nullptr), 0);
	fi_cq_tagged_entry e;
	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
		ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx, a.rx, b.tx}), 1);
	}
	EXPECT_EQ(r1, 1u);
	EXPECT_EQ(r2, 2u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u);
	EXPECT_NE(s.shm_ep, nullptr);
	EXPECT_NE(s.tcp_ep, nullptr);
}

TEST_F(wireup_env, wildcard_receives_merge_both_transports_in_per_source_order_with_source)
{
	rdm_ep a(env), b(env), c(env);
	ASSERT_TRUE(a.ep && b.ep && c.ep);
	fi_addr_t a_to_c = a.insert(c);                    /* shm */
	fi_addr_t b_to_c = insert_raw(b, other_host(c));  /* tcp */
	/* c reaches b through tcp too: a tcp message never names a peer c
	 * reaches through shm. */
	fi_addr_t c_from_a = c.insert(a), c_from_b = insert_raw(c, other_host(b));
	constexpr int n = 40;
	std::vector<uint64_t> in(2 * n);
	for (auto &v : in)
		ASSERT_EQ(fi_trecv(c.ep, &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, &v), 0);
	std::vector<uint64_t> out(2 * n);
	for (int i = 0; i < n; i++) {
		out[2 * i] = 1000 + i;
		out[2 * i + 1] = 2000 + i;
		ASSERT_EQ(fi_tsend(a.ep, &out[2 * i], 8, nullptr, a_to_c, 1, nullptr), 0);
		ASSERT_EQ(fi_tsend(b.ep, &out[2 * i + 1], 8, nullptr, b_to_c, 2, nullptr), 0);
	}
	std::map<fi_addr_t, std::vector<uint64_t>> got;
	for (int k = 0; k < 2 * n; k++) {
		fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(wait_one(c.rx, e, nullptr, {a.tx, b.tx, a.rx, b.rx, c.tx}, &src), 1);
		got[src].push_back(*static_cast<uint64_t *>(e.op_context));
		EXPECT_EQ(e.tag, src == c_from_a ? 1u : 2u);
	}
	ASSERT_EQ(got[c_from_a].size(), size_t(n));
	ASSERT_EQ(got[c_from_b].size(), size_t(n));
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(got[c_from_a][i], uint64_t(1000 + i));
		EXPECT_EQ(got[c_from_b][i], uint64_t(2000 + i));
	}
	EXPECT_EQ(stats(a).shm, 1u);
	EXPECT_EQ(stats(b).tcp, 1u);
	spin({a.tx, b.tx}, 200);
}

/* Issue 32: a connection to our tcp sub-endpoint that claims the tcp
 * address of a peer we reach through shm (one on this host) is not that
 * peer: even with the job key, its messages match no receive directed at
 * the peer, and FI_SOURCE does not name it; the peer's own messages still do. */
TEST_F(wireup_env, a_tcp_connection_is_never_taken_for_a_peer_on_shm)
{
	rdm_ep w(env), local(env);
	ASSERT_TRUE(w.ep && local.ep);
	fi_addr_t w_from_local = w.insert(local); /* this host: shm */
	fi_addr_t local_to_w = local.insert(w);
	wu::wireup::parts pw, pl;
	ASSERT_GT(wu::wireup::decode(w.name.data(), w.name.size(), &pw), 0);
	ASSERT_GT(wu::wireup::decode(local.name.data(), local.name.size(), &pl), 0);
	ASSERT_EQ(pw.tcp_len, sizeof(sockaddr_in));
	ASSERT_EQ(pl.tcp_len, sizeof(sockaddr_in));
	sockaddr_in w_tcp, local_tcp;
	memcpy(&w_tcp, pw.tcp, sizeof w_tcp);
	memcpy(&local_tcp, pl.tcp, sizeof local_tcp);
	uint64_t directed = 0, any = 0;
	ASSERT_EQ(fi_recv(w.ep, &directed, sizeof directed, nullptr, w_from_local, &directed), 0);
	{
		raw_peer impostor(w, w_tcp, local_tcp);
		wu::tcp::frame::header ack;
		ASSERT_TRUE(impostor.get(ack));
		ASSERT_EQ(ack.type, wu::tcp::frame::HELLO_ACK);
		ASSERT_EQ(ack.data, 0u);
		wu::tcp::frame::header m;
		m.type = wu::tcp::frame::MSG;
		uint64_t forged = 666;
		m.len = sizeof forged;
		impostor.put(m, &forged, sizeof forged);
		spin({w.rx, w.tx}, 200);
		fi_cq_tagged_entry e;
		EXPECT_EQ(fi_cq_read(w.rx, &e, 1), -FI_EAGAIN) << "a receive directed at the shm peer took it";
		EXPECT_EQ(directed, 0u);
		/* A wildcard receive takes it, without naming the shm peer. */
		ASSERT_EQ(fi_recv(w.ep, &any, sizeof any, nullptr, FI_ADDR_UNSPEC, &any), 0);
		fi_addr_t src = w_from_local;
		ASSERT_EQ(wait_one(w.rx, e, nullptr, {w.tx}, &src), 1);
		EXPECT_EQ(e.op_context, &any);
		EXPECT_EQ(any, 666u);
		EXPECT_NE(src, w_from_local) << "FI_SOURCE names the shm peer";
	}
	/* The peer itself, through shm, still matches its directed receive. */
	uint64_t real = 7;
	ASSERT_EQ(fi_send(local.ep, &real, sizeof real, nullptr, local_to_w, nullptr), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(wait_one(w.rx, e, nullptr, {local.tx, local.rx, w.tx}, &src), 1);
	EXPECT_EQ(e.op_context, &directed);
	EXPECT_EQ(directed, 7u);
	EXPECT_EQ(src, w_from_local);
}

TEST_F(wireup_env, av_remove_and_reinsert_reroutes)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	b.insert(a);
	fi_addr_t p = a.insert(b);
	uint64_t v = 5, r = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_trecv(b.ep, &r, sizeof r, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, p, 3, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_EQ(stats(a).shm, 1u);
	ASSERT_EQ(fi_av_remove(a.av, &p, 1, 0), 0);
	fi_addr_t q = insert_raw(a, other_host(b));
	v = 6;
	ASSERT_EQ(fi_trecv(b.ep, &r, sizeof r, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, q, 3, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_EQ(r, 6u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u) << "fi_addr " << p << " then " << q;
	spin({a.tx, b.tx}, 200);
}

TEST_F(wireup_env, corrupt_and_unreachable_addresses)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	std::vector<char> bad = b.name;
	bad[0] ^= 0xff; /* the magic */
	fi_addr_t fa = 0;
	EXPECT_EQ(fi_av_insert(a.av, bad.data(), 1, &fa, 0, nullptr), 0);
	EXPECT_EQ(fa, FI_ADDR_NOTAVAIL);
	/* On another host with only a shm name: nothing reaches it. */
	fi_addr_t far = insert_raw(a, other_host(b, false));
	uint64_t v = 1;
	EXPECT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, far, 1, nullptr), -FI_EHOSTUNREACH);
	EXPECT_EQ(fi_tinject(a.ep, &v, sizeof v, far, 1), -FI_EHOSTUNREACH);
	EXPECT_EQ(stats(a).unreachable, 1u);
	EXPECT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 1, nullptr), -FI_EINVAL);
}

TEST_F(wireup_env, getname_carries_our_host_and_both_parts)
{
	rdm_ep a(env);
	ASSERT_TRUE(a.ep);
	wu::wireup::parts p;
	ASSERT_GT(wu::wireup::decode(a.name.data(), a.name.size(), &p), 0);
	EXPECT_EQ(p.host, wu::wireup::host_id());
	EXPECT_GT(p.tcp_len, 0u);
	EXPECT_GT(p.shm_len, 0u);
	EXPECT_LE(a.name.size(), wu::wireup::addr_max);
}

/* How many tcp connections the endpoint's tcp side has (sub_ops::busy). */
size_t tcp_conns(const rdm_ep &e)
{
	route_stats s;
	EXPECT_EQ(wu::wireup::stats_of(e.ep, &s), 0);
	const std::atomic<size_t> *b = s.tcp_ep ? wu::tcp::sub_ops()->busy(s.tcp_ep) : nullptr;
	EXPECT_NE(b, nullptr);
	return b ? b->load() : 0;
}

/* While a has no tcp connection its listener is polled rarely (every
 * FI_WIREUP_TCP_IDLE_POLL_US at most): a remote peer (r, through tcp)
 * still gets accepted and answered while a is busy ping-ponging with b
 * over shm, and then a's tcp side counts the connection.  No timing is
 * asserted: it only has to finish within the generous limit. */
TEST_F(wireup_env, idle_tcp_listener_accepts_a_remote_peer_during_a_shm_ping_pong)
{
	rdm_ep a(env), b(env), r(env);
	ASSERT_TRUE(a.ep && b.ep && r.ep);
	fi_addr_t a_to_b = a.insert(b), b_to_a = b.insert(a);
	fi_addr_t a_to_r = insert_raw(a, other_host(r));
	fi_addr_t r_to_a = insert_raw(r, other_host(a));
	EXPECT_EQ(tcp_conns(a), 0u);
	constexpr int replies = 20;
	const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
	auto late = [&] { return std::chrono::steady_clock::now() > until; };
	std::atomic<int> answered{0};
	std::atomic<bool> failed{false};
	joined remote{failed, std::thread([&] {
		fi_cq_tagged_entry e;
		for (uint64_t k = 0; k < replies && !failed; k++) {
			uint64_t in = 0, out = k;
			if (fi_trecv(r.ep, &in, 8, nullptr, FI_ADDR_UNSPEC, 10, 0, nullptr) ||
			    fi_tsend(r.ep, &out, 8, nullptr, r_to_a, 9, nullptr)) {
				failed = true;
				break;
			}
			bool sent = false, got = false;
			while (!(sent && got) && !late() && !failed) {
				if (fi_cq_read(r.tx, &e, 1) == 1)
					sent = true;
				if (fi_cq_read(r.rx, &e, 1) == 1)
					got = true;
			}
			if (!(sent && got) || in != k + 1000) {
				failed = true;
				break;
			}
			answered++;
		}
	})};
	uint64_t ping = 0, pong = 0, from_r = 0, reply = 0;
	ASSERT_EQ(fi_trecv(b.ep, &ping, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(a.ep, &pong, 8, nullptr, FI_ADDR_UNSPEC, 2, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(a.ep, &from_r, 8, nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr), 0);
	uint64_t rounds = 0;
	fi_cq_tagged_entry e;
	auto inject = [&](fid_ep *ep, uint64_t *v, fi_addr_t to, uint64_t tag) {
		ssize_t s;
		while ((s = fi_tinject(ep, v, 8, to, tag)) == -FI_EAGAIN && !late())
			spin({a.rx, a.tx, b.rx});
		return s;
	};
	/* One read of a's receive CQ: b's pong, or the remote peer's message
	 * (through tcp), which is answered at once. */
	bool ponged = false;
	auto poll_a = [&] {
		if (fi_cq_read(a.rx, &e, 1) != 1)
			return;
		if (e.tag == 2) {
			ponged = true;
			return;
		}
		ASSERT_EQ(e.tag, 9u);
		reply = from_r + 1000;
		ASSERT_EQ(fi_trecv(a.ep, &from_r, 8, nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr), 0);
		ASSERT_EQ(inject(a.ep, &reply, a_to_r, 10), 0);
	};
	while (answered < replies && !failed && !late() && !HasFailure()) {
		uint64_t v = rounds;
		ponged = false;
		ASSERT_EQ(inject(a.ep, &v, a_to_b, 1), 0);
		while (fi_cq_read(b.rx, &e, 1) != 1 && !late())
			poll_a(); /* a's progress too: its first send to b needs it */
		ASSERT_EQ(ping, rounds);
		ASSERT_EQ(fi_trecv(b.ep, &ping, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
		ASSERT_EQ(inject(b.ep, &v, b_to_a, 2), 0);
		while (!ponged && !late() && !HasFailure())
			poll_a();
		ASSERT_EQ(pong, rounds);
		ASSERT_EQ(fi_trecv(a.ep, &pong, 8, nullptr, FI_ADDR_UNSPEC, 2, 0, nullptr), 0);
		rounds++;
	}
	if (answered < replies)
		failed = true;
	remote.t.join();
	EXPECT_FALSE(late()) << "the remote peer got " << answered << " of " << replies << " answers";
	EXPECT_EQ(answered.load(), replies);
	EXPECT_GT(rounds, 0u);
	EXPECT_GE(tcp_conns(a), 1u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u);
	spin({a.tx, a.rx, b.tx, b.rx, r.tx, r.rx}, 200);
}

/* A peer on "another host" whose tcp port refuses: an fi_tinject to it
 * fails in the tcp sub-endpoint and makes no completion (fi_msg(3)), only
 * an error on the send counter; a later send with a context fails with
 * that context.  (Open MPI's OFI MTL crashed on an error entry with a NULL
 * op_context across namespaces.) */
TEST(wireup_refused, failed_inject_makes_no_completion)
{
	setenv("FI_TCP_CONN_TIMEOUT", "200", 1);
	prov_env env{"wireup", FI_EP_RDM, FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	counted_ep x(env);
	unsetenv("FI_TCP_CONN_TIMEOUT");
	ASSERT_NE(x.ep, nullptr);
	sockaddr_in nobody = free_port();
	wu::wireup::parts p;
	p.host = wu::wireup::host_id() ^ 0x5a5a5a5a5a5a5a5aULL;
	p.tcp = &nobody;
	p.tcp_len = sizeof nobody;
	std::vector<char> addr(wu::wireup::addr_max);
	ASSERT_GT(wu::wireup::encode(p, addr.data(), addr.size()), 0);
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(x.av, addr.data(), 1, &peer, 0, nullptr), 1);
	uint64_t v = 1;
	ASSERT_EQ(fi_tinject(x.ep, &v, sizeof v, peer, 1), 0);
	EXPECT_EQ(x.errors_reach(x.sc, 1), 1u);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	int ctx;
	ASSERT_EQ(fi_tsend(x.ep, &v, sizeof v, nullptr, peer, 1, &ctx), 0);
	ASSERT_EQ(wait_one(x.cq, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	spin({x.cq}, 200);
	EXPECT_EQ(fi_cq_read(x.cq, &e, 1), -FI_EAGAIN);
	EXPECT_EQ(stats_of_ep(x.ep).tcp, 1u);
}

/* FI_PROGRESS_AUTO: each sub-endpoint runs its own auto progress, both on
 * the wireup endpoint's one lock; a blocking read (fi_cq_sread) gets
 * messages of both transports without anyone polling. */
TEST(wireup_auto, both_transports_deliver_to_a_blocking_read)
{
	prov_env env{"wireup", FI_EP_RDM, FI_TAGGED, FI_PROGRESS_AUTO};
	ASSERT_NE(env.domain, nullptr);
	rdm_ep a(env, nullptr, FI_WAIT_UNSPEC), b(env, nullptr, FI_WAIT_UNSPEC);
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t via_shm = a.insert(b);
	fi_addr_t via_tcp = insert_raw(a, other_host(b));
	uint64_t r[2] = {0, 0}, x = 11, y = 22;
	ASSERT_EQ(fi_trecv(b.ep, &r[0], 8, nullptr, FI_ADDR_UNSPEC, 1, 0, &r[0]), 0);
	ASSERT_EQ(fi_trecv(b.ep, &r[1], 8, nullptr, FI_ADDR_UNSPEC, 2, 0, &r[1]), 0);
	ASSERT_EQ(fi_tinject(a.ep, &x, 8, via_shm, 1), 0);
	ASSERT_EQ(fi_tinject(a.ep, &y, 8, via_tcp, 2), 0);
	for (int k = 0; k < 2; k++) {
		fi_cq_tagged_entry e;
		ASSERT_EQ(fi_cq_sread(b.rx, &e, 1, nullptr, 20000), 1);
	}
	EXPECT_EQ(r[0], 11u);
	EXPECT_EQ(r[1], 22u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u);
}

} // namespace

namespace {

/* FI_SHM_UNEXP_LIMIT (lowered here) sets arriving messages aside once
 * the unexpected ones fill it.  A receive that takes an unexpected one
 * makes room, and shm's own receive call moves the set-aside messages on
 * at once; posted through a wireup endpoint's shared receive context it
 * must do the same, not wait for shm's next progress.  Sends n messages
 * to a of provider prov, lets a take them in (a few unexpected, some set
 * aside, the rest left in its queue at the set-aside limit), posts every
 * receive, and counts the buffers that hold their message before any CQ
 * read; then checks every message. */
int landed_before_any_read(const std::string &prov)
{
	setenv("FI_SHM_UNEXP_LIMIT", "1024", 1);
	prov_env env{prov, FI_EP_RDM, FI_TAGGED};
	rdm_ep a(env), b(env);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	EXPECT_TRUE(a.ep && b.ep);
	if (!a.ep || !b.ep)
		return -1;
	fi_addr_t b_to_a = b.insert(a);
	constexpr int n = 48;
	std::vector<std::vector<char>> out(n, std::vector<char>(200)), in(n, std::vector<char>(200, 0));
	fi_cq_tagged_entry e;
	for (int i = 0; i < n; i++) {
		memset(out[i].data(), 'a' + i % 26, out[i].size());
		EXPECT_EQ(fi_tsend(b.ep, out[i].data(), out[i].size(), nullptr, b_to_a, uint64_t(i), nullptr), 0);
	}
	for (int i = 0; i < n; i++)
		EXPECT_EQ(wait_one(b.tx, e, nullptr, {a.rx}), 1) << "send " << i;
	spin({a.rx}, 50);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(fi_trecv(a.ep, in[i].data(), in[i].size(), nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0,
				   in[i].data()),
			  0);
	int landed = 0;
	for (int i = 0; i < n; i++)
		landed += in[i] == out[i];
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(wait_one(a.rx, e, nullptr, {b.tx}), 1) << prov << ": receive " << i;
		EXPECT_EQ(e.op_context, in[e.tag].data());
	}
	for (int i = 0; i < n; i++)
		EXPECT_EQ(in[i], out[i]) << prov << ": message " << i;
	return landed;
}

TEST(wireup_parked, receives_resume_messages_parked_at_the_shm_unexpected_limit)
{
	int shm = landed_before_any_read("shm");
	int wx = landed_before_any_read("wireup");
	EXPECT_GT(shm, 0);
	EXPECT_EQ(wx, shm) << "set-aside messages not moved on by the receives that made room for them";
}

} // namespace

namespace {

/* fi_av_remove racing sends to the same fi_addr (the AV hands the index
 * out again at once): a route decided from the entry before a removal
 * must not be cached after it, or every later send to the new peer would
 * take the old peer's transport.  A stress test (one thread sends, this
 * one removes and re-inserts b alternately as local and as remote, then
 * pauses the sender and checks the cached route); in the TSan tier too. */
TEST_F(wireup_env, av_remove_racing_sends_leaves_no_stale_route)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t x = a.insert(b);
	std::vector<char> remote = other_host(b);
	wu::wireup::wx_ep *w = wu::wireup::wx_of(a.ep);
	ASSERT_NE(w, nullptr);
	std::atomic<bool> stop{false}, pause{false}, paused{false};
	joined sender{stop, std::thread([&] {
		uint64_t v = 0;
		fi_cq_tagged_entry e;
		while (!stop) {
			if (pause) {
				paused = true;
				while (pause && !stop)
					std::this_thread::yield();
				paused = false;
				continue;
			}
			/* 0, or refused while the entry is away or the queue full. */
			ssize_t r = fi_tinject(a.ep, &v, sizeof v, x, 1);
			EXPECT_TRUE(r == 0 || r == -FI_EAGAIN || r == -FI_EINVAL || r == -FI_EHOSTUNREACH) << r;
			(void)fi_cq_read(a.tx, &e, 1);
		}
	})};
	int stale = 0;
	for (int round = 0; round < 200 && !HasFailure(); round++) {
		bool far = false;
		for (int k = 0; k < 3; k++) {
			ASSERT_EQ(fi_av_remove(a.av, &x, 1, 0), 0);
			far = (round + k) % 2;
			fi_addr_t y = far ? insert_raw(a, remote) : a.insert(b);
			ASSERT_EQ(y, x) << "the AV did not hand the index out again";
		}
		pause = true;
		while (!paused && !stop)
			std::this_thread::yield();
		wu::wireup::route_table *t = w->routes.load();
		uint8_t r = t && x < t->n ? t->v[x].load() : uint8_t(wu::wireup::R_NONE);
		if (r != wu::wireup::R_NONE && r != (far ? wu::wireup::R_TCP : wu::wireup::R_SHM))
			stale++;
		pause = false;
		while (paused)
			std::this_thread::yield();
	}
	stop = true;
	sender.t.join();
	EXPECT_EQ(stale, 0) << "routes cached from entries removed since";
}

} // namespace

namespace {

/* fi_control(FI_SETOPSFLAG) on the receive side sets the op flags fi_recv
 * takes (here FI_COMPLETION under FI_SELECTIVE_COMPLETION): wireup's short
 * receive path must read them where fi_control wrote them, as shm does. */
TEST(wireup_opsflag, recv_ops_flags_set_by_fi_control_reach_fi_recv)
{
	for (const char *prov : {"shm", "wireup"}) {
		SCOPED_TRACE(prov);
		rdm_pair p(prov, FI_MSG);
		ASSERT_NE(p.a.ep, nullptr);
		/* A receiver whose receive CQ is bound with FI_SELECTIVE_COMPLETION. */
		rdm_ep c(p.env);
		ASSERT_NE(c.ep, nullptr);
		ASSERT_NO_FATAL_FAILURE(c.reopen(p.env, FI_SELECTIVE_COMPLETION));
		fi_addr_t a_to_c = p.a.insert(c);
		uint64_t v1 = 11, v2 = 22, got1 = 0, got2 = 0;
		int ctx1 = 0, ctx2 = 0;
		/* The op flags as opened (no FI_COMPLETION): the message lands, no completion. */
		ASSERT_EQ(fi_recv(c.ep, &got1, sizeof got1, nullptr, FI_ADDR_UNSPEC, &ctx1), 0);
		ASSERT_EQ(fi_send(p.a.ep, &v1, sizeof v1, nullptr, a_to_c, nullptr), 0);
		for (int i = 0; i < 100000 && got1 != v1; i++)
			spin({c.rx, p.a.tx}, 1);
		ASSERT_EQ(got1, v1);
		spin({c.rx, p.a.tx}, 100);
		fi_cq_tagged_entry e{};
		EXPECT_EQ(fi_cq_read(c.rx, &e, 1), -FI_EAGAIN);
		/* FI_COMPLETION set through fi_control: the next receive completes. */
		uint64_t fl = FI_RECV | FI_COMPLETION;
		ASSERT_EQ(fi_control(&c.ep->fid, FI_SETOPSFLAG, &fl), 0);
		ASSERT_EQ(fi_recv(c.ep, &got2, sizeof got2, nullptr, FI_ADDR_UNSPEC, &ctx2), 0);
		ASSERT_EQ(fi_send(p.a.ep, &v2, sizeof v2, nullptr, a_to_c, nullptr), 0);
		ASSERT_EQ(wait_one(c.rx, e, nullptr, {p.a.tx}), 1);
		EXPECT_EQ(e.op_context, &ctx2);
		EXPECT_EQ(got2, v2);
	}
}

} // namespace
