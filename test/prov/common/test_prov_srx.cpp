/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive contexts (fi_srx_context, prov/common/srx.h) on every
 * provider that offers them (tcp, shm, wireup).  Several RDM endpoints
 * share one srx (wildcard and directed receives, expected and unexpected,
 * FI_SOURCE, completions on the CQ of the endpoint a message arrived on,
 * FI_PEEK / FI_CLAIM, fi_cancel); MSG endpoints accepted from one passive
 * endpoint share one (providers with MSG endpoints); close order and bad
 * binds; one AV per shared context; fi_getinfo offers FI_SHARED_CONTEXT. */
#include <string>

#include "prov_fixture.h"

using namespace wu::test;

namespace {

/* An RDM endpoint with one CQ for both directions, on a given AV,
 * optionally bound to an srx before fi_enable. */
struct srx_rdm {
	fid_ep *ep = nullptr;
	fid_cq *cq = nullptr;
	std::vector<char> name;

	srx_rdm(prov_env &env, fid_av *av, fid_ep *srx)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
		EXPECT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
		if (!ep)
			return;
		EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
		EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		if (srx) {
			EXPECT_EQ(fi_ep_bind(ep, &srx->fid, 0), 0);
		}
		EXPECT_EQ(fi_enable(ep), 0);
		size_t len = 0;
		EXPECT_EQ(fi_getname(&ep->fid, nullptr, &len), -FI_ETOOSMALL);
		name.resize(len);
		EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
	}
	~srx_rdm() { close(); }
	void close()
	{
		if (ep) {
			EXPECT_EQ(fi_close(&ep->fid), 0);
		}
		if (cq) {
			EXPECT_EQ(fi_close(&cq->fid), 0);
		}
		ep = nullptr;
		cq = nullptr;
	}
};

fi_addr_t insert(fid_av *av, const srx_rdm &peer)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(fi_av_insert(av, peer.name.data(), 1, &a, 0, nullptr), 1);
	return a;
}

fid_av *open_av(prov_env &env)
{
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	return av;
}

fid_ep *open_srx(prov_env &env, uint64_t caps)
{
	fi_rx_attr attr = *env.info->rx_attr;
	attr.caps = caps;
	fid_ep *srx = nullptr;
	EXPECT_EQ(fi_srx_context(env.domain, &attr, &srx, nullptr), 0);
	return srx;
}

/* Reads one receive completion from cq (sends' completions on the way are
 * skipped), driving the others. */
int wait_recv(fid_cq *cq, fi_cq_tagged_entry &e, std::initializer_list<fid_cq *> also, fi_addr_t *src = nullptr,
	      fi_cq_err_entry *err = nullptr)
{
	for (int i = 0; i < 16; i++) {
		int r = wait_one(cq, e, err, also, src);
		if (r != 1 || (e.flags & FI_RECV))
			return r;
	}
	return -FI_ETIMEDOUT;
}

} // namespace

/* The providers with shared receive contexts (ucx has none). */
#define WU_TEST_SRX_PROVIDER_LIST(X, ...) X(tcp, __VA_ARGS__) X(shm, __VA_ARGS__) X(wireup, __VA_ARGS__)
struct prov_srx : provider_test {};
WU_TEST_SRX_PROVIDER_LIST(WU_TEST_INSTANTIATE_ONE, prov_srx)
WU_MSG_PROVIDER_TEST_SUITE(prov_srx_msg)

/* fi_getinfo offers FI_SHARED_CONTEXT receive contexts and says how many. */
TEST_P(prov_srx, getinfo_offers_shared_rx_context)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov().c_str());
	hints->ep_attr->type = FI_EP_RDM;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	fi_info *got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got), 0);
	fi_freeinfo(hints);
	ASSERT_NE(got, nullptr);
	EXPECT_GT(got->domain_attr->max_ep_srx_ctx, 0u);
	fi_freeinfo(got);
}

/* Two receivers share one srx: a wildcard and a directed receive, an
 * expected and an unexpected message; each completion lands on the CQ of
 * the endpoint the message came in on, with FI_SOURCE in the shared AV. */
