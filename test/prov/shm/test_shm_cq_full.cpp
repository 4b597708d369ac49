/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: completions a full CQ kept back reach the CQ once it has
 * room, even when the endpoint has nothing else to do.  MPICH's
 * rma/strided_acc_onelock (2 ranks, 1024 MPI_Accumulate per lock epoch,
 * sent as active messages) hung: a burst of receive completions overran
 * MPICH's CQ, the rest stayed in the endpoint's batch, and the endpoint's
 * lock-free idle poll never flushed them again. */
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "../common/prov_fixture.h"

using namespace wu::test;

namespace {

/* b posts n receives into `in`, a injects 1000 + i to each; then both are
 * progressed (b's receive CQ not read) until every message has landed. */
void post_and_inject(rdm_ep &a, rdm_ep &b, fi_addr_t to_b, std::vector<uint64_t> &in)
{
	const int n = int(in.size());
	for (int i = 0; i < n; i++)
		ASSERT_EQ(fi_recv(b.ep, &in[i], sizeof in[i], nullptr, FI_ADDR_UNSPEC, &in[i]), 0) << i;
	for (int i = 0; i < n; i++) {
		uint64_t v = 1000 + uint64_t(i);
		ssize_t r;
		/* A full queue or bounce pool: progress both and retry. */
		int tries = 0;
		while ((r = fi_inject(a.ep, &v, sizeof v, to_b)) == -FI_EAGAIN && ++tries < 1000000)
			spin({a.tx, a.rx, b.tx}, 1);
		ASSERT_EQ(r, 0) << i;
	}
	spin({a.tx, b.tx, a.rx}, 20000);
}

TEST(shm_cq_full, completions_kept_back_by_a_full_cq_arrive_once_it_has_room)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	ASSERT_NE(env.domain, nullptr);
	constexpr size_t cq_size = 4;
	constexpr int n = 32;
	rdm_ep a(env), b(env, nullptr, FI_WAIT_NONE, cq_size);
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = a.insert(b);
	b.insert(a);

	/* b takes all n messages while its receive CQ holds cq_size: the rest
	 * of the completions wait in b's endpoint.  Progress b through its
	 * transmit CQ (reading nothing from the receive CQ) until its queue is
	 * empty: every message has landed, and b has nothing left to do but
	 * those completions. */
	std::vector<uint64_t> in(n, 0);
	ASSERT_NO_FATAL_FAILURE(post_and_inject(a, b, to_b, in));

	/* Now read them one by one: each read makes room for one more. */
	for (int i = 0; i < n; i++) {
		fi_cq_tagged_entry e{};
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, b.tx}), 1)
			<< "completion " << i << " of " << n << " never arrived (CQ of " << cq_size << " entries)";
		EXPECT_EQ(e.op_context, &in[i]);
		EXPECT_EQ(in[i], 1000 + uint64_t(i));
	}
	fi_cq_tagged_entry e{};
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN);
}

/* A thousand kept behind a full CQ (MPICH's rma/atomic_get_*: a flush
 * retried each of them on every poll, quadratic): they still arrive in
 * order, read a few at a time, and the same endpoint's completions for
 * another CQ are not held behind them. */
TEST(shm_cq_full, many_kept_back_stay_in_order_and_do_not_hold_up_another_cq)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	ASSERT_NE(env.domain, nullptr);
	constexpr size_t cq_size = 4;
	constexpr int n = 1000; /* under the default receive queue (1024) */
	constexpr int m = 16;
	rdm_ep a(env), b(env, nullptr, FI_WAIT_NONE, cq_size);
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = a.insert(b);
	fi_addr_t to_a = b.insert(a);

	std::vector<uint64_t> in(n, 0);
	ASSERT_NO_FATAL_FAILURE(post_and_inject(a, b, to_b, in));

	/* b's receive CQ is full with thousands kept: b's sends still
	 * complete on its transmit CQ. */
	std::vector<uint64_t> to(m, 0), back(m, 0);
	for (int i = 0; i < m; i++)
		ASSERT_EQ(fi_recv(a.ep, &back[i], sizeof back[i], nullptr, FI_ADDR_UNSPEC, &back[i]), 0) << i;
	for (int i = 0; i < m; i++) {
		to[i] = 7000 + uint64_t(i);
		ssize_t r;
		int tries = 0;
		while ((r = fi_send(b.ep, &to[i], sizeof to[i], nullptr, to_a, &to[i])) == -FI_EAGAIN &&
		       ++tries < 1000000)
			spin({a.tx, a.rx, b.tx}, 1);
		ASSERT_EQ(r, 0) << i;
	}
	for (int i = 0; i < m; i++) {
		fi_cq_tagged_entry e{};
		ASSERT_EQ(wait_one(b.tx, e, nullptr, {a.tx, a.rx}), 1)
			<< "send completion " << i << " held behind the full receive CQ";
		EXPECT_EQ(e.op_context, &to[i]);
	}
	for (int i = 0; i < m; i++) {
		fi_cq_tagged_entry e{};
		ASSERT_EQ(wait_one(a.rx, e, nullptr, {a.tx, b.tx}), 1) << i;
		EXPECT_EQ(e.op_context, &back[i]);
		EXPECT_EQ(back[i], 7000 + uint64_t(i));
	}

	/* Three at a time, in order. */
	int got = 0;
	int idle = 0;
	while (got < n && idle < 1000000) {
		fi_cq_tagged_entry e[3]{};
		ssize_t r = fi_cq_read(b.rx, e, 3);
		if (r == -FI_EAGAIN) {
			idle++;
			spin({a.tx, b.tx}, 1);
			continue;
		}
		ASSERT_GT(r, 0) << got;
		ASSERT_LE(r, 3);
		for (ssize_t k = 0; k < r; k++, got++) {
			ASSERT_EQ(e[k].op_context, &in[got]);
			EXPECT_EQ(in[got], 1000 + uint64_t(got));
		}
	}
	EXPECT_EQ(got, n);
	fi_cq_tagged_entry e{};
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN);
}

} // namespace
