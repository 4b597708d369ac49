/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging: line format (Debian 1.17's), filters, rate limiting, the
 * compile-time ceiling, and one write per line under threads. */
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/providers/fi_log.h>

#include "core/log.h"
#include "core/param.h"

namespace {

struct fi_provider named_prov(const char *name)
{
	struct fi_provider p{};
	p.name = name;
	return p;
}

struct fi_provider tcp_prov = named_prov("tcp");
struct fi_provider rxm_prov = named_prov("ofi_rxm");

const char *const log_vars[] = {"FI_LOG_LEVEL", "FI_LOG_PROV", "FI_LOG_SUBSYS",
				"FI_LOG_INTERVAL"};

/* Sends fd 2 to a temporary file while alive; text() reads it back. */
class StderrCapture {
public:
	StderrCapture()
	{
		std::fflush(stderr);
		file_ = std::tmpfile();
		saved_ = dup(STDERR_FILENO);
		dup2(fileno(file_), STDERR_FILENO);
	}
	~StderrCapture()
	{
		restore();
		std::fclose(file_);
	}
	std::string text()
	{
		restore();
		std::string out;
		std::rewind(file_);
		char buf[4096];
		size_t n;
		while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0)
			out.append(buf, n);
		return out;
	}

private:
	void restore()
	{
		if (saved_ >= 0) {
			dup2(saved_, STDERR_FILENO);
			close(saved_);
			saved_ = -1;
		}
	}
	FILE *file_;
	int saved_ = -1;
};

class Log : public ::testing::Test {
protected:
	void SetUp() override { set({}); }
	void TearDown() override
	{
		wu::log_set_clock_for_tests(nullptr);
		set({});
	}
	/* Sets the given variables (name, value), clears the rest, re-parses. */
	static void set(std::vector<std::pair<const char *, const char *>> vars)
	{
		for (const char *v : log_vars)
			unsetenv(v);
		for (auto &[k, v] : vars)
			setenv(k, v, 1);
		wu::param::reset_for_tests();
		wu::log_reset_for_tests();
	}
	static std::string levels(const struct fi_provider *p, enum fi_log_subsys s)
	{
		std::string r;
		for (int l = 0; l < FI_LOG_MAX; ++l)
			r += fi_log_enabled(p, static_cast<enum fi_log_level>(l), s) ? '1' : '0';
		return r;
	}
};

TEST_F(Log, LineFormatMatchesDebian)
{
	StderrCapture cap;
	fi_log(&tcp_prov, FI_LOG_WARN, FI_LOG_CQ, "myfunc", 42, "value %d\n", 7);
	fi_log(&tcp_prov, FI_LOG_DEBUG, FI_LOG_EP_DATA, "f", 1, "unfiltered %s\n", "too");
	std::string out = cap.text();
	std::string pid = std::to_string(getpid());
	std::regex re("libfabric:" + pid + ":[0-9]+::tcp:cq:myfunc\\(\\):42<warn> value 7\n"
		      "libfabric:" + pid + ":[0-9]+::tcp:ep_data:f\\(\\):1<debug> unfiltered too\n");
	EXPECT_TRUE(std::regex_match(out, re)) << out;
}

TEST_F(Log, EveryLineEndsOnceAndLongOnesSaySoWhenCut)
{
	StderrCapture cap;
	fi_log(&tcp_prov, FI_LOG_WARN, FI_LOG_CORE, "f", 1, "no newline");
	fi_log(&tcp_prov, FI_LOG_WARN, FI_LOG_CORE, nullptr, 2, "%s\n", std::string(10000, 'x').c_str());
	std::string out = cap.text();
	auto nl = out.find('\n');
	ASSERT_NE(nl, std::string::npos);
	EXPECT_EQ(out.substr(nl - 10, 11), "no newline\n");
	std::string second = out.substr(nl + 1);
	EXPECT_NE(second.find(":(null)():2<warn> "), std::string::npos);
	EXPECT_EQ(second.substr(second.size() - 4), "...\n");
	EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);
}

TEST_F(Log, DefaultIsWarnOnly)
{
	for (int s = 0; s < FI_LOG_SUBSYS_MAX; ++s)
		EXPECT_EQ(levels(&tcp_prov, static_cast<enum fi_log_subsys>(s)), "1000");
	EXPECT_EQ(wu::log_current().level, FI_LOG_WARN);
}

TEST_F(Log, LevelIsACeilingInDebianOrder)
{
	set({{"FI_LOG_LEVEL", "trace"}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CQ), "1100");
	set({{"FI_LOG_LEVEL", "INFO"}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CQ), "1110");
	set({{"FI_LOG_LEVEL", "debug"}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CQ), "1111");
	{
		StderrCapture cap; /* the complaint about the bad value */
		set({{"FI_LOG_LEVEL", "bogus"}});
		EXPECT_EQ(levels(&tcp_prov, FI_LOG_CQ), "1000");
		EXPECT_NE(cap.text().find("FI_LOG_LEVEL=\"bogus\""), std::string::npos);
	}
}

