/* SPDX-License-Identifier: BSD-3-Clause */
/* What the files of the AV engine share: the AV object, the stored key,
 * arena access, the writers' lock and the writer.  Internal to src/av
 * (other parts include av/av.h): entries.cpp reads and indexes entries,
 * insert.cpp and lookup.cpp hold the fi_ops_av calls, region_map.cpp maps
 * arenas, and av.cpp opens and closes the object and serves endpoints. */
#ifndef WU_AV_AV_IMPL_H
#define WU_AV_AV_IMPL_H

#include <netinet/in.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "av/av.h"
#include "av/arena.h"
#include "core/addr.h"
#include "core/child_ref.h"
#include "core/fid.h"
#include "core/hash.h"
#include "core/owned.h"
#include "core/shim.h"

namespace wu::av::detail {

/* Counters of get_stats() (av.cpp). */
extern std::atomic<uint64_t> n_resolves;
extern std::atomic<uint64_t> n_recoveries;

constexpr uint32_t av_magic = 0x57554156; /* "WUAV" */
/* Auth key handles live in their own fi_addr space. */
constexpr uint64_t auth_handle_bit = uint64_t{1} << 62;
/* Private AVs reserve this many slots (virtual only) unless count asks
 * for more; named AVs reserve less since their shm object is sparse. */
constexpr uint64_t private_slots = uint64_t{1} << 26;
constexpr uint64_t shared_slots = uint64_t{1} << 20;
constexpr uint64_t open_flags_ok = FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID;
constexpr uint64_t insert_flags_ok = FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | FI_AUTH_KEY;

/* An address in canonical stored form: packed, or bytes. */
struct key {
	bool packed = false;
	uint64_t value = 0; /* packed payload */
	size_t len = 0;
	unsigned char bytes[max_blob]; /* first len bytes valid */
	uint64_t hash() const { return packed ? mix64(value) : hash_bytes(bytes, len); }
};

/* ---- the AV object ---- */

/* Removes leave their slots behind (stale): reverse() checks every hit
 * against the record anyway, so a remove costs no index work (it does not
 * even bump ins_gen); the index is rebuilt once stale slots make it too
 * full.  Linear probing; a slot holds fi_addr + 1 in its low idx_bits and
 * hash bits above (tag), so probes past other keys rarely read a record.
 * The table is sized to the entries (not a power of two) to keep it near
 * 6 bytes per entry. */
struct rev_index {
	std::vector<uint32_t> slot; /* 0 empty; else tag | (fi_addr + 1) */
	size_t used = 0;	    /* slots taken, stale ones included */
	size_t limit = 0;	    /* used beyond this: full */
	uint32_t idx_mask = ~uint32_t{0}; /* low bits holding fi_addr + 1 */
	uint64_t gen = ~uint64_t{0}; /* arena ins_gen it reflects; ~0: not built */

