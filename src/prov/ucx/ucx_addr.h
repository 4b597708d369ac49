/* SPDX-License-Identifier: BSD-3-Clause */
/* The ucx provider's addresses and tag layout.
 *
 * Address (FI_FORMAT_UNSPEC, binary, variable length): a 16-byte header
 * followed by the UCP worker address (ucp_worker_get_address), opaque to
 * us.  The header holds "WUCX", a version, the worker address's length,
 * the endpoint's sender id and a checksum of the worker address, so that a
 * truncated or corrupted blob is refused at fi_av_insert instead of
 * reaching ucp_ep_create.
 *
 *	0  "WUCX"   4  version (1)   5  flags   6  worker length (LE16)
 *	8  sender id (LE32, 1 .. 2^31-1)   12  checksum (LE32)   16  worker address
 *
 * Flags: addr_flag_id, or 0.
 *
 * Tag layout (the 64-bit UCP tag of every message):
 *
 *	63      reserved space: 0 application tagged, 1 provider (msg, control)
 *	62..32  sender id (31 bits): FI_SOURCE and FI_DIRECTED_RECV; 0 in the
 *		msg and tagged messages to a receiver whose address lacks
 *		addr_flag_id, and in rkey requests (whose payload has it)
 *	31..0   application tag (tagged), or the kind (reserved space)
 *
 * so the application's tag space is 32 bits (mem_tag_format and the
 * largest tag say so; a tag above it is -FI_EINVAL).  A receiver maps a
 * sender id to its fi_addr through the AV (the id is the address's part 0,
 * av_format::part, so the lookup is the AV's own O(1) reverse index). */
#ifndef WU_PROV_UCX_UCX_ADDR_H
#define WU_PROV_UCX_UCX_ADDR_H

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace wu::ucx {

inline constexpr size_t addr_hdr = 16;
/* The endpoint needs its senders' ids (FI_SOURCE or FI_DIRECTED_RECV).
 * Without it senders put 0 there and its receives match the whole id
 * field: with a full mask UCP files a receive in its hashed expected
 * queue, where any masked bit puts it in the wildcard list, which every
 * arriving message then searches beside the hash bucket. */
inline constexpr uint8_t addr_flag_id = 1;
/* Largest address we store (the AV engine's max_blob). */
inline constexpr size_t addr_max = 512;
inline constexpr size_t worker_max = addr_max - addr_hdr;

inline constexpr uint64_t tag_reserved = uint64_t{1} << 63;
inline constexpr unsigned id_shift = 32;
inline constexpr uint64_t id_mask = uint64_t{0x7fffffff} << id_shift;
inline constexpr uint64_t user_mask = 0xffffffffULL;
inline constexpr uint32_t id_max = 0x7fffffff;
/* Kinds in the reserved space. */
inline constexpr uint64_t kind_msg = 0;	      /* fi_send / fi_recv */
inline constexpr uint64_t kind_rkey_req = 1;  /* RMA: the packed rkey of a key, please */
inline constexpr uint64_t kind_rkey_rep = 2;  /* ... here it is (or why not) */

inline uint64_t make_tag(bool reserved, uint32_t id, uint64_t low) noexcept
{
	return (reserved ? tag_reserved : 0) | (uint64_t(id) << id_shift) | (low & user_mask);
}
inline uint32_t tag_id(uint64_t tag) noexcept
{
	return uint32_t((tag & id_mask) >> id_shift);
}

/* Builds an address from a worker address; returns its length, 0 when the
 * worker address does not fit. */
size_t addr_build(uint32_t id, uint8_t flags, const void *worker, size_t wlen, void *out, size_t outlen) noexcept;
/* Length of the address at a (at most avail bytes read), or -FI_EINVAL
 * when it is not a valid ucx address (the AV's validate). */
ssize_t addr_check(const void *a, size_t avail) noexcept;
/* Parts of a checked address. */
uint32_t addr_id(const void *a) noexcept;
uint8_t addr_flags(const void *a) noexcept;
const void *addr_worker(const void *a, size_t *wlen) noexcept;
/* fi_av_straddr's text: "fi_ucx://<id>/<worker length>:<first worker bytes>". */
ssize_t addr_print(const void *a, size_t len, char *buf, size_t buflen) noexcept;

} // namespace wu::ucx

#endif
