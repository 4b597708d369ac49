/* SPDX-License-Identifier: BSD-3-Clause */
/* core/iov.h and core/free_list.h: the scatter-list helpers every provider
 * shares (sizes, slices, copies, consuming) and the intrusive free list
 * of reused records. */
#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/free_list.h"
#include "core/iov.h"

namespace {

TEST(Iov, TotalSaturatesAndTakesNull)
{
	char a[3], b[5];
	iovec v[2] = {{a, sizeof a}, {b, sizeof b}};
	EXPECT_EQ(wu::iov_total(v, 2), 8u);
	EXPECT_EQ(wu::iov_total(nullptr, 2), 0u);
	iovec big[2] = {{a, SIZE_MAX - 1}, {b, 5}};
	EXPECT_EQ(wu::iov_total(big, 2), SIZE_MAX);
	fi_ioc c[2] = {{a, 3}, {b, 4}};
	EXPECT_EQ(wu::ioc_count(c, 2), 7u);
	EXPECT_EQ(wu::ioc_count(nullptr, 2), 0u);
}

TEST(Iov, SliceCrossesEntriesAndStopsAtMax)
{
	char a[4], b[4], c[4];
	iovec v[3] = {{a, 4}, {b, 4}, {c, 4}};
	iovec out[3];
	ASSERT_EQ(wu::iov_slice(v, 3, 3, 6, out, 3), 3u);
	EXPECT_EQ(out[0].iov_base, a + 3);
	EXPECT_EQ(out[0].iov_len, 1u);
	EXPECT_EQ(out[1].iov_base, b);
	EXPECT_EQ(out[1].iov_len, 4u);
	EXPECT_EQ(out[2].iov_base, c);
	EXPECT_EQ(out[2].iov_len, 1u);
	EXPECT_EQ(wu::iov_slice(v, 3, 3, 6, out, 2), 2u);
	EXPECT_EQ(wu::iov_slice(v, 3, 12, 4, out, 3), 0u);
}

TEST(Iov, CopiesBothWaysFromAnOffset)
{
	char a[3] = {}, b[4] = {};
	iovec v[2] = {{a, 3}, {b, 4}};
	EXPECT_EQ(wu::copy_to_iov(v, 2, 2, "wxyz", 4), 4u);
	EXPECT_EQ(std::string(a + 2, 1), "w");
	EXPECT_EQ(std::string(b, 3), "xyz");
	char out[8] = {};
	EXPECT_EQ(wu::copy_from_iov(v, 2, 2, out, 8), 5u); /* only 5 bytes from offset 2 */
	EXPECT_EQ(std::string(out, 4), "wxyz");
	iovec empty[1] = {{nullptr, 0}};
	EXPECT_EQ(wu::copy_from_iov(empty, 1, 0, out, 4), 0u);
}

TEST(Iov, ConsumeDropsUsedEntries)
{
	char a[4], b[4], c[4];
	iovec v[3] = {{a, 4}, {b, 4}, {c, 4}};
	size_t cnt = 3;
	wu::iov_consume(v, cnt, 5);
	ASSERT_EQ(cnt, 2u);
	EXPECT_EQ(v[0].iov_base, b + 1);
	EXPECT_EQ(v[0].iov_len, 3u);
	EXPECT_EQ(v[1].iov_base, c);
	wu::iov_consume(v, cnt, 3); /* ends exactly at an entry's end */
	ASSERT_EQ(cnt, 1u);
	EXPECT_EQ(v[0].iov_base, c);
	wu::iov_consume(v, cnt, 4);
	EXPECT_EQ(cnt, 0u);
}

struct rec {
	static int live;
	void *link = nullptr;
	int id = 0;
	rec() { live++; }
	~rec() { live--; }
};
int rec::live = 0;

TEST(FreeList, ReusesLastInFirstOutAndFreesWhatItKeeps)
{
	{
		wu::free_list<rec, &rec::link> fl;
		EXPECT_EQ(fl.pop(), nullptr);
		auto *x = new rec(), *y = new rec();
		fl.push(x);
		fl.push(y);
		EXPECT_EQ(fl.size(), 2u);
		EXPECT_EQ(fl.pop(), y);
		EXPECT_EQ(fl.pop(), x);
		EXPECT_EQ(fl.size(), 0u);
		fl.push(x);
		fl.push(y);
		fl.push(new rec());
		fl.trim(1);
		EXPECT_EQ(fl.size(), 1u);
		EXPECT_EQ(rec::live, 1);
	}
	EXPECT_EQ(rec::live, 0); /* the destructor freed the one kept */
}

} // namespace