TEST_F(Log, SubsystemListAndExclusion)
{
	set({{"FI_LOG_LEVEL", "debug"}, {"FI_LOG_SUBSYS", "core,MR"}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CORE), "1111");
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_MR), "1111");
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CQ), "0000");
	set({{"FI_LOG_LEVEL", "info"}, {"FI_LOG_SUBSYS", "^core"}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_CORE), "0000");
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_EP_DATA), "1110");
	/* Empty means unset here (Debian would silence everything). */
	set({{"FI_LOG_SUBSYS", ""}});
	EXPECT_EQ(levels(&tcp_prov, FI_LOG_AV), "1000");
}

TEST_F(Log, ProviderIncludeAndExclude)
{
	set({{"FI_LOG_PROV", "TCP,core"}});
	EXPECT_TRUE(fi_log_enabled(&tcp_prov, FI_LOG_WARN, FI_LOG_CORE));
	EXPECT_TRUE(fi_log_enabled(&wu::core_prov, FI_LOG_WARN, FI_LOG_CORE));
	EXPECT_FALSE(fi_log_enabled(&rxm_prov, FI_LOG_WARN, FI_LOG_CORE));
	set({{"FI_LOG_PROV", "^tcp"}});
	EXPECT_FALSE(fi_log_enabled(&tcp_prov, FI_LOG_WARN, FI_LOG_CORE));
	EXPECT_TRUE(fi_log_enabled(&rxm_prov, FI_LOG_WARN, FI_LOG_CORE));
	/* Whole names only: "rxm" is not "ofi_rxm". */
	set({{"FI_LOG_PROV", "rxm"}});
	EXPECT_FALSE(fi_log_enabled(&rxm_prov, FI_LOG_WARN, FI_LOG_CORE));
}

TEST_F(Log, OutOfRangeEnumsAreRefused)
{
	set({{"FI_LOG_LEVEL", "debug"}});
	EXPECT_FALSE(fi_log_enabled(&tcp_prov, FI_LOG_MAX, FI_LOG_CORE));
	EXPECT_FALSE(fi_log_enabled(&tcp_prov, FI_LOG_WARN, FI_LOG_SUBSYS_MAX));
	EXPECT_FALSE(fi_log_enabled(&tcp_prov, static_cast<enum fi_log_level>(-1), FI_LOG_CORE));
}

TEST_F(Log, ReadyIsRateLimited)
{
	set({{"FI_LOG_INTERVAL", "100000"}});
	uint64_t showtime = 0;
	EXPECT_TRUE(fi_log_ready(&tcp_prov, FI_LOG_WARN, FI_LOG_CQ, &showtime));
	EXPECT_FALSE(fi_log_ready(&tcp_prov, FI_LOG_WARN, FI_LOG_CQ, &showtime));
	uint64_t other = 0;
	EXPECT_FALSE(fi_log_ready(&tcp_prov, FI_LOG_DEBUG, FI_LOG_CQ, &other)) << "disabled level";
	EXPECT_EQ(wu::log_current().interval_ms, 100000);
	set({{"FI_LOG_INTERVAL", "0"}});
	showtime = 0;
	EXPECT_TRUE(fi_log_ready(&tcp_prov, FI_LOG_WARN, FI_LOG_CQ, &showtime));
	EXPECT_TRUE(fi_log_ready(&tcp_prov, FI_LOG_WARN, FI_LOG_CQ, &showtime));
}

int evaluated = 0;
int side_effect()
{
	return ++evaluated;
}

TEST_F(Log, MacrosFilterAndTraceIsCompiledOut)
{
	set({{"FI_LOG_LEVEL", "debug"}});
	StderrCapture cap;
	evaluated = 0;
	WU_WARN(&tcp_prov, FI_LOG_AV, "warn %d\n", side_effect());
	WU_INFO(&tcp_prov, FI_LOG_AV, "info\n");
	WU_DBG(&tcp_prov, FI_LOG_AV, "dbg\n");
	WU_TRACE(&tcp_prov, FI_LOG_AV, "trace %d\n", side_effect());
	std::string out = cap.text();
	EXPECT_NE(out.find("<warn> warn 1\n"), std::string::npos);
	EXPECT_NE(out.find("<info> info\n"), std::string::npos);
#if WU_LOG_CEILING >= 2
	EXPECT_NE(out.find("<debug> dbg\n"), std::string::npos);
#endif
#if WU_LOG_CEILING < 3
	EXPECT_EQ(out.find("trace"), std::string::npos);
	EXPECT_EQ(evaluated, 1) << "a compiled-out trace must not evaluate its arguments";
#endif
	EXPECT_NE(out.find(":tcp:av:"), std::string::npos);
}

TEST_F(Log, DisabledMacroEvaluatesNothingAndKeepsErrno)
{
	evaluated = 0;
	WU_INFO(&tcp_prov, FI_LOG_CORE, "%d\n", side_effect());
	EXPECT_EQ(evaluated, 0);
	StderrCapture cap;
	errno = EBUSY;
	WU_WARN(&tcp_prov, FI_LOG_CORE, "%d\n", side_effect());
	EXPECT_EQ(errno, EBUSY);
}

