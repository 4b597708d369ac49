/* SPDX-License-Identifier: BSD-3-Clause */
/* Parameter registry: naming, parsing (Debian 1.17's rules), sources,
 * fi_getparams, and the core knobs' pinned defaults. */
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "core/log.h"
#include "core/param.h"

namespace {

struct fi_provider named_prov(const char *name)
{
	struct fi_provider p{};
	p.name = name;
	return p;
}

struct fi_provider test_prov = named_prov("wutest");
struct fi_provider mixed_prov = named_prov("My-Prov");

class Param : public ::testing::Test {
protected:
	void SetUp() override { clean(); }
	void TearDown() override { clean(); }
	static void clean()
	{
		for (const char *v : {"FI_WUTEST_B", "FI_WUTEST_I", "FI_WUTEST_Z", "FI_WUTEST_S",
				      "FI_WUTEST_DEPTH", "FI_LOG_INTERVAL", "FI_LOG_LEVEL"})
			unsetenv(v);
		wu::param::reset_for_tests();
		wu::log_reset_for_tests();
	}
};

TEST_F(Param, EnvNames)
{
	EXPECT_EQ(wu::param::env_name(&test_prov, "rx_size"), "FI_WUTEST_RX_SIZE");
	EXPECT_EQ(wu::param::env_name(&mixed_prov, "x"), "FI_MY-PROV_X");
	EXPECT_EQ(wu::param::env_name(nullptr, "log_level"), "FI_LOG_LEVEL");
	EXPECT_EQ(wu::param::env_name(&wu::core_prov, "provider"), "FI_PROVIDER");
}

TEST_F(Param, DefineAndGetEachType)
{
	ASSERT_EQ(fi_param_define(&test_prov, "b", FI_PARAM_BOOL, "a %s", "bool"), 0);
	ASSERT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_INT, "int"), 0);
	ASSERT_EQ(fi_param_define(&test_prov, "z", FI_PARAM_SIZE_T, "size"), 0);
	ASSERT_EQ(fi_param_define(&test_prov, "s", FI_PARAM_STRING, "str"), 0);

	int b = -1, i = -1;
	size_t z = 7;
	char *s = nullptr;
	EXPECT_EQ(fi_param_get_bool(&test_prov, "b", &b), -FI_ENODATA);
	EXPECT_EQ(b, -1) << "output untouched when unset";

	setenv("FI_WUTEST_B", "On", 1);
	setenv("FI_WUTEST_I", "0x10", 1);
	setenv("FI_WUTEST_Z", "123", 1);
	setenv("FI_WUTEST_S", "hello", 1);
	EXPECT_EQ(fi_param_get_bool(&test_prov, "b", &b), 0);
	EXPECT_EQ(b, 1);
	EXPECT_EQ(fi_param_get_int(&test_prov, "i", &i), 0);
	EXPECT_EQ(i, 16);
	EXPECT_EQ(fi_param_get_size_t(&test_prov, "z", &z), 0);
	EXPECT_EQ(z, 123u);
	EXPECT_EQ(fi_param_get_str(&test_prov, "s", &s), 0);
	EXPECT_STREQ(s, "hello");
	EXPECT_EQ(wu::param::last_source(&test_prov, "s"), wu::param::source::env);

	setenv("FI_WUTEST_B", "maybe", 1);
	b = -1;
	EXPECT_EQ(fi_param_get_bool(&test_prov, "b", &b), -FI_EINVAL);
	EXPECT_EQ(b, -1);
}

TEST_F(Param, Errors)
{
	int v;
	EXPECT_EQ(fi_param_get_int(&test_prov, "never_defined", &v), -FI_ENOENT);
	EXPECT_EQ(fi_param_define(&test_prov, nullptr, FI_PARAM_INT, "x"), -FI_EINVAL);
	EXPECT_EQ(fi_param_define(&test_prov, "t", static_cast<enum fi_param_type>(9), "x"),
		  -FI_EINVAL);
	ASSERT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_INT, "int"), 0);
	EXPECT_EQ(fi_param_get_int(&test_prov, nullptr, &v), -FI_EINVAL);
	EXPECT_EQ(fi_param_get(&test_prov, "i", nullptr), -FI_EINVAL);
	/* Names are matched as defined, like Debian. */
	EXPECT_EQ(fi_param_get_int(&test_prov, "I", &v), -FI_ENOENT);
}

