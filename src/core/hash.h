/* SPDX-License-Identifier: BSD-3-Clause */
/* Hashing and power-of-two rounding, one copy for every part (AV reverse
 * lookup, MR keys, atomic lock stripes, queue ring sizes). */
#ifndef WU_CORE_HASH_H
#define WU_CORE_HASH_H

#include <cstddef>
#include <cstdint>

namespace wu {

/* A 64-bit finaliser (MurmurHash3's fmix64): every input bit reaches every
 * output bit, so low bits are usable as a table index. */
constexpr uint64_t mix64(uint64_t x) noexcept
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Bytes of any length: FNV-1a, then mix64 (FNV's low bits are weak). */
inline uint64_t hash_bytes(const void *p, size_t n) noexcept
{
	uint64_t h = 0xcbf29ce484222325ULL;
	auto *b = static_cast<const unsigned char *>(p);
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return mix64(h ^ n);
}

/* Multiplicative (Fibonacci) hashing: cheap, and its HIGH bits are well
 * mixed; take them with a shift, never with a mask. */
constexpr uint64_t fib_hash(uint64_t x) noexcept
{
	return x * 0x9e3779b97f4a7c15ULL;
}

/* The smallest power of two >= n (1 for 0).  Saturates at the largest
 * size_t power of two instead of wrapping to 0, so a huge queue size asked
 * for by an application cannot make a caller loop or allocate nothing. */
constexpr size_t pow2_ceil(size_t n) noexcept
{
	constexpr size_t top = ~(SIZE_MAX >> 1);
	if (n >= top)
		return top;
	size_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

} // namespace wu

#endif
