/* SPDX-License-Identifier: BSD-3-Clause */
/* The helpers every part shares (core/hash.h, core/err_rec.h,
 * addr::sockaddr_text): one copy, so their contract is checked here. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>

#include <rdma/fi_eq.h>

#include "core/addr.h"
#include "core/err_rec.h"
#include "core/hash.h"

TEST(Pow2Ceil, RoundsUpAndSaturates)
{
	EXPECT_EQ(wu::pow2_ceil(0), 1u);
	EXPECT_EQ(wu::pow2_ceil(1), 1u);
	EXPECT_EQ(wu::pow2_ceil(3), 4u);
	EXPECT_EQ(wu::pow2_ceil(1024), 1024u);
	EXPECT_EQ(wu::pow2_ceil(1025), 2048u);
	const size_t top = ~(SIZE_MAX >> 1);
	EXPECT_EQ(wu::pow2_ceil(top), top);
	/* The old copies doubled past the top to 0 and never stopped. */
	EXPECT_EQ(wu::pow2_ceil(top + 1), top);
	EXPECT_EQ(wu::pow2_ceil(SIZE_MAX), top);
	static_assert(wu::pow2_ceil(5) == 8);
}

TEST(Hash, SpreadsAndDependsOnLength)
{
	const unsigned char z[8] = {};
	EXPECT_NE(wu::hash_bytes(z, 4), wu::hash_bytes(z, 8));
	EXPECT_EQ(wu::hash_bytes("abc", 3), wu::hash_bytes("abc", 3));
	std::set<uint64_t> low;
	for (uint64_t i = 0; i < 256; i++)
		low.insert(wu::mix64(i) & 255);
	EXPECT_GT(low.size(), 140u); /* sequential keys do not share low bits */
	std::set<uint64_t> high;
	for (uint64_t i = 0; i < 256; i++)
		high.insert(wu::fib_hash(i << 6) >> 56);
	EXPECT_GT(high.size(), 140u);
}

TEST(SockaddrText, PrintsIpv4Ipv6AndRefusesTheRest)
{
	sockaddr_in s4{};
	s4.sin_family = AF_INET;
	s4.sin_port = htons(4242);
	ASSERT_EQ(inet_pton(AF_INET, "127.0.0.1", &s4.sin_addr), 1);
	EXPECT_EQ(wu::addr::sockaddr_text(&s4, sizeof s4), "127.0.0.1:4242");
	EXPECT_EQ(wu::addr::sockaddr_text(&s4, sizeof s4, false), "127.0.0.1");
	sockaddr_in6 s6{};
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(7);
	ASSERT_EQ(inet_pton(AF_INET6, "::1", &s6.sin6_addr), 1);
	EXPECT_EQ(wu::addr::sockaddr_text(&s6, sizeof s6), "[::1]:7");
	EXPECT_EQ(wu::addr::sockaddr_text(&s6, sizeof s6, false), "::1");
	/* Too short for its family, unknown family, nothing: never read past. */
	EXPECT_EQ(wu::addr::sockaddr_text(&s6, sizeof s4), "?");
	EXPECT_EQ(wu::addr::sockaddr_text(&s4, sizeof s4 - 1), "?");
	sockaddr_in bad = s4;
	bad.sin_family = AF_UNIX;
	EXPECT_EQ(wu::addr::sockaddr_text(&bad, sizeof bad), "?");
	EXPECT_EQ(wu::addr::sockaddr_text(nullptr, 16), "?");
	EXPECT_EQ(wu::addr::sockaddr_text(&s4, 1), "?");
}

template <class Entry>
void check_err_record()
{
	wu::err_record<Entry> r;
	char src[6] = "hello";
	r.e.err = 5;
	ASSERT_EQ(r.keep_data(src, sizeof src), 0);
	src[0] = 'X'; /* the poster's buffer may change after the post */
	EXPECT_EQ(r.e.err_data, nullptr);
	EXPECT_EQ(r.size, sizeof src);

	/* A 1.5+ reader with a 3-byte buffer gets the first 3 bytes, copied. */
	char small[3] = {};
	Entry buf{};
	buf.err_data = small;
	buf.err_data_size = sizeof small;
	std::unique_ptr<unsigned char[]> owned;
	Entry out = r.take(&buf, true, owned);
	EXPECT_EQ(out.err, 5);
	EXPECT_EQ(out.err_data, small);
	EXPECT_EQ(out.err_data_size, 3u);
	EXPECT_EQ(std::memcmp(small, "hel", 3), 0);
	EXPECT_EQ(owned, nullptr);

	/* An old reader (or one offering no buffer) gets the queue's copy. */
	Entry none{};
	out = r.take(&none, false, owned);
	ASSERT_NE(owned, nullptr);
	EXPECT_EQ(out.err_data, owned.get());
	EXPECT_EQ(out.err_data_size, sizeof src);
	EXPECT_STREQ(static_cast<const char *>(out.err_data), "hello");

	wu::err_record<Entry> empty;
	EXPECT_EQ(empty.keep_data(nullptr, 4), 0);
	EXPECT_EQ(empty.size, 0u);
}

TEST(ErrRecord, EqAndCqShareTheCopyRules)
{
	check_err_record<fi_eq_err_entry>();
	check_err_record<fi_cq_err_entry>();
}