	size_t home(uint64_t h) const
	{
		return size_t((static_cast<unsigned __int128>(h) * slot.size()) >> 64);
	}
	uint32_t tag(uint64_t h) const { return uint32_t(h) & ~idx_mask; }
};

/* One reverse index per part of a composite address (av_format::part),
 * kept like rev: stale slots are checked against the entry on use. */
struct part_index {
	rev_index ix[max_parts];
};

struct auth_key_slot {
	std::string key;
	int in_use = 0;
	bool live = false;
};

/* Releases a mapped arena (region_map.cpp): unmaps it, and unlinks a
 * named AV's object when its last writer lets go. */
struct arena_release {
	void operator()(arena *r) const noexcept;
};
using arena_ptr = owned<arena, arena_release>;

/* Standard-layout (fid first): its owning members are owned<>, which stays
 * so under every compiler (core/owned.h). */
struct av_obj {
	fid_av fid; /* first: the C view */
	uint32_t magic;
	prov::domain *dom;
	child_ref parent; /* on dom->children */
	const fi_provider *prov;
	const av_format *fmt;
	arena_ptr reg;
	fi_av_type type;
	uint64_t flags;
	uint64_t idx_mask;
	uint32_t max_group;
	int rx_bits;
	bool is_event;
	bool symmetric;
	bool user_id_av;
	bool auth_av;
	std::atomic<bool> uids_on;
	std::atomic<int> eps;
	/* Removal notices (watch_removes): taken only when nwatch is set. */
	std::atomic<int> nwatch;
	std::mutex watch_mtx;
	std::vector<std::pair<removed_fn, void *>> watchers;
	fid_eq *eq;
	uint64_t *uids;	      /* ~user id per fi_addr (private, lazily mapped) */
	uint32_t *auth_of;    /* auth key handle index + 1 per fi_addr */
	uint64_t slots;       /* arena max_slots (sizes uids, auth_of) */
	size_t max_auth_keys;
	owned<std::mutex> local; /* reverse index, auth keys, resolver */
	owned<rev_index> rev;
	owned<part_index> parts; /* formats with parts only (parts.cpp) */
	owned<std::vector<auth_key_slot>> keys;
	resolver_fn resolver;
	void *resolver_ctx;
	/* fi_av_lookup / addr_of fast path (see lookup_v4): set once at open;
	 * v4_fast is false unless packed records unpack to a sockaddr_in. */
	bool v4_fast;
	const uint64_t *rec;
	const header *hdr;

