/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses of the wireup provider: one binary blob that names a peer's
 * tcp endpoint and its shm endpoint, and the host it runs on, so that a
 * sender picks the transport from the address alone (same host: shm).
 * At most 64 bytes (FI_NAME_MAX: Open MPI's OFI components pass fi_getname
 * a buffer of that size).  Layout, integers little-endian:
 *
 *   0  u8  magic 0x57 ('W')
 *   1  u8  version (1)
 *   2  u8  tcp_len: 0, 16 (sockaddr_in) or 28 (sockaddr_in6)
 *   3  u8  shm_len: bytes of the shm name (no scheme, no NUL), 0: none
 *   4  u32 zero
 *   8  u64 host id (host_id() of the peer)
 *  16      tcp_len bytes: the tcp endpoint's sockaddr, as tcp's fi_getname gives it
 *          then shm_len bytes: the shm endpoint's region name
 *
 *          then zero bytes up to addr_max: every address is exactly 64
 *          bytes, because Open MPI and MPICH insert their peers' names back
 *          to back at the stride of their own name's length.
 *
 * An address with neither part is invalid.  The AV format (format())
 * hands each sub-endpoint its part (av_format::part): part 0 the sockaddr,
 * part 1 the shm provider's "fi_shm://<name>" text with its NUL. */
#ifndef WU_PROV_WIREUP_WX_ADDR_H
#define WU_PROV_WIREUP_WX_ADDR_H

#include <cstddef>
#include <cstdint>

namespace wu::av {
struct av_format;
}

namespace wu::wireup {

inline constexpr size_t addr_max = 64;
inline constexpr size_t hdr_len = 16;
inline constexpr uint8_t addr_magic = 0x57;
inline constexpr uint8_t addr_version = 1;
/* av_format::part indices (ep_base::addr_part of each sub-endpoint). */
inline constexpr int part_tcp = 0;
inline constexpr int part_shm = 1;

struct parts {
	uint64_t host = 0;
	const void *tcp = nullptr; /* sockaddr_in / sockaddr_in6, or nullptr */
	size_t tcp_len = 0;
	const char *shm = nullptr; /* region name without "fi_shm://", or nullptr */
	size_t shm_len = 0;
};

/* Writes the address of p into buf (addr_max bytes); returns addr_max, -FI_EINVAL when a
 * part is malformed (a sockaddr of another family or length, an invalid
 * shm name, neither part), -FI_ETOOSMALL when it does not fit buflen or
 * addr_max. */
long encode(const parts &p, void *buf, size_t buflen) noexcept;

/* Checks the address at addr (addr_max bytes, at most avail read; padding
 * must be zero) and points out's members into it; returns addr_max or
 * -FI_EINVAL. */
long decode(const void *addr, size_t avail, parts *out) noexcept;

/* This host as peers see it: equal for two processes exactly when they
 * share the machine (boot id), the network namespace and the hostname,
 * so that shm is chosen only where both ends share /dev/shm and a
 * "node" simulated by a network namespace counts as another host. */
uint64_t host_id() noexcept;

/* The AV engine's description of these addresses (validate, print as
 * "fi_wx://<tcp address>/<host id>/<shm name>", parts). */
const av::av_format *format() noexcept;

/* Sockaddr mode: an fi_info of FI_SOCKADDR, FI_SOCKADDR_IN or
 * FI_SOCKADDR_IN6 (asked for in the hints) carries only the tcp part of
 * our addresses, and so do its endpoints' names and AV entries: every
 * peer of such an endpoint goes through tcp, since a sockaddr has no room
 * for the shm name or the host id. */
bool is_sock_format(uint32_t addr_format) noexcept;
/* len when sa is a sockaddr_in / sockaddr_in6 of that length, else -FI_EINVAL. */
long sock_len(const void *sa, size_t len) noexcept;
/* The AV format of a sockaddr-mode domain (the IP format, whose entries
 * are their own tcp part); nullptr for another format. */
const av::av_format *sock_format(uint32_t addr_format) noexcept;

} // namespace wu::wireup

#endif
