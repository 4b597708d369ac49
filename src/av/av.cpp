/* The address vector engine: fid_av objects over a region (region.h). */
#include "av/av.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <rdma/fi_eq.h>

#include "av/region.h"
#include "core/addr.h"
#include "core/domain.h"
#include "core/fid.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/shim.h"
#include "core/shm.h"
#include "eq/eq.h"

namespace wu::av {

void (*test_crash_hook)(int point) = nullptr;

namespace {

std::atomic<uint64_t> n_resolves{0};
std::atomic<uint64_t> n_recoveries{0};

constexpr uint32_t av_magic = 0x57554156; /* "WUAV" */
/* Auth key handles live in their own fi_addr space. */
constexpr uint64_t auth_handle_bit = uint64_t{1} << 62;
/* Private AVs reserve this many slots (virtual only) unless count asks
 * for more; named AVs reserve less since their shm object is sparse. */
constexpr uint64_t private_slots = uint64_t{1} << 26;
constexpr uint64_t shared_slots = uint64_t{1} << 20;
constexpr uint64_t open_flags_ok = FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID;
constexpr uint64_t insert_flags_ok = FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | FI_AUTH_KEY;

/* ---- IP address descriptors ---- */

ssize_t validate_in(const void *addr, size_t avail)
{
	sa_family_t fam;
	if (avail < sizeof(sockaddr_in))
		return -FI_EINVAL;
	memcpy(&fam, addr, sizeof fam);
	return fam == AF_INET ? ssize_t(sizeof(sockaddr_in)) : -FI_EINVAL;
}

ssize_t validate_in6(const void *addr, size_t avail)
{
	sa_family_t fam;
	if (avail < sizeof(sockaddr_in6))
		return -FI_EINVAL;
	memcpy(&fam, addr, sizeof fam);
	return fam == AF_INET6 ? ssize_t(sizeof(sockaddr_in6)) : -FI_EINVAL;
}

/* Reads the family first, then only as many bytes as it implies. */
ssize_t validate_sa(const void *addr, size_t avail)
{
	sa_family_t fam;
	if (avail < sizeof fam)
		return -FI_EINVAL;
	memcpy(&fam, addr, sizeof fam);
	if (fam == AF_INET)
		return validate_in(addr, avail);
	if (fam == AF_INET6)
		return validate_in6(addr, avail);
	return -FI_EINVAL;
}

bool pack_in(const void *addr, size_t len, uint64_t *out)
{
	if (len != sizeof(sockaddr_in))
		return false;
	sockaddr_in sin;
	memcpy(&sin, addr, sizeof sin);
	if (sin.sin_family != AF_INET)
		return false;
	*out = uint64_t(ntohl(sin.sin_addr.s_addr)) << 16 | ntohs(sin.sin_port);
	return true;
}

size_t unpack_in(uint64_t v, void *out)
{
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(uint16_t(v & 0xffff));
	sin.sin_addr.s_addr = htonl(uint32_t(v >> 16));
	memcpy(out, &sin, sizeof sin);
	return sizeof sin;
}

const av_format fmt_in = {"sockaddr_in", FI_SOCKADDR_IN, sizeof(sockaddr_in), validate_in,
			  pack_in, unpack_in, FI_SOCKADDR_IN, FI_SOCKADDR_IN};
const av_format fmt_in6 = {"sockaddr_in6", FI_SOCKADDR_IN6, sizeof(sockaddr_in6), validate_in6,
			   nullptr, nullptr, FI_SOCKADDR_IN6, FI_SOCKADDR_IN6};
const av_format fmt_sa = {"sockaddr", FI_SOCKADDR, sizeof(sockaddr_in6), validate_sa,
			  pack_in, unpack_in, FI_SOCKADDR, FI_SOCKADDR};
const av_format fmt_str = {"addr_str", FI_ADDR_STR, sizeof(sockaddr_in6), validate_sa,
			   pack_in, unpack_in, FI_SOCKADDR, FI_SOCKADDR};

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
	uint64_t gen = ~uint64_t{0}; /* region ins_gen it reflects; ~0: not built */

	size_t home(uint64_t h) const
	{
		return size_t((static_cast<unsigned __int128>(h) * slot.size()) >> 64);
	}
	uint32_t tag(uint64_t h) const { return uint32_t(h) & ~idx_mask; }
};

struct auth_key_slot {
	std::string key;
	int in_use = 0;
	bool live = false;
};

struct av_obj {
	fid_av fid; /* first: the C view */
	fi_ops_av *ops_copy;
	uint32_t magic;
	prov::domain *dom;
	const fi_provider *prov;
	const av_format *fmt;
	region *reg;
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
	uint64_t slots;       /* region max_slots (sizes uids, auth_of) */
	size_t max_auth_keys;
	std::mutex *local;    /* reverse index, auth keys, resolver */
	rev_index *rev;
	std::vector<auth_key_slot> *keys;
	resolver_fn resolver;
	void *resolver_ctx;
	/* fi_av_lookup / addr_of fast path (see lookup_v4): set once at open;
	 * v4_fast is false unless packed records unpack to a sockaddr_in. */
	bool v4_fast;
	const uint64_t *rec;
	const header *hdr;
};

av_obj *av_of(fid_av *f)
{
	if (!f || f->fid.fclass != FI_CLASS_AV)
		return nullptr;
	av_obj *a = container_of_fid<av_obj>(f);
	return a->magic == av_magic ? a : nullptr;
}

av_obj *av_of(fid *f)
{
	return av_of(reinterpret_cast<fid_av *>(f));
}

/* ---- region access ---- */

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

/* Marks the block of slot f as possibly holding a free slot. */
void set_free(region &r, uint64_t f)
{
	uint64_t idx = f / 64;
	for (size_t l = 0; l < r.levels; l++) {
		uint64_t w = idx / 64;
		uint64_t bit = uint64_t{1} << (idx % 64);
		uint64_t old = r.freebits[l][w];
		if (old & bit)
			break; /* already marked, and so are the levels above */
		r.freebits[l][w] = old | bit;
		if (old)
			break;
		idx = w;
	}
}

/* Block b holds no free slot. */
void clear_block(region &r, uint64_t b)
{
	uint64_t idx = b;
	for (size_t l = 0; l < r.levels; l++) {
		uint64_t w = idx / 64;
		r.freebits[l][w] &= ~(uint64_t{1} << (idx % 64));
		if (r.freebits[l][w] != 0)
			break;
		idx = w;
	}
}

/* Lowest block that may hold a free slot, or ~0. */
uint64_t first_block(const region &r)
{
	size_t top = r.levels - 1;
	uint64_t idx = ~uint64_t{0};
	for (uint64_t w = 0; w < r.level_words[top]; w++)
		if (r.freebits[top][w]) {
			idx = w * 64 + __builtin_ctzll(r.freebits[top][w]);
			break;
		}
	if (idx == ~uint64_t{0})
		return idx;
	for (size_t l = top; l-- > 0;)
		idx = idx * 64 + __builtin_ctzll(r.freebits[l][idx]);
	return idx;
}

const sym_range *range_of(const region &r, uint64_t f, uint32_t nranges)
{
	for (uint32_t i = 0; i < nranges; i++) {
		const sym_range &s = r.hdr->ranges[i];
		if (f - s.base < s.count)
			return &s;
	}
	return nullptr;
}

bool sym_gone(const region &r, uint64_t f)
{
	if (!__atomic_load_n(&r.hdr->sym_removed, __ATOMIC_ACQUIRE))
		return false;
	return __atomic_load_n(&r.symgone[f / 64], __ATOMIC_ACQUIRE) & (uint64_t{1} << (f % 64));
}

/* Dead writer: entries past end were never handed out, drop them; the
 * bitmap and counters are rebuilt from the published records. */
void recover(region &r)
{
	header &h = *r.hdr;
	uint32_t n = h.nranges;
	uint64_t end = h.end;
	for (uint32_t i = 0; i < n; i++)
		end = std::max(end, h.ranges[i].base + h.ranges[i].count);
	for (uint64_t f = end; f < h.max_slots && r.rec[f]; f++)
		st(&r.rec[f], 0);
	for (size_t l = 0; l < r.levels; l++) {
		uint64_t words = std::min<uint64_t>(r.level_words[l], (end >> (6 * (l + 1))) / 64 + 1);
		memset(r.freebits[l], 0, words * 8);
	}
	uint64_t nfree = 0;
	for (uint64_t f = 0; f < end; f++)
		if (!r.rec[f] && !range_of(r, f, n)) {
			set_free(r, f);
			nfree++;
		}
	h.nfree = nfree;
	__atomic_store_n(&h.end, end, __ATOMIC_RELEASE);
	__atomic_add_fetch(&h.ins_gen, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&h.gen, 1, __ATOMIC_RELEASE);
	n_recoveries++;
}

/* The writers' lock; a robust mutex in named AVs. */
class wlock {
	region &r_;

public:
	explicit wlock(region &r) : r_(r)
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

/* ---- reading entries ---- */

/* Stored address of a record entry into k; false when none. */
bool read_record(const region &r, uint64_t f, key &k, uint64_t *pending_token)
{
	for (;;) {
		uint64_t v = ld(&r.rec[f]);
		switch (rec_kind(v)) {
		case rec_packed:
			k.packed = true;
			k.value = v & payload_mask;
			return true;
		case rec_blob: {
			const unsigned char *b = r.blob + f * r.hdr->blob_size;
			uint32_t len;
			memcpy(&len, b, 4);
			if (len > max_blob || len + 4 > r.hdr->blob_size)
				len = 0;
			k.packed = false;
			k.len = len;
			memcpy(k.bytes, b + 4, len);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&r.rec[f], __ATOMIC_RELAXED) != v)
				continue; /* rewritten while copying */
			return len != 0;
		}
		case rec_pending:
			if (pending_token)
				*pending_token = v & payload_mask;
			return false;
		default:
			return false;
		}
	}
}

