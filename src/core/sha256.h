/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), and a constant-time
 * compare: all the cryptography the tcp handshake and shm's keyed names
 * need.  Built in rather than OpenSSL's: linking libcrypto cost every
 * process about 1.5 MB of RSS at load, and OpenSSL 3's first HMAC (its
 * provider and algorithm tables) 2 MB more in every MPI rank. */
#ifndef WU_CORE_SHA256_H
#define WU_CORE_SHA256_H

#include <cstddef>
#include <cstdint>

namespace wu::crypto {

inline constexpr size_t sha256_len = 32;

class sha256 {
public:
	sha256() noexcept;
	void update(const void *p, size_t n) noexcept;
	void final(unsigned char out[sha256_len]) noexcept;

private:
	void block(const unsigned char *b) noexcept;
	uint32_t h_[8];
	unsigned char buf_[64];
	size_t used_ = 0;
	uint64_t total_ = 0;
};

void sha256_of(const void *p, size_t n, unsigned char out[sha256_len]) noexcept;
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, unsigned char out[sha256_len]) noexcept;
/* True when a and b hold the same n bytes; the time does not depend on where they differ. */
bool equal_ct(const void *a, const void *b, size_t n) noexcept;
/* n bytes from the kernel's CSPRNG (getrandom); false when it fails. */
bool random_bytes(void *out, size_t n) noexcept;

} // namespace wu::crypto

#endif
