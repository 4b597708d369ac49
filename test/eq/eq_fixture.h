/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the EQ suites: a fake fabric whose eq_open / wait_open /
 * trywait slots forward to src/eq, and RAII handles. */
#ifndef WU_TEST_EQ_FIXTURE_H
#define WU_TEST_EQ_FIXTURE_H

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "core/fid.h"
#include "eq/eq.h"

namespace wu::test {

inline int fake_eq_open(fid_fabric *f, fi_eq_attr *attr, fid_eq **eq, void *context)
{
	return wu::eq_open(f, f->api_version, attr, eq, context);
}

inline int fake_wait_open(fid_fabric *f, fi_wait_attr *attr, fid_wait **w)
{
	return wu::wait_open(f, attr, w);
}

inline int fake_trywait(fid_fabric *f, fid **fids, int count)
{
	return wu::trywait(f, fids, count);
}

inline int fake_fabric_close(fid *)
{
	return 0;
}

/* A fabric object as a provider would hand it out, minus the provider. */
struct fake_fabric {
	fi_ops fops{sizeof(fi_ops),
		    fake_fabric_close,
		    WU_NOSYS(fi_ops, bind),
		    WU_NOSYS(fi_ops, control),
		    WU_NOSYS(fi_ops, ops_open),
		    WU_NOSYS(fi_ops, tostr),
		    WU_NOSYS(fi_ops, ops_set)};
	fi_ops_fabric ops{sizeof(fi_ops_fabric),
			  WU_NOSYS(fi_ops_fabric, domain),
			  WU_NOSYS(fi_ops_fabric, passive_ep),
			  fake_eq_open,
			  fake_wait_open,
			  fake_trywait,
			  WU_NOSYS(fi_ops_fabric, domain2)};
	fid_fabric fabric{};

	explicit fake_fabric(uint32_t api = FI_VERSION(1, 17))
	{
		fabric.fid.fclass = FI_CLASS_FABRIC;
		fabric.fid.ops = &fops;
		fabric.ops = &ops;
		fabric.api_version = api;
	}
	fid_fabric *get() { return &fabric; }
};

struct fid_closer {
	template <class T>
	void operator()(T *p) const
	{
		EXPECT_EQ(fi_close(&p->fid), 0);
	}
};
using eq_ptr = std::unique_ptr<fid_eq, fid_closer>;
using wait_ptr = std::unique_ptr<fid_wait, fid_closer>;

inline eq_ptr open_eq(fid_fabric *fab, fi_eq_attr attr, void *context = nullptr)
{
	fid_eq *eq = nullptr;
	int r = fi_eq_open(fab, &attr, &eq, context);
	EXPECT_EQ(r, 0) << fi_strerror(-r);
	return eq_ptr(eq);
}

inline eq_ptr open_eq(fid_fabric *fab, fi_wait_obj w, uint64_t flags = FI_WRITE, size_t size = 0)
{
	fi_eq_attr a{};
	a.size = size;
	a.flags = flags;
	a.wait_obj = w;
	return open_eq(fab, a);
}

inline ssize_t write_entry(fid_eq *eq, uint32_t event, uint64_t data, fid_t fid = nullptr,
			   void *ctx = nullptr)
{
	fi_eq_entry e{fid, ctx, data};
	return fi_eq_write(eq, event, &e, sizeof e, 0);
}

using clock = std::chrono::steady_clock;

inline long ms_since(clock::time_point t0)
{
	return static_cast<long>(
		std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0).count());
}

} // namespace wu::test

#endif
