/* SPDX-License-Identifier: BSD-3-Clause */
/* Parts of composite addresses (av_format::part, the wireup provider's
 * tcp + shm addresses): the address of one part of an entry, and the
 * reverse lookup by part, which sub-endpoints use for FI_SOURCE.
 *
 * One index per part index, like reverse()'s: built on first use from the
 * entries, then kept in step by the writer (writer::put adds every entry
 * it stores while the index reflects the arena's ins_gen).  Removes leave
 * stale slots, so every hit is checked against the entry's part; a named
 * AV written by another process bumps ins_gen, which makes the next
 * lookup rebuild.  Symmetric ranges hold IP addresses that no format with
 * parts validates, so they are never indexed here. */
#include "av/av_impl.h"

#include <algorithm>

#include "core/log.h"

namespace wu::av::detail {

namespace {

/* Part `which` of stored address k as a key of bytes; false when the
 * entry has no such part. */
bool part_key(const av_obj *a, const key &k, int which, key &out)
{
	unsigned char bin[max_blob];
	size_t len = key_binary(a, k, bin);
	size_t n = a->fmt->part(bin, len, which, out.bytes, sizeof out.bytes);
	if (n == 0 || n > sizeof out.bytes)
		return false;
	out.packed = false;
	out.len = n;
	return true;
}

/* Rebuilds index `which` from the entries (caller holds a->local). */
void part_build(av_obj *a, int which, size_t want)
{
	const arena &r = *a->reg;
	auto keyof = [&](uint64_t f, key &p) {
		key k;
		return entry_key(r, f, k) && part_key(a, k, which, p);
	};
	while (size_t small = rev_fill(r, a->parts->ix[which], want, keyof))
		want = 2 * small;
}

void part_sync(av_obj *a, int which)
{
	rev_index &ix = a->parts->ix[which];
	const header &h = *a->reg->hdr;
	if (ix.gen == ld(&h.ins_gen))
		return;
	uint64_t end = ld(&h.end);
	uint64_t live = end - std::min<uint64_t>(end, __atomic_load_n(&h.nfree, __ATOMIC_RELAXED));
	part_build(a, which, live);
}

} // namespace

void parts_add(av_obj *a, uint64_t f, const key &k, bool *live)
{
	for (int i = 0; i < max_parts; i++) {
		if (!live[i])
			continue;
		key p;
		if (!part_key(a, k, i, p))
			continue;
		rev_index &ix = a->parts->ix[i];
		if (ix.used + 1 > ix.limit) {
			ix.gen = ~uint64_t{0};
			live[i] = false;
			continue;
		}
		rev_put(ix, p.hash(), f);
	}
}

bool text_refused(const av_obj *a, const char *what)
{
	if (a->fmt->text_format || a->fmt->from_service)
		return false;
	WU_WARN(a->prov, FI_LOG_AV, "%s: %s addresses have no text form to insert; insert the binary address\n",
		what, a->fmt->name);
	return true;
}

} // namespace wu::av::detail

namespace wu::av {

using namespace detail;

size_t addr_of_part(fid_av *av, fi_addr_t fi_addr, int which, void *buf, size_t buflen) noexcept
{
	return guard_or("addr_of_part", size_t{0}, [&]() -> size_t {
		av_obj *a = av_of(av);
		if (!a || !a->fmt->part || which < 0 || which >= max_parts || (buflen && !buf))
			return 0;
		key k;
		if (!lookup_key(a, fi_addr, k))
			return 0;
		unsigned char bin[max_blob];
		size_t len = key_binary(a, k, bin);
		return a->fmt->part(bin, len, which, buf, buflen);
	});
}

fi_addr_t reverse_part(fid_av *av, int which, const void *addr, size_t len) noexcept
{
	return guard_or("reverse_part", FI_ADDR_NOTAVAIL, [&]() -> fi_addr_t {
		av_obj *a = av_of(av);
		if (!a || !a->fmt->part || which < 0 || which >= max_parts || !addr || !len ||
		    len > max_blob)
			return FI_ADDR_NOTAVAIL;
		key q;
		q.packed = false;
		q.len = len;
		memcpy(q.bytes, addr, len);
		arena &r = *a->reg;
		std::lock_guard<std::mutex> g(*a->local);
		part_sync(a, which);
		return rev_find(a->parts->ix[which], q.hash(), [&](uint64_t e) {
			key k, p;
			return entry_key(r, e, k) && part_key(a, k, which, p) && same(p, q);
		});
	});
}

} // namespace wu::av
