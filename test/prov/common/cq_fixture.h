/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the CQ / counter / MR / poll suites (run over every
 * provider, see prov_fixture.h): a real domain opened through the public
 * API at a chosen API version, and RAII handles. */
#ifndef WU_TEST_PROV_CQ_FIXTURE_H
#define WU_TEST_PROV_CQ_FIXTURE_H

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "prov/common/cq.h"
#include "prov/common/objects.h"
#include "prov_fixture.h"

namespace wu::test {

struct fid_closer {
	template <class T>
	void operator()(T *p) const
	{
		EXPECT_EQ(fi_close(&p->fid), 0);
	}
};
using cq_ptr = std::unique_ptr<fid_cq, fid_closer>;
using cntr_ptr = std::unique_ptr<fid_cntr, fid_closer>;
using mr_ptr = std::unique_ptr<fid_mr, fid_closer>;
using wait_ptr = std::unique_ptr<fid_wait, fid_closer>;

/* A bare domain of one provider (prov_env at an API version) with the
 * shared CQ, counter and MR implementations opened on it directly. */
class cq_domain : public prov_env {
public:
	/* tweak edits the info (mr_mode, ...) before fi_domain. */
	explicit cq_domain(const std::string &prov, uint32_t api = FI_VERSION(2, 0),
			   void (*tweak)(fi_info *) = nullptr)
		: prov_env(prov, api, tweak)
	{
	}
	prov::domain *dom() const { return prov::domain_of(domain); }

	int open_cq(fi_cq_attr attr, fid_cq **cq, void *ctx = nullptr)
	{
		return wu::cq::open(dom(), &attr, cq, ctx);
	}
	cq_ptr cq(fi_cq_format fmt = FI_CQ_FORMAT_TAGGED, fi_wait_obj w = FI_WAIT_UNSPEC,
		  size_t size = 0, fi_cq_wait_cond cond = FI_CQ_COND_NONE)
	{
		fi_cq_attr a{};
		a.format = fmt;
		a.wait_obj = w;
		a.size = size;
		a.wait_cond = cond;
		fid_cq *c = nullptr;
		int r = open_cq(a, &c);
		EXPECT_EQ(r, 0) << fi_strerror(-r);
		return cq_ptr(c);
	}
	cntr_ptr cntr(fi_wait_obj w = FI_WAIT_UNSPEC)
	{
		fi_cntr_attr a{};
		a.events = FI_CNTR_EVENTS_COMP;
		a.wait_obj = w;
		fid_cntr *c = nullptr;
		int r = wu::cntr::open(dom(), &a, &c, nullptr);
		EXPECT_EQ(r, 0) << fi_strerror(-r);
		return cntr_ptr(c);
	}
	/* The MR ops as the provider's domain will expose them. */
	int reg(const void *buf, size_t len, uint64_t access, uint64_t offset, uint64_t key,
		uint64_t flags, fid_mr **mr, void *ctx = nullptr)
	{
		return wu::mr::ops.reg(&domain->fid, buf, len, access, offset, key, flags, mr, ctx);
	}
};

inline wu::cq::completion comp(uintptr_t ctx, uint64_t tag = 0, uint64_t data = 0)
{
	wu::cq::completion c;
	c.op_context = reinterpret_cast<void *>(ctx);
	c.flags = FI_TAGGED | FI_RECV;
	c.len = ctx * 10;
	c.buf = reinterpret_cast<void *>(ctx + 1);
	c.data = data;
	c.tag = tag;
	return c;
}

using clock = std::chrono::steady_clock;

inline long ms_since(clock::time_point t0)
{
	return static_cast<long>(
		std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0).count());
}

inline void sleep_ms(int ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

} // namespace wu::test

#endif
