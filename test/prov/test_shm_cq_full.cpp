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

#include "prov_fixture.h"

using namespace wu::test;

namespace {

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

	std::vector<uint64_t> in(n, 0);
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
	/* b takes all n messages while its receive CQ holds cq_size: the rest
	 * of the completions wait in b's endpoint.  Progress b through its
	 * transmit CQ (reading nothing from the receive CQ) until its queue is
	 * empty: every message has landed, and b has nothing left to do but
	 * those completions. */
	spin({a.tx, b.tx, a.rx}, 20000);

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

} // namespace