TEST_P(prov_srx, rdm_endpoints_share_wildcard_and_directed_receives)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE};
	ASSERT_NE(env.domain, nullptr);
	EXPECT_GT(env.info->domain_attr->max_ep_srx_ctx, 0u);
	fid_av *rav = open_av(env), *sav1 = open_av(env), *sav2 = open_av(env);
	fid_ep *srx = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE);
	ASSERT_NE(srx, nullptr);
	{
		srx_rdm a(env, rav, srx), b(env, rav, srx);
		srx_rdm s1(env, sav1, nullptr), s2(env, sav2, nullptr);
		fi_addr_t s1_at = insert(rav, s1), s2_at = insert(rav, s2);
		fi_addr_t to_a = insert(sav1, a), to_b = insert(sav2, b);

		/* Posted first: the directed one (from s2 only), then a wildcard. */
		char dir[16] = {}, wild[16] = {};
		int dctx = 0, wctx = 0;
		ASSERT_EQ(fi_trecv(srx, dir, sizeof dir, nullptr, s2_at, 7, 0, &dctx), 0);
		ASSERT_EQ(fi_trecv(srx, wild, sizeof wild, nullptr, FI_ADDR_UNSPEC, 7, 0, &wctx), 0);
		/* An endpoint's own receive calls go to its srx. */
		char own[16] = {};
		int octx = 0;
		ASSERT_EQ(fi_recv(b.ep, own, sizeof own, nullptr, FI_ADDR_UNSPEC, &octx), 0);

		ASSERT_EQ(fi_tsend(s1.ep, "from s1", 8, nullptr, to_a, 7, nullptr), 0);
		fi_cq_tagged_entry e{};
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(wait_recv(a.cq, e, {s1.cq, b.cq, s2.cq}, &src), 1);
		EXPECT_EQ(e.op_context, &wctx); /* the directed receive wants s2 */
		EXPECT_STREQ(wild, "from s1");
		EXPECT_EQ(src, s1_at);

		ASSERT_EQ(fi_tsend(s2.ep, "from s2", 8, nullptr, to_b, 7, nullptr), 0);
		ASSERT_EQ(wait_recv(b.cq, e, {s2.cq, a.cq, s1.cq}, &src), 1);
		EXPECT_EQ(e.op_context, &dctx);
		EXPECT_STREQ(dir, "from s2");
		EXPECT_EQ(src, s2_at);

		/* msg: the receive posted through b takes a message that came in on a. */
		ASSERT_EQ(fi_send(s1.ep, "msg", 4, nullptr, to_a, nullptr), 0);
		ASSERT_EQ(wait_recv(a.cq, e, {s1.cq, b.cq}, &src), 1);
		EXPECT_EQ(e.op_context, &octx);
		EXPECT_TRUE(e.flags & FI_MSG);
		EXPECT_STREQ(own, "msg");

		/* Unexpected on both endpoints, then received in the reverse order,
		 * the second one from a large (rendezvous) message. */
		std::vector<char> big(1 << 20, 'B'), got(1 << 20, 0);
		ASSERT_EQ(fi_tsend(s1.ep, "early", 6, nullptr, to_a, 9, nullptr), 0);
		ASSERT_EQ(fi_tsend(s2.ep, big.data(), big.size(), nullptr, to_b, 10, nullptr), 0);
		spin({a.cq, b.cq, s1.cq, s2.cq}, 3000);
		int bctx = 0, ectx = 0;
		ASSERT_EQ(fi_trecv(srx, got.data(), got.size(), nullptr, FI_ADDR_UNSPEC, 10, 0, &bctx), 0);
		ASSERT_EQ(wait_recv(b.cq, e, {s2.cq, a.cq, s1.cq}), 1);
		EXPECT_EQ(e.op_context, &bctx);
		EXPECT_EQ(e.len, big.size());
		EXPECT_EQ(got, big);
		char early[8] = {};
		ASSERT_EQ(fi_trecv(srx, early, sizeof early, nullptr, s1_at, 9, 0, &ectx), 0);
		ASSERT_EQ(wait_recv(a.cq, e, {s1.cq, b.cq}), 1);
		EXPECT_EQ(e.op_context, &ectx);
		EXPECT_STREQ(early, "early");
	}
	EXPECT_EQ(fi_close(&srx->fid), 0);
	EXPECT_EQ(fi_close(&rav->fid), 0);
	EXPECT_EQ(fi_close(&sav1->fid), 0);
	EXPECT_EQ(fi_close(&sav2->fid), 0);
}

