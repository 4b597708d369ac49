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

/* An shm RDM endpoint whose receive CQ holds at most rx_size entries. */
struct small_cq_ep {
	fid_ep *ep = nullptr;
	fid_cq *tx = nullptr, *rx = nullptr;
	fid_av *av = nullptr;
	std::vector<char> name;

	small_cq_ep(prov_env &env, size_t rx_size)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ca.wait_obj = FI_WAIT_NONE;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &tx, nullptr), 0);
		ca.size = rx_size;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &rx, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
		EXPECT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
		if (!ep)
			return;
		EXPECT_EQ(fi_ep_bind(ep, &tx->fid, FI_TRANSMIT), 0);
		EXPECT_EQ(fi_ep_bind(ep, &rx->fid, FI_RECV), 0);
		EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		EXPECT_EQ(fi_enable(ep), 0);
		size_t len = 0;
		EXPECT_EQ(fi_getname(&ep->fid, nullptr, &len), -FI_ETOOSMALL);
		name.resize(len);
		EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
	}
	~small_cq_ep()
	{
		if (ep) {
			EXPECT_EQ(fi_close(&ep->fid), 0);
		}
		if (av) {
			EXPECT_EQ(fi_close(&av->fid), 0);
		}
		if (tx) {
			EXPECT_EQ(fi_close(&tx->fid), 0);
		}
		if (rx) {
			EXPECT_EQ(fi_close(&rx->fid), 0);
		}
	}
};

TEST(shm_cq_full, completions_kept_back_by_a_full_cq_arrive_once_it_has_room)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	ASSERT_NE(env.domain, nullptr);
	constexpr size_t cq_size = 4;
	constexpr int n = 32;
	small_cq_ep a(env, 1024), b(env, cq_size);
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = FI_ADDR_NOTAVAIL, to_a = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(a.av, b.name.data(), 1, &to_b, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(b.av, a.name.data(), 1, &to_a, 0, nullptr), 1);

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