/* Address of fi_addr f in a symmetric range. */
bool read_sym(const region &r, const sym_range &s, uint64_t f, key &k)
{
	if (sym_gone(r, f))
		return false;
	uint64_t i = f - s.base;
	uint64_t node = i / s.svccnt;
	uint16_t port = uint16_t(s.port0 + i % s.svccnt);
	if (s.by_name) {
		uint64_t n = s.node_off + node;
		uint64_t v = r.node_rec[n];
		if (rec_kind(v) == rec_packed) {
			k.packed = true;
			k.value = (v & payload_mask & ~uint64_t{0xffff}) | port;
			return true;
		}
		const unsigned char *b = r.node_blob + n * r.hdr->blob_size;
		uint32_t len;
		memcpy(&len, b, 4);
		if (len != sizeof(sockaddr_in6))
			return false;
		sockaddr_in6 s6;
		memcpy(&s6, b + 4, sizeof s6);
		s6.sin6_port = htons(port);
		k.packed = false;
		k.len = sizeof s6;
		memcpy(k.bytes, &s6, sizeof s6);
		return true;
	}
	if (s.family == AF_INET) {
		k.packed = true;
		k.value = uint64_t(uint32_t(s.ip_lo + node)) << 16 | port;
		return true;
	}
	uint64_t lo = s.ip_lo + node;
	uint64_t hi = s.ip_hi + (lo < s.ip_lo ? 1 : 0);
	sockaddr_in6 s6{};
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(port);
	s6.sin6_scope_id = s.scope_id;
	for (int b = 0; b < 8; b++) {
		s6.sin6_addr.s6_addr[b] = uint8_t(hi >> (56 - 8 * b));
		s6.sin6_addr.s6_addr[8 + b] = uint8_t(lo >> (56 - 8 * b));
	}
	k.packed = false;
	k.len = sizeof s6;
	memcpy(k.bytes, &s6, sizeof s6);
	return true;
}

/* The binary address of a key. */
size_t key_binary(const av_obj *a, const key &k, void *out)
{
	if (k.packed)
		return a->fmt->unpack(k.value, out);
	memcpy(out, k.bytes, k.len);
	return k.len;
}

/* fi_addr with rx-context and group bits removed; ~0 when invalid. */
uint64_t index_of(const av_obj *a, fi_addr_t f)
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

int resolve_pending(av_obj *a, uint64_t f, uint64_t token);

/* Entry f into k (resolving a reserved entry when needed). */
bool lookup_key(av_obj *a, fi_addr_t fa, key &k)
{
	uint64_t f = index_of(a, fa);
	region &r = *a->reg;
	if (f >= ld(&r.hdr->end))
		return false;
	uint32_t n = ld32(&r.hdr->nranges);
	if (n)
		if (const sym_range *s = range_of(r, f, n))
			return read_sym(r, *s, f, k);
	uint64_t token = ~uint64_t{0};
	if (read_record(r, f, k, &token))
		return true;
	if (token != ~uint64_t{0} && resolve_pending(a, f, token) == 0)
		return read_record(r, f, k, nullptr);
	return false;
}

/* ---- reverse index ---- */

bool entry_key(const region &r, uint64_t f, key &k)
{
	return read_record(r, f, k, nullptr);
}

bool same(const key &x, const key &y)
{
	if (x.packed != y.packed)
		return false;
	if (x.packed)
		return x.value == y.value;
	return x.len == y.len && memcmp(x.bytes, y.bytes, x.len) == 0;
}

void rev_put(rev_index &ix, uint64_t h, uint64_t f)
{
	size_t n = ix.slot.size();
	size_t i = ix.home(h);
	while (ix.slot[i])
		i = i + 1 == n ? 0 : i + 1;
	ix.slot[i] = ix.tag(h) | uint32_t(f + 1);
	ix.used++;
}

void rev_build(av_obj *a, size_t want)
{
	region &r = *a->reg;
	rev_index &ix = *a->rev;
	uint64_t gen = ld(&r.hdr->ins_gen);
	uint64_t end = ld(&r.hdr->end);
	/* Built at most 2/3 full; full (rebuilt) at 7/8. */
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
				f = s->base + s->count - 1; /* generators are not indexed */
				continue;
			}
		key k;
		if (!entry_key(r, f, k))
			continue;
		if (ix.used + 1 > ix.limit) {
			/* More entries than counted (concurrent inserts): start over bigger. */
			rev_build(a, 2 * cap);
			return;
		}
		rev_put(ix, k.hash(), f);
	}
	ix.gen = gen;
}

/* Caller holds a->local.  Brings the index up to date with the region. */
void rev_sync(av_obj *a)
{
	rev_index &ix = *a->rev;
	if (ix.gen == ld(&a->reg->hdr->ins_gen))
		return;
	const header &h = *a->reg->hdr;
	uint64_t in_ranges = 0;
	uint32_t n = ld32(&h.nranges);
	for (uint32_t i = 0; i < n; i++)
		in_ranges += h.ranges[i].count;
	uint64_t live = ld(&h.end) - std::min(in_ranges, ld(&h.end));
	live -= std::min(live, __atomic_load_n(&h.nfree, __ATOMIC_RELAXED));
	rev_build(a, live);
}

