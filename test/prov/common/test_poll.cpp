/* SPDX-License-Identifier: BSD-3-Clause */
/* Poll sets (fi_poll(3)): CQs and counters checked together, on a real tcp
 * domain; then a CQ and a counter bound to real tcp endpoints, where
 * fi_poll alone drives the progress that completes a send. */
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "cq_fixture.h"
#include "tcp_fixture.h"

using namespace wu::test;

namespace {

struct poll_closer {
	void operator()(fid_poll *p) const { EXPECT_EQ(fi_close(&p->fid), 0); }
};
using poll_ptr = std::unique_ptr<fid_poll, poll_closer>;

poll_ptr open_poll(fid_domain *d)
{
	fi_poll_attr a{};
	fid_poll *p = nullptr;
	EXPECT_EQ(fi_poll_open(d, &a, &p), 0);
	return poll_ptr(p);
}

cq_ptr cq_with(cq_domain &d, void *ctx)
{
	fi_cq_attr a{};
	a.format = FI_CQ_FORMAT_CONTEXT;
	a.wait_obj = FI_WAIT_NONE;
	fid_cq *c = nullptr;
	EXPECT_EQ(fi_cq_open(d.domain, &a, &c, ctx), 0);
	return cq_ptr(c);
}

cntr_ptr cntr_with(cq_domain &d, void *ctx)
{
	fi_cntr_attr a{};
	a.events = FI_CNTR_EVENTS_COMP;
	a.wait_obj = FI_WAIT_NONE;
	fid_cntr *c = nullptr;
	EXPECT_EQ(fi_cntr_open(d.domain, &a, &c, ctx), 0);
	return cntr_ptr(c);
}

} // namespace

/* Suites run over every provider (prov_fixture.h). */
WU_PROVIDER_TEST_SUITE(poll_set)

TEST_P(poll_set, open_checks_arguments_and_holds_the_domain)
{
	cq_domain d{prov()};
	ASSERT_NE(d.domain, nullptr);
	fi_poll_attr a{};
	fid_poll *p = nullptr;
	EXPECT_EQ(fi_poll_open(d.domain, nullptr, &p), -FI_EINVAL);
	EXPECT_EQ(fi_poll_open(d.domain, &a, nullptr), -FI_EINVAL);
	a.flags = 1;
	EXPECT_EQ(fi_poll_open(d.domain, &a, &p), -FI_EINVAL);
	a.flags = 0;
	ASSERT_EQ(fi_poll_open(d.domain, &a, &p), 0);
	EXPECT_EQ(p->fid.fclass, (size_t)FI_CLASS_POLL);
	EXPECT_EQ(fi_close(&d.domain->fid), -FI_EBUSY) << "the poll set is still open";
	void *ctx[4];
	EXPECT_EQ(fi_poll(p, ctx, 4), 0) << "an empty poll set has nothing";
	EXPECT_EQ(fi_close(&p->fid), 0);
	EXPECT_EQ(fi_poll(p, ctx, 4), -FI_EBADF) << "a closed poll set fails cleanly";
	EXPECT_EQ(fi_close(&p->fid), -FI_EBADF);
}

TEST_P(poll_set, cq_context_while_not_empty)
{
	cq_domain d{prov()};
	int tag;
	cq_ptr cq = cq_with(d, &tag);
	poll_ptr p = open_poll(d.domain);
	ASSERT_EQ(fi_poll_add(p.get(), &cq->fid, 0), 0);
	void *ctx[4] = {};
	EXPECT_EQ(fi_poll(p.get(), ctx, 4), 0);
	ASSERT_EQ(wu::cq::post(cq.get(), comp(1)), 0);
	ASSERT_EQ(fi_poll(p.get(), ctx, 4), 1);
	EXPECT_EQ(ctx[0], &tag);
	EXPECT_EQ(fi_poll(p.get(), ctx, 4), 1) << "still not empty";
	fi_cq_entry e;
	ASSERT_EQ(fi_cq_read(cq.get(), &e, 1), 1);
	EXPECT_EQ(fi_poll(p.get(), ctx, 4), 0);
	/* An error entry counts too. */
	ASSERT_EQ(wu::cq::post_error(cq.get(), comp(2), FI_EIO, 0, 0), 0);
	EXPECT_EQ(fi_poll(p.get(), ctx, 4), 1);
	fi_cq_err_entry err{};
	EXPECT_EQ(fi_cq_readerr(cq.get(), &err, 0), 1);
	EXPECT_EQ(fi_poll_del(p.get(), &cq->fid, 0), 0);
}

