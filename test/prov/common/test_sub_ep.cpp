/* SPDX-License-Identifier: BSD-3-Clause */
/* shm and tcp RDM endpoints as sub-endpoints of one wireup endpoint
 * (prov/common/sub_ep.h): both opened through their sub_ops on one
 * prov::domain, sharing one mutex, taking every receive from one lent
 * rx_ctx, bound to one CQ and one AV whose addresses have two parts (a
 * small test format: [tcp len][shm len][tcp address][shm address]).
 * Outside peers (a plain shm endpoint and a plain tcp endpoint) send to
 * them.
 *
 * The domain is tcp's (fi_getinfo for 127.0.0.1): tcp's sub-endpoint
 * listens on the domain's src_addr, and shm's ep_open needs nothing of a
 * domain but what every prov::domain has (sub.cpp), so one domain of
 * either provider would do; tcp's also gives the tcp part a reachable
 * address. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "av/av.h"
#include "core/domain.h"
#include "prov/common/ep_base.h"
#include "prov/common/rx.h"
#include "prov/common/sub_ep.h"
#include "prov/shm/shm.h"
#include "prov/tcp/tcp.h"
#include "prov_fixture.h"

using namespace wu::test;

namespace {

/* ---- the two-part test format ---- */

ssize_t comp_validate(const void *addr, size_t avail)
{
	if (avail < 2)
		return -FI_EINVAL;
	auto *p = static_cast<const unsigned char *>(addr);
	size_t n = 2 + size_t(p[0]) + size_t(p[1]);
	return n <= avail && n <= wu::av::max_blob ? ssize_t(n) : -FI_EINVAL;
}

size_t comp_part(const void *addr, size_t len, int which, void *out, size_t outlen)
{
	auto *p = static_cast<const unsigned char *>(addr);
	if (len < 2 || (which != 0 && which != 1))
		return 0;
	size_t off = which == 0 ? 2 : 2 + p[0];
	size_t n = p[which];
	if (off + n > len)
		return 0;
	memcpy(out, p + off, std::min(n, outlen));
	return n;
}

const wu::av::av_format comp_fmt = {"sub-ep test", FI_ADDR_STR, wu::av::max_blob, comp_validate, nullptr, nullptr,
				    FI_ADDR_STR, FI_ADDR_STR, comp_part};

std::vector<char> composite(const std::vector<char> &tcp, const std::vector<char> &shm)
{
	std::vector<char> b{char(tcp.size()), char(shm.size())};
	b.insert(b.end(), tcp.begin(), tcp.end());
	b.insert(b.end(), shm.begin(), shm.end());
	return b;
}

} // namespace

namespace {

constexpr uint64_t caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV;

std::vector<char> name_of(fid_ep *ep)
{
	size_t len = 0;
	EXPECT_EQ(fi_getname(&ep->fid, nullptr, &len), -FI_ETOOSMALL);
	std::vector<char> n(len);
	EXPECT_EQ(fi_getname(&ep->fid, n.data(), &len), 0);
	n.resize(len);
	return n;
}

/* The data progress of the sub-endpoints' domain (sub_auto: automatic). */
fi_progress g_progress = FI_PROGRESS_UNSPEC;
/* Caps the sub-endpoints' infos go without (sub_bare). */
uint64_t g_strip = 0;

/* The wireup endpoint's side of it, by hand. */
struct sub_fixture : ::testing::Test {
	prov_env tcpenv{"tcp", FI_EP_RDM, caps, g_progress}; /* the sub-endpoints' domain */
	prov_env shmenv{"shm", FI_EP_RDM, caps};  /* shm's info, and the outside shm peer */
	prov_env tcpenv2{"tcp", FI_EP_RDM, caps}; /* the outside tcp peer */
	wu::prov::ep_mutex m;
	wu::prov::rx_ctx ctx;
	fid_cq *cq = nullptr;
	fid_av *av = nullptr;
	fid_ep *sshm = nullptr, *stcp = nullptr;
	const wu::prov::sub_ops *so_shm = wu::shm::sub_ops(), *so_tcp = wu::tcp::sub_ops();
	std::vector<char> shm_name, tcp_name;
	/* fi_addr of each outside peer in the composite AV (0 is a dummy). */
	fi_addr_t fa_s = 1, fa_t = 2;