/* false when the index is full: it is then rebuilt, bigger, on next use. */
bool rev_add(av_obj *a, uint64_t f, const key &k)
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
	region &r;
	uint64_t end;	  /* published at finish */
	uint64_t gen0;	  /* ins_gen before this batch */
	bool rev_live;	  /* keep the reverse index in step */
	uint64_t scan = 0; /* free slots below this were taken by this batch */
	std::unique_lock<std::mutex> rev_lk;

	explicit writer(av_obj *av)
		: a(av), r(*av->reg), end(r.hdr->end), gen0(r.hdr->ins_gen), rev_lk(*av->local)
	{
		rev_live = a->rev->gen == gen0;
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
	}

	/* Writes address k at f and publishes it. */
	void put(uint64_t f, const key &k)
	{
		if (k.packed) {
			st(&r.rec[f], rec_make(rec_packed, k.value));
		} else {
			unsigned char *b = r.blob + f * r.hdr->blob_size;
			uint32_t len = uint32_t(k.len);
			memcpy(b, &len, 4);
			memcpy(b + 4, k.bytes, k.len);
			if (test_crash_hook)
				test_crash_hook(1);
			st(&r.rec[f], rec_make(rec_blob, r.hdr->gen + 1));
		}
		if (test_crash_hook)
			test_crash_hook(2);
		if (rev_live && !rev_add(a, f, k))
			rev_live = false;
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

/* ---- user ids and auth keys (per process) ---- */

template <class T>
T *lazy_array(T *&p, uint64_t n)
{
	if (!p) {
		void *m = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			throw std::bad_alloc();
		p = static_cast<T *>(m);
	}
	return p;
}

void set_uid(av_obj *a, uint64_t f, fi_addr_t id)
{
	lazy_array(a->uids, a->reg->hdr->max_slots);
	__atomic_store_n(&a->uids[f], ~id, __ATOMIC_RELAXED);
	a->uids_on.store(true, std::memory_order_release);
}

void set_auth(av_obj *a, uint64_t f, uint32_t handle_plus1)
{
	if (!a->auth_of && !handle_plus1)
		return;
	lazy_array(a->auth_of, a->reg->hdr->max_slots)[f] = handle_plus1;
}

/* ---- address decoding from the application ---- */

/* One application address to a key. */
int decode(const av_obj *a, const void *addr, size_t avail, key &k, size_t *consumed)
{
	ssize_t len = a->fmt->validate(addr, avail);
	if (len < 0)
		return int(len);
	if (size_t(len) > max_blob || size_t(len) > a->fmt->max_addrlen)
		return -FI_EINVAL;
	*consumed = size_t(len);
	uint64_t v;
	if (a->fmt->pack && a->fmt->pack(addr, size_t(len), &v)) {
		k.packed = true;
		k.value = v;
		return 0;
	}
	k.packed = false;
	k.len = size_t(len);
	memcpy(k.bytes, addr, k.len);
	return 0;
}

int from_parsed(const av_obj *a, const addr::parsed_addr &p, key &k)
{
	if (p.format == FI_ADDR_STR)
		return -FI_EINVAL;
	size_t used;
	return decode(a, p.bin.raw, p.len, k, &used);
}

/* An FI_ADDR_STR string to a key. */
int decode_str(const av_obj *a, const char *s, key &k)
{
	if (!s)
		return -FI_EINVAL;
	addr::parsed_addr p;
	size_t n = strnlen(s, addr::max_str_len + 1);
	if (int r = addr::parse_str(std::string_view(s, n), p))
		return r;
	bool ip = p.format == FI_SOCKADDR || p.format == FI_SOCKADDR_IN || p.format == FI_SOCKADDR_IN6;
	if (!ip)
		return -FI_EINVAL;
	return from_parsed(a, p, k);
}

/* ---- insert core ---- */

/* Result of one batch: per-address status (0 or positive FI_E*). */
struct batch {
	std::vector<key> keys;
	std::vector<int> err;
};

int report(av_obj *a, const batch &b, const std::vector<fi_addr_t> &out, fi_addr_t *fi_addr,
	   uint64_t flags, void *context)
{
	size_t n = b.err.size();
	int ok = 0;
	for (size_t i = 0; i < n; i++) {
		if (fi_addr)
			fi_addr[i] = b.err[i] ? FI_ADDR_NOTAVAIL : out[i];
		if (!b.err[i])
			ok++;
	}
	if (a->is_event) {
		for (size_t i = 0; i < n; i++) {
			if (!b.err[i])
				continue;
			fi_eq_err_entry e{};
			e.fid = &a->fid.fid;
			e.context = context;
			e.data = i;
			e.err = b.err[i];
			eq_post_error(a->eq, &e);
		}
		eq_post_entry(a->eq, FI_AV_COMPLETE, &a->fid.fid, context, uint64_t(ok));
		return 0;
	}
	if (flags & FI_SYNC_ERR) {
		int *st = static_cast<int *>(context);
		for (size_t i = 0; i < n; i++)
			st[i] = b.err[i];
	}
	return ok;
}

/* A synchronous insert returns how many it stored as an int: a count
 * that cannot be returned is refused before anything is stored. */
int check_count(const av_obj *a, uint64_t count, const char *what)
{
	if (!a->is_event && count > uint64_t(INT_MAX)) {
		WU_WARN(a->prov, FI_LOG_AV,
			"%s: %llu addresses in one call; a synchronous AV returns the count stored as an int (at most %d)\n",
			what, (unsigned long long)count, INT_MAX);
		return -FI_EINVAL;
	}
	return 0;
}

/* Checks the flags shared by every insert call; fills ids from fi_addr. */
int check_insert(av_obj *a, uint64_t flags, fi_addr_t *fi_addr, void *context, const char *what)
{
	if (flags & ~insert_flags_ok) {
		WU_WARN(a->prov, FI_LOG_AV, "%s: flags 0x%llx are not insert flags\n", what,
			(unsigned long long)(flags & ~insert_flags_ok));
		return -FI_EBADFLAGS;
	}
	if (a->reg->read_only) {
		WU_WARN(a->prov, FI_LOG_AV, "%s: the AV was opened read-only (FI_READ)\n", what);
		return -FI_EACCES;
	}
	if (a->is_event && !a->eq) {
		WU_WARN(a->prov, FI_LOG_AV, "%s: the AV was opened with FI_EVENT; bind an EQ first\n", what);
		return -FI_ENOEQ;
	}
	if ((flags & FI_SYNC_ERR) && (a->is_event || !context)) {
		WU_WARN(a->prov, FI_LOG_AV, "%s: FI_SYNC_ERR needs a synchronous AV and an int array as context\n",
			what);
		return -FI_EINVAL;
	}
	if (flags & FI_AV_USER_ID) {
		if (a->user_id_av || a->auth_av || !fi_addr) {
			WU_WARN(a->prov, FI_LOG_AV,
				"%s: FI_AV_USER_ID per insert needs an fi_addr array, an AV opened without FI_AV_USER_ID and a domain without FI_AV_AUTH_KEY\n",
				what);
			return -FI_EINVAL;
		}
	}
	if (flags & FI_AUTH_KEY) {
		if (!a->auth_av || !fi_addr) {
			WU_WARN(a->prov, FI_LOG_AV,
				"%s: FI_AUTH_KEY needs a domain opened with auth_key_size FI_AV_AUTH_KEY and the key handles in fi_addr\n",
				what);
			return -FI_EINVAL;
		}
	}
	return 0;
}

uint64_t r_max_slots(const av_obj *a)
{
	return a->reg->hdr->max_slots;
}

/* Stores every decoded key of b (err[i] == 0), writing fi_addrs to out;
 * those that find the AV full get err FI_ENOSPC. */
void store_batch(av_obj *a, batch &b, std::vector<fi_addr_t> &out, const fi_addr_t *in,
		 uint64_t flags)
{
	size_t n = b.keys.size();
	out.assign(n, FI_ADDR_NOTAVAIL);
	std::vector<uint32_t> auth(n, 0);
	if (flags & FI_AUTH_KEY) {
		std::lock_guard<std::mutex> g(*a->local);
		for (size_t i = 0; i < n; i++) {
			uint64_t h = in[i];
			uint64_t idx = h & ~auth_handle_bit;
			if (b.err[i])
				continue;
			if (!(h & auth_handle_bit) || idx >= a->keys->size() || !(*a->keys)[idx].live)
				b.err[i] = FI_EINVAL;
			else
				auth[i] = uint32_t(idx + 1);
		}
	}
	wlock lk(*a->reg);
	writer w(a);
	bool full = false;
	for (size_t i = 0; i < n; i++) {
		if (b.err[i])
			continue;
		/* A full AV fails the rest of the batch address by address: what
		 * was stored stays stored and is reported (fi_av(3)). */
		uint64_t f = full ? ~uint64_t{0} : w.try_alloc();
		if (f == ~uint64_t{0}) {
			if (!full)
				WU_WARN(a->prov, FI_LOG_AV, "fi_av_insert: the AV is full (%llu entries); address %zu and later not inserted\n",
					(unsigned long long)r_max_slots(a), i);
			full = true;
			b.err[i] = FI_ENOSPC;
			continue;
		}
		w.put(f, b.keys[i]);
		out[i] = f;
		if (flags & FI_AV_USER_ID)
			set_uid(a, f, in[i]);
		else if (a->uids)
			__atomic_store_n(&a->uids[f], 0, __ATOMIC_RELAXED);
		set_auth(a, f, auth[i]);
	}
	w.finish();
}

int insert_batch(av_obj *a, batch &b, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	std::vector<fi_addr_t> in;
	if (flags & (FI_AV_USER_ID | FI_AUTH_KEY))
		in.assign(fi_addr, fi_addr + b.keys.size());
	std::vector<fi_addr_t> out;
	store_batch(a, b, out, in.data(), flags);
	return report(a, b, out, fi_addr, flags, context);
}


/* The bulk IPv4 path: decode and store in one pass, no staging. */
int insert_v4_bulk(av_obj *a, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		   void *context)
{
	int ok = 0;
	int *sync = (flags & FI_SYNC_ERR) ? static_cast<int *>(context) : nullptr;
	auto *p = static_cast<const unsigned char *>(addr);
	wlock lk(*a->reg);
	writer w(a);
	for (size_t i = 0; i < count; i++) {
		sockaddr_in sin;
		memcpy(&sin, p + i * sizeof(sockaddr_in), sizeof sin);
		if (sin.sin_family != AF_INET) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (sync)
				sync[i] = FI_EINVAL;
			WU_WARN_SPARSE(a->prov, FI_LOG_AV, "fi_av_insert: address %zu is not AF_INET\n", i);
			continue;
		}
		key k;
		k.packed = true;
		k.value = uint64_t(ntohl(sin.sin_addr.s_addr)) << 16 | ntohs(sin.sin_port);
		uint64_t f = w.try_alloc();
		if (f == ~uint64_t{0}) {
			/* Full: the rest is not inserted, and says so. */
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_insert: the AV is full (%llu entries); address %zu and later not inserted\n",
				(unsigned long long)r_max_slots(a), i);
			for (size_t j = i; j < count; j++) {
				if (fi_addr)
					fi_addr[j] = FI_ADDR_NOTAVAIL;
				if (sync)
					sync[j] = FI_ENOSPC;
			}
			break;
		}
		w.put(f, k);
		if (a->uids)
			__atomic_store_n(&a->uids[f], 0, __ATOMIC_RELAXED);
		if (a->auth_of)
			a->auth_of[f] = 0;
		if (fi_addr)
			fi_addr[i] = f;
		if (sync)
			sync[i] = 0;
		ok++;
	}
	w.finish();
	return ok;
}

int av_insert_body(av_obj *a, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		   void *context)
{
	if (int r = check_insert(a, flags, fi_addr, context, "fi_av_insert"))
		return r;
	if (count && !addr)
		return -FI_EINVAL;
	if (int r = check_count(a, count, "fi_av_insert"))
		return r;
	if (a->fmt->addr_format == FI_SOCKADDR_IN && a->fmt->pack && !a->is_event &&
	    !(flags & (FI_AV_USER_ID | FI_AUTH_KEY)))
		return insert_v4_bulk(a, addr, count, fi_addr, flags, context);
	batch b;
	b.keys.resize(count);
	b.err.assign(count, 0);
	if (a->fmt->addr_format == FI_ADDR_STR) {
		auto *strs = static_cast<const char *const *>(addr);
		for (size_t i = 0; i < count; i++)
			if (int r = decode_str(a, strs[i], b.keys[i]))
				b.err[i] = -r;
	} else if (a->fmt->addr_format == FI_SOCKADDR) {
		/* Variable-length sockaddrs, back to back. */
		auto *p = static_cast<const unsigned char *>(addr);
		for (size_t i = 0; i < count; i++) {
			size_t used = 0;
			if (int r = decode(a, p, sizeof(sockaddr_in6), b.keys[i], &used)) {
				for (size_t j = i; j < count; j++)
					b.err[j] = -r; /* the next one cannot be found */
				break;
			}
			p += used;
		}
	} else {
		auto *p = static_cast<const unsigned char *>(addr);
		const size_t stride = a->fmt->max_addrlen;
		for (size_t i = 0; i < count; i++) {
			size_t used;
			if (int r = decode(a, p + i * stride, stride, b.keys[i], &used))
				b.err[i] = -r;
		}
	}
	for (size_t i = 0; i < count; i++)
		if (b.err[i])
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_insert: address %zu rejected: %s\n", i,
				fi_strerror(b.err[i]));
	return insert_batch(a, b, fi_addr, flags, context);
}

