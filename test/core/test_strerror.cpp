/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_strerror: the texts applications print.  The full -300..300 sweep
 * against Debian's library is test/core/strerror_diff.sh; this pins the
 * rules and a few texts without needing Debian's package. */
#include <climits>
#include <cstring>

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

TEST(Strerror, FabricCodesHaveDebianTexts)
{
	EXPECT_STREQ(fi_strerror(FI_EOTHER), "Unspecified error");
	EXPECT_STREQ(fi_strerror(FI_ETOOSMALL), "Provided buffer is too small");
	EXPECT_STREQ(fi_strerror(FI_EAVAIL), "Error available");
	EXPECT_STREQ(fi_strerror(FI_ETRUNC), "Truncation error");
	EXPECT_STREQ(fi_strerror(FI_ENOAV), "Missing or unavailable address vector");
	EXPECT_STREQ(fi_strerror(FI_ENORX), "Receiver not ready, no receive buffers available");
}

TEST(Strerror, SignDoesNotMatter)
{
	for (int e = 0; e <= 300; ++e)
		EXPECT_STREQ(fi_strerror(-e), fi_strerror(e)) << e;
}

TEST(Strerror, ErrnoValuesUseLibcText)
{
	EXPECT_STREQ(fi_strerror(FI_SUCCESS), strerror(0));
	EXPECT_STREQ(fi_strerror(-FI_EAGAIN), strerror(EAGAIN));
	EXPECT_STREQ(fi_strerror(-FI_ENODATA), strerror(ENODATA));
	EXPECT_STREQ(fi_strerror(255), strerror(255));
}

TEST(Strerror, BeyondTheTableIsUnspecified)
{
	EXPECT_STREQ(fi_strerror(FI_ERRNO_MAX), "Unspecified error");
	EXPECT_STREQ(fi_strerror(-100000), "Unspecified error");
	EXPECT_STREQ(fi_strerror(INT_MAX), "Unspecified error");
	EXPECT_NE(fi_strerror(INT_MIN), nullptr);
}

TEST(Strerror, EveryCodeHasText)
{
	for (int e = FI_ERRNO_OFFSET; e < FI_ERRNO_MAX; ++e) {
		ASSERT_NE(fi_strerror(e), nullptr);
		EXPECT_GT(std::strlen(fi_strerror(e)), 0u) << e;
	}
}

TEST(Strerror, TextsStayValidAcrossCalls)
{
	/* libc's "Unknown error N" buffer is freed by the next strerror call;
	 * ours must not be. */
	const char *a = fi_strerror(200);
	const char *b = fi_strerror(201);
	EXPECT_STREQ(a, "Unknown error 200");
	EXPECT_STREQ(b, "Unknown error 201");
	EXPECT_STREQ(fi_strerror(INT_MIN), "Unknown error -2147483648");
}
