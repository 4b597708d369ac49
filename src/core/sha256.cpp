/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 and HMAC-SHA256 through nettle, compare, random bytes (sha256.h). */
#include "core/sha256.h"

#include <cerrno>
#include <cstring>

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/random.h>

namespace wu::crypto {

void sha256_of(const void *p, size_t n, unsigned char out[sha256_len]) noexcept
{
	sha256 h;
	h.update(p, n);
	h.final(out);
}

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t n, unsigned char out[sha256_len]) noexcept
{
	hmac_sha256_ctx ctx;
	::hmac_sha256_set_key(&ctx, key_len, static_cast<const uint8_t *>(key));
	::hmac_sha256_update(&ctx, n, static_cast<const uint8_t *>(msg));
	::hmac_sha256_digest(&ctx, sha256_len, out);
	/* The keyed state is a secret too. */
	explicit_bzero(&ctx, sizeof ctx);
}

bool equal_ct(const void *a, const void *b, size_t n) noexcept
{
	return memeql_sec(a, b, n) != 0;
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
