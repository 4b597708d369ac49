/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 and HMAC-SHA256 from nettle, a constant-time compare and random
 * bytes from the kernel: all the cryptography the tcp handshake and shm's
 * keyed names need.  nettle rather than OpenSSL's libcrypto: linking
 * libcrypto cost every process about 1.5 MB of RSS at load, and OpenSSL
 * 3's first HMAC (its provider and algorithm tables) 2 MB more in every
 * MPI rank; nettle is a small library with no global state. */
#ifndef WU_CORE_SHA256_H
#define WU_CORE_SHA256_H

#include <cstddef>
#include <cstdint>

#include <nettle/sha2.h>

namespace wu::crypto {

inline constexpr size_t sha256_len = SHA256_DIGEST_SIZE;

/* Incremental SHA-256 (nettle's context). */
class sha256 {
public:
	sha256() noexcept { sha256_init(&ctx_); }
	void update(const void *p, size_t n) noexcept { sha256_update(&ctx_, n, static_cast<const uint8_t *>(p)); }
	void final(unsigned char out[sha256_len]) noexcept { sha256_digest(&ctx_, sha256_len, out); }

private:
	sha256_ctx ctx_;
};

void sha256_of(const void *p, size_t n, unsigned char out[sha256_len]) noexcept;
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, unsigned char out[sha256_len]) noexcept;
/* True when a and b hold the same n bytes; the time does not depend on where they differ. */
bool equal_ct(const void *a, const void *b, size_t n) noexcept;
/* n bytes from the kernel's CSPRNG (getrandom); false when it fails. */
bool random_bytes(void *out, size_t n) noexcept;

} // namespace wu::crypto

#endif
