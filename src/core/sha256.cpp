/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256, HMAC-SHA256, constant-time compare, random bytes (sha256.h). */
#include "core/sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/random.h>

namespace wu::crypto {
namespace {

constexpr uint32_t k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

} // namespace

sha256::sha256() noexcept
	: h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
{
}

void sha256::block(const unsigned char *b) noexcept
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = uint32_t(b[4 * i]) << 24 | uint32_t(b[4 * i + 1]) << 16 | uint32_t(b[4 * i + 2]) << 8 |
		       uint32_t(b[4 * i + 3]);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
		uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = bb;
		bb = a;
		a = t1 + t2;
	}
	h_[0] += a;
	h_[1] += bb;
	h_[2] += c;
	h_[3] += d;
	h_[4] += e;
	h_[5] += f;
	h_[6] += g;
	h_[7] += h;
}

void sha256::update(const void *p, size_t n) noexcept
{
	const auto *in = static_cast<const unsigned char *>(p);
	total_ += n;
	while (n) {
		size_t take = std::min(n, sizeof buf_ - used_);
		memcpy(buf_ + used_, in, take);
		used_ += take;
		in += take;
		n -= take;
		if (used_ == sizeof buf_) {
			block(buf_);
			used_ = 0;
		}
	}
}

void sha256::final(unsigned char out[sha256_len]) noexcept
{
	uint64_t bits = total_ * 8;
	unsigned char pad = 0x80;
	update(&pad, 1);
	unsigned char zero = 0;
	while (used_ != 56)
		update(&zero, 1);
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
	update(len, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = static_cast<unsigned char>(h_[i] >> 24);
		out[4 * i + 1] = static_cast<unsigned char>(h_[i] >> 16);
		out[4 * i + 2] = static_cast<unsigned char>(h_[i] >> 8);
		out[4 * i + 3] = static_cast<unsigned char>(h_[i]);
	}
}

void sha256_of(const void *p, size_t n, unsigned char out[sha256_len]) noexcept
{
	sha256 s;
	s.update(p, n);
	s.final(out);
}

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, unsigned char out[sha256_len]) noexcept
{
	unsigned char k0[64] = {};
	if (key_len > sizeof k0)
		sha256_of(key, key_len, k0);
	else
		memcpy(k0, key, key_len);
	unsigned char pad[64];
	for (size_t i = 0; i < sizeof pad; i++)
		pad[i] = k0[i] ^ 0x36;
	unsigned char inner[sha256_len];
	sha256 in;
	in.update(pad, sizeof pad);
	in.update(msg, n);
	in.final(inner);
	for (size_t i = 0; i < sizeof pad; i++)
		pad[i] = k0[i] ^ 0x5c;
	sha256 o;
	o.update(pad, sizeof pad);
	o.update(inner, sizeof inner);
	o.final(out);
	/* The key's copies are secrets too. */
	explicit_bzero(k0, sizeof k0);
	explicit_bzero(pad, sizeof pad);
}

bool equal_ct(const void *a, const void *b, size_t n) noexcept
{
	const auto *x = static_cast<const volatile unsigned char *>(a);
	const auto *y = static_cast<const volatile unsigned char *>(b);
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

bool random_bytes(void *out, size_t n) noexcept
{
	auto *p = static_cast<unsigned char *>(out);
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += r;
		n -= size_t(r);
	}
	return true;
}

} // namespace wu::crypto