int resolve_node(const av_obj *a, const char *node, const char *service, key &k)
{
	addr::parsed_addr p;
	n_resolves++;
	if (int r = addr::parse_node_service(node, service, 0, a->fmt->text_format, p))
		return r;
	return from_parsed(a, p, k);
}

int av_insertsvc_body(av_obj *a, const char *node, const char *service, fi_addr_t *fi_addr,
		      uint64_t flags, void *context)
{
	if (int r = check_insert(a, flags, fi_addr, context, "fi_av_insertsvc"))
		return r;
	if (!node) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsvc: node is NULL\n");
		return -FI_EINVAL;
	}
	if (!service && !strstr(node, "://")) {
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_insertsvc: service is NULL; only an FI_ADDR_STR node (scheme://...) may omit it\n");
		return -FI_EINVAL;
	}
	batch b;
	b.keys.resize(1);
	b.err.assign(1, 0);
	if (int r = resolve_node(a, node, service, b.keys[0]))
		b.err[0] = -r;
	return insert_batch(a, b, fi_addr, flags, context);
}

/* Port of a key (host order). */
uint16_t key_port(const key &k)
{
	if (k.packed)
		return uint16_t(k.value & 0xffff);
	sockaddr_in6 s6;
	memcpy(&s6, k.bytes, sizeof s6);
	return ntohs(s6.sin6_port);
}

void key_set_port(key &k, uint16_t port)
{
	if (k.packed) {
		k.value = (k.value & ~uint64_t{0xffff}) | port;
		return;
	}
	sockaddr_in6 s6;
	memcpy(&s6, k.bytes, sizeof s6);
	s6.sin6_port = htons(port);
	memcpy(k.bytes, &s6, sizeof s6);
}

/* A numeric IPv4/IPv6 literal (checked quietly: names are normal here). */
bool is_numeric_node(const char *node)
{
	unsigned char buf[16];
	std::string n = node;
	if (!n.empty() && n.front() == '[' && n.back() == ']')
		n = n.substr(1, n.size() - 2);
	n = n.substr(0, n.find('%'));
	return inet_pton(AF_INET, n.c_str(), buf) == 1 || inet_pton(AF_INET6, n.c_str(), buf) == 1;
}

/* Node names of an insertsym call; -FI_EINVAL when a name cannot count up. */
int node_names(const char *node, size_t nodecnt, std::vector<std::string> &names)
{
	names.clear();
	names.reserve(nodecnt);
	std::string cur = node;
	for (size_t i = 0; i < nodecnt; i++) {
		if (i)
			if (int r = addr::next_node(cur))
				return r;
		names.push_back(cur);
	}
	return 0;
}

/* Symmetric AV, numeric node: one generator, no per-address storage. */
int sym_numeric(av_obj *a, const key &first, size_t nodecnt, size_t svccnt, uint64_t *base)
{
	sym_range s{};
	s.nodecnt = uint32_t(nodecnt);
	s.svccnt = uint32_t(svccnt);
	s.count = uint64_t(nodecnt) * svccnt;
	s.port0 = key_port(first);
	if (first.packed) {
		s.family = AF_INET;
		s.ip_lo = first.value >> 16;
		if (s.ip_lo + nodecnt - 1 > 0xffffffffULL)
			return -FI_EOVERFLOW;
	} else {
		sockaddr_in6 s6;
		memcpy(&s6, first.bytes, sizeof s6);
		s.family = AF_INET6;
		s.scope_id = s6.sin6_scope_id;
		for (int b = 0; b < 8; b++) {
			s.ip_hi = s.ip_hi << 8 | s6.sin6_addr.s6_addr[b];
			s.ip_lo = s.ip_lo << 8 | s6.sin6_addr.s6_addr[8 + b];
		}
		if (s.ip_hi == ~uint64_t{0} && s.ip_lo + (nodecnt - 1) < s.ip_lo)
			return -FI_EOVERFLOW;
	}
	region &r = *a->reg;
	wlock lk(r);
	header &h = *r.hdr;
	if (h.nranges >= max_ranges)
		return -FI_ENOSPC;
	if (h.end + s.count > h.max_slots)
		return -FI_ENOSPC;
	s.base = h.end;
	h.ranges[h.nranges] = s;
	__atomic_store_n(&h.nranges, h.nranges + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h.end, s.base + s.count, __ATOMIC_RELEASE);
	__atomic_add_fetch(&h.gen, 1, __ATOMIC_RELEASE);
	*base = s.base;
	return 0;
}

/* Symmetric AV, named nodes: one node table entry per node. */
int sym_named(av_obj *a, const std::vector<key> &nodes, size_t svccnt, uint16_t port0,
	      uint64_t *base)
{
	region &r = *a->reg;
	wlock lk(r);
	header &h = *r.hdr;
	uint64_t count = uint64_t(nodes.size()) * svccnt;
	if (h.nranges >= max_ranges || h.node_bump + nodes.size() > r.max_nodes ||
	    h.end + count > h.max_slots)
		return -FI_ENOSPC;
	sym_range s{};
	s.nodecnt = uint32_t(nodes.size());
	s.svccnt = uint32_t(svccnt);
	s.count = count;
	s.port0 = port0;
	s.by_name = 1;
	s.node_off = h.node_bump;
	for (size_t i = 0; i < nodes.size(); i++) {
		uint64_t n = s.node_off + i;
		if (nodes[i].packed) {
			r.node_rec[n] = rec_make(rec_packed, nodes[i].value);
		} else {
			unsigned char *b = r.node_blob + n * h.blob_size;
			uint32_t len = uint32_t(nodes[i].len);
			memcpy(b, &len, 4);
			memcpy(b + 4, nodes[i].bytes, len);
			r.node_rec[n] = rec_make(rec_blob, 0);
		}
	}
	h.node_bump += nodes.size();
	s.base = h.end;
	h.ranges[h.nranges] = s;
	__atomic_store_n(&h.nranges, h.nranges + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h.end, s.base + s.count, __ATOMIC_RELEASE);
	__atomic_add_fetch(&h.gen, 1, __ATOMIC_RELEASE);
	*base = s.base;
	return 0;
}

int av_insertsym_body(av_obj *a, const char *node, size_t nodecnt, const char *service,
		      size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (int r = check_insert(a, flags, fi_addr, context, "fi_av_insertsym"))
		return r;
	if (!node || !service) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsym: node and service are both required\n");
		return -FI_EINVAL;
	}
	if (nodecnt > UINT32_MAX || svccnt > 65536 || nodecnt * svccnt > a->reg->hdr->max_slots) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsym: %zu x %zu addresses is too many\n", nodecnt,
			svccnt);
		return -FI_EINVAL;
	}
	if (int r = check_count(a, uint64_t(nodecnt) * svccnt, "fi_av_insertsym"))
		return r;
	if (a->symmetric && nodecnt && svccnt && !(flags & (FI_AV_USER_ID | FI_AUTH_KEY))) {
		/* A numeric base node needs no per-node work at all. */
		addr::parsed_addr p;
		key first;
		if (is_numeric_node(node) &&
		    addr::parse_node_service(node, service, FI_NUMERICHOST, a->fmt->text_format, p) == 0 &&
		    from_parsed(a, p, first) == 0 && size_t(key_port(first)) + svccnt - 1 <= 65535) {
			n_resolves++;
			uint64_t base = 0;
			int r = sym_numeric(a, first, nodecnt, svccnt, &base);
			if (r == 0) {
				const size_t total = nodecnt * svccnt;
				if (fi_addr)
					for (size_t i = 0; i < total; i++)
						fi_addr[i] = base + i;
				if (a->is_event) {
					eq_post_entry(a->eq, FI_AV_COMPLETE, &a->fid.fid, context, total);
					return 0;
				}
				if (flags & FI_SYNC_ERR)
					memset(context, 0, total * sizeof(int));
				return int(total);
			}
			if (r != -FI_ENOSPC)
				return r;
		}
	}
	std::vector<std::string> names;
	if (int r = node_names(node, nodecnt, names)) {
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_insertsym: cannot count %zu nodes up from \"%.64s\" (a host name needs a numeric suffix)\n",
			nodecnt, node);
		return r;
	}
	/* Names resolve once per node; ports are arithmetic from the first. */
	std::vector<key> nodes(nodecnt);
	std::vector<int> node_err(nodecnt, 0);
	bool numeric = false;
	for (size_t i = 0; i < nodecnt; i++) {
		if (i == 0) {
			numeric = is_numeric_node(names[0].c_str());
		}
		if (numeric && i > 0 && a->symmetric)
			break; /* the generator needs only the first */
		if (int r = resolve_node(a, names[i].c_str(), service, nodes[i]))
			node_err[i] = -r;
	}
	uint16_t port0 = 0;
	bool have_port = false;
	for (size_t i = 0; i < nodecnt && !have_port; i++)
		if (!node_err[i]) {
			port0 = key_port(nodes[i]);
			have_port = true;
		}
	if (have_port && size_t(port0) + svccnt - 1 > 65535) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsym: ports %u + %zu pass 65535\n", port0, svccnt);
		return -FI_EINVAL;
	}
	const size_t total = nodecnt * svccnt;
	bool all_ok = std::find_if(node_err.begin(), node_err.end(), [](int e) { return e != 0; }) ==
		      node_err.end();
	if (a->symmetric && total && all_ok && !(flags & (FI_AV_USER_ID | FI_AUTH_KEY)) &&
	    a->reg->hdr->nranges < max_ranges) {
		uint64_t base = 0;
		int r = numeric ? sym_numeric(a, nodes[0], nodecnt, svccnt, &base)
				: sym_named(a, nodes, svccnt, port0, &base);
		if (r == 0) {
			batch b;
			b.err.assign(total, 0);
			std::vector<fi_addr_t> out(total);
			for (size_t i = 0; i < total; i++)
				out[i] = base + i;
			return report(a, b, out, fi_addr, flags & ~FI_AV_USER_ID, context);
		}
		if (r != -FI_ENOSPC)
			return r;
		/* No room for another generator: store the addresses one by one. */
	}
	if (numeric && a->symmetric)
		for (size_t i = 1; i < nodecnt; i++)
			if (int r = resolve_node(a, names[i].c_str(), service, nodes[i]))
				node_err[i] = -r;
	batch b;
	b.keys.resize(total);
	b.err.assign(total, 0);
	for (size_t n = 0; n < nodecnt; n++)
		for (size_t s = 0; s < svccnt; s++) {
			size_t i = n * svccnt + s;
			if (node_err[n]) {
				b.err[i] = node_err[n];
				continue;
			}
			b.keys[i] = nodes[n];
			key_set_port(b.keys[i], uint16_t(port0 + s));
		}
	return insert_batch(a, b, fi_addr, flags, context);
}

