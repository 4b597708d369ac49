/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric(7)/fi_fabric(3): fid plumbing, the ABI shim, fi_version, fi_open,
 * and fi_fabric/fi_fabric2 dispatch to providers. */
#include <gtest/gtest.h>

#include <stdexcept>
#include <system_error>

#include <rdma/fabric.h>

#include "../util/fake_provider.h"
#include "core/fid.h"
#include "core/shim.h"

TEST(fi_version, reports_api_2_6)
{
	EXPECT_EQ(fi_version(), FI_VERSION(2, 6));
	EXPECT_GE(fi_version(), FI_VERSION(1, 17));
}

TEST(fi_open, unknown_names_are_enosys)
{
	fid *f = reinterpret_cast<fid *>(0x1);
	EXPECT_EQ(fi_open(FI_VERSION(1, 5), "mr_cache", nullptr, 0, 0, &f, nullptr), -FI_ENOSYS);
	EXPECT_EQ(f, nullptr);
	EXPECT_EQ(fi_open(FI_VERSION(2, 0), "whatever", nullptr, 0, 0, &f, nullptr), -FI_ENOSYS);
}

TEST(fi_open, null_arguments_are_einval)
{
	fid *f = nullptr;
	EXPECT_EQ(fi_open(FI_VERSION(1, 5), nullptr, nullptr, 0, 0, &f, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_open(FI_VERSION(1, 5), "mr_cache", nullptr, 0, 0, nullptr, nullptr), -FI_EINVAL);
}

TEST(fid_plumbing, nosys_slot_fits_every_signature)
{
	fi_ops ops = {sizeof(fi_ops),
		      WU_NOSYS(fi_ops, close),
		      WU_NOSYS(fi_ops, bind),
		      WU_NOSYS(fi_ops, control),
		      WU_NOSYS(fi_ops, ops_open),
		      WU_NOSYS(fi_ops, tostr),
		      WU_NOSYS(fi_ops, ops_set)};
	fid f{FI_CLASS_FABRIC, nullptr, &ops};
	EXPECT_EQ(fi_close(&f), -FI_ENOSYS);
	EXPECT_EQ(fi_control(&f, FI_GETWAIT, nullptr), -FI_ENOSYS);
	void *o = nullptr;
	EXPECT_EQ(fi_open_ops(&f, "x", 0, &o, nullptr), -FI_ENOSYS);
	EXPECT_EQ(ops.bind(&f, &f, 0), -FI_ENOSYS);
}

TEST(abi_shim, exceptions_become_fabric_errors)
{
	EXPECT_EQ(wu::guard("t", []() -> int { throw std::bad_alloc(); }), -FI_ENOMEM);
	EXPECT_EQ(wu::guard("t", []() -> int { throw std::runtime_error("x"); }), -FI_EOTHER);
	EXPECT_EQ(wu::guard("t", []() -> int { throw wu::fi_error(FI_EAGAIN); }), -FI_EAGAIN);
	EXPECT_EQ(wu::guard("t", []() -> int { throw wu::fi_error(-FI_EBUSY); }), -FI_EBUSY);
	EXPECT_EQ(wu::guard("t", []() -> int { throw 42; }), -FI_EOTHER);
	EXPECT_EQ(wu::guard("t", []() -> ssize_t {
			  throw std::system_error(std::make_error_code(std::errc::connection_refused));
		  }),
		  -ECONNREFUSED);
	EXPECT_EQ(wu::guard("t", []() -> int { return 3; }), 3);
	int *p = wu::guard_or("t", static_cast<int *>(nullptr), []() -> int * { throw std::bad_alloc(); });
	EXPECT_EQ(p, nullptr);
}

class fi_fabric_dispatch : public ::testing::Test {
protected:
	wu::test::scoped_provider fake{"fakefab"};
	fi_info *info = nullptr;
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup("fakefab");
		ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
		fi_freeinfo(hints);
	}
	void TearDown() override { fi_freeinfo(info); }
};

TEST_F(fi_fabric_dispatch, opens_through_the_named_provider)
{
	fid_fabric *fab = nullptr;
	int before = wu::test::fake_closed;
	int ctx;
	ASSERT_EQ(fi_fabric(info->fabric_attr, &fab, &ctx), 0);
	ASSERT_TRUE(fab);
	EXPECT_EQ(fab->fid.context, &ctx);
	EXPECT_EQ(fi_close(&fab->fid), 0);
	EXPECT_EQ(wu::test::fake_closed, before + 1);
}

TEST_F(fi_fabric_dispatch, fabric2_takes_the_info)
{
	fid_fabric *fab = nullptr;
	ASSERT_EQ(fi_fabric2(info, &fab, 0, nullptr), 0);
	EXPECT_EQ(fi_close(&fab->fid), 0);
	EXPECT_EQ(fi_fabric2(info, &fab, 1, nullptr), -FI_EBADFLAGS);
	EXPECT_EQ(fi_fabric2(nullptr, &fab, 0, nullptr), -FI_EINVAL);
}

TEST_F(fi_fabric_dispatch, bad_attributes)
{
	fid_fabric *fab = nullptr;
	EXPECT_EQ(fi_fabric(nullptr, &fab, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_fabric(info->fabric_attr, nullptr, nullptr), -FI_EINVAL);
	fi_fabric_attr a = *info->fabric_attr;
	a.prov_name = const_cast<char *>("nobody");
	EXPECT_EQ(fi_fabric(&a, &fab, nullptr), -FI_ENODEV);
	a.prov_name = nullptr;
	EXPECT_EQ(fi_fabric(&a, &fab, nullptr), -FI_EINVAL);
	a.prov_name = const_cast<char *>("ofi_core;fakefab");
	ASSERT_EQ(fi_fabric(&a, &fab, nullptr), 0) << "layered names open through the top (last) layer";
	fi_close(&fab->fid);
}