	void SetUp() override
	{
		ASSERT_TRUE(tcpenv.domain && shmenv.domain && tcpenv2.domain);
		ctx.size = 64;
		ctx.directed = true;
		fi_info *is = fi_dupinfo(shmenv.info), *it = fi_dupinfo(tcpenv.info);
		is->caps &= ~g_strip;
		it->caps &= ~g_strip;
		int rs = so_shm->ep_open(tcpenv.domain, is, &sshm, nullptr);
		int rt = so_tcp->ep_open(tcpenv.domain, it, &stcp, nullptr);
		fi_freeinfo(is);
		fi_freeinfo(it);
		ASSERT_EQ(rs, 0);
		ASSERT_EQ(rt, 0);
		wu::prov::ep_base *bs = so_shm->base_of(sshm), *bt = so_tcp->base_of(stcp);
		ASSERT_TRUE(bs && bt);
		bs->mtx.share(m);
		bt->mtx.share(m);
		bs->addr_part = 1;
		bt->addr_part = 0;
		ctx.prov = bt->prov;
		ASSERT_EQ(so_shm->lend_rx(sshm, &ctx), 0);
		ASSERT_EQ(so_tcp->lend_rx(stcp, &ctx), 0);
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ASSERT_EQ(fi_cq_open(tcpenv.domain, &ca, &cq, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		ASSERT_EQ(wu::av::open(wu::prov::domain_of(tcpenv.domain), &comp_fmt, &aa, &av, nullptr), 0);
		for (fid_ep *e : {sshm, stcp}) {
			ASSERT_EQ(fi_ep_bind(e, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
			ASSERT_EQ(fi_ep_bind(e, &av->fid, 0), 0);
			ASSERT_EQ(fi_enable(e), 0);
		}
		shm_name = name_of(sshm);
		tcp_name = name_of(stcp);
	}
	void TearDown() override
	{
		close_subs();
		if (av) {
			EXPECT_EQ(fi_close(&av->fid), 0);
		}
		if (cq) {
			EXPECT_EQ(fi_close(&cq->fid), 0);
		}
		ctx.drain(); /* the lender's */
	}
	void close_subs()
	{
		if (sshm) {
			EXPECT_EQ(fi_close(&sshm->fid), 0);
		}
		if (stcp) {
			EXPECT_EQ(fi_close(&stcp->fid), 0);
		}
		sshm = stcp = nullptr;
	}
	/* The composite AV: a dummy, then S (shm only), then T (tcp only). */
	void fill_av(const rdm_ep &s, const rdm_ep &t)
	{
		sockaddr_in dummy{};
		dummy.sin_family = AF_INET;
		dummy.sin_port = htons(9);
		dummy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		std::vector<char> d(reinterpret_cast<char *>(&dummy), reinterpret_cast<char *>(&dummy) + sizeof dummy);
		fi_addr_t got = FI_ADDR_NOTAVAIL;
		auto b = composite(d, {});
		ASSERT_EQ(fi_av_insert(av, b.data(), 1, &got, 0, nullptr), 1);
		ASSERT_EQ(got, 0u);
		b = composite({}, s.name);
		ASSERT_EQ(fi_av_insert(av, b.data(), 1, &got, 0, nullptr), 1);
		ASSERT_EQ(got, fa_s);
		b = composite(t.name, {});
		ASSERT_EQ(fi_av_insert(av, b.data(), 1, &got, 0, nullptr), 1);
		ASSERT_EQ(got, fa_t);
	}
	/* Waits for one entry of the composite CQ, driving the outside peers. */
	int wait(const rdm_ep &s, const rdm_ep &t, fi_cq_tagged_entry &e, fi_addr_t *src = nullptr,
		 fi_cq_err_entry *err = nullptr)
	{
		return wait_one(cq, e, err, {s.tx, s.rx, t.tx, t.rx}, src);
	}
	/* Outside peer p sends len bytes of fill to its only peer (fi_addr 0),
	 * driving the sub-endpoints through the composite CQ unless
	 * auto_only (their auto progress must do it). */
	void send(const rdm_ep &p, uint64_t tag, char fill, size_t len = 16, bool tagged = true,
		  bool auto_only = false)
	{
		std::vector<char> msg(len, fill);
		ssize_t r;
		while ((r = tagged ? fi_tsend(p.ep, msg.data(), len, nullptr, 0, tag, nullptr)
				   : fi_send(p.ep, msg.data(), len, nullptr, 0, nullptr)) == -FI_EAGAIN)
			spin({p.tx, p.rx}, 1);
		ASSERT_EQ(r, 0);
		fi_cq_tagged_entry e;
		if (auto_only) {
		ASSERT_EQ(wait_one(p.tx, e, nullptr, {p.rx}), 1) << "the send never completed";
	} else {
		ASSERT_EQ(wait_one(p.tx, e, nullptr, {cq, p.rx}), 1) << "the send never completed";
	}
	}
};

/* Outside peers: S (shm) sends to the shm sub-endpoint, T (tcp) to the tcp one. */
struct peers {
	rdm_ep s, t;
	peers(sub_fixture &f) : s(f.shmenv), t(f.tcpenv2)
	{
		EXPECT_EQ(fi_av_insert(s.av, f.shm_name.data(), 1, nullptr, 0, nullptr), 1);
		EXPECT_EQ(fi_av_insert(t.av, f.tcp_name.data(), 1, nullptr, 0, nullptr), 1);
	}
};

using sub_ep = sub_fixture;

TEST_F(sub_ep, ops_describe_their_provider)
{
	EXPECT_STREQ(so_shm->name, "shm");
	EXPECT_STREQ(so_tcp->name, "tcp");
	EXPECT_EQ(so_shm->base_of(stcp), nullptr) << "a tcp endpoint is no shm endpoint";
	EXPECT_EQ(so_tcp->base_of(sshm), nullptr) << "a shm endpoint is no tcp endpoint";
	EXPECT_EQ(so_shm->base_of(nullptr), nullptr);
	EXPECT_EQ(so_tcp->base_of(nullptr), nullptr);
	EXPECT_EQ(&so_shm->base_of(sshm)->mtx.native(), &m);
	EXPECT_EQ(&so_tcp->base_of(stcp)->mtx.native(), &m);
}

TEST_F(sub_ep, lend_rx_is_refused_when_enabled_null_or_foreign)
{
	wu::prov::rx_ctx other;
	EXPECT_EQ(so_shm->lend_rx(sshm, &other), -FI_EOPBADSTATE);
	EXPECT_EQ(so_tcp->lend_rx(stcp, &other), -FI_EOPBADSTATE);
	EXPECT_EQ(so_shm->lend_rx(sshm, nullptr), -FI_EINVAL);
	EXPECT_EQ(so_tcp->lend_rx(stcp, nullptr), -FI_EINVAL);
	EXPECT_EQ(so_shm->lend_rx(stcp, &other), -FI_EINVAL);
	EXPECT_EQ(so_tcp->lend_rx(sshm, &other), -FI_EINVAL);
}

TEST_F(sub_ep, a_tcp_endpoint_bound_to_an_srx_is_not_lent_a_context_and_msg_is_refused)
{
	fid_ep *e = nullptr, *srx = nullptr;
	ASSERT_EQ(fi_endpoint(tcpenv.domain, tcpenv.info, &e, nullptr), 0);
	fi_rx_attr ra{};
	ra.caps = FI_MSG | FI_TAGGED;
	ra.size = 16;
	ASSERT_EQ(fi_srx_context(tcpenv.domain, &ra, &srx, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(e, &srx->fid, 0), 0);
	wu::prov::rx_ctx other;
	EXPECT_EQ(so_tcp->lend_rx(e, &other), -FI_EOPBADSTATE);
	EXPECT_EQ(fi_close(&e->fid), 0);
	/* A lent endpoint is not bound to an srx either. */
	ASSERT_EQ(so_tcp->ep_open(tcpenv.domain, tcpenv.info, &e, nullptr), 0);
	ASSERT_EQ(so_tcp->lend_rx(e, &other), 0);
	EXPECT_EQ(fi_ep_bind(e, &srx->fid, 0), -FI_EINVAL);
	EXPECT_EQ(fi_close(&e->fid), 0);
	EXPECT_EQ(fi_close(&srx->fid), 0);

	fi_info *msg = fi_dupinfo(tcpenv.info);
	msg->ep_attr->type = FI_EP_MSG;
	e = nullptr;
	EXPECT_EQ(so_tcp->ep_open(tcpenv.domain, msg, &e, nullptr), -FI_EINVAL);
	EXPECT_EQ(e, nullptr);
	fi_freeinfo(msg);
}

TEST_F(sub_ep, wildcard_receives_take_both_transports_with_composite_sources)
{
	peers p(*this);
	fill_av(p.s, p.t);
	char a[32], b[32];
	ASSERT_EQ(fi_trecv(sshm, a, sizeof a, nullptr, FI_ADDR_UNSPEC, 0, ~0ull, a), 0);
	ASSERT_EQ(fi_trecv(stcp, b, sizeof b, nullptr, FI_ADDR_UNSPEC, 0, ~0ull, b), 0);
	send(p.t, 7, 't');
	fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(wait(p.s, p.t, e, &src), 1);
	/* The receive posted first (through the shm sub-endpoint) took tcp's message. */
	EXPECT_EQ(e.op_context, a);
	EXPECT_EQ(e.tag, 7u);
	EXPECT_EQ(src, fa_t);
	EXPECT_EQ(a[0], 't');
	send(p.s, 8, 's');
	ASSERT_EQ(wait(p.s, p.t, e, &src), 1);
	EXPECT_EQ(e.op_context, b);
	EXPECT_EQ(e.tag, 8u);
	EXPECT_EQ(src, fa_s);
	EXPECT_EQ(b[0], 's');
}

TEST_F(sub_ep, sub_endpoints_send_through_their_part_of_the_composite_address)
{
	peers p(*this);
	fill_av(p.s, p.t);
	char in_s[8] = {}, in_t[8] = {};
	ASSERT_EQ(fi_trecv(p.s.ep, in_s, sizeof in_s, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(p.t.ep, in_t, sizeof in_t, nullptr, FI_ADDR_UNSPEC, 2, 0, nullptr), 0);
	ASSERT_EQ(fi_tsend(sshm, "shm", 4, nullptr, fa_s, 1, nullptr), 0);
	ASSERT_EQ(fi_tsend(stcp, "tcp", 4, nullptr, fa_t, 2, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(p.s.rx, e, nullptr, {cq, p.s.tx}), 1);
	EXPECT_STREQ(in_s, "shm");
	ASSERT_EQ(wait_one(p.t.rx, e, nullptr, {cq, p.t.tx}), 1);
	EXPECT_STREQ(in_t, "tcp");
	/* The sends' own completions, on the composite CQ. */
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(wait(p.s, p.t, e), 1);
	/* An fi_addr without the transport's part is refused. */
	EXPECT_NE(fi_tsend(sshm, "x", 2, nullptr, fa_t, 3, nullptr), 0);
}

TEST_F(sub_ep, directed_receives_take_only_their_source)
{
	peers p(*this);
	fill_av(p.s, p.t);
	char from_t[16], from_s[16];
	ASSERT_EQ(fi_trecv(sshm, from_t, sizeof from_t, nullptr, fa_t, 0, ~0ull, from_t), 0);
	ASSERT_EQ(fi_trecv(stcp, from_s, sizeof from_s, nullptr, fa_s, 0, ~0ull, from_s), 0);
	send(p.s, 1, 's');
	send(p.t, 2, 't');
	fi_cq_tagged_entry e;
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(wait(p.s, p.t, e), 1);
		if (e.op_context == from_t) {
			EXPECT_EQ(from_t[0], 't');
		} else {
			EXPECT_EQ(from_s[0], 's');
		}
	}
	EXPECT_EQ(from_t[0], 't');
	EXPECT_EQ(from_s[0], 's');
}

TEST_F(sub_ep, unexpected_messages_of_both_are_taken_in_order_per_source)
{
	peers p(*this);
	fill_av(p.s, p.t);
	for (int i = 0; i < 3; i++) {
		send(p.s, 100 + uint64_t(i), char('a' + i));
		send(p.t, 200 + uint64_t(i), char('A' + i));
	}
	spin({cq}, 200); /* both sub-endpoints queue them */
	int next_s = 0, next_t = 0;
	for (int i = 0; i < 6; i++) {
		char buf[16] = {};
		ASSERT_EQ(fi_trecv(i % 2 ? sshm : stcp, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 0, ~0ull, buf), 0);
		fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(wait(p.s, p.t, e, &src), 1);
		if (src == fa_s) {
			EXPECT_EQ(e.tag, 100u + uint64_t(next_s));
			EXPECT_EQ(buf[0], char('a' + next_s));
			next_s++;
		} else {
			ASSERT_EQ(src, fa_t);
			EXPECT_EQ(e.tag, 200u + uint64_t(next_t));
			EXPECT_EQ(buf[0], char('A' + next_t));
			next_t++;
		}
	}
	EXPECT_EQ(next_s, 3);
	EXPECT_EQ(next_t, 3);
}

TEST_F(sub_ep, multi_recv_buffer_takes_messages_of_both)
{
	peers p(*this);
	fill_av(p.s, p.t);
	std::vector<char> buf(256, 0);
	iovec iov{buf.data(), buf.size()};
	fi_msg m{};
	m.msg_iov = &iov;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	m.context = buf.data();
	ctx.min_multi_recv = 64; /* the lender's option */
	ASSERT_EQ(fi_recvmsg(stcp, &m, FI_MULTI_RECV), 0);
	send(p.s, 0, 's', 100, false);
	send(p.t, 0, 't', 100, false);
	bool saw_s = false, saw_t = false, released = false;
	for (int i = 0; i < 2; i++) {
		fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(wait(p.s, p.t, e, &src), 1);
		EXPECT_EQ(e.len, 100u);
		char *at = static_cast<char *>(e.buf);
		ASSERT_TRUE(at >= buf.data() && at + 100 <= buf.data() + buf.size());
		EXPECT_EQ(at[0], src == fa_s ? 's' : 't');
		saw_s |= src == fa_s;
		saw_t |= src == fa_t;
		released |= (e.flags & FI_MULTI_RECV) != 0;
	}
	EXPECT_TRUE(saw_s && saw_t);
	EXPECT_TRUE(released) << "56 bytes left are under FI_OPT_MIN_MULTI_RECV: the buffer is released";
}

TEST_F(sub_ep, peek_and_claim_a_message_of_either)
{
	peers p(*this);
	fill_av(p.s, p.t);
	send(p.s, 5, 's');
	send(p.t, 6, 't');
	spin({cq}, 200);
	for (uint64_t tag : {6u, 5u}) {
		fi_context ctx1{};
		fi_msg_tagged m{};
		m.addr = FI_ADDR_UNSPEC;
		m.tag = tag;
		m.context = &ctx1;
		fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		int tries = 0;
		for (;;) {
			ASSERT_EQ(fi_trecvmsg(sshm, &m, FI_PEEK | FI_CLAIM), 0);
			fi_cq_err_entry err{};
			int r = wait(p.s, p.t, e, &src, &err);
			if (r == 1)
				break;
			ASSERT_EQ(r, -FI_EAVAIL);
			ASSERT_EQ(err.err, FI_ENOMSG);
			ASSERT_LT(++tries, 100);
			spin({cq}, 50);
		}
		EXPECT_EQ(e.tag, tag);
		EXPECT_EQ(src, tag == 5 ? fa_s : fa_t);
		char buf[16] = {};
		iovec iov{buf, sizeof buf};
		m.msg_iov = &iov;
		m.iov_count = 1;
		/* Claimed through the other sub-endpoint: the message's own one starts it. */
		ASSERT_EQ(fi_trecvmsg(stcp, &m, FI_CLAIM), 0);
		ASSERT_EQ(wait(p.s, p.t, e, &src), 1);
		EXPECT_EQ(e.tag, tag);
		EXPECT_EQ(buf[0], tag == 5 ? 's' : 't');
	}
}

TEST_F(sub_ep, cancel_and_truncation)
{
	peers p(*this);
	fill_av(p.s, p.t);
	char c[8];
	ASSERT_EQ(fi_trecv(stcp, c, sizeof c, nullptr, FI_ADDR_UNSPEC, 99, 0, c), 0);
	/* The context is one: cancel through the other sub-endpoint finds it. */
	ASSERT_EQ(fi_cancel(&sshm->fid, c), 0);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait(p.s, p.t, e, nullptr, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECANCELED);
	EXPECT_EQ(err.op_context, c);
	EXPECT_EQ(fi_cancel(&stcp->fid, c), -FI_ENOENT);

	for (rdm_ep *from : {&p.t, &p.s}) {
		char small[10];
		ASSERT_EQ(fi_trecv(sshm, small, sizeof small, nullptr, FI_ADDR_UNSPEC, 3, 0, small), 0);
		send(*from, 3, 'x', 100);
		err = {};
		ASSERT_EQ(wait(p.s, p.t, e, nullptr, &err), -FI_EAVAIL);
		EXPECT_EQ(err.err, FI_ETRUNC);
		EXPECT_EQ(err.len, 10u);
		EXPECT_EQ(err.olen, 90u);
		EXPECT_EQ(small[9], 'x');
	}
}

TEST_F(sub_ep, close_with_receives_outstanding_and_messages_queued)
{
	peers p(*this);
	fill_av(p.s, p.t);
	send(p.s, 1, 's', 3000); /* queued, beyond inline */
	send(p.t, 2, 't', 3000);
	spin({cq}, 200);
	std::vector<char> r1(64), r2(64);
	ASSERT_EQ(fi_trecv(sshm, r1.data(), r1.size(), nullptr, FI_ADDR_UNSPEC, 50, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(stcp, r2.data(), r2.size(), nullptr, FI_ADDR_UNSPEC, 51, 0, nullptr), 0);
	EXPECT_EQ(ctx.posted.load(), 2u);
	close_subs();
	/* The borrowers left the lender's receives and took their messages. */
	EXPECT_EQ(ctx.posted.load(), 2u);
	ctx.drain();
	EXPECT_EQ(ctx.posted.load(), 0u);
}

/* Manual progress from two threads at once, and a third sending: one
 * shared mutex serves both sub-endpoints (TSan checks it). */
TEST_F(sub_ep, threads_share_the_lock)
{
	peers p(*this);
	fill_av(p.s, p.t);
	constexpr int n = 20;
	std::vector<std::vector<char>> bufs(2 * n, std::vector<char>(16));
	for (int i = 0; i < 2 * n; i++)
		ASSERT_EQ(fi_trecv(i % 2 ? sshm : stcp, bufs[size_t(i)].data(), 16, nullptr, FI_ADDR_UNSPEC, 0, ~0ull,
				   nullptr),
			  0);
	std::thread ts([&] {
		for (int i = 0; i < n; i++)
			send(p.s, uint64_t(i), 's');
	});
	std::thread tt([&] {
		for (int i = 0; i < n; i++)
			send(p.t, uint64_t(i), 't');
	});
	std::atomic<int> got{0};
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
	std::thread poller([&] {
		while (std::chrono::steady_clock::now() < until && got < 2 * n) {
			std::lock_guard g(m); /* as the wireup endpoint's own calls would */
			(void)ctx.posted.load();
		}
	});
	while (got < 2 * n && std::chrono::steady_clock::now() < until) {
		fi_cq_tagged_entry e;
		if (fi_cq_read(cq, &e, 1) == 1)
			got++;
	}
	ts.join();
	tt.join();
	poller.join();
	EXPECT_EQ(got, 2 * n);
}

/* The same domain with automatic data progress: the cm engine's thread
 * (tcp's sockets, shm's region wake-up descriptor) takes both transports'
 * messages into the one context under the one shared mutex, with no CQ
 * read of ours. */
struct sub_auto : sub_fixture {
	static void SetUpTestSuite() { g_progress = FI_PROGRESS_AUTO; }
	static void TearDownTestSuite() { g_progress = FI_PROGRESS_UNSPEC; }
};

TEST_F(sub_auto, auto_progress_matches_both_transports_without_cq_reads)
{
	ASSERT_EQ(tcpenv.info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	peers p(*this);
	fill_av(p.s, p.t);
	constexpr int n = 10;
	std::vector<std::vector<char>> bufs(2 * n, std::vector<char>(16));
	for (int i = 0; i < 2 * n; i++)
		ASSERT_EQ(fi_trecv(i % 2 ? sshm : stcp, bufs[size_t(i)].data(), 16, nullptr, FI_ADDR_UNSPEC, 0, ~0ull,
				   nullptr),
			  0);
	std::thread ts([&] {
		for (int i = 0; i < n; i++)
			send(p.s, uint64_t(i), 's', 16, true, true);
	});
	std::thread tt([&] {
		for (int i = 0; i < n; i++)
			send(p.t, uint64_t(i), 't', 16, true, true);
	});
	ts.join();
	tt.join();
	/* Every receive is taken by the progress thread alone. */
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
	size_t left = 1;
	while (std::chrono::steady_clock::now() < until) {
		{
			std::lock_guard g(m);
			left = ctx.posted.load();
		}
		if (!left)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	EXPECT_EQ(left, 0u) << "auto progress never matched every message";
	int got = 0, from_s = 0;
	fi_cq_tagged_entry e;
	fi_addr_t src;
	while (got < 2 * n && wait_one(cq, e, nullptr, {}, &src) == 1) {
		got++;
		from_s += src == fa_s;
	}
	EXPECT_EQ(got, 2 * n);
	EXPECT_EQ(from_s, n);
}

/* Sub-endpoints opened without FI_DIRECTED_RECV and FI_SOURCE: the lent
 * context's lender asks for directed receives, and they still see the
 * sources they need to match. */
struct sub_bare : sub_fixture {
	static void SetUpTestSuite() { g_strip = FI_DIRECTED_RECV | FI_SOURCE; }
	static void TearDownTestSuite() { g_strip = 0; }
};

TEST_F(sub_bare, the_lenders_directed_receives_match_on_arrival)
{
	peers p(*this);
	fill_av(p.s, p.t);
	char from_t[16] = {}, from_s[16] = {};
	ASSERT_EQ(fi_trecv(sshm, from_t, sizeof from_t, nullptr, fa_t, 0, ~0ull, from_t), 0);
	ASSERT_EQ(fi_trecv(stcp, from_s, sizeof from_s, nullptr, fa_s, 0, ~0ull, from_s), 0);
	send(p.s, 1, 's');
	send(p.t, 2, 't');
	fi_cq_tagged_entry e;
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(wait(p.s, p.t, e), 1) << "a directed receive never matched";
	EXPECT_EQ(from_t[0], 't');
	EXPECT_EQ(from_s[0], 's');
}

} // namespace