/* ---- remove ---- */

int remove_auth_keys(av_obj *a, const fi_addr_t *fi_addr, size_t count)
{
	std::lock_guard<std::mutex> g(*a->local);
	for (size_t i = 0; i < count; i++) {
		uint64_t idx = fi_addr[i] & ~auth_handle_bit;
		if (!(fi_addr[i] & auth_handle_bit) || idx >= a->keys->size() || !(*a->keys)[idx].live)
			return -FI_EINVAL;
		if ((*a->keys)[idx].in_use) {
			WU_WARN(a->prov, FI_LOG_AV,
				"fi_av_remove: auth key handle %zu is used by %d enabled endpoint(s)\n",
				size_t(idx), (*a->keys)[idx].in_use);
			return -FI_EBUSY;
		}
	}
	for (size_t i = 0; i < count; i++) {
		auth_key_slot &k = (*a->keys)[fi_addr[i] & ~auth_handle_bit];
		k.live = false;
		k.key.clear();
	}
	return 0;
}

int av_remove_entries(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags,
		      std::vector<fi_addr_t> *gone);

/* Removes, then tells the endpoints that watch (outside the region lock). */
int av_remove_body(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	if (flags || a->nwatch.load(std::memory_order_acquire) == 0)
		return av_remove_entries(a, fi_addr, count, flags, nullptr);
	std::vector<fi_addr_t> gone;
	int ret = av_remove_entries(a, fi_addr, count, flags, &gone);
	std::lock_guard<std::mutex> g(a->watch_mtx);
	for (fi_addr_t f : gone)
		for (auto &w : a->watchers)
			w.first(w.second, f);
	return ret;
}

int av_remove_entries(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags,
		      std::vector<fi_addr_t> *gone)
{
	if (flags & ~uint64_t(FI_AUTH_KEY)) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_remove: flags 0x%llx are not supported\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (count && !fi_addr)
		return -FI_EINVAL;
	if (flags & FI_AUTH_KEY)
		return remove_auth_keys(a, fi_addr, count);
	if (a->reg->read_only)
		return -FI_EACCES;
	region &r = *a->reg;
	int ret = 0;
	/* No writer here: a remove leaves the reverse index alone (stale slots
	 * are checked on use), so it needs neither a->local nor ins_gen. */
	wlock lk(r);
	const uint64_t end = r.hdr->end;
	const uint32_t nranges = r.hdr->nranges;
	for (size_t i = 0; i < count; i++) {
		if (fi_addr[i] & auth_handle_bit) {
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_remove: 0x%llx is an auth key handle; pass FI_AUTH_KEY\n",
				(unsigned long long)fi_addr[i]);
			ret = -FI_EINVAL;
			continue;
		}
		uint64_t f = index_of(a, fi_addr[i]);
		if (f >= end) {
			ret = -FI_EINVAL;
			continue;
		}
		if (const sym_range *s = nranges ? range_of(r, f, nranges) : nullptr) {
			(void)s;
			if (sym_gone(r, f)) {
				ret = -FI_EINVAL;
				continue;
			}
			__atomic_or_fetch(&r.symgone[f / 64], uint64_t{1} << (f % 64), __ATOMIC_RELEASE);
			__atomic_store_n(&r.hdr->sym_removed, 1, __ATOMIC_RELEASE);
			if (a->uids)
				a->uids[f] = 0;
			if (gone)
				gone->push_back(fi_addr[i]);
			continue;
		}
		if (!r.rec[f]) {
			ret = -FI_EINVAL;
			continue;
		}
		st(&r.rec[f], 0);
		set_free(r, f);
		r.hdr->nfree++;
		if (a->uids)
			a->uids[f] = 0;
		if (a->auth_of)
			a->auth_of[f] = 0;
		if (gone)
			gone->push_back(fi_addr[i]);
	}
	__atomic_add_fetch(&r.hdr->gen, 1, __ATOMIC_RELEASE);
	return ret;
}

/* ---- lookup / straddr ---- */

int av_lookup_body(av_obj *a, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	/* Fast path: a packed IPv4 record in an AV without generators. */
	const region &r = *a->reg;
	uint64_t f = index_of(a, fi_addr);
	if (a->fmt->addr_format != FI_ADDR_STR && f < ld(&r.hdr->end) && !ld32(&r.hdr->nranges)) {
		uint64_t v = ld(&r.rec[f]);
		if (rec_kind(v) == rec_packed) {
			sockaddr_in sin;
			size_t len = a->fmt->unpack(v & payload_mask, &sin);
			memcpy(addr, &sin, std::min(*addrlen, len));
			*addrlen = len;
			return 0;
		}
	}
	key k;
	if (!lookup_key(a, fi_addr, k))
		return -FI_EINVAL;
	unsigned char bin[max_blob];
	size_t len = key_binary(a, k, bin);
	if (a->fmt->addr_format == FI_ADDR_STR) {
		char text[256];
		ssize_t n = addr::format(a->fmt->print_format, bin, len, text, sizeof text);
		if (n < 0)
			return int(n);
		size_t need = size_t(n);
		if (*addrlen) {
			size_t c = std::min(*addrlen, need);
			memcpy(addr, text, c);
			if (c < need)
				static_cast<char *>(addr)[c - 1] = '\0';
		}
		*addrlen = need;
		return 0;
	}
	memcpy(addr, bin, std::min(*addrlen, len));
	*addrlen = len;
	return 0;
}

const char *av_straddr_body(av_obj *a, const void *addr, char *buf, size_t *len)
{
	if (!len || !addr)
		return nullptr;
	if (a->fmt->addr_format == FI_ADDR_STR) {
		auto *s = static_cast<const char *>(addr);
		size_t need = strnlen(s, addr::max_str_len) + 1;
		if (*len && buf) {
			size_t c = std::min(*len, need);
			memcpy(buf, s, c - 1);
			buf[c - 1] = '\0';
		}
		*len = need;
		return buf;
	}
	ssize_t alen = a->fmt->validate(addr, a->fmt->max_addrlen);
	if (alen < 0)
		return nullptr;
	ssize_t n = addr::format(a->fmt->print_format, addr, size_t(alen), buf, buf ? *len : 0);
	if (n < 0)
		return nullptr;
	*len = size_t(n);
	return buf;
}

/* ---- auth keys and user ids ---- */

int av_insert_auth_key_body(av_obj *a, const void *key_bytes, size_t size, fi_addr_t *fi_addr,
			    uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (!a->auth_av) {
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_insert_auth_key: open the domain with domain_attr->auth_key_size = FI_AV_AUTH_KEY\n");
		return -FI_EINVAL;
	}
	if (!key_bytes || !size || !fi_addr || size > 4096)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(*a->local);
	std::vector<auth_key_slot> &keys = *a->keys;
	size_t idx = 0, live = 0;
	while (idx < keys.size() && keys[idx].live)
		idx++;
	for (auto &k : keys)
		live += k.live;
	if (live >= a->max_auth_keys) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insert_auth_key: max_ep_auth_key (%zu) keys already inserted\n",
			a->max_auth_keys);
		return -FI_ENOSPC;
	}
	if (idx == keys.size())
		keys.emplace_back();
	keys[idx].key.assign(static_cast<const char *>(key_bytes), size);
	keys[idx].live = true;
	keys[idx].in_use = 0;
	*fi_addr = auth_handle_bit | idx;
	return 0;
}

int av_lookup_auth_key_body(av_obj *a, fi_addr_t fi_addr, void *out, size_t *size)
{
	if (!size || (*size && !out))
		return -FI_EINVAL;
	if (!a->auth_av)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(*a->local);
	uint64_t idx;
	if (fi_addr & auth_handle_bit) {
		idx = fi_addr & ~auth_handle_bit;
	} else {
		uint64_t f = index_of(a, fi_addr);
		if (f >= ld(&a->reg->hdr->end) || !a->auth_of || !a->auth_of[f])
			return -FI_EINVAL;
		idx = a->auth_of[f] - 1;
	}
	if (idx >= a->keys->size() || !(*a->keys)[idx].live)
		return -FI_EINVAL;
	const std::string &k = (*a->keys)[idx].key;
	memcpy(out, k.data(), std::min(*size, k.size()));
	*size = k.size();
	return 0;
}

