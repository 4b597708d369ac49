/* SPDX-License-Identifier: BSD-3-Clause */
/* core/sha256.h: SHA-256 and HMAC-SHA256 through nettle (for the tcp
 * handshake and shm's keyed names) against the published vectors of FIPS
 * 180-4 and RFC 4231, fed whole and in pieces across block boundaries;
 * the constant-time compare; random bytes. */
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/sha256.h"

namespace {

using namespace wu::crypto;

std::string hex(const unsigned char *p, size_t n)
{
	std::string s;
	for (size_t i = 0; i < n; i++) {
		s += "0123456789abcdef"[p[i] >> 4];
		s += "0123456789abcdef"[p[i] & 15];
	}
	return s;
}

std::string sha(const std::string &m)
{
	unsigned char out[sha256_len];
	sha256_of(m.data(), m.size(), out);
	return hex(out, sizeof out);
}

std::string hmac(const std::string &k, const std::string &m)
{
	unsigned char out[sha256_len];
	hmac_sha256(k.data(), k.size(), m.data(), m.size(), out);
	return hex(out, sizeof out);
}

TEST(Sha256, Fips180Vectors)
{
	EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* 56 bytes: the length no longer fits the first block. */
	EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	EXPECT_EQ(sha(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesGiveTheSameDigest)
{
	std::string m;
	for (int i = 0; i < 300; i++)
		m += char(i * 7 + 3);
	const std::string whole = sha(m);
	for (size_t step : {1u, 3u, 55u, 63u, 64u, 65u, 129u}) {
		sha256 s;
		for (size_t at = 0; at < m.size(); at += step)
			s.update(m.data() + at, std::min(step, m.size() - at));
		unsigned char out[sha256_len];
		s.final(out);
		EXPECT_EQ(hex(out, sizeof out), whole) << "step " << step;
	}
}

TEST(HmacSha256, Rfc4231Vectors)
{
	EXPECT_EQ(hmac(std::string(20, '\x0b'), "Hi There"),
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	EXPECT_EQ(hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	/* A key longer than the block is hashed first. */
	EXPECT_EQ(hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Crypto, EqualCtAndRandomBytes)
{
	unsigned char a[32] = {}, b[32] = {};
	EXPECT_TRUE(equal_ct(a, b, sizeof a));
	b[31] = 1;
	EXPECT_FALSE(equal_ct(a, b, sizeof a));
	EXPECT_TRUE(equal_ct(a, b, 31));
	unsigned char r1[64] = {}, r2[64] = {};
	ASSERT_TRUE(random_bytes(r1, sizeof r1));
	ASSERT_TRUE(random_bytes(r2, sizeof r2));
	EXPECT_NE(memcmp(r1, r2, sizeof r1), 0);
}

} // namespace