TEST_P(poll_set, counter_context_once_per_change)
{
	cq_domain d{prov()};
	int tag;
	cntr_ptr c = cntr_with(d, &tag);
	poll_ptr p = open_poll(d.domain);
	ASSERT_EQ(fi_poll_add(p.get(), &c->fid, 0), 0);
	void *ctx[2] = {};
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 0);
	wu::cntr::add(c.get(), 3);
	ASSERT_EQ(fi_poll(p.get(), ctx, 2), 1);
	EXPECT_EQ(ctx[0], &tag);
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 0) << "no change since the last fi_poll";
	wu::cntr::add(c.get(), 1);
	ASSERT_EQ(fi_poll(p.get(), ctx, 2), 1);
	EXPECT_EQ(ctx[0], &tag);
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 0) << "no change since the last fi_poll";
	wu::cntr::add_err(c.get());
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 1) << "the error count changed";
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 0);
	EXPECT_EQ(fi_poll_del(p.get(), &c->fid, 0), 0);
	/* Like libfabric, changes from before fi_poll_add count (from 0). */
	cntr_ptr c2 = cntr_with(d, &tag);
	wu::cntr::add(c2.get(), 2);
	ASSERT_EQ(fi_poll_add(p.get(), &c2->fid, 0), 0);
	EXPECT_EQ(fi_poll(p.get(), ctx, 2), 1);
	EXPECT_EQ(fi_poll_del(p.get(), &c2->fid, 0), 0);
}

TEST_P(poll_set, a_full_array_loses_nothing_and_rotates)
{
	cq_domain d{prov()};
	int ta, tb, tc;
	cq_ptr a = cq_with(d, &ta), b = cq_with(d, &tb);
	cntr_ptr c = cntr_with(d, &tc);
	poll_ptr p = open_poll(d.domain);
	ASSERT_EQ(fi_poll_add(p.get(), &a->fid, 0), 0);
	ASSERT_EQ(fi_poll_add(p.get(), &b->fid, 0), 0);
	ASSERT_EQ(fi_poll_add(p.get(), &c->fid, 0), 0);
	ASSERT_EQ(wu::cq::post(a.get(), comp(1)), 0);
	ASSERT_EQ(wu::cq::post(b.get(), comp(2)), 0);
	wu::cntr::add(c.get());
	void *ctx[3] = {};
	std::vector<void *> seen;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(fi_poll(p.get(), ctx, 1), 1);
		seen.push_back(ctx[0]);
	}
	/* Each member in turn: none hidden behind the one before it. */
	EXPECT_EQ(seen, (std::vector<void *>{&ta, &tb, &tc}));
	EXPECT_EQ(fi_poll(p.get(), ctx, 3), 2) << "the CQs are not empty; the counter was reported";
	EXPECT_EQ(fi_poll(p.get(), ctx, 0), 0);
	for (fid *f : {&a->fid, &b->fid, &c->fid})
		EXPECT_EQ(fi_poll_del(p.get(), f, 0), 0);
	fi_cq_entry e;
	EXPECT_EQ(fi_cq_read(a.get(), &e, 1), 1);
	EXPECT_EQ(fi_cq_read(b.get(), &e, 1), 1);
}

