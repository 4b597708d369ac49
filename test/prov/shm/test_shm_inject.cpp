/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider (and wireup over it): fi_inject's short path (inject_inline, issue 14's 8 B
 * latency) hands every call it cannot finish alone to the general one:
 * a bound send counter still counts each inject, and injects that find
 * the peer's queue full (queued by the general path) and those after them
 * (which must queue behind them) arrive in order, none lost, with their
 * tags and CQ data. */
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "../common/prov_fixture.h"

using namespace wu::test;

namespace {

/* shm, and the multiplexer whose fi_inject* to a peer on this host enters
 * the same short path directly (prov::sub_ops::inject). */
class shm_inject : public ::testing::TestWithParam<const char *> {};

TEST_P(shm_inject, a_bound_send_counter_counts_every_inject)
{
	rdm_pair p(GetParam(), FI_MSG | FI_TAGGED);
	ASSERT_NE(p.a.ep, nullptr);
	ASSERT_NE(p.b.ep, nullptr);
	fi_cntr_attr ca{};
	ca.events = FI_CNTR_EVENTS_COMP;
	fid_cntr *sent = nullptr;
	ASSERT_EQ(fi_cntr_open(p.env.domain, &ca, &sent, nullptr), 0);
	/* Counters bind before fi_enable: a third endpoint of the pair's domain. */
	rdm_ep c(p.env);
	ASSERT_NE(c.ep, nullptr);
	ASSERT_NO_FATAL_FAILURE(c.reopen(p.env, 0, sent));
	fi_addr_t c_to_b = c.insert(p.b);
	constexpr int n = 50;
	for (int i = 0; i < n; i++) {
		uint64_t v = 1000 + uint64_t(i);
		ssize_t r;
		int tries = 0;
		while ((r = fi_tinject(c.ep, &v, sizeof v, c_to_b, uint64_t(i))) == -FI_EAGAIN && ++tries < 1000000)
			spin({c.tx, c.rx, p.b.rx}, 1);
		ASSERT_EQ(r, 0) << i;
	}
	for (int i = 0; i < n; i++) {
		uint64_t got = 0;
		ASSERT_EQ(fi_trecv(p.b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0, nullptr), 0);
		fi_cq_tagged_entry e{};
		ASSERT_EQ(wait_one(p.b.rx, e, nullptr, {c.tx, c.rx}), 1) << i;
		EXPECT_EQ(got, 1000 + uint64_t(i));
		EXPECT_EQ(e.tag, uint64_t(i));
	}
	spin({c.tx, c.rx});
	EXPECT_EQ(fi_cntr_read(sent), uint64_t(n));
	EXPECT_EQ(fi_cntr_readerr(sent), 0u);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(c.tx, &e, 1), -FI_EAGAIN); /* inject: no completion */
	c.close();
	EXPECT_EQ(fi_close(&sent->fid), 0);
}

TEST_P(shm_inject, injects_past_a_full_queue_arrive_in_order_with_their_data)
{
	/* A queue of 4 cells: most of the injects find it full and queue
	 * (general path); the ones after them must not overtake them. */
	setenv("FI_SHM_QUEUE_CELLS", "4", 1);
	rdm_pair p(GetParam(), FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_QUEUE_CELLS");
	ASSERT_NE(p.a.ep, nullptr);
	ASSERT_NE(p.b.ep, nullptr);
	constexpr int n = 40; /* below tx_attr->size: none is refused */
	ASSERT_GT(p.env.info->tx_attr->size, size_t(n));
	/* The first cell's answer first: later injects find the peer known. */
	{
		uint32_t v = 1, got = 0;
		ASSERT_EQ(fi_recv(p.b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_inject(p.a.ep, &v, sizeof v, p.a_to_b), 0);
		fi_cq_tagged_entry e{};
		ASSERT_EQ(p.wait_rx(p.b, e), 1);
		ASSERT_EQ(got, 1u);
		spin({p.a.tx, p.a.rx, p.b.rx}, 10);
	}
	for (int i = 0; i < n; i++) {
		uint32_t v = 7000 + uint32_t(i);
		ASSERT_EQ(fi_tinjectdata(p.a.ep, &v, sizeof v, 0xd000 + uint64_t(i), p.a_to_b, 5), 0) << i;
		if (i % 7 == 3) /* now and then the receiver takes its queue (unexpected) and the sender's backlog moves */
			spin({p.b.rx, p.a.tx}, 3);
	}
	for (int i = 0; i < n; i++) {
		uint32_t got = 0;
		ASSERT_EQ(fi_trecv(p.b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 5, 0, nullptr), 0);
		fi_cq_tagged_entry e{};
		ASSERT_EQ(p.wait_rx(p.b, e), 1) << i;
		EXPECT_EQ(got, 7000 + uint32_t(i)) << "out of order at " << i;
		EXPECT_EQ(e.data, 0xd000 + uint64_t(i));
		EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
		EXPECT_EQ(e.len, sizeof got);
	}
}

TEST_P(shm_inject, refusals_are_the_general_paths)
{
	rdm_pair p(GetParam(), FI_MSG);
	ASSERT_NE(p.a.ep, nullptr);
	uint64_t v = 1;
	/* Not in the AV; above inject_size. */
	EXPECT_EQ(fi_inject(p.a.ep, &v, sizeof v, 12345), -FI_EINVAL);
	std::vector<char> big(p.env.info->tx_attr->inject_size + 1);
	EXPECT_EQ(fi_inject(p.a.ep, big.data(), big.size(), p.a_to_b), -FI_EINVAL);
	/* An endpoint not enabled. */
	fid_ep *e = nullptr;
	ASSERT_EQ(fi_endpoint(p.env.domain, p.env.info, &e, nullptr), 0);
	EXPECT_EQ(fi_inject(e, &v, sizeof v, 0), -FI_EOPBADSTATE);
	EXPECT_EQ(fi_close(&e->fid), 0);
}

INSTANTIATE_TEST_SUITE_P(providers, shm_inject, ::testing::Values("shm", "wireup"));

} // namespace
