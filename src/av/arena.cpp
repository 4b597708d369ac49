/* SPDX-License-Identifier: BSD-3-Clause */
/* Arena layout: inline in arena.h, so that it is compiled with the rest
 * of the open path (src/av/arena_map.cpp).  Header validation lives here, free
 * of the AV engine, so that the fuzz target (test/fuzz/fuzz_av_header.cpp)
 * builds it alone. */
#include "av/arena.h"

#include <sys/socket.h>

#include <rdma/fi_domain.h>

namespace wu::av {

const char *validate_header(const header &h, size_t mapped, uint32_t blob_size) noexcept
{
	if (h.magic != region_magic)
		return "bad magic (not a Wireup AV)";
	if (h.version != region_version)
		return "version is not this library's";
	if (h.total_bytes != mapped)
		return "total_bytes differs from the object's size";
	if (h.blob_size != blob_size)
		return "blob_size differs from this domain's";
	if (h.max_slots < 64 || h.max_slots > max_region_slots)
		return "max_slots out of range";
	/* The layout the creator used must be exactly what was mapped: then
	 * every array the header sizes lies inside the mapping. */
	arena lay;
	if (arena::layout(lay, h.max_slots, blob_size) != mapped)
		return "max_slots does not match the object's size";
	if (h.av_type != FI_AV_MAP && h.av_type != FI_AV_TABLE)
		return "av_type is unknown";
	if (h.end > h.max_slots)
		return "end past max_slots";
	if (h.nfree > h.end)
		return "nfree past end";
	if (h.node_bump > lay.max_nodes)
		return "node_bump past the node table";
	if (h.nranges > max_ranges)
		return "nranges past the range table";
	for (uint32_t i = 0; i < h.nranges; i++) {
		const sym_range &s = h.ranges[i];
		if (s.nodecnt == 0 || s.svccnt == 0 || s.svccnt > 65536 ||
		    s.count != uint64_t(s.nodecnt) * s.svccnt)
			return "a symmetric range has a bad count";
		if (s.base > h.end || s.count > h.end - s.base)
			return "a symmetric range lies past end";
		if (uint64_t(s.port0) + s.svccnt - 1 > 65535)
			return "a symmetric range's ports pass 65535";
		if (s.family != AF_INET && s.family != AF_INET6)
			return "a symmetric range has an unknown family";
		if (s.by_name > 1)
			return "a symmetric range has a bad by_name";
		if (s.by_name && (s.node_off > h.node_bump || s.nodecnt > h.node_bump - s.node_off))
			return "a symmetric range's nodes lie past the node table";
	}
	return nullptr;
}

} // namespace wu::av