	~av_obj(); /* unmaps uids and auth_of; the owned members free themselves */
};

inline av_obj *av_of(fid_av *f)
{
	if (!f || f->fid.fclass != FI_CLASS_AV)
		return nullptr;
	av_obj *a = container_of_fid<av_obj>(f);
	return a->magic == av_magic ? a : nullptr;
}

inline av_obj *av_of(fid *f)
{
	return av_of(reinterpret_cast<fid_av *>(f));
}

/* ---- arena access ---- */

inline uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
inline void st(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
inline uint32_t ld32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* A record's blob is rewritten in place while readers may be copying it
 * (they re-read the record word afterwards to spot a torn copy), so both
 * sides move it as relaxed atomic words: a seqlock, race-free to the
 * memory model and to TSan.  Slots are 8-byte aligned, a multiple of 8. */
constexpr size_t blob_words = (max_blob + 4 + 7) / 8;

inline void blob_store(unsigned char *slot, const unsigned char *bytes, uint32_t len)
{
	uint64_t w[blob_words] = {};
	memcpy(w, &len, 4);
	memcpy(reinterpret_cast<unsigned char *>(w) + 4, bytes, len);
	uint64_t *d = reinterpret_cast<uint64_t *>(slot);
	for (size_t i = 0, n = (len + 4 + 7) / 8; i < n; i++)
		__atomic_store_n(&d[i], w[i], __ATOMIC_RELAXED);
}

/* Length of the blob copied into bytes (0 when the slot is garbage). */
inline uint32_t blob_load(const unsigned char *slot, uint32_t slot_size, unsigned char *bytes)
{
	const uint64_t *s = reinterpret_cast<const uint64_t *>(slot);
	uint64_t w[blob_words];
	w[0] = __atomic_load_n(&s[0], __ATOMIC_RELAXED);
	uint32_t len;
	memcpy(&len, w, 4);
	if (len > max_blob || len + 4 > slot_size)
		return 0;
	for (size_t i = 1, n = (len + 4 + 7) / 8; i < n; i++)
		w[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
	memcpy(bytes, reinterpret_cast<const unsigned char *>(w) + 4, len);
	return len;
}

/* ---- entries.cpp ---- */

void set_free(arena &r, uint64_t f);
void clear_block(arena &r, uint64_t b);
uint64_t first_block(const arena &r);
const sym_range *range_of(const arena &r, uint64_t f, uint32_t nranges);
bool sym_gone(const arena &r, uint64_t f);
void recover(arena &r);
bool read_record(const arena &r, uint64_t f, key &k, uint64_t *pending_token);
bool read_sym(const arena &r, const sym_range &s, uint64_t f, key &k);
size_t key_binary(const av_obj *a, const key &k, void *out);
bool lookup_key(av_obj *a, fi_addr_t fa, key &k);
bool entry_key(const arena &r, uint64_t f, key &k);
bool same(const key &x, const key &y);
void rev_sync(av_obj *a);
void set_uid(av_obj *a, uint64_t f, fi_addr_t id);
void set_auth(av_obj *a, uint64_t f, uint32_t handle_plus1);
int decode(const av_obj *a, const void *addr, size_t avail, key &k, size_t *consumed);
int from_parsed(const av_obj *a, const addr::parsed_addr &p, key &k);
int decode_str(const av_obj *a, const char *s, key &k);
int resolve_pending(av_obj *a, uint64_t f, uint64_t token);

/* ---- parts.cpp ---- */

/* Adds entry f (address k) to the part indexes that are live[i]; clears
 * live[i] of an index that is full (rebuilt on next use). */
void parts_add(av_obj *a, uint64_t f, const key &k, bool *live);
/* The format takes no text addresses (text_format 0): logs why for what
 * and returns true. */
bool text_refused(const av_obj *a, const char *what);

/* ---- insert.cpp ---- */

int av_insert_body(av_obj *a, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		   void *context);
int av_insertsvc_body(av_obj *a, const char *node, const char *service, fi_addr_t *fi_addr,
		      uint64_t flags, void *context);
int av_insertsym_body(av_obj *a, const char *node, size_t nodecnt, const char *service,
		      size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context);
uint16_t key_port(const key &k);
void key_set_port(key &k, uint16_t port);

/* ---- lookup.cpp ---- */

int av_remove_body(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags);
int av_lookup_body(av_obj *a, fi_addr_t fi_addr, void *addr, size_t *addrlen);
const char *av_straddr_body(av_obj *a, const void *addr, char *buf, size_t *len);
int av_insert_auth_key_body(av_obj *a, const void *key_bytes, size_t size, fi_addr_t *fi_addr,
			    uint64_t flags);
int av_lookup_auth_key_body(av_obj *a, fi_addr_t fi_addr, void *out, size_t *size);
int av_set_user_id_body(av_obj *a, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags);

/* ---- region_map.cpp ---- */

arena_ptr private_region(uint64_t max_slots, uint32_t blob_size, uint32_t addr_format, fi_av_type type,
			  uint64_t count);
int shared_region(const av_obj *a, const char *name, bool read_only, uint64_t count,
		  uint32_t blob_size, fi_av_type type, void *hint, arena_ptr *out);

/* The writers' lock; a robust mutex in named AVs. */
class wlock {
	arena &r_;

public:
	explicit wlock(arena &r) : r_(r)
	{
		int e = pthread_mutex_lock(&r_.hdr->lock);
		if (e == EOWNERDEAD) {
			recover(r_);
			pthread_mutex_consistent(&r_.hdr->lock);
		} else if (e) {
			throw fi_error(FI_EIO);
		}
	}
	~wlock() { pthread_mutex_unlock(&r_.hdr->lock); }
	wlock(const wlock &) = delete;
	wlock &operator=(const wlock &) = delete;
};

/* fi_addr with rx-context and group bits removed; ~0 when invalid. */
inline uint64_t index_of(const av_obj *a, fi_addr_t f)
{
	if (f == FI_ADDR_NOTAVAIL)
		return ~uint64_t{0};
	f &= a->idx_mask;
	if (f >> 32) {
		uint64_t g = f >> 32;
		if (g > a->max_group)
			return ~uint64_t{0};
		f &= 0xffffffffULL;
	}
	return f;
}

/* The common case of fi_av_lookup and addr_of: a packed IPv4 record,
 * written straight out as a sockaddr_in.  false: take the general path
 * (not a packed record, group/rx bits, FI_ADDR_NOTAVAIL, past end, an AV
 * with symmetric ranges, whose record pages are never touched). */
inline bool lookup_v4(const av_obj *a, fi_addr_t fa, sockaddr_in *out)
{
	uint64_t f = fa & a->idx_mask;
	if ((f >> 32) | (f >= ld(&a->hdr->end)) | (ld32(&a->hdr->nranges) != 0))
		return false;
	uint64_t v = __atomic_load_n(&a->rec[f], __ATOMIC_ACQUIRE);
	if (rec_kind(v) != rec_packed)
		return false;
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(uint16_t(v));
	sin.sin_addr.s_addr = htonl(uint32_t(v >> 16));
	memcpy(out, &sin, sizeof sin);
	return true;
}

/* Adding to the reverse index (built in entries.cpp): inline, since the
 * writer adds every address it stores. */

inline void rev_put(rev_index &ix, uint64_t h, uint64_t f)
{
	size_t n = ix.slot.size();
	size_t i = ix.home(h);
	while (ix.slot[i])
		i = i + 1 == n ? 0 : i + 1;
	ix.slot[i] = ix.tag(h) | uint32_t(f + 1);
	ix.used++;
}

/* The first fi_addr f in h's probe run whose slot carries h's tag and for
 * which is_it(f) holds (a slot may be stale: is_it checks the entry as it is
 * now); FI_ADDR_NOTAVAIL when none. */
template <class IsIt>
fi_addr_t rev_find(const rev_index &ix, uint64_t h, IsIt is_it)
{
	const uint32_t tag = ix.tag(h);
	const size_t n = ix.slot.size();
	for (size_t i = ix.home(h); ix.slot[i]; i = i + 1 == n ? 0 : i + 1) {
		uint32_t v = ix.slot[i];
		if ((v & ~ix.idx_mask) != tag)
			continue;
		uint64_t f = (v & ix.idx_mask) - 1;
		if (is_it(f))
			return f;
	}
	return FI_ADDR_NOTAVAIL;
}

/* Fills ix afresh with every stored entry f whose key keyof(f, k) gives
 * (generators are not indexed), sized for want entries: built at most 2/3
 * full, full (rebuilt) at 7/8.  0 when done; else the capacity that proved
 * too small (concurrent inserts): build again bigger. */
template <class KeyOf>
size_t rev_fill(const arena &r, rev_index &ix, size_t want, KeyOf keyof)
{
	uint64_t gen = ld(&r.hdr->ins_gen);
	uint64_t end = ld(&r.hdr->end);
	size_t cap = std::max<size_t>(64, want + want / 2 + 16);
	uint64_t ms = r.hdr->max_slots;
	unsigned bits = ms ? 64 - unsigned(__builtin_clzll(ms)) : 1; /* holds fi_addr + 1 */
	ix.idx_mask = bits >= 32 ? ~uint32_t{0} : (uint32_t{1} << bits) - 1;
	ix.slot.assign(cap, 0);
	ix.slot.shrink_to_fit();
	ix.used = 0;
	ix.limit = cap - cap / 8;
	uint32_t n = ld32(&r.hdr->nranges);
	for (uint64_t f = 0; f < end; f++) {
		if (n)
			if (const sym_range *s = range_of(r, f, n)) {
				f = s->base + s->count - 1;
				continue;
			}
		key k;
		if (!keyof(f, k))
			continue;
		if (ix.used + 1 > ix.limit)
			return cap;
		rev_put(ix, k.hash(), f);
	}
	ix.gen = gen;
	return 0;
}

/* false when the index is full: it is then rebuilt, bigger, on next use. */
inline bool rev_add(av_obj *a, uint64_t f, const key &k)
{
	rev_index &ix = *a->rev;
	if (ix.used + 1 > ix.limit) {
		ix.gen = ~uint64_t{0};
		return false;
	}
	rev_put(ix, k.hash(), f);
	return true;
}

/* ---- writing entries (caller holds the writer lock) ---- */

struct writer {
	av_obj *a;
	arena &r;
	uint64_t end;	  /* published at finish */
	uint64_t gen0;	  /* ins_gen before this batch */
	bool rev_live;	  /* keep the reverse index in step */
	uint64_t scan = 0; /* free slots below this were taken by this batch */
	bool part_live[max_parts] = {}; /* the same for the part indexes */
	std::unique_lock<std::mutex> rev_lk;

	explicit writer(av_obj *av)
		: a(av), r(*av->reg), end(r.hdr->end), gen0(r.hdr->ins_gen), rev_lk(*av->local)
	{
		rev_live = a->rev->gen == gen0;
		if (a->parts)
			for (int i = 0; i < max_parts; i++)
				part_live[i] = a->parts->ix[i].gen == gen0;
	}

	/* Lowest free slot: the lowest marked block, scanned record by record;
	 * a block found full has its mark cleared (marks are only hints). */
	uint64_t reuse()
	{
		const uint64_t old_end = r.hdr->end;
		const uint32_t n = r.hdr->nranges;
		while (r.hdr->nfree) {
			uint64_t b = first_block(r);
			if (b == ~uint64_t{0})
				break;
			uint64_t hi = std::min(b * 64 + 64, old_end);
			for (uint64_t f = std::max(b * 64, scan); f < hi; f++)
				if (!r.rec[f] && !(n && range_of(r, f, n))) {
					r.hdr->nfree--;
					scan = f + 1;
					return f;
				}
			clear_block(r, b);
		}
		r.hdr->nfree = 0; /* nothing marked: the count was stale */
		return ~uint64_t{0};
	}

	/* A free slot, or ~0 when the AV is full. */
	uint64_t try_alloc()
	{
		if (r.hdr->nfree) {
			uint64_t f = reuse();
			if (f != ~uint64_t{0})
				return f;
		}
		if (end >= r.hdr->max_slots)
			return ~uint64_t{0};
		return end++;
	}

	uint64_t alloc()
	{
		uint64_t f = try_alloc();
		if (f == ~uint64_t{0})
			throw fi_error(FI_ENOSPC);
		return f;
	}

	void bump()
	{
		__atomic_add_fetch(&r.hdr->ins_gen, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&r.hdr->gen, 1, __ATOMIC_RELEASE);
		if (rev_live)
			a->rev->gen = r.hdr->ins_gen;
		if (a->parts)
			for (int i = 0; i < max_parts; i++)
				if (part_live[i])
					a->parts->ix[i].gen = r.hdr->ins_gen;
	}

	/* Writes address k at f and publishes it. */
	void put(uint64_t f, const key &k)
	{
		if (k.packed) {
			st(&r.rec[f], rec_make(rec_packed, k.value));
		} else {
			blob_store(r.blob + f * r.hdr->blob_size, k.bytes, uint32_t(k.len));
			if (test_crash_hook)
				test_crash_hook(1);
			st(&r.rec[f], rec_make(rec_blob, r.hdr->gen + 1));
		}
		if (test_crash_hook)
			test_crash_hook(2);
		if (rev_live && !rev_add(a, f, k))
			rev_live = false;
		if (a->parts)
			parts_add(a, f, k, part_live);
	}

	void finish()
	{
		/* Fault in the free-bitmap pages of the new slots now, so that a
		 * later single remove does not pay a page fault.  Small AVs have
		 * them in the header page. */
		uint64_t old_end = r.hdr->end;
		for (size_t l = 0, sh = 12; l < r.levels && end > old_end; l++, sh += 6) {
			uint64_t w0 = old_end >> sh, w1 = (end - 1) >> sh;
			for (uint64_t w = w0; w <= w1; w += 512)
				__atomic_fetch_or(&r.freebits[l][w], 0, __ATOMIC_RELAXED);
			__atomic_fetch_or(&r.freebits[l][w1], 0, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&r.hdr->end, end, __ATOMIC_RELEASE);
		bump();
	}
};

} // namespace wu::av::detail

#endif