TEST_P(poll_set, bad_arguments)
{
	cq_domain d{prov()};
	cq_ptr cq = cq_with(d, nullptr);
	poll_ptr p = open_poll(d.domain);
	EXPECT_EQ(fi_poll_add(p.get(), &cq->fid, 1), -FI_EBADFLAGS);
	EXPECT_EQ(fi_poll_add(p.get(), &d.domain->fid, 0), -FI_EINVAL) << "only CQs and counters";
	EXPECT_EQ(fi_poll_add(p.get(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_poll_del(p.get(), &cq->fid, 0), 0) << "not in the set: nothing to do, as libfabric";
	ASSERT_EQ(fi_poll_add(p.get(), &cq->fid, 0), 0);
	EXPECT_EQ(fi_poll_add(p.get(), &cq->fid, 0), 0) << "adding again changes nothing";
	EXPECT_EQ(fi_poll_del(p.get(), &cq->fid, 1), -FI_EBADFLAGS);
	EXPECT_EQ(fi_poll(p.get(), nullptr, 1), -FI_EINVAL);
	void *ctx[1];
	EXPECT_EQ(fi_poll(p.get(), ctx, -1), -FI_EINVAL);
	EXPECT_EQ(fi_poll_del(p.get(), &cq->fid, 0), 0);
	p.reset();
	EXPECT_EQ(fi_close(&cq.release()->fid), 0) << "one add, one del: the CQ is free";
}

/* A member is held: closing it first would leave the set a dangling fid. */
TEST_P(poll_set, closing_a_member_is_busy_until_removed_or_the_set_closes)
{
	cq_domain d{prov()};
	fi_cq_attr a{};
	a.wait_obj = FI_WAIT_NONE;
	fid_cq *cq = nullptr;
	ASSERT_EQ(fi_cq_open(d.domain, &a, &cq, nullptr), 0);
	fi_cntr_attr ca{};
	fid_cntr *c = nullptr;
	ASSERT_EQ(fi_cntr_open(d.domain, &ca, &c, nullptr), 0);
	fi_poll_attr pa{};
	fid_poll *p = nullptr;
	ASSERT_EQ(fi_poll_open(d.domain, &pa, &p), 0);
	ASSERT_EQ(fi_poll_add(p, &cq->fid, 0), 0);
	ASSERT_EQ(fi_poll_add(p, &c->fid, 0), 0);
	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&c->fid), -FI_EBUSY);
	EXPECT_EQ(fi_poll_del(p, &cq->fid, 0), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	/* Closing the set releases what is still in it (as libfabric allows). */
	EXPECT_EQ(fi_close(&p->fid), 0);
	EXPECT_EQ(fi_close(&c->fid), 0);
}

/* The use fi_poll(3) is for: a CQ and a counter bound to real endpoints,
 * with nothing but fi_poll driving progress. */
TEST(poll_set_tcp, cq_and_counter_of_real_endpoints)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	/* The sender: a CQ for its completions, a counter for its sends. */
	fi_cq_attr cqa{};
	cqa.format = FI_CQ_FORMAT_TAGGED;
	fid_cq *tx = nullptr;
	ASSERT_EQ(fi_cq_open(env.domain, &cqa, &tx, nullptr), 0);
	int cntr_tag, rx_tag;
	fi_cntr_attr na{};
	na.events = FI_CNTR_EVENTS_COMP;
	fid_cntr *sent = nullptr;
	ASSERT_EQ(fi_cntr_open(env.domain, &na, &sent, &cntr_tag), 0);
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	ASSERT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(ep, &tx->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION), 0);
	ASSERT_EQ(fi_ep_bind(ep, &sent->fid, FI_SEND), 0);
	ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
	ASSERT_EQ(fi_enable(ep), 0);
	{
		rdm_ep b{env};
		ASSERT_NE(b.ep, nullptr);
		b.rx->fid.context = &rx_tag;
		fi_addr_t to_b = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(fi_av_insert(av, b.name.data(), 1, &to_b, 0, nullptr), 1);

		poll_ptr p = open_poll(env.domain);
		ASSERT_EQ(fi_poll_add(p.get(), &sent->fid, 0), 0);
		ASSERT_EQ(fi_poll_add(p.get(), &b.rx->fid, 0), 0);
		char out[32] = "through a poll set", in[32] = {};
		int rctx;
		ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
		ASSERT_EQ(fi_send(ep, out, sizeof out, nullptr, to_b, nullptr), 0);
		bool got_cntr = false, got_rx = false;
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (!(got_cntr && got_rx) && std::chrono::steady_clock::now() < until) {
			void *ctx[2];
			int n = fi_poll(p.get(), ctx, 2);
			ASSERT_GE(n, 0) << fi_strerror(-n);
			for (int i = 0; i < n; i++) {
				got_cntr |= ctx[i] == &cntr_tag;
				got_rx |= ctx[i] == &rx_tag;
				EXPECT_TRUE(ctx[i] == &cntr_tag || ctx[i] == &rx_tag);
			}
		}
		EXPECT_TRUE(got_cntr) << "the send counter's change";
		EXPECT_TRUE(got_rx) << "the receive CQ's entry";
		EXPECT_EQ(fi_cntr_read(sent), 1u);
		fi_cq_tagged_entry e{};
		ASSERT_EQ(fi_cq_read(b.rx, &e, 1), 1);
		EXPECT_EQ(e.op_context, &rctx);
		EXPECT_STREQ(in, out);
		EXPECT_EQ(fi_poll_del(p.get(), &b.rx->fid, 0), 0);
	}
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&av->fid), 0);
	EXPECT_EQ(fi_close(&tx->fid), 0);
	EXPECT_EQ(fi_close(&sent->fid), 0) << "released by the poll set's close";
}

