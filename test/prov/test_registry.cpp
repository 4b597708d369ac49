/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_provider(7): external providers from FI_PROVIDER_PATH. */
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <rdma/fabric.h>

#include "prov/registry.h"

TEST(fi_provider_path, loads_lib_name_fi_so)
{
	const char *b = getenv("top_builddir");
	std::string dir = std::string(b ? b : ".") + "/test/prov/.libs";
	std::string path = "/nonexistent-dir:" + dir;
	setenv("FI_PROVIDER_PATH", path.c_str(), 1);
	wu::prov::reload_external_for_test();
	unsetenv("FI_PROVIDER_PATH");
	ASSERT_NE(wu::prov::find("fakeext"), nullptr) << "looked in " << dir;

	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("fakeext");
	fi_info *info = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
	EXPECT_STREQ(info->fabric_attr->prov_name, "fakeext");
	EXPECT_EQ(info->fabric_attr->prov_version, FI_VERSION(1, 0));
	EXPECT_EQ(info->ep_attr->type, FI_EP_DGRAM);
	fid_fabric *fab = nullptr;
	EXPECT_EQ(fi_fabric(info->fabric_attr, &fab, nullptr), -FI_ENOSYS);
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* Loading twice keeps one provider of the name. */
	setenv("FI_PROVIDER_PATH", dir.c_str(), 1);
	wu::prov::reload_external_for_test();
	unsetenv("FI_PROVIDER_PATH");
	int n = 0;
	for (const fi_provider *p : wu::prov::providers())
		n += p->name && strcmp(p->name, "fakeext") == 0;
	EXPECT_EQ(n, 1);
}
