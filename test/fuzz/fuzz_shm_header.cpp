/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the shm region header check (src/prov/shm/layout.cpp,
 * validate): arbitrary bytes as the header of a region a peer left in
 * /dev/shm.  Besides the sanitizers it checks that whatever is accepted
 * keeps every part the transport derives from the header (control block,
 * cells, release flags, bounce slots) inside the mapping, and that the
 * queue's index mask is a power of two minus one.
 *
 * Byte 0: bit 0 set takes the object's size from the header's own
 * total_size (reaches the deeper checks), else from bytes 1..8; the rest
 * is the header. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "prov/shm/region_impl.h"

namespace {

[[noreturn]] void fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "fuzz_shm_header invariant broken: %s (%llu, %llu)\n", what, a, b);
	abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using namespace wu::shm_tp;
	if (size < 9)
		return 0;
	uint64_t mapped;
	memcpy(&mapped, data + 1, 8);
	region_hdr h;
	memset(static_cast<void *>(&h), 0, sizeof h);
	memcpy(static_cast<void *>(&h), data + 9, size - 9 < sizeof h ? size - 9 : sizeof h);
	if (data[0] & 1)
		mapped = h.total_size;
	if (validate(h, mapped))
		return 0;
	if (mapped > max_region_bytes)
		fail("mapping larger than any region", mapped, max_region_bytes);
	if (h.queue_cells == 0 || (h.queue_cells & (h.queue_cells - 1)))
		fail("queue not a power of two", h.queue_cells, 0);
	if (h.ctl_off < sizeof(region_hdr) || h.ctl_off + sizeof(region_ctl) > h.queue_off)
		fail("control block overlaps", h.ctl_off, h.queue_off);
	if (h.queue_off % 64 || h.queue_off + uint64_t(h.queue_cells) * sizeof(cell) > h.flags_off)
		fail("cells overlap", h.queue_off, h.queue_cells);
	if (h.flags_off + uint64_t(h.bounce_slots) * flag_stride > h.bounce_off)
		fail("flags overlap", h.flags_off, h.bounce_slots);
	if (h.bounce_off + uint64_t(h.bounce_slots) * h.bounce_size > mapped)
		fail("bounce slots past the mapping", h.bounce_off, h.bounce_slots);
	if (!memchr(h.name, 0, sizeof h.name) || !memchr(h.wake_name, 0, sizeof h.wake_name))
		fail("unterminated name", 0, 0);
	return 0;
}
