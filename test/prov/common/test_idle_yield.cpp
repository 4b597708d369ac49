/* SPDX-License-Identifier: BSD-3-Clause */
/* Idle yield (prov/common/idle_yield.h): the policy with an injected clock,
 * then its hooks in fi_cq_read and fi_cntr_read through the yield count. */
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "prov/common/idle_yield.h"
#include "prov_fixture.h"

using namespace wu::test;
namespace iy = wu::idle_yield;

namespace {

/* Before anything reads the knob: 1 us, so the hook tests are quick. */
const int env_set = setenv("FI_IDLE_YIELD_US", "1", 1);

std::uint64_t fake_now;
int clock_reads;
int fake_yields;
std::uint64_t read_clock() noexcept
{
	clock_reads++;
	return fake_now;
}
void count_yield() noexcept
{
	fake_yields++;
}

struct idle_policy : ::testing::Test {
	std::atomic<std::uint32_t> armed{0};
	iy::policy p{1000, read_clock, count_yield, &armed};
	iy::state s{};
	void SetUp() override
	{
		fake_now = 5000;
		clock_reads = 0;
		fake_yields = 0;
	}
	void empties(int n)
	{
		for (int i = 0; i < n; i++)
			iy::polled(s, false, p);
	}
	/* Empty polls up to and including the next clock check. */
	void to_check()
	{
		int r = clock_reads;
		while (clock_reads == r && fake_yields == 0)
			iy::polled(s, false, p);
	}
};

TEST_F(idle_policy, no_yield_before_the_threshold_then_one_per_empty_poll)
{
	empties(1000); /* the clock does not move: never idle long enough */
	EXPECT_EQ(fake_yields, 0);
	fake_now += 999;
	to_check();
	EXPECT_EQ(fake_yields, 0);
	fake_now += 1;
	to_check(); /* sees 1000 ns */
	EXPECT_EQ(fake_yields, 1);
	empties(10);
	EXPECT_EQ(fake_yields, 11);
}

TEST_F(idle_policy, the_clock_is_read_once_per_check_every_empty_polls)
{
	empties(int(iy::check_every) * 10);
	EXPECT_EQ(clock_reads, 10);
	iy::polled(s, true, p);
	EXPECT_EQ(clock_reads, 10); /* a poll that finds something: no clock */
}

TEST_F(idle_policy, a_poll_that_finds_something_starts_a_new_stretch)
{
	empties(int(iy::check_every));
	fake_now += 5000;
	to_check();
	ASSERT_EQ(fake_yields, 1);
	iy::polled(s, true, p);
	EXPECT_EQ(armed.load(), 0u);
	fake_yields = 0;
	empties(100); /* the new stretch starts at its first check */
	EXPECT_EQ(fake_yields, 0);
	fake_now += 1000;
	to_check();
	EXPECT_EQ(fake_yields, 1);
}

TEST_F(idle_policy, threshold_zero_never_yields)
{
	p.threshold_ns = 0;
	empties(100);
	fake_now += 1000000000;
	empties(100000);
	EXPECT_EQ(fake_yields, 0);
	EXPECT_EQ(clock_reads, 0);
}

TEST_F(idle_policy, another_threads_find_restarts_the_stretch)
{
	iy::state other{};
	empties(int(iy::check_every));
	EXPECT_EQ(armed.load(), 1u);
	iy::polled(other, true, p); /* found by another thread */
	fake_now += 5000;
	to_check();
	EXPECT_EQ(fake_yields, 0);
	fake_now += 1000;
	to_check();
	EXPECT_EQ(fake_yields, 1);
}

TEST(idle_yield_hooks, the_knob_is_read_from_the_environment)
{
	ASSERT_EQ(env_set, 0);
	EXPECT_EQ(iy::global().threshold_ns, 1000u);
}

/* Calls poll (which must find nothing) until a yield, at most 200000 times. */
template <class F> void yields_within(F poll)
{
	std::uint64_t before = iy::yields();
	for (int i = 0; i < 200000 && iy::yields() == before; i++)
		ASSERT_TRUE(poll()) << i;
	EXPECT_GT(iy::yields(), before) << "200000 empty polls, 1 us threshold, no yield";
}

TEST(idle_yield_hooks, empty_cq_reads_and_unchanged_counter_reads_yield)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	ASSERT_NE(env.domain, nullptr);
	fi_cq_attr qa{};
	qa.format = FI_CQ_FORMAT_CONTEXT;
	fid_cq *cq = nullptr;
	ASSERT_EQ(fi_cq_open(env.domain, &qa, &cq, nullptr), 0);
	fi_cntr_attr ca{};
	ca.events = FI_CNTR_EVENTS_COMP;
	fid_cntr *c = nullptr;
	ASSERT_EQ(fi_cntr_open(env.domain, &ca, &c, nullptr), 0);

	fi_cq_entry e{};
	yields_within([&] { return fi_cq_read(cq, &e, 1) == -FI_EAGAIN; });
	iy::polled(true); /* as a read that found something */
	EXPECT_EQ(iy::global_armed.load(), 0u);
	yields_within([&] { return fi_cntr_read(c) == 0; });
	/* A read that sees a new value is not empty: the stretch restarts. */
	ASSERT_EQ(fi_cntr_add(c, 1), 0);
	iy::global_armed.store(1);
	EXPECT_EQ(fi_cntr_read(c), 1u);
	EXPECT_EQ(iy::global_armed.load(), 0u);
	EXPECT_EQ(fi_close(&c->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

} // namespace
