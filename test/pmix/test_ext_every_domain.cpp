/* SPDX-License-Identifier: BSD-3-Clause */
/* The PMIx wire-up extension on every provider's domain: fi_open_ops of
 * "wireup_pmix" answers on tcp, shm, wireup and (when it runs here) ucx,
 * because the glue registers it in core (core/launcher.h) instead of each
 * provider naming it.  Through the public API only. */
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>

namespace {

constexpr uint32_t V = FI_VERSION(1, 17);

/* Opens the first fabric and domain of provider prov; false (with why)
 * when the provider has no usable entry here. */
struct opened {
	fi_info *info = nullptr;
	fid_fabric *fab = nullptr;
	fid_domain *dom = nullptr;
	~opened()
	{
		if (dom) {
			EXPECT_EQ(fi_close(&dom->fid), 0);
		}
		if (fab) {
			EXPECT_EQ(fi_close(&fab->fid), 0);
		}
		fi_freeinfo(info);
	}
	int open(const char *prov)
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup(prov);
		hints->ep_attr->type = FI_EP_RDM;
		int r = fi_getinfo(V, nullptr, nullptr, 0, hints, &info);
		fi_freeinfo(hints);
		if (r)
			return r;
		if ((r = fi_fabric(info->fabric_attr, &fab, nullptr)))
			return r;
		return fi_domain(fab, info, &dom, nullptr);
	}
};

class ExtOnEveryDomain : public ::testing::TestWithParam<const char *> {};

TEST_P(ExtOnEveryDomain, OpenOpsGivesTheWireupOps)
{
	opened o;
	int r = o.open(GetParam());
	if (r == -FI_ENODATA && std::string(GetParam()) == "ucx")
		GTEST_SKIP() << "ucx has no usable interface here";
	ASSERT_EQ(r, 0) << GetParam() << ": " << fi_strerror(-r);
	fi_ops_wireup_pmix *w = nullptr;
	ASSERT_EQ(fi_open_ops(&o.dom->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr), 0) << GetParam();
	ASSERT_NE(w, nullptr);
	EXPECT_GE(w->size, offsetof(fi_ops_wireup_pmix, av_fill) + sizeof w->av_fill);
	EXPECT_NE(w->publish, nullptr);
	EXPECT_NE(w->av_fill, nullptr);
	/* Any other name stays unknown. */
	void *other = nullptr;
	EXPECT_EQ(fi_open_ops(&o.dom->fid, "fi_profile_ops", 0, &other, nullptr), -FI_ENOSYS) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Providers, ExtOnEveryDomain, ::testing::Values("tcp", "shm", "wireup", "ucx"),
			 [](const auto &i) { return std::string(i.param); });

} // namespace
