/* SPDX-License-Identifier: BSD-3-Clause */
/* The ucx provider's address blobs (ucx_addr.h). */
#include "prov/ucx/ucx_addr.h"

#include <cstdio>
#include <cstring>

#include <rdma/fi_errno.h>

namespace wu::ucx {
namespace {

constexpr unsigned char magic[4] = {'W', 'U', 'C', 'X'};
constexpr uint8_t version = 1;

uint32_t get32(const unsigned char *p) noexcept
{
	return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
void put32(unsigned char *p, uint32_t v) noexcept
{
	p[0] = uint8_t(v);
	p[1] = uint8_t(v >> 8);
	p[2] = uint8_t(v >> 16);
	p[3] = uint8_t(v >> 24);
}

/* FNV-1a: catches truncation and corruption, not an adversary (who can
 * hand UCX any worker address it likes through a valid header). */
uint32_t checksum(const unsigned char *p, size_t n) noexcept
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

} // namespace

size_t addr_build(uint32_t id, uint8_t flags, const void *worker, size_t wlen, void *out, size_t outlen) noexcept
{
	if ((flags & ~addr_flag_id) || !worker || wlen == 0 || wlen > worker_max || id == 0 || id > id_max || !out ||
	    outlen < addr_hdr + wlen)
		return 0;
	auto *o = static_cast<unsigned char *>(out);
	memcpy(o, magic, 4);
	o[4] = version;
	o[5] = flags;
	o[6] = uint8_t(wlen);
	o[7] = uint8_t(wlen >> 8);
	put32(o + 8, id);
	put32(o + 12, checksum(static_cast<const unsigned char *>(worker), wlen));
	memcpy(o + addr_hdr, worker, wlen);
	return addr_hdr + wlen;
}

ssize_t addr_check(const void *a, size_t avail) noexcept
{
	if (!a || avail < addr_hdr)
		return -FI_EINVAL;
	auto *p = static_cast<const unsigned char *>(a);
	if (memcmp(p, magic, 4) != 0 || p[4] != version || (p[5] & ~addr_flag_id))
		return -FI_EINVAL;
	size_t wlen = size_t(p[6]) | size_t(p[7]) << 8;
	uint32_t id = get32(p + 8);
	if (wlen == 0 || wlen > worker_max || addr_hdr + wlen > avail || id == 0 || id > id_max)
		return -FI_EINVAL;
	if (get32(p + 12) != checksum(p + addr_hdr, wlen))
		return -FI_EINVAL;
	return ssize_t(addr_hdr + wlen);
}

uint32_t addr_id(const void *a) noexcept
{
	return get32(static_cast<const unsigned char *>(a) + 8);
}

uint8_t addr_flags(const void *a) noexcept
{
	return static_cast<const unsigned char *>(a)[5];
}

const void *addr_worker(const void *a, size_t *wlen) noexcept
{
	auto *p = static_cast<const unsigned char *>(a);
	*wlen = size_t(p[6]) | size_t(p[7]) << 8;
	return p + addr_hdr;
}

ssize_t addr_print(const void *a, size_t len, char *buf, size_t buflen) noexcept
{
	if (addr_check(a, len) < 0)
		return -FI_EINVAL;
	size_t wlen;
	auto *w = static_cast<const unsigned char *>(addr_worker(a, &wlen));
	/* The id names the endpoint; a few worker bytes tell workers apart
	 * at a glance (the whole address is hundreds of bytes). */
	char text[96];
	int n = snprintf(text, sizeof text, "fi_ucx://%08x/%zu:", addr_id(a), wlen);
	for (size_t i = 0; i < wlen && i < 16 && n + 3 < int(sizeof text); i++)
		n += snprintf(text + n, sizeof text - size_t(n), "%02x", w[i]);
	size_t need = size_t(n) + 1;
	if (buf && buflen) {
		size_t c = need < buflen ? need : buflen;
		memcpy(buf, text, c);
		buf[c - 1] = '\0';
	}
	return ssize_t(need);
}

} // namespace wu::ucx