/* FI_PEEK | FI_CLAIM and fi_cancel on an srx; send calls on it are ENOSYS. */
TEST_P(prov_srx, peek_claim_cancel_and_no_sends)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	fid_av *rav = open_av(env), *sav = open_av(env);
	fid_ep *srx = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV);
	ASSERT_NE(srx, nullptr);
	{
		srx_rdm a(env, rav, srx), s(env, sav, nullptr);
		insert(rav, s);
		fi_addr_t to_a = insert(sav, a);
		EXPECT_EQ(fi_send(srx, "x", 1, nullptr, to_a, nullptr), -FI_ENOSYS);
		EXPECT_EQ(fi_tinject(srx, "x", 1, to_a, 1), -FI_ENOSYS);

		ASSERT_EQ(fi_tsend(s.ep, "peeked", 7, nullptr, to_a, 5, nullptr), 0);
		spin({a.cq, s.cq}, 3000);
		fi_context pctx{};
		fi_msg_tagged m{};
		m.tag = 5;
		m.addr = FI_ADDR_UNSPEC;
		m.context = &pctx;
		ASSERT_EQ(fi_trecvmsg(srx, &m, FI_PEEK | FI_CLAIM), 0);
		fi_cq_tagged_entry e{};
		ASSERT_EQ(wait_recv(a.cq, e, {s.cq}), 1);
		EXPECT_EQ(e.op_context, &pctx);
		EXPECT_EQ(e.len, 7u);
		/* Claimed: a plain receive no longer finds it. */
		char other[8] = {};
		int octx = 0;
		ASSERT_EQ(fi_trecv(srx, other, sizeof other, nullptr, FI_ADDR_UNSPEC, 5, 0, &octx), 0);
		char buf[8] = {};
		iovec v{buf, sizeof buf};
		m.msg_iov = &v;
		m.iov_count = 1;
		ASSERT_EQ(fi_trecvmsg(srx, &m, FI_CLAIM), 0);
		ASSERT_EQ(wait_recv(a.cq, e, {s.cq}), 1);
		EXPECT_EQ(e.op_context, &pctx);
		EXPECT_STREQ(buf, "peeked");
		/* The plain receive is still posted: cancel it. */
		ASSERT_EQ(fi_cancel(&srx->fid, &octx), 0);
		fi_cq_err_entry err{};
		ASSERT_EQ(wait_recv(a.cq, e, {s.cq}, nullptr, &err), -FI_EAVAIL);
		EXPECT_EQ(err.err, FI_ECANCELED);
		EXPECT_EQ(err.op_context, &octx);
		EXPECT_EQ(fi_cancel(&srx->fid, &octx), -FI_ENOENT);
	}
	EXPECT_EQ(fi_close(&srx->fid), 0);
	EXPECT_EQ(fi_close(&rav->fid), 0);
	EXPECT_EQ(fi_close(&sav->fid), 0);
}

/* fi_close(srx) is -FI_EBUSY while an endpoint is bound; binds after
 * fi_enable, a second srx, flags, or a fid that is no srx are refused. */
