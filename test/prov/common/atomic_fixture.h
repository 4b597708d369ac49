/* SPDX-License-Identifier: BSD-3-Clause */
/* The atomics fixture: two RDM endpoints and a registered target. */
#ifndef WU_TEST_PROV_ATOMIC_FIXTURE_H
#define WU_TEST_PROV_ATOMIC_FIXTURE_H

#include <cstdint>
#include <vector>

#include <rdma/fi_atomic.h>

#include "tcp_fixture.h"

namespace wu::test {

/* Two RDM endpoints of one provider, b's memory registered for atomics:
 * the atomics suite of every provider (test_prov_atomic.cpp) and tcp's
 * wire frames (test_tcp_atomic.cpp). */
struct atomic_pair : provider_test {
	prov_env env{prov(), FI_EP_RDM, FI_ATOMIC | FI_RMA | FI_MSG};
	rdm_ep a{env}, b{env};
	fi_addr_t a_to_b = a.insert(b), b_to_a = b.insert(a);
	std::vector<char> target = std::vector<char>(8192);
	fid_mr *mr = nullptr;
	uint64_t key = 0, base = 0;

	void SetUp() override
	{
		/* Only providers offering FI_ATOMIC run these (WU_TEST_ATOMIC_PROVIDER_LIST). */
		ASSERT_EQ(fi_mr_reg(env.domain, target.data(), target.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7,
				    0, &mr, nullptr),
			  0);
		key = fi_mr_key(mr);
		base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
	}
	void TearDown() override
	{
		if (mr) {
			EXPECT_EQ(fi_close(&mr->fid), 0);
		}
	}
	int wait_tx(fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr)
	{
		return wait_one(a.tx, e, err, {b.rx, b.tx, a.rx});
	}
	/* Waits for one successful completion with these flags and context. */
	void done(uint64_t flags, void *ctx)
	{
		fi_cq_tagged_entry e{};
		fi_cq_err_entry err{};
		int r = wait_tx(e, &err);
		ASSERT_EQ(r, 1) << fi_strerror(err.err);
		EXPECT_EQ(e.flags, flags);
		EXPECT_EQ(e.op_context, ctx);
	}
	/* An fi_msg_atomic to b of one local and one remote ioc. */
	fi_msg_atomic one_msg(const fi_ioc *io, const fi_rma_ioc *rio, fi_datatype dt, fi_op op, void *ctx)
	{
		return {.msg_iov = io, .desc = nullptr, .iov_count = 1, .addr = a_to_b, .rma_iov = rio,
			.rma_iov_count = 1, .datatype = dt, .op = op, .context = ctx, .data = 0};
	}
	int failed(void *ctx)
	{
		fi_cq_tagged_entry e{};
		fi_cq_err_entry err{};
		EXPECT_EQ(wait_tx(e, &err), -FI_EAVAIL);
		EXPECT_EQ(err.op_context, ctx);
		return err.err;
	}
};

} // namespace wu::test

#endif
