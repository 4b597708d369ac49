/* Region layout and the free-slot bitmap. */
#include "av/region.h"

#include <unistd.h>

namespace wu::av {

namespace {

size_t page_up(size_t n)
{
	const size_t pg = 4096;
	return (n + pg - 1) & ~(pg - 1);
}

} // namespace

size_t region::layout(region &r, uint64_t max_slots, uint32_t blob_size)
{
	const uintptr_t b = reinterpret_cast<uintptr_t>(r.base);
	size_t off = page_up(sizeof(header));
	r.hdr = reinterpret_cast<header *>(b);
	r.rec = reinterpret_cast<uint64_t *>(b + off);
	off += page_up(max_slots * 8);
	r.blob = reinterpret_cast<unsigned char *>(b + off);
	off += page_up(max_slots * blob_size);
	/* Bitmap levels: each bit of level l+1 says "word of level l not empty";
	 * the top level is at most 64 words, scanned directly. */
	uint64_t bits = max_slots;
	r.levels = 0;
	do {
		uint64_t words = (bits + 63) / 64;
		r.freebits[r.levels] = reinterpret_cast<uint64_t *>(b + off);
		r.level_words[r.levels] = words;
		r.levels++;
		off += page_up(words * 8);
		bits = words;
	} while (bits > 64 && r.levels < 4);
	r.symgone = reinterpret_cast<uint64_t *>(b + off);
	off += page_up((max_slots + 63) / 64 * 8);
	r.max_nodes = max_slots / 8 < 4096 ? 4096 : max_slots / 8;
	r.node_rec = reinterpret_cast<uint64_t *>(b + off);
	off += page_up(r.max_nodes * 8);
	r.node_blob = reinterpret_cast<unsigned char *>(b + off);
	off += page_up(r.max_nodes * blob_size);
	return off;
}

} // namespace wu::av
