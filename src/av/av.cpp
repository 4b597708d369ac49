/* SPDX-License-Identifier: BSD-3-Clause */
/* The address vector engine: fid_av objects over an arena (arena.h).
 * This file opens, binds and closes them, holds their ops tables and
 * serves endpoints (av.h); av_impl.h lists the files of the rest. */
#include "av/av_impl.h"

#include <arpa/inet.h>
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/domain.h"
#include "core/fid.h"
#include "core/log.h"
#include "eq/eq.h"

namespace wu::av {

void (*test_crash_hook)(int point) = nullptr;

namespace detail {

std::atomic<uint64_t> n_resolves{0};
std::atomic<uint64_t> n_recoveries{0};

av_obj::~av_obj()
{
	if (uids)
		munmap(uids, slots * sizeof(uint64_t));
	if (auth_of)
		munmap(auth_of, slots * sizeof(uint32_t));
	magic = 0;
}

} // namespace detail

using namespace detail;

namespace {

/* ---- IP address descriptors ---- */

/* An address of family AF, at least as long as its sockaddr S. */
template <class S, sa_family_t AF>
ssize_t validate_ip(const void *addr, size_t avail)
{
	sa_family_t fam;
	if (avail < sizeof(S))
		return -FI_EINVAL;
	memcpy(&fam, addr, sizeof fam);
	return fam == AF ? ssize_t(sizeof(S)) : -FI_EINVAL;
}

constexpr auto validate_in = validate_ip<sockaddr_in, AF_INET>;
constexpr auto validate_in6 = validate_ip<sockaddr_in6, AF_INET6>;

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
	std::unique_ptr<av_obj> gone(a); /* drops its reference on the domain */
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
	auto a = std::make_unique<av_obj>();
	a->magic = av_magic;
	a->dom = dom;
	a->parent = child_ref(dom->children);
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
	a->local = make_owned<std::mutex>();
	a->rev = make_owned<rev_index>();
	if (fmt->part)
		a->parts = make_owned<part_index>();
	a->keys = make_owned<std::vector<auth_key_slot>>();
	const uint32_t blob_size = uint32_t((fmt->max_addrlen + 4 + 7) & ~size_t(7));
	if (attr->name) {
		if (int r = shared_region(a.get(), attr->name, attr->flags & FI_READ, attr->count, blob_size,
					  a->type, attr->map_addr, &a->reg))
			return r;
		attr->map_addr = a->reg->base;
	} else {
		uint64_t slots = private_slots;
		while (slots < attr->count)
			slots <<= 1;
		a->reg = private_region(slots, blob_size, fmt->addr_format, a->type, attr->count);
	}
	a->slots = a->reg->hdr->max_slots;
	enable_fast_path(a.get());
	set_fid(a->fid.fid, FI_CLASS_AV, context, &av_fi_ops);
	a->fid.ops = &av_ops;
	attr->type = a->type;
	*out = &a.release()->fid;
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

const uint64_t *change_count(fid_av *av) noexcept
{
	av_obj *a = av_of(av);
	return a ? &a->reg->hdr->gen : nullptr;
}

uint64_t entry_stamp(fid_av *av, fi_addr_t fi_addr) noexcept
{
	av_obj *a = av_of(av);
	if (!a)
		return 0;
	arena &r = *a->reg;
	uint64_t f = index_of(a, fi_addr);
	if (f >= ld(&r.hdr->end))
		return 0;
	if (uint32_t n = ld32(&r.hdr->nranges))
		if (range_of(r, f, n))
			return sym_gone(r, f) ? 1 : 2;
	/* Packed records are the address itself; blob records carry the
	 * arena generation of their insert. */
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
	return total + sizeof(av_obj) + sizeof(arena) + a->rev->slot.capacity() * sizeof(uint32_t);
}

} // namespace wu::av
