/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the named-AV header check (src/av/arena.cpp,
 * validate_header): arbitrary bytes as the header page of a shared AV
 * another process left behind.  Besides the sanitizers it checks that
 * whatever is accepted keeps every access the engine derives from the
 * header (records, blobs, node table, symmetric ranges) inside the
 * mapping, and that the check itself ends (a max_slots loop once hung).
 *
 * Byte 0: bit 0 set takes the mapped size from the layout of the header's
 * own max_slots (reaches the deeper checks), else from bytes 1..8; bytes
 * 9..12 the opener's blob size; the rest is the header. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "av/arena.h"

namespace {

[[noreturn]] void fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "fuzz_av_header invariant broken: %s (%llu, %llu)\n", what, a, b);
	abort();
}

/* Offset of p from a layout made over base 0. */
uint64_t off(const void *p)
{
	return uint64_t(reinterpret_cast<uintptr_t>(p));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using namespace wu::av;
	if (size < 13)
		return 0;
	uint64_t mapped;
	uint32_t blob_size;
	memcpy(&mapped, data + 1, 8);
	memcpy(&blob_size, data + 9, 4);
	header h;
	memset(static_cast<void *>(&h), 0, sizeof h);
	memcpy(static_cast<void *>(&h), data + 13, size - 13 < sizeof h ? size - 13 : sizeof h);
	if (data[0] & 1) {
		if (h.max_slots > max_region_slots || blob_size > 4096)
			return 0;
		arena tmp;
		mapped = arena::layout(tmp, h.max_slots, blob_size);
	}
	if (validate_header(h, size_t(mapped), blob_size))
		return 0;

	/* Accepted: lay it out over base 0 and check every extent. */
	arena r;
	const uint64_t total = arena::layout(r, h.max_slots, blob_size);
	if (total != mapped)
		fail("layout differs from the mapping", total, mapped);
	if (off(r.rec) + h.max_slots * 8 > mapped)
		fail("records past the mapping", off(r.rec), h.max_slots);
	if (off(r.blob) + h.max_slots * blob_size > mapped)
		fail("blobs past the mapping", off(r.blob), h.max_slots);
	if (off(r.symgone) + (h.max_slots + 63) / 64 * 8 > mapped)
		fail("symgone past the mapping", off(r.symgone), h.max_slots);
	if (off(r.node_blob) + r.max_nodes * blob_size > mapped)
		fail("node table past the mapping", off(r.node_blob), r.max_nodes);
	if (h.end > h.max_slots || h.nfree > h.end)
		fail("end/nfree", h.end, h.nfree);
	if (h.node_bump > r.max_nodes)
		fail("node_bump", h.node_bump, r.max_nodes);
	if (h.nranges > max_ranges)
		fail("nranges", h.nranges, max_ranges);
	for (uint32_t i = 0; i < h.nranges; i++) {
		const sym_range &s = h.ranges[i];
		/* The last fi_addr of the range, as read_sym indexes it. */
		uint64_t last = s.base + s.count - 1;
		if (s.count == 0 || last >= h.end)
			fail("range past end", s.base, s.count);
		uint64_t node = (last - s.base) / s.svccnt;
		if (node >= s.nodecnt)
			fail("range node", node, s.nodecnt);
		if (s.by_name && s.node_off + node >= r.max_nodes)
			fail("range node table index", s.node_off, node);
	}
	return 0;
}