TEST_F(Param, Redefinition)
{
	ASSERT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_INT, "first"), 0);
	EXPECT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_INT, "again"), 0);
	EXPECT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_BOOL, "other type"), -FI_EALREADY);

	struct fi_param *ps = nullptr;
	int n = 0;
	ASSERT_EQ(fi_getparams(&ps, &n), 0);
	int seen = 0;
	for (int k = 0; k < n; ++k)
		if (std::string(ps[k].name) == "FI_WUTEST_I") {
			++seen;
			EXPECT_EQ(ps[k].type, FI_PARAM_INT);
			EXPECT_STREQ(ps[k].help_string, "wutest: first");
		}
	EXPECT_EQ(seen, 1);
	fi_freeparams(ps);
}

TEST_F(Param, BoolWordsLikeDebian)
{
	int v;
	for (const char *t : {"1", "yes", "YES", "true", "True", "on", "ON"}) {
		v = -1;
		EXPECT_TRUE(wu::param::parse_bool(t, &v)) << t;
		EXPECT_EQ(v, 1) << t;
	}
	for (const char *t : {"0", "no", "No", "false", "FALSE", "off", "Off"}) {
		v = -1;
		EXPECT_TRUE(wu::param::parse_bool(t, &v)) << t;
		EXPECT_EQ(v, 0) << t;
	}
	for (const char *t : {"", "2", "-1", "y", "n", "01", " 1", "1 ", "enable"})
		EXPECT_FALSE(wu::param::parse_bool(t, &v)) << '[' << t << ']';
}

TEST_F(Param, NumbersLikeDebian)
{
	bool exact;
	EXPECT_EQ(wu::param::parse_int("42", &exact), 42);
	EXPECT_TRUE(exact);
	EXPECT_EQ(wu::param::parse_int("-0x1f", &exact), -31);
	EXPECT_TRUE(exact);
	EXPECT_EQ(wu::param::parse_int("010", &exact), 8);
	/* Debian keeps the prefix and ignores the rest; we warn. */
	EXPECT_EQ(wu::param::parse_int("12abc", &exact), 12);
	EXPECT_FALSE(exact);
	EXPECT_EQ(wu::param::parse_int("", &exact), 0);
	EXPECT_FALSE(exact);
	EXPECT_EQ(wu::param::parse_size("99999999999", &exact), 99999999999u);
	EXPECT_TRUE(exact);
	EXPECT_EQ(wu::param::parse_size("-1", &exact), static_cast<size_t>(-1));
	EXPECT_FALSE(exact);
}

TEST_F(Param, DeclarativeKnobsRememberTheirSource)
{
	static constexpr wu::param::def knobs[] = {
		{FI_PARAM_SIZE_T, "depth", "256", "Queue depth (default: 256)"},
	};
	ASSERT_EQ(wu::param::define_all(&test_prov, knobs), 0);

	auto d = wu::param::get_size(&test_prov, "depth");
	EXPECT_EQ(d.value, 256u);
	EXPECT_EQ(d.src, wu::param::source::dflt);
	EXPECT_EQ(wu::param::last_source(&test_prov, "depth"), wu::param::source::dflt);

	setenv("FI_WUTEST_DEPTH", "1024", 1);
	d = wu::param::get_size(&test_prov, "depth");
	EXPECT_EQ(d.value, 1024u);
	EXPECT_EQ(d.src, wu::param::source::env);

	/* The public getter knows no defaults: unset is -FI_ENODATA. */
	unsetenv("FI_WUTEST_DEPTH");
	size_t z = 0;
	EXPECT_EQ(fi_param_get_size_t(&test_prov, "depth", &z), -FI_ENODATA);

	/* Wrong type or unknown name: unset, never a guess. */
	EXPECT_EQ(wu::param::get_int(&test_prov, "depth").src, wu::param::source::unset);
	EXPECT_EQ(wu::param::get_int(&test_prov, "nope").src, wu::param::source::unset);
}

