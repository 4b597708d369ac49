/* SPDX-License-Identifier: BSD-3-Clause */
/* A fabric and a domain opened and closed through the public API, for the
 * test fixtures (prov_env, tcp_domain): a failed open is a test failure
 * saying which call failed, never a crash. */
#ifndef WU_TEST_FABRIC_OPEN_H
#define WU_TEST_FABRIC_OPEN_H

#include <gtest/gtest.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

inline void open_fabric_domain(fi_info *info, fid_fabric **fabric, fid_domain **domain)
{
	int r = fi_fabric(info->fabric_attr, fabric, nullptr);
	if (r) {
		ADD_FAILURE() << "fi_fabric: " << fi_strerror(-r);
		return;
	}
	r = fi_domain(*fabric, info, domain, nullptr);
	if (r)
		ADD_FAILURE() << "fi_domain: " << fi_strerror(-r);
}

/* Either may be NULL (not opened). */
inline void close_fabric_domain(fid_fabric *fabric, fid_domain *domain)
{
	if (domain) {
		EXPECT_EQ(fi_close(&domain->fid), 0);
	}
	if (fabric) {
		EXPECT_EQ(fi_close(&fabric->fid), 0);
	}
}

#endif