bool entry_exists(av_obj *a, uint64_t f)
{
	region &r = *a->reg;
	if (f >= ld(&r.hdr->end))
		return false;
	uint32_t n = ld32(&r.hdr->nranges);
	if (range_of(r, f, n))
		return !sym_gone(r, f);
	return ld(&r.rec[f]) != 0;
}

int av_set_user_id_body(av_obj *a, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	uint64_t f = index_of(a, fi_addr);
	if (!entry_exists(a, f))
		return -FI_EINVAL;
	set_uid(a, f, user_id);
	return 0;
}

/* ---- reserved entries ---- */

int resolve_pending(av_obj *a, uint64_t f, uint64_t token)
{
	resolver_fn fn;
	void *ctx;
	{
		std::lock_guard<std::mutex> g(*a->local);
		fn = a->resolver;
		ctx = a->resolver_ctx;
	}
	if (!fn)
		return -FI_EAGAIN;
	unsigned char buf[max_blob];
	size_t len = sizeof buf;
	if (int r = fn(ctx, f, token, buf, &len))
		return r;
	key k;
	size_t used;
	if (int r = decode(a, buf, len, k, &used))
		return r;
	wlock lk(*a->reg);
	writer w(a);
	/* Another thread may have resolved it meanwhile. */
	if (rec_kind(a->reg->rec[f]) == rec_pending && (a->reg->rec[f] & payload_mask) == token)
		w.put(f, k);
	w.finish();
	return 0;
}

/* ---- fid ops ---- */

int av_close(fid *f) noexcept;
int av_bind(fid *f, fid *bfid, uint64_t flags) noexcept;
int av_ops_open(fid *f, const char *name, uint64_t flags, void **ops, void *context) noexcept;

int av_insert(fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
	      void *context) noexcept
{
	return guard("fi_av_insert", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_insert_body(a, addr, count, fi_addr, flags, context);
	});
}

int av_insertsvc(fid_av *av, const char *node, const char *service, fi_addr_t *fi_addr,
		 uint64_t flags, void *context) noexcept
{
	return guard("fi_av_insertsvc", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_insertsvc_body(a, node, service, fi_addr, flags, context);
	});
}

int av_insertsym(fid_av *av, const char *node, size_t nodecnt, const char *service, size_t svccnt,
		 fi_addr_t *fi_addr, uint64_t flags, void *context) noexcept
{
	return guard("fi_av_insertsym", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_insertsym_body(a, node, nodecnt, service, svccnt, fi_addr, flags, context);
	});
}

int av_remove(fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags) noexcept
{
	return guard("fi_av_remove", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_remove_body(a, fi_addr, count, flags);
	});
}

int av_lookup(fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen) noexcept
{
	/* Fast path first, with only the checks it needs (no frame, no calls). */
	av_obj *a = av_of(av);
	if (a && a->v4_fast && addrlen && *addrlen >= sizeof(sockaddr_in) && addr &&
	    lookup_v4(a, fi_addr, static_cast<sockaddr_in *>(addr))) {
		*addrlen = sizeof(sockaddr_in);
		return 0;
	}
	return guard("fi_av_lookup", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_lookup_body(a, fi_addr, addr, addrlen);
	});
}

const char *av_straddr(fid_av *av, const void *addr, char *buf, size_t *len) noexcept
{
	return guard_or("fi_av_straddr", static_cast<const char *>(nullptr), [&]() -> const char * {
		av_obj *a = av_of(av);
		if (!a)
			return nullptr;
		return av_straddr_body(a, addr, buf, len);
	});
}

int av_insert_auth_key(fid_av *av, const void *key_bytes, size_t size, fi_addr_t *fi_addr,
		       uint64_t flags) noexcept
{
	return guard("fi_av_insert_auth_key", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_insert_auth_key_body(a, key_bytes, size, fi_addr, flags);
	});
}

int av_lookup_auth_key(fid_av *av, fi_addr_t fi_addr, void *key_bytes, size_t *size) noexcept
{
	return guard("fi_av_lookup_auth_key", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_lookup_auth_key_body(a, fi_addr, key_bytes, size);
	});
}

int av_set_user_id(fid_av *av, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags) noexcept
{
	return guard("fi_av_set_user_id", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		return av_set_user_id_body(a, fi_addr, user_id, flags);
	});
}

fi_ops av_fi_ops = {
	sizeof(fi_ops),
	av_close,
	av_bind,
	WU_NOSYS(fi_ops, control),
	av_ops_open,
	WU_NOSYS(fi_ops, tostr),
	WU_NOSYS(fi_ops, ops_set),
};

fi_ops_av av_ops = {
	sizeof(fi_ops_av),
	av_insert,
	av_insertsvc,
	av_insertsym,
	av_remove,
	av_lookup,
	av_straddr,
	WU_NOSYS(fi_ops_av, av_set),
	av_insert_auth_key,
	av_lookup_auth_key,
	av_set_user_id,
};

/* ---- regions ---- */

void unmap_region(region *r)
{
	if (r->base && r->base != MAP_FAILED)
		munmap(r->base, r->size);
	delete r;
}

void init_header(region &r, uint64_t max_slots, uint32_t blob_size, uint32_t addr_format,
		 fi_av_type type, bool shared)
{
	header &h = *r.hdr;
	h.version = region_version;
	h.addr_format = addr_format;
	h.max_slots = max_slots;
	h.blob_size = blob_size;
	h.is_shared = shared;
	h.total_bytes = r.size;
	h.av_type = type;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	if (shared) {
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(&h.lock, &ma);
	pthread_mutexattr_destroy(&ma);
	h.attached = 1;
}

/* Makes the records of the first count slots resident now, at open: an
 * application that declares count inserts that many, and the first insert
 * then pays no page faults (2+ us each here).  Never more than 64 MiB. */
void populate_records(region &r, uint64_t count)
{
	size_t len = std::min<uint64_t>(count, uint64_t{1} << 23) * 8;
	if (!len)
		return;
	len = (len + 4095) & ~size_t(4095);
#ifdef MADV_POPULATE_WRITE
	if (madvise(r.rec, len, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	for (size_t off = 0; off < len; off += 4096)
		__atomic_fetch_or(reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(r.rec) + off), 0,
				  __ATOMIC_RELAXED);
}

region *private_region(uint64_t max_slots, uint32_t blob_size, uint32_t addr_format, fi_av_type type,
		       uint64_t count)
{
	auto *r = new region{};
	r->size = region::layout(*r, max_slots, blob_size);
	r->base = mmap(nullptr, r->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->base == MAP_FAILED) {
		delete r;
		throw std::bad_alloc();
	}
	region::layout(*r, max_slots, blob_size);
	init_header(*r, max_slots, blob_size, addr_format, type, false);
	r->hdr->magic = region_magic;
	populate_records(*r, count);
	return r;
}

std::string shm_name_of(const char *name)
{
	std::string s = "/wireup-av-";
	for (const char *p = name; *p && s.size() < 200; p++)
		s += (*p == '/' || *p <= ' ') ? '_' : *p;
	return s;
}

/* Creates or opens the named AV's shm object.  The creator publishes the
 * magic last, so openers never see a half-initialised header. */
int shared_region(const av_obj *a, const char *name, bool read_only, uint64_t count,
		  uint32_t blob_size, fi_av_type type, void *hint, region **out)
{
	std::string sn = shm_name_of(name);
	auto *r = new region{};
	r->shared = true;
	r->read_only = read_only;
	r->shm_name = sn;
	uint64_t max_slots = shared_slots;
	while (max_slots < count)
		max_slots <<= 1;
	bool created = false;
	int fd = -1;
	const std::string what = std::string("fi_av_open(\"") + name + "\")";
	if (!read_only) {
		/* O_EXCL: an object that already exists is opened below, and
		 * trusted only once it is shown to be ours. */
		fd = shm::create_excl(sn.c_str());
		created = fd >= 0;
		if (fd < 0 && fd != -EEXIST) {
			delete r;
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s): %s\n", name, sn.c_str(),
				strerror(-fd));
			return -FI_EACCES;
		}
	}
	if (fd < 0) {
		fd = shm::open_ours(sn.c_str(), read_only, a->prov, FI_LOG_AV, what.c_str());
		if (fd == -FI_ENOENT) {
			/* MPICH probes for a read-only AV at MPI_Init, before anyone
			 * created it: an expected answer, not a warning. */
			if (read_only)
				WU_INFO(a->prov, FI_LOG_AV,
					"fi_av_open: named AV \"%s\" (%s) does not exist; FI_READ opens only an AV another process created\n",
					name, sn.c_str());
			else
				WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) was removed while opening it\n",
					name, sn.c_str());
		}
		if (fd < 0) {
			delete r;
			return fd;
		}
	}
	const int prot = read_only ? PROT_READ : PROT_READ | PROT_WRITE;
	if (created) {
		r->size = region::layout(*r, max_slots, blob_size);
		if (ftruncate(fd, off_t(r->size)) != 0) {
			close(fd);
			shm_unlink(sn.c_str());
			delete r;
			return -FI_ENOMEM;
		}
		r->base = mmap(hint, r->size, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
		close(fd);
		if (r->base == MAP_FAILED) {
			shm_unlink(sn.c_str());
			delete r;
			return -FI_ENOMEM;
		}
		region::layout(*r, max_slots, blob_size);
		init_header(*r, max_slots, blob_size, a->fmt->addr_format, type, true);
		__atomic_store_n(&r->hdr->magic, region_magic, __ATOMIC_RELEASE);
		*out = r;
		return 0;
	}
	/* Wait (bounded) for the creator to size and initialise it. */
	struct stat sb{};
	for (int i = 0; i < 5000; i++) {
		if (fstat(fd, &sb) == 0 && size_t(sb.st_size) >= 4096)
			break;
		usleep(1000);
	}
	if (size_t(sb.st_size) < 4096) {
		close(fd);
		delete r;
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" was never initialised by its creator\n",
			name);
		return -FI_EIO;
	}
	r->size = size_t(sb.st_size);
	r->base = mmap(hint, r->size, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
	close(fd);
	if (r->base == MAP_FAILED) {
		delete r;
		return -FI_ENOMEM;
	}
	auto *h = static_cast<header *>(r->base);
	for (int i = 0; i < 5000 && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != region_magic; i++)
		usleep(1000);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != region_magic || h->version != region_version) {
		unmap_region(r);
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) is not a Wireup AV of this version\n",
			name, sn.c_str());
		return -FI_EINVAL;
	}
	if (h->addr_format != a->fmt->addr_format) {
		unmap_region(r);
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_open: named AV \"%s\" holds address format %u, this domain uses %u\n", name,
			h->addr_format, a->fmt->addr_format);
		return -FI_EINVAL;
	}
	/* Every field is checked before one is used as a size or an index.
	 * Checked on a copy; writers may be changing it, so a failure is
	 * retried a few times before it is believed. */
	header copy;
	const char *why = nullptr;
	for (int i = 0; i < 3; i++) {
		memcpy(static_cast<void *>(&copy), h, sizeof copy);
		why = validate_header(copy, r->size, blob_size);
		if (!why)
			break;
		usleep(1000);
	}
	if (why) {
		unmap_region(r);
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) is corrupt: %s; refused\n", name,
			sn.c_str(), why);
		return -FI_EINVAL;
	}
	region::layout(*r, copy.max_slots, blob_size);
	if (!read_only) {
		wlock lk(*r);
		h->attached++;
	}
	*out = r;
	return 0;
}

