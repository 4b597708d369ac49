/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory an AV lives in: a header page, then arrays indexed by fi_addr,
 * all reserved at open and never moved.  Private AVs reserve anonymous
 * MAP_NORESERVE memory; named AVs map a sparse POSIX shm object.  Only
 * pages that are written become resident.
 *
 * Free slots: a record word of 0 below end (outside symmetric ranges) is a
 * free slot, so the records are the bottom level of the free map.  Above
 * them a hierarchical bitmap keeps one bit per 64-record block ("may hold
 * a free slot"; cleared lazily when a scan finds none), then one bit per
 * word of the level below.  Its levels are packed into the header page's
 * slack, smallest first, so an AV of up to 32 Ki entries frees and
 * allocates without touching any page but the header and its records. */
#ifndef WU_AV_ARENA_H
#define WU_AV_ARENA_H

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace wu::av {

/* One fi_av_insertsym call on a symmetric AV: fi_addr base + node * svccnt
 * + svc is node (base node + node) at port (port0 + svc). */
struct sym_range {
	uint64_t base;
	uint64_t count;
	uint32_t nodecnt;
	uint32_t svccnt;
	uint16_t port0;
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t by_name; /* node addresses are in the node table */
	uint32_t scope_id;
	uint64_t node_off; /* by_name: node table index of node 0 */
	uint64_t ip_hi;	   /* IPv4: address (host order) in ip_lo */
	uint64_t ip_lo;	   /* IPv6: 128-bit address (host order) */
};

inline constexpr uint32_t max_ranges = 32;
inline constexpr uint64_t region_magic = 0x5755415652454731ULL; /* "WUAVREG1" */
inline constexpr uint32_t region_version = 2;
/* Most slots any AV reserves (2^40: far past what a 47-bit address space
 * can map at 8+ bytes a slot), so sizes below never overflow. */
inline constexpr uint64_t max_region_slots = uint64_t{1} << 40;

/* First page of the arena.  Plain integers shared between processes are
 * accessed with __atomic builtins. */
struct header {
	uint64_t magic;	   /* set last by the creator (release) */
	uint32_t version;
	uint32_t addr_format; /* of the creator's domain */
	uint64_t max_slots;
	uint32_t blob_size;
	uint32_t is_shared;
	uint64_t total_bytes;
	pthread_mutex_t lock; /* robust + process-shared for named AVs */
	uint64_t end;	      /* one past the highest fi_addr handed out */
	uint64_t nfree;	      /* freed record slots below end */
	uint64_t gen;	      /* bumped by every change; readers detect others' */
	uint64_t ins_gen;     /* bumped by changes that add entries (reverse index) */
	uint64_t node_bump;   /* node table entries used */
	uint32_t nranges;
	uint32_t attached;    /* processes that have it open (named AVs) */
	uint32_t av_type;
	uint32_t sym_removed; /* any symgone bit set (saves touching its pages) */
	sym_range ranges[max_ranges];
};
static_assert(sizeof(header) <= 4096, "the AV header must fit one page");

/* Record word kinds (bits 56..63); payload in bits 0..47. */
enum : uint64_t {
	rec_free = 0,
	rec_packed = 1,	 /* payload: compact address (IPv4 << 16 | port) */
	rec_blob = 2,	 /* payload: sequence; address in the blob */
	rec_pending = 3, /* payload: resolver token */
};
inline constexpr uint64_t payload_mask = (uint64_t{1} << 48) - 1;
inline uint64_t rec_kind(uint64_t r) { return r >> 56; }
inline uint64_t rec_make(uint64_t kind, uint64_t payload) { return kind << 56 | (payload & payload_mask); }

struct arena {
	header *hdr = nullptr;
	uint64_t *rec = nullptr;      /* [max_slots] */
	unsigned char *blob = nullptr; /* [max_slots][blob_size]: u32 len + bytes */
	uint64_t *freebits[4] = {};   /* level 0: one bit per 64-record block */
	size_t levels = 0;
	size_t level_words[4] = {};
	uint64_t *symgone = nullptr;  /* removed symmetric entries, one bit per fi_addr */
	uint64_t *node_rec = nullptr; /* node table (by-name symmetric ranges) */
	unsigned char *node_blob = nullptr;
	uint64_t max_nodes = 0;
	void *base = nullptr;
	size_t size = 0;
	bool shared = false;
	bool read_only = false;
	std::string shm_name;

	/* Lays the sub-arrays out over base (sizes from max_slots/blob_size). */
	static size_t layout(arena &r, uint64_t max_slots, uint32_t blob_size);
};

inline size_t region_page_up(size_t n)
{
	return (n + 4095) & ~size_t(4095);
}

/* With the default 2^26 private slots the levels above level 0 take 32 +
 * 2048 bytes; level 0 must still start inside the header page so that
 * small AVs (under ~45 Ki entries) touch no bitmap page of their own.
 * Only a performance property: grow the header past this and small AVs
 * pay one more page. */
inline constexpr bool header_page_holds_level0 = ((sizeof(header) + 7) & ~size_t(7)) + 32 + 2048 + 8 <= 4096;
static_assert(header_page_holds_level0, "header too big to share its page with the free bitmap");

inline size_t arena::layout(arena &r, uint64_t max_slots, uint32_t blob_size)
{
	const uintptr_t b = reinterpret_cast<uintptr_t>(r.base);
	r.hdr = reinterpret_cast<header *>(b);
	/* Bitmap levels: level 0 has a bit per block of 64 records, level l+1
	 * a bit per word of level l; the top level is at most 64 words,
	 * scanned directly. */
	uint64_t bits = (max_slots + 63) / 64;
	r.levels = 0;
	do {
		uint64_t words = (bits + 63) / 64;
		r.level_words[r.levels] = words;
		r.levels++;
		bits = words;
	} while (bits > 64 && r.levels < 4);
	/* Smallest level first, packed right after the header: the top
	 * levels and the start of level 0 share the header page (resident
	 * anyway), see header_page_holds_level0. */
	size_t off = (sizeof(header) + 7) & ~size_t(7);
	for (size_t l = r.levels; l-- > 0;) {
		r.freebits[l] = reinterpret_cast<uint64_t *>(b + off);
		off += r.level_words[l] * 8;
	}
	off = region_page_up(off);
	r.rec = reinterpret_cast<uint64_t *>(b + off);
	off += region_page_up(max_slots * 8);
	r.blob = reinterpret_cast<unsigned char *>(b + off);
	off += region_page_up(max_slots * blob_size);
	r.symgone = reinterpret_cast<uint64_t *>(b + off);
	off += region_page_up((max_slots + 63) / 64 * 8);
	r.max_nodes = max_slots / 8 < 4096 ? 4096 : max_slots / 8;
	r.node_rec = reinterpret_cast<uint64_t *>(b + off);
	off += region_page_up(r.max_nodes * 8);
	r.node_blob = reinterpret_cast<unsigned char *>(b + off);
	off += region_page_up(r.max_nodes * blob_size);
	return off;
}

/* Checks every field of a mapped header against the mapping it came in
 * (mapped bytes) and the blob size this opener uses, before anything
 * indexes with them: the object may have been left corrupt by a crash or
 * written by anyone who could open it.  nullptr when sound, else why not
 * (a constant string).  Does not look at the lock or at magic's
 * publication order; h is a private copy or a quiescent mapping. */
const char *validate_header(const header &h, size_t mapped, uint32_t blob_size) noexcept;

} // namespace wu::av

#endif