TEST_P(prov_srx, close_order_and_bad_binds)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	fid_av *av = open_av(env);
	fid_ep *srx = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV);
	fid_ep *srx2 = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV);
	ASSERT_NE(srx, nullptr);
	ASSERT_NE(srx2, nullptr);
	EXPECT_EQ(fi_srx_context(env.domain, nullptr, nullptr, nullptr), -FI_EINVAL);

	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	fid_cq *cq = nullptr;
	ASSERT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
	EXPECT_EQ(fi_ep_bind(ep, &srx->fid, FI_RECV), -FI_EBADFLAGS);
	fid fake{};
	fake.fclass = FI_CLASS_SRX_CTX;
	EXPECT_EQ(fi_ep_bind(ep, &fake, 0), -FI_EINVAL);
	ASSERT_EQ(fi_ep_bind(ep, &srx->fid, 0), 0);
	EXPECT_EQ(fi_ep_bind(ep, &srx2->fid, 0), -FI_EINVAL);
	ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
	ASSERT_EQ(fi_enable(ep), 0);

	fid_ep *late = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &late, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(late, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	ASSERT_EQ(fi_ep_bind(late, &av->fid, 0), 0);
	ASSERT_EQ(fi_enable(late), 0);
	EXPECT_EQ(fi_ep_bind(late, &srx2->fid, 0), -FI_EINVAL); /* after fi_enable */

	/* Receives still posted when the srx closes go with it. */
	char buf[4][32];
	for (auto &b : buf)
		ASSERT_EQ(fi_recv(srx, b, sizeof b, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	EXPECT_EQ(fi_close(&srx->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&srx->fid), 0);
	EXPECT_EQ(fi_close(&srx2->fid), 0);
	EXPECT_EQ(fi_close(&late->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

/* Endpoints sharing a receive context use one AV (fi_endpoint(3)): its
 * sources are that AV's fi_addr_t values.  Refused whether the srx or the
 * AV is bound second. */
TEST_P(prov_srx, sharing_endpoints_use_one_av)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	fid_av *av = open_av(env), *av2 = open_av(env);
	fid_ep *srx = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV);
	ASSERT_NE(srx, nullptr);
	fid_ep *a = nullptr, *b = nullptr, *c = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &a, nullptr), 0);
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &b, nullptr), 0);
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &c, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(a, &av->fid, 0), 0);
	ASSERT_EQ(fi_ep_bind(a, &srx->fid, 0), 0);
	/* srx second: b already has another AV. */
	ASSERT_EQ(fi_ep_bind(b, &av2->fid, 0), 0);
	EXPECT_EQ(fi_ep_bind(b, &srx->fid, 0), -FI_EINVAL);
	/* AV second: c shares the srx, then asks for another AV, then the same. */
	ASSERT_EQ(fi_ep_bind(c, &srx->fid, 0), 0);
	EXPECT_EQ(fi_ep_bind(c, &av2->fid, 0), -FI_EINVAL);
	EXPECT_EQ(fi_ep_bind(c, &av->fid, 0), 0);
	EXPECT_EQ(fi_close(&a->fid), 0);
	EXPECT_EQ(fi_close(&b->fid), 0);
	EXPECT_EQ(fi_close(&c->fid), 0);
	EXPECT_EQ(fi_close(&srx->fid), 0);
	EXPECT_EQ(fi_close(&av->fid), 0);
	EXPECT_EQ(fi_close(&av2->fid), 0);
}

/* Two MSG connections accepted from one passive endpoint share one srx:
 * receives posted there take both connections' messages, each completed
 * on its own endpoint's CQ. */