void release_region(region *r)
{
	if (r->shared && !r->read_only) {
		bool last;
		{
			wlock lk(*r);
			last = --r->hdr->attached == 0;
		}
		if (last)
			shm_unlink(r->shm_name.c_str());
	}
	unmap_region(r);
}

void destroy(av_obj *a)
{
	if (a->reg)
		release_region(a->reg);
	if (a->uids)
		munmap(a->uids, a->slots * sizeof(uint64_t));
	if (a->auth_of)
		munmap(a->auth_of, a->slots * sizeof(uint32_t));
	delete a->local;
	delete a->rev;
	delete a->keys;
	a->magic = 0;
	delete a;
}

int av_close_body(fid *f)
{
	av_obj *a = av_of(f);
	if (!a)
		return -FI_EINVAL;
	if (int n = a->eps.load()) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_close(av): %d endpoint(s) are still bound to it\n", n);
		return -FI_EBUSY;
	}
	/* Events already queued stay on the EQ (fi_av(3)). */
	if (a->eq)
		eq_unbind(&a->eq->fid);
	prov::domain *d = a->dom;
	destroy(a);
	d->children.put();
	return 0;
}

int av_close(fid *f) noexcept
{
	return guard("fi_close(av)", [&]() -> int { return av_close_body(f); });
}

int av_bind_body(fid *f, fid *bfid, uint64_t flags)
{
	av_obj *a = av_of(f);
	if (!a || !bfid)
		return -FI_EINVAL;
	if (flags) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_bind: flags must be 0\n");
		return -FI_EBADFLAGS;
	}
	if (!is_eq(bfid)) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_bind: only an event queue can be bound to an AV\n");
		return -FI_EINVAL;
	}
	if (a->eq) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_bind: an EQ is already bound\n");
		return -FI_EINVAL;
	}
	if (int r = eq_bind(bfid))
		return r;
	a->eq = reinterpret_cast<fid_eq *>(bfid);
	return 0;
}

int av_bind(fid *f, fid *bfid, uint64_t flags) noexcept
{
	return guard("fi_av_bind", [&]() -> int { return av_bind_body(f, bfid, flags); });
}

/* fi_open_ops(&av->fid, "wireup:av_ext", ...): what the benchmark and
 * tools use to reach the endpoint-side API from C. */
struct av_ext_ops {
	size_t size;
	fi_addr_t (*reverse)(fid_av *av, const void *addr, size_t len);
	size_t (*resident)(fid_av *av);
};

av_ext_ops ext_ops = {sizeof(av_ext_ops), reverse, resident_bytes};

int av_ops_open(fid *f, const char *name, uint64_t flags, void **ops, void *) noexcept
{
	av_obj *a = av_of(f);
	if (!a || !name || !ops || flags)
		return -FI_EINVAL;
	if (strcmp(name, "wireup:av_ext") != 0)
		return -FI_ENOSYS;
	*ops = &ext_ops;
	return 0;
}

void enable_fast_path(av_obj *a)
{
	a->rec = a->reg->rec;
	a->hdr = a->reg->hdr;
	a->v4_fast = a->fmt->unpack == unpack_in && a->fmt->addr_format != FI_ADDR_STR;
}

int open_body(prov::domain *dom, const av_format *fmt, fi_av_attr *attr, fid_av **out, void *context)
{
	const fi_provider *prov = dom->fab && dom->fab->hooks ? dom->fab->hooks->prov : &core_prov;
	if (!attr || !out) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: attr and av must not be NULL\n");
		return -FI_EINVAL;
	}
	if (named_open_fn fn = attr->name ? named_open_for(attr->name) : nullptr)
		return fn(dom, fmt, attr, out, context);
	if (attr->flags & ~open_flags_ok) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: flags 0x%llx are not AV flags\n",
			(unsigned long long)(attr->flags & ~open_flags_ok));
		return -FI_EBADFLAGS;
	}
	/* Read as an int: an out-of-range enum value is undefined behaviour. */
	int av_type;
	memcpy(&av_type, &attr->type, sizeof(av_type));
	if (av_type != FI_AV_UNSPEC && av_type != FI_AV_MAP && av_type != FI_AV_TABLE) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: unknown AV type %d\n", av_type);
		return -FI_EINVAL;
	}
	if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > 32) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: rx_ctx_bits %d is outside 0..32\n", attr->rx_ctx_bits);
		return -FI_EINVAL;
	}
	if (attr->count > max_region_slots) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: count %zu is more than an AV holds (%llu)\n",
			attr->count, (unsigned long long)max_region_slots);
		return -FI_EINVAL;
	}
	if ((attr->flags & FI_READ) && !attr->name) {
		WU_WARN(prov, FI_LOG_AV, "fi_av_open: FI_READ opens a named AV; attr->name is NULL\n");
		return -FI_EINVAL;
	}
	const fi_domain_attr *da = dom->info ? dom->info->domain_attr : nullptr;
	auto *a = new av_obj{};
	a->magic = av_magic;
	a->dom = dom;
	a->prov = prov;
	a->fmt = fmt;
	a->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : fi_av_type(attr->type);
	a->flags = attr->flags;
	a->rx_bits = attr->rx_ctx_bits;
	a->idx_mask = attr->rx_ctx_bits ? (uint64_t{1} << (64 - attr->rx_ctx_bits)) - 1 : ~uint64_t{0};
	a->max_group = da ? da->max_group_id : 0;
	a->is_event = attr->flags & FI_EVENT;
	a->symmetric = attr->flags & FI_SYMMETRIC;
	a->user_id_av = attr->flags & FI_AV_USER_ID;
	a->auth_av = da && da->auth_key_size == FI_AV_AUTH_KEY;
	a->max_auth_keys = da && da->max_ep_auth_key ? da->max_ep_auth_key : 64;
	a->uids_on = a->user_id_av;
	a->local = new std::mutex;
	a->rev = new rev_index;
	a->keys = new std::vector<auth_key_slot>;
	const uint32_t blob_size = uint32_t((fmt->max_addrlen + 4 + 7) & ~size_t(7));
	if (attr->name) {
		if (int r = shared_region(a, attr->name, attr->flags & FI_READ, attr->count, blob_size,
					  a->type, attr->map_addr, &a->reg)) {
			destroy(a);
			return r;
		}
		attr->map_addr = a->reg->base;
	} else {
		uint64_t slots = private_slots;
		while (slots < attr->count)
			slots <<= 1;
		try {
			a->reg = private_region(slots, blob_size, fmt->addr_format, a->type, attr->count);
		} catch (...) {
			destroy(a);
			throw;
		}
	}
	a->slots = a->reg->hdr->max_slots;
	enable_fast_path(a);
	a->fid.fid.fclass = FI_CLASS_AV;
	a->fid.fid.context = context;
	a->fid.fid.ops = &av_fi_ops;
	a->fid.ops = &av_ops;
	attr->type = a->type;
	dom->children.get();
	*out = &a->fid;
	return 0;
}

} // namespace

const av_format *ip_format(uint32_t addr_format) noexcept
{
	switch (addr_format) {
	case FI_SOCKADDR_IN:
		return &fmt_in;
	case FI_SOCKADDR_IN6:
		return &fmt_in6;
	case FI_SOCKADDR:
	case FI_FORMAT_UNSPEC:
		return &fmt_sa;
	case FI_ADDR_STR:
		return &fmt_str;
	default:
		return nullptr;
	}
}

