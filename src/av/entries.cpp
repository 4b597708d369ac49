/* SPDX-License-Identifier: BSD-3-Clause */
/* Entries of an AV: the free bitmap and recovery of an arena, reading
 * records and symmetric ranges, the reverse index and reverse(), user ids
 * and auth handles per process, decoding application addresses, and
 * resolving reserved entries. */
#include "av/av_impl.h"

#include <arpa/inet.h>
#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <string_view>

#include "core/log.h"

namespace wu::av::detail {

/* Marks the block of slot f as possibly holding a free slot. */
void set_free(arena &r, uint64_t f)
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
void clear_block(arena &r, uint64_t b)
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
uint64_t first_block(const arena &r)
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

const sym_range *range_of(const arena &r, uint64_t f, uint32_t nranges)
{
	for (uint32_t i = 0; i < nranges; i++) {
		const sym_range &s = r.hdr->ranges[i];
		if (f - s.base < s.count)
			return &s;
	}
	return nullptr;
}

bool sym_gone(const arena &r, uint64_t f)
{
	if (!__atomic_load_n(&r.hdr->sym_removed, __ATOMIC_ACQUIRE))
		return false;
	return __atomic_load_n(&r.symgone[f / 64], __ATOMIC_ACQUIRE) & (uint64_t{1} << (f % 64));
}

/* Dead writer: entries past end were never handed out, drop them; the
 * bitmap and counters are rebuilt from the published records. */
void recover(arena &r)
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

/* ---- reading entries ---- */

/* Stored address of a record entry into k; false when none. */
bool read_record(const arena &r, uint64_t f, key &k, uint64_t *pending_token)
{
	for (;;) {
		uint64_t v = ld(&r.rec[f]);
		switch (rec_kind(v)) {
		case rec_packed:
			k.packed = true;
			k.value = v & payload_mask;
			return true;
		case rec_blob: {
			uint32_t len = blob_load(r.blob + f * r.hdr->blob_size, r.hdr->blob_size, k.bytes);
			k.packed = false;
			k.len = len;
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
bool read_sym(const arena &r, const sym_range &s, uint64_t f, key &k)
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

/* Entry f into k (resolving a reserved entry when needed). */
bool lookup_key(av_obj *a, fi_addr_t fa, key &k)
{
	uint64_t f = index_of(a, fa);
	arena &r = *a->reg;
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

bool entry_key(const arena &r, uint64_t f, key &k)
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

void rev_build(av_obj *a, size_t want)
{
	const arena &r = *a->reg;
	while (size_t small = rev_fill(r, *a->rev, want, [&](uint64_t f, key &k) { return entry_key(r, f, k); }))
		want = 2 * small;
}

/* Caller holds a->local.  Brings the index up to date with the arena. */
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
	if (!s || text_refused(a, "fi_av_insert (FI_ADDR_STR)"))
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

} // namespace wu::av::detail

namespace wu::av {

using namespace detail;

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
		arena &r = *a->reg;
		{
			std::lock_guard<std::mutex> g(*a->local);
			rev_sync(a);
			fi_addr_t f = rev_find(*a->rev, q.hash(), [&](uint64_t e) {
				key k;
				return entry_key(r, e, k) && same(k, q);
			});
			if (f != FI_ADDR_NOTAVAIL)
				return f;
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

} // namespace wu::av