TEST_P(prov_srx_msg, msg_endpoints_share_one_srx)
{
	prov_env env{prov(), FI_EP_MSG, FI_MSG};
	ASSERT_NE(env.domain, nullptr);
	fid_eq *peq = nullptr;
	fi_eq_attr ea{};
	ea.wait_obj = FI_WAIT_UNSPEC;
	ASSERT_EQ(fi_eq_open(env.fabric, &ea, &peq, nullptr), 0);
	fid_pep *pep = nullptr;
	ASSERT_EQ(fi_passive_ep(env.fabric, env.info, &pep, nullptr), 0);
	ASSERT_EQ(fi_pep_bind(pep, &peq->fid, 0), 0);
	ASSERT_EQ(fi_listen(pep), 0);
	char addr[64];
	size_t alen = sizeof addr;
	ASSERT_EQ(fi_getname(&pep->fid, addr, &alen), 0);
	fid_ep *srx = open_srx(env, FI_MSG | FI_RECV);
	ASSERT_NE(srx, nullptr);

	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	fid_ep *cl[2] = {}, *sv[2] = {};
	fid_cq *ccq[2] = {}, *scq[2] = {};
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(fi_cq_open(env.domain, &ca, &ccq[i], nullptr), 0);
		ASSERT_EQ(fi_cq_open(env.domain, &ca, &scq[i], nullptr), 0);
		ASSERT_EQ(fi_endpoint(env.domain, env.info, &cl[i], nullptr), 0);
		ASSERT_EQ(fi_ep_bind(cl[i], &env.eq->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(cl[i], &ccq[i]->fid, FI_TRANSMIT | FI_RECV), 0);
		ASSERT_EQ(fi_enable(cl[i]), 0);
		ASSERT_EQ(fi_connect(cl[i], addr, nullptr, 0), 0);
		uint32_t event = 0;
		fi_eq_cm_entry ce{};
		ASSERT_EQ(fi_eq_sread(peq, &event, &ce, sizeof ce, 10000, 0), ssize_t(sizeof ce));
		ASSERT_EQ(event, uint32_t(FI_CONNREQ));
		ASSERT_EQ(fi_endpoint(env.domain, ce.info, &sv[i], nullptr), 0);
		fi_freeinfo(ce.info);
		ASSERT_EQ(fi_ep_bind(sv[i], &peq->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(sv[i], &scq[i]->fid, FI_TRANSMIT | FI_RECV), 0);
		ASSERT_EQ(fi_ep_bind(sv[i], &srx->fid, 0), 0);
		ASSERT_EQ(fi_enable(sv[i]), 0);
		ASSERT_EQ(fi_accept(sv[i], nullptr, 0), 0);
		ASSERT_EQ(fi_eq_sread(peq, &event, &ce, sizeof ce, 10000, 0), ssize_t(sizeof ce));
		EXPECT_EQ(event, uint32_t(FI_CONNECTED));
		ASSERT_EQ(fi_eq_sread(env.eq, &event, &ce, sizeof ce, 10000, 0), ssize_t(sizeof ce));
		EXPECT_EQ(event, uint32_t(FI_CONNECTED));
	}
	char in[2][16] = {};
	int ctx[2] = {};
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(fi_recv(srx, in[i], sizeof in[i], nullptr, FI_ADDR_UNSPEC, &ctx[i]), 0);
	/* The second client first: it takes the receive posted first. */
	ASSERT_EQ(fi_send(cl[1], "one", 4, nullptr, 0, nullptr), 0);
	fi_cq_tagged_entry e{};
	ASSERT_EQ(wait_recv(scq[1], e, {ccq[1]}), 1);
	EXPECT_EQ(e.op_context, &ctx[0]);
	EXPECT_STREQ(in[0], "one");
	ASSERT_EQ(fi_send(cl[0], "zero", 5, nullptr, 0, nullptr), 0);
	ASSERT_EQ(wait_recv(scq[0], e, {ccq[0]}), 1);
	EXPECT_EQ(e.op_context, &ctx[1]);
	EXPECT_STREQ(in[1], "zero");
	/* Unexpected on one connection, then a receive on the srx. */
	ASSERT_EQ(fi_send(cl[0], "later", 6, nullptr, 0, nullptr), 0);
	spin({scq[0], ccq[0]}, 3000);
	char late[16] = {};
	int lctx = 0;
	ASSERT_EQ(fi_recv(srx, late, sizeof late, nullptr, FI_ADDR_UNSPEC, &lctx), 0);
	ASSERT_EQ(wait_recv(scq[0], e, {ccq[0]}), 1);
	EXPECT_EQ(e.op_context, &lctx);
	EXPECT_STREQ(late, "later");

	EXPECT_EQ(fi_close(&srx->fid), -FI_EBUSY);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(fi_close(&cl[i]->fid), 0);
		EXPECT_EQ(fi_close(&sv[i]->fid), 0);
	}
	EXPECT_EQ(fi_close(&srx->fid), 0);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(fi_close(&ccq[i]->fid), 0);
		EXPECT_EQ(fi_close(&scq[i]->fid), 0);
	}
	EXPECT_EQ(fi_close(&pep->fid), 0);
	EXPECT_EQ(fi_close(&peq->fid), 0);
}

/* fi_getopt on an srx answers like an endpoint's: a short buffer is
 * -FI_ETOOSMALL with the size it needs in *len. */
TEST_P(prov_srx, getopt_reports_needed_size)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	fid_ep *srx = open_srx(env, FI_MSG | FI_TAGGED | FI_RECV);
	ASSERT_NE(srx, nullptr);
	size_t v = 0, len = 1;
	EXPECT_EQ(fi_getopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len), -FI_ETOOSMALL);
	EXPECT_EQ(len, sizeof(size_t));
	size_t want = 4096;
	EXPECT_EQ(fi_setopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &want, sizeof want), 0);
	EXPECT_EQ(fi_getopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len), 0);
	EXPECT_EQ(v, want);
	EXPECT_EQ(len, sizeof(size_t));
	EXPECT_EQ(fi_close(&srx->fid), 0);
}