/* Guard test: changing a core default is a visible behaviour change. */
TEST_F(Param, CoreDefaultsArePinned)
{
	using wu::param::knob;
	EXPECT_EQ(wu::param::get_int(knob::log_interval).value, 2000);
	EXPECT_EQ(wu::param::get_int(knob::log_interval).src, wu::param::source::dflt);
	EXPECT_EQ(wu::param::get_string(knob::log_level).value, "warn");
	EXPECT_EQ(wu::param::get_string(knob::log_prov).src, wu::param::source::unset);
	EXPECT_EQ(wu::param::get_string(knob::log_subsys).src, wu::param::source::unset);
	EXPECT_EQ(wu::param::get_string(knob::provider).src, wu::param::source::unset);
	EXPECT_EQ(wu::param::get_string(knob::provider_path).src, wu::param::source::unset);

	setenv("FI_LOG_INTERVAL", "50", 1);
	EXPECT_EQ(wu::param::get_int(knob::log_interval).value, 50);
	EXPECT_EQ(wu::param::get_int(knob::log_interval).src, wu::param::source::env);
}

TEST_F(Param, CoreKnobsThroughPublicApi)
{
	char *s = nullptr;
	EXPECT_EQ(fi_param_get_str(nullptr, "log_level", &s), -FI_ENODATA);
	setenv("FI_LOG_LEVEL", "warn", 1);
	EXPECT_EQ(fi_param_get_str(&wu::core_prov, "log_level", &s), 0);
	EXPECT_STREQ(s, "warn");
	/* Re-defining a core knob with the same type (as old providers do) is fine. */
	EXPECT_EQ(fi_param_define(nullptr, "log_level", FI_PARAM_STRING, "x"), 0);
}

TEST_F(Param, GetparamsListsCoreFirstThenProviders)
{
	ASSERT_EQ(fi_param_define(&test_prov, "s", FI_PARAM_STRING, "text %d", 5), 0);
	setenv("FI_WUTEST_S", "v", 1);

	struct fi_param *ps = nullptr;
	int n = 0;
	ASSERT_EQ(fi_getparams(&ps, &n), 0);
	ASSERT_GE(n, static_cast<int>(wu::param::knob::count_) + 1);
	EXPECT_STREQ(ps[0].name, "FI_LOG_INTERVAL");
	EXPECT_EQ(ps[0].type, FI_PARAM_INT);
	bool names[4] = {};
	for (int k = 0; k < n; ++k) {
		std::string name = ps[k].name;
		ASSERT_NE(ps[k].help_string, nullptr);
		if (name == "FI_LOG_LEVEL") {
			names[0] = true;
			EXPECT_EQ(ps[k].value, nullptr);
		}
		names[1] |= name == "FI_PROVIDER";
		names[2] |= name == "FI_PROVIDER_PATH";
		if (name == "FI_WUTEST_S") {
			names[3] = true;
			EXPECT_STREQ(ps[k].help_string, "wutest: text 5");
			EXPECT_STREQ(ps[k].value, "v");
		}
	}
	for (bool b : names)
		EXPECT_TRUE(b);
	fi_freeparams(ps);
	fi_freeparams(nullptr);

	EXPECT_EQ(fi_getparams(nullptr, &n), -FI_EINVAL);
}

TEST_F(Param, ResetDropsRuntimeDefinitions)
{
	ASSERT_EQ(fi_param_define(&test_prov, "i", FI_PARAM_INT, "int"), 0);
	wu::param::reset_for_tests();
	int v;
	EXPECT_EQ(fi_param_get_int(&test_prov, "i", &v), -FI_ENOENT);
	EXPECT_EQ(fi_param_get_str(nullptr, "log_level", nullptr), -FI_EINVAL);
}

} // namespace