/* fi_poll, fi_poll_add / fi_poll_del and completions from other threads at
 * once (for the ThreadSanitizer run): the set stays consistent. */
TEST_P(poll_set, threads_poll_add_del_and_post_at_once)
{
	cq_domain d{prov()};
	int ta, tb, tc;
	cq_ptr a = cq_with(d, &ta), b = cq_with(d, &tb);
	cntr_ptr c = cntr_with(d, &tc);
	poll_ptr p = open_poll(d.domain);
	ASSERT_EQ(fi_poll_add(p.get(), &a->fid, 0), 0);
	ASSERT_EQ(fi_poll_add(p.get(), &c->fid, 0), 0);
	constexpr int rounds = 2000;
	std::atomic<bool> done{false};
	std::thread poller([&] {
		void *ctx[3];
		while (!done.load()) {
			int n = fi_poll(p.get(), ctx, 3);
			ASSERT_GE(n, 0);
			for (int i = 0; i < n; i++)
				ASSERT_TRUE(ctx[i] == &ta || ctx[i] == &tb || ctx[i] == &tc);
		}
	});
	std::thread churn([&] {
		for (int i = 0; i < rounds; i++) {
			ASSERT_EQ(fi_poll_add(p.get(), &b->fid, 0), 0);
			ASSERT_EQ(fi_poll_del(p.get(), &b->fid, 0), 0);
		}
	});
	for (int i = 0; i < rounds; i++) {
		ASSERT_EQ(wu::cq::post(a.get(), comp(1)), 0);
		wu::cntr::add(c.get());
		fi_cq_entry e;
		ASSERT_EQ(fi_cq_read(a.get(), &e, 1), 1);
	}
	churn.join();
	done = true;
	poller.join();
	EXPECT_EQ(fi_cntr_read(c.get()), (uint64_t)rounds);
	EXPECT_EQ(fi_poll_del(p.get(), &a->fid, 0), 0);
	EXPECT_EQ(fi_poll_del(p.get(), &c->fid, 0), 0);
	EXPECT_EQ(fi_close(&b->fid), 0) << "released by the last fi_poll_del";
	b.release();
}
