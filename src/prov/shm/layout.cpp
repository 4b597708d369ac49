/* SPDX-License-Identifier: BSD-3-Clause */
/* A region's layout and the check of a header read from a peer's object
 * (region_impl.h), free of everything else so that the fuzz target
 * (test/fuzz/fuzz_shm_header.cpp) builds them alone. */
#include "prov/shm/region_impl.h"

#include <cstring>

namespace wu::shm_tp {

namespace {

uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

} // namespace

bool valid_name(const char *name) noexcept
{
	if (!name)
		return false;
	size_t n = strnlen(name, name_max + 1);
	if (n == 0 || n > name_max || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

uint64_t layout_of(const layout &l, region_hdr &h) noexcept
{
	if (l.queue_cells < min_queue_cells || l.queue_cells > max_queue_cells ||
	    (l.queue_cells & (l.queue_cells - 1)) || l.bounce_slots > max_bounce_slots ||
	    l.bounce_size < min_bounce_size || l.bounce_size > max_bounce_size || l.bounce_size % 64)
		return 0;
	h.hdr_size = sizeof(region_hdr);
	h.queue_cells = l.queue_cells;
	h.bounce_slots = l.bounce_slots;
	h.bounce_size = l.bounce_size;
	h.ctl_off = round_up(sizeof(region_hdr), 64);
	h.queue_off = round_up(h.ctl_off + sizeof(region_ctl), 64);
	h.flags_off = h.queue_off + uint64_t(l.queue_cells) * sizeof(cell);
	h.bounce_off = round_up(h.flags_off + uint64_t(l.bounce_slots) * flag_stride, 4096);
	h.total_size = round_up(h.bounce_off + uint64_t(l.bounce_slots) * l.bounce_size, 4096);
	if (h.total_size > max_region_bytes)
		return 0;
	return h.total_size;
}

const char *validate(const region_hdr &h, uint64_t size) noexcept
{
	if (h.magic != region_magic)
		return "bad magic (not a Wireup shm region)";
	if (h.version != region_version)
		return "version is not this library's";
	if (h.hdr_size != sizeof(region_hdr))
		return "header size is not this library's";
	if (h.owner_pid <= 0 || h.owner_start == 0)
		return "no owner recorded";
	if (h.total_size != size)
		return "total_size differs from the object's size";
	/* Recompute the layout from the sizes: every offset must be exactly
	 * what this library would have made, hence inside the mapping. */
	region_hdr want{};
	layout l;
	l.queue_cells = h.queue_cells;
	l.bounce_slots = h.bounce_slots;
	l.bounce_size = h.bounce_size;
	if (!layout_of(l, want))
		return "queue or bounce sizes out of range (or queue not a power of two)";
	if (want.ctl_off != h.ctl_off || want.queue_off != h.queue_off || want.flags_off != h.flags_off ||
	    want.bounce_off != h.bounce_off)
		return "an offset differs from the layout its sizes give";
	if (want.total_size != h.total_size)
		return "total_size differs from the layout its sizes give";
	if (!memchr(h.name, 0, sizeof h.name) || !memchr(h.wake_name, 0, sizeof h.wake_name))
		return "a name is not terminated";
	for (const char *c = h.wake_name; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || *c == '-'))
			return "wake-up socket name has a bad character";
	return nullptr;
}

} // namespace wu::shm_tp