int open(prov::domain *dom, const av_format *fmt, fi_av_attr *attr, fid_av **av, void *context) noexcept
{
	return guard("fi_av_open", [&]() -> int {
		if (!dom || !fmt)
			return -FI_EINVAL;
		return open_body(dom, fmt, attr, av, context);
	});
}

int ip_av_open(fid_domain *domain, fi_av_attr *attr, fid_av **av, void *context) noexcept
{
	return guard("fi_av_open", [&]() -> int {
		prov::domain *d = prov::domain_of(domain);
		if (!d)
			return -FI_EINVAL;
		uint32_t af = d->info ? d->info->addr_format : uint32_t(FI_FORMAT_UNSPEC);
		const av_format *fmt = ip_format(af);
		if (!fmt) {
			WU_WARN(d->fab->hooks->prov, FI_LOG_AV,
				"fi_av_open: address format %u is not an IP format this provider stores\n", af);
			return -FI_EINVAL;
		}
		return open_body(d, fmt, attr, av, context);
	});
}

bool is_av(const fid *f) noexcept
{
	return av_of(const_cast<fid *>(f)) != nullptr;
}

size_t addr_of(fid_av *av, fi_addr_t fi_addr, void *buf, size_t buflen) noexcept
{
	av_obj *a = av_of(av);
	sockaddr_in sin;
	if (a && a->v4_fast && lookup_v4(a, fi_addr, &sin)) {
		memcpy(buf, &sin, std::min(sizeof sin, buflen));
		return sizeof sin;
	}
	return guard_or("addr_of", size_t{0}, [&]() -> size_t {
		key k;
		if (!a || !lookup_key(a, fi_addr, k))
			return 0;
		unsigned char bin[max_blob];
		size_t len = key_binary(a, k, bin);
		memcpy(buf, bin, std::min(len, buflen));
		return len;
	});
}

fi_addr_t reverse(fid_av *av, const void *addr, size_t len) noexcept
{
	return guard_or("reverse", FI_ADDR_NOTAVAIL, [&]() -> fi_addr_t {
		av_obj *a = av_of(av);
		if (!a || !addr)
			return FI_ADDR_NOTAVAIL;
		key q;
		size_t used;
		if (decode(a, addr, len, q, &used))
			return FI_ADDR_NOTAVAIL;
		region &r = *a->reg;
		{
			std::lock_guard<std::mutex> g(*a->local);
			rev_sync(a);
			rev_index &ix = *a->rev;
			const uint64_t h = q.hash();
			const uint32_t tag = ix.tag(h);
			const size_t n = ix.slot.size();
			for (size_t i = ix.home(h); ix.slot[i]; i = i + 1 == n ? 0 : i + 1) {
				uint32_t v = ix.slot[i];
				if ((v & ~ix.idx_mask) != tag)
					continue;
				key k;
				uint64_t f = (v & ix.idx_mask) - 1;
				if (entry_key(r, f, k) && same(k, q))
					return f;
			}
		}
		/* Symmetric ranges: arithmetic on the address. */
		uint32_t n = ld32(&r.hdr->nranges);
		for (uint32_t i = 0; i < n; i++) {
			const sym_range &s = r.hdr->ranges[i];
			uint16_t port = key_port(q);
			uint64_t svc = uint16_t(port - s.port0);
			if (svc >= s.svccnt)
				continue;
			uint64_t node = ~uint64_t{0};
			if (s.by_name) {
				for (uint32_t j = 0; j < s.nodecnt; j++) {
					key nk;
					if (read_sym(r, s, s.base + uint64_t(j) * s.svccnt, nk)) {
						key_set_port(nk, port);
						if (same(nk, q)) {
							node = j;
							break;
						}
					}
				}
			} else if (s.family == AF_INET && q.packed) {
				node = uint32_t((q.value >> 16) - s.ip_lo);
			} else if (s.family == AF_INET6 && !q.packed) {
				sockaddr_in6 s6;
				memcpy(&s6, q.bytes, sizeof s6);
				uint64_t hi = 0, lo = 0;
				for (int b = 0; b < 8; b++) {
					hi = hi << 8 | s6.sin6_addr.s6_addr[b];
					lo = lo << 8 | s6.sin6_addr.s6_addr[8 + b];
				}
				uint64_t dlo = lo - s.ip_lo;
				uint64_t dhi = hi - s.ip_hi - (lo < s.ip_lo ? 1 : 0);
				if (dhi == 0)
					node = dlo;
			}
			if (node >= s.nodecnt)
				continue;
			uint64_t f = s.base + node * s.svccnt + svc;
			key k;
			if (read_sym(r, s, f, k) && same(k, q))
				return f;
		}
		return FI_ADDR_NOTAVAIL;
	});
}

fi_addr_t source_id(fid_av *av, fi_addr_t fi_addr) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return FI_ADDR_NOTAVAIL;
	if (!a->uids_on.load(std::memory_order_acquire))
		return fi_addr;
	uint64_t f = index_of(a, fi_addr);
	if (f >= a->slots)
		return FI_ADDR_NOTAVAIL;
	uint64_t v = a->uids ? __atomic_load_n(&a->uids[f], __ATOMIC_RELAXED) : 0;
	if (!v && !a->user_id_av)
		return fi_addr; /* no id given for this entry */
	return ~v;
}

int ep_bind(fid_av *av) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return -FI_EINVAL;
	a->eps++;
	return 0;
}

int ep_unbind(fid_av *av) noexcept
{
	av_obj *a = av_of(av);
	if (!a || a->eps.load() <= 0)
		return -FI_EINVAL;
	a->eps--;
	return 0;
}

int watch_removes(fid_av *av, removed_fn fn, void *arg) noexcept
{
	return guard("watch_removes", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a || !fn)
			return -FI_EINVAL;
		std::lock_guard<std::mutex> g(a->watch_mtx);
		a->watchers.emplace_back(fn, arg);
		a->nwatch.store(int(a->watchers.size()), std::memory_order_release);
		return 0;
	});
}

int unwatch_removes(fid_av *av, removed_fn fn, void *arg) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(a->watch_mtx);
	auto it = std::find(a->watchers.begin(), a->watchers.end(), std::make_pair(fn, arg));
	if (it == a->watchers.end())
		return -FI_EINVAL;
	a->watchers.erase(it);
	a->nwatch.store(int(a->watchers.size()), std::memory_order_release);
	return 0;
}

bool is_shared(fid_av *av) noexcept
{
	av_obj *a = av_of(av);
	return a && a->reg->shared;
}

uint64_t entry_stamp(fid_av *av, fi_addr_t fi_addr) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return 0;
	region &r = *a->reg;
	uint64_t f = index_of(a, fi_addr);
	if (f >= ld(&r.hdr->end))
		return 0;
	if (uint32_t n = ld32(&r.hdr->nranges))
		if (range_of(r, f, n))
			return sym_gone(r, f) ? 1 : 2;
	/* Packed records are the address itself; blob records carry the
	 * region generation of their insert. */
	return ld(&r.rec[f]);
}

int auth_key_use(fid_av *av, fi_addr_t key_handle, bool in_use) noexcept
{
	return guard("auth_key_use", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a)
			return -FI_EINVAL;
		std::lock_guard<std::mutex> g(*a->local);
		uint64_t idx = key_handle & ~auth_handle_bit;
		if (!(key_handle & auth_handle_bit) || idx >= a->keys->size() || !(*a->keys)[idx].live)
			return -FI_EINVAL;
		int &n = (*a->keys)[idx].in_use;
		if (!in_use && n == 0)
			return -FI_EINVAL;
		n += in_use ? 1 : -1;
		return 0;
	});
}

int set_resolver(fid_av *av, resolver_fn fn, void *ctx) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(*a->local);
	a->resolver = fn;
	a->resolver_ctx = ctx;
	return 0;
}

int reserve(fid_av *av, const uint64_t *tokens, size_t count, fi_addr_t *out) noexcept
{
	return guard("reserve", [&]() -> int {
		av_obj *a = av_of(av);
		if (!a || (count && !tokens))
			return -FI_EINVAL;
		if (a->reg->read_only)
			return -FI_EACCES;
		if (count > uint64_t(INT_MAX))
			return -FI_EINVAL;
		wlock lk(*a->reg);
		writer w(a);
		size_t i = 0;
		for (; i < count; i++) {
			uint64_t f = w.try_alloc();
			if (f == ~uint64_t{0})
				break; /* full: the caller sees fewer than count */
			st(&a->reg->rec[f], rec_make(rec_pending, tokens[i]));
			if (out)
				out[i] = f;
		}
		for (size_t j = i; out && j < count; j++)
			out[j] = FI_ADDR_NOTAVAIL;
		w.finish();
		return int(i);
	});
}

stats get_stats() noexcept
{
	return {n_resolves.load(), n_recoveries.load()};
}

size_t resident_bytes(fid_av *av) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return 0;
	const size_t pg = 4096;
	size_t pages = (a->reg->size + pg - 1) / pg;
	size_t total = 0;
	std::vector<unsigned char> vec(std::min<size_t>(pages, 1 << 20));
	for (size_t off = 0; off < pages; off += vec.size()) {
		size_t n = std::min(vec.size(), pages - off);
		if (mincore(static_cast<char *>(a->reg->base) + off * pg, n * pg, vec.data()) != 0)
			return 0;
		for (size_t i = 0; i < n; i++)
			total += (vec[i] & 1) * pg;
	}
	std::lock_guard<std::mutex> g(*a->local);
	return total + sizeof(av_obj) + sizeof(region) + a->rev->slot.capacity() * sizeof(uint32_t);
}

} // namespace wu::av