TEST_F(Log, SparseAndOnce)
{
	set({{"FI_LOG_INTERVAL", "100000"}});
	StderrCapture cap;
	for (int i = 0; i < 5; ++i) {
		WU_WARN_SPARSE(&tcp_prov, FI_LOG_CQ, "sparse\n");
		WU_WARN_ONCE(&tcp_prov, FI_LOG_CQ, "once\n");
	}
	std::string out = cap.text();
	EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
}

std::uint64_t fake_now_ms = 0;
std::uint64_t fake_clock()
{
	return fake_now_ms;
}

/* One call site, so the flood counts against one limit. */
void flood(int n)
{
	for (int i = 0; i < n; ++i)
		WU_WARN(&tcp_prov, FI_LOG_EP_CTRL, "garbage %d\n", i);
}

size_t lines_of(const std::string &out)
{
	return static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
}

/* A garbage-connection flood once wrote 45,000 warnings in 8 s: each call
 * site gets a burst, then a line per FI_LOG_INTERVAL that says how many
 * were dropped.  The limit's clock is injected, so nothing here waits. */
TEST_F(Log, RepeatedLinesAreLimitedPerCallSite)
{
	set({{"FI_LOG_INTERVAL", "1000"}});
	wu::log_set_clock_for_tests(fake_clock);
	fake_now_ms = 5000;
	StderrCapture cap;
	flood(100);
	WU_WARN(&tcp_prov, FI_LOG_EP_CTRL, "another site\n");
	fake_now_ms += 999;
	flood(5);
	fake_now_ms += 1;
	flood(5);
	fake_now_ms += 3000;
	flood(5);
	std::string out = cap.text();
	ASSERT_EQ(lines_of(out), wu::log_site_burst + 1 + 1 + 3) << out;
	std::istringstream in(out);
	std::vector<std::string> l;
	for (std::string line; std::getline(in, line);)
		l.push_back(line);
	for (size_t i = 0; i < wu::log_site_burst; ++i)
		EXPECT_TRUE(l[i].ends_with("<warn> garbage " + std::to_string(i))) << l[i];
	EXPECT_TRUE(l[10].ends_with("<warn> another site")) << "sites are limited separately";
	EXPECT_TRUE(l[11].ends_with("<warn> garbage 0 (95 lines like this suppressed)")) << l[11];
	EXPECT_TRUE(l[12].ends_with("<warn> garbage 0 (4 lines like this suppressed)")) << l[12];
	EXPECT_TRUE(l[13].ends_with("<warn> garbage 1")) << "a token back per interval, up to the burst";
	EXPECT_TRUE(l[14].ends_with("<warn> garbage 2")) << l[14];
}

TEST_F(Log, SiteLimitCoversInfoButNotDebugAndIntervalZeroTurnsItOff)
{
	set({{"FI_LOG_LEVEL", "debug"}, {"FI_LOG_INTERVAL", "1000"}});
	wu::log_set_clock_for_tests(fake_clock);
	fake_now_ms = 1;
	{
		StderrCapture cap;
		for (int i = 0; i < 50; ++i)
			WU_INFO(&tcp_prov, FI_LOG_CORE, "info %d\n", i);
		EXPECT_EQ(lines_of(cap.text()), wu::log_site_burst);
	}
#if WU_LOG_CEILING >= 2
	{
		StderrCapture cap;
		for (int i = 0; i < 50; ++i)
			WU_DBG(&tcp_prov, FI_LOG_CORE, "debug %d\n", i);
		EXPECT_EQ(lines_of(cap.text()), 50u) << "debug lines were asked for";
	}
#endif
	set({{"FI_LOG_INTERVAL", "0"}});
	StderrCapture cap;
	flood(50);
	EXPECT_EQ(lines_of(cap.text()), 50u);
}

TEST_F(Log, ThreadsNeverInterleaveLines)
{
	set({{"FI_LOG_INTERVAL", "0"}}); /* every line, no per-site limit */
	StderrCapture cap;
	constexpr int threads = 8, lines = 200;
	std::vector<std::thread> ts;
	for (int t = 0; t < threads; ++t)
		ts.emplace_back([t] {
			std::string body(200, static_cast<char>('a' + t));
			for (int i = 0; i < lines; ++i)
				WU_WARN(&tcp_prov, FI_LOG_EP_DATA, "%s\n", body.c_str());
		});
	for (auto &t : ts)
		t.join();
	std::istringstream in(cap.text());
	std::string line;
	int n = 0;
	std::regex re("libfabric:[0-9]+:[0-9]+::tcp:ep_data:.*\\(\\):[0-9]+<warn> ([a-h])\\1{199}");
	while (std::getline(in, line)) {
		++n;
		ASSERT_TRUE(std::regex_match(line, re)) << line;
	}
	EXPECT_EQ(n, threads * lines);
}

} // namespace
