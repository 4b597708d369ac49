/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_av_insert, fi_av_insertsvc and fi_av_insertsym: checking a call,
 * storing a batch and reporting it (returned, FI_SYNC_ERR, or events on
 * the EQ of an FI_EVENT AV), and the symmetric ranges of insertsym. */
#include "av/av_impl.h"

#include <arpa/inet.h>

#include <algorithm>
#include <climits>

#include <rdma/fi_eq.h>

#include "core/log.h"
#include "eq/eq.h"

namespace wu::av::detail {

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

/* FI_ADDR_STR addresses of a provider-defined format (text_format
 * FI_ADDR_STR, shm's): packed back to back, each NUL-terminated, as
 * fi_getname gives them and as libfabric's shm provider and fabtests read
 * them.  The key is the text itself, NUL included.  The blob is only ever
 * read as text: nothing in it is taken for a pointer (issue 32: guessing
 * an array of char * from its first bytes crashed on 10.x sockaddrs and
 * small integers), and each name is read up to the format's max_addrlen,
 * so one without a NUL there is -FI_EINVAL, and so is every name after it
 * (where the next one starts cannot be known). */
void decode_own_strs(av_obj *a, const void *addr, size_t count, batch &b)
{
	auto *p = static_cast<const char *>(addr);
	for (size_t i = 0; i < count; i++) {
		size_t used = 0;
		if (int r = decode(a, p, a->fmt->max_addrlen, b.keys[i], &used)) {
			WU_WARN(a->prov, FI_LOG_AV,
				"fi_av_insert: address %zu is not a NUL-terminated %s address of at most %zu bytes "
				"(FI_ADDR_STR addresses go back to back, as fi_getname gives them); it and the %zu after it "
				"are not inserted\n",
				i, a->fmt->name, a->fmt->max_addrlen, count - i - 1);
			for (size_t j = i; j < count; j++)
				b.err[j] = -r;
			return;
		}
		p += used;
	}
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
	if (a->fmt->addr_format == FI_ADDR_STR && a->fmt->text_format == FI_ADDR_STR) {
		/* A provider's own strings (shm): packed, never pointers. */
		decode_own_strs(a, addr, count, b);
	} else if (a->fmt->addr_format == FI_ADDR_STR) {
		auto *strs = static_cast<const char *const *>(addr);
		for (size_t i = 0; i < count; i++)
			if (int r = decode_str(a, strs[i], b.keys[i]))
				b.err[i] = -r;
	} else if (a->fmt->addr_format == FI_SOCKADDR || a->fmt->part) {
		/* Variable-length sockaddrs, back to back; so are composite
		 * addresses (each as long as it says: MPI stacks pass the names
		 * of fi_getname concatenated). */
		auto *p = static_cast<const unsigned char *>(addr);
		const size_t avail = a->fmt->part ? a->fmt->max_addrlen : sizeof(sockaddr_in6);
		for (size_t i = 0; i < count; i++) {
			size_t used = 0;
			if (int r = decode(a, p, avail, b.keys[i], &used)) {
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
	if (text_refused(a, "fi_av_insertsvc"))
		return -FI_EINVAL;
	n_resolves++;
	if (a->fmt->from_service) {
		unsigned char buf[max_blob];
		ssize_t n = a->fmt->from_service(node, service, buf, sizeof buf);
		if (n < 0)
			return int(n);
		size_t used;
		return decode(a, buf, size_t(n), k, &used);
	}
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
int node_names(const av_obj *a, const char *node, size_t nodecnt, std::vector<std::string> &names)
{
	names.clear();
	names.reserve(nodecnt);
	std::string cur = node;
	for (size_t i = 0; i < nodecnt; i++) {
		if (i)
			if (int r = addr::next_node(cur)) {
				WU_WARN(a->prov, FI_LOG_AV,
					"fi_av_insertsym: cannot count %zu nodes up from \"%.64s\" (a host name needs a numeric suffix)\n",
					nodecnt, node);
				return r;
			}
		names.push_back(cur);
	}
	return 0;
}

/* insertsym on a format that names its own addresses (from_service: shm,
 * wireup): each node name and port in turn, stored like an insert. */
int sym_by_service(av_obj *a, const char *node, size_t nodecnt, const char *service, size_t svccnt,
		   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	std::vector<std::string> names;
	if (int r = node_names(a, node, nodecnt, names))
		return r;
	uint16_t port0 = 0;
	if (addr::parse_port(service, port0) || size_t(port0) + svccnt - 1 > 65535 || (svccnt && port0 == 0)) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsym: service \"%.16s\" + %zu is not a range of ports 1-65535\n",
			service, svccnt);
		return -FI_EINVAL;
	}
	batch b;
	b.keys.resize(nodecnt * svccnt);
	b.err.assign(nodecnt * svccnt, 0);
	for (size_t i = 0; i < nodecnt; i++)
		for (size_t j = 0; j < svccnt; j++) {
			std::string port = std::to_string(port0 + j);
			if (int r = resolve_node(a, names[i].c_str(), port.c_str(), b.keys[i * svccnt + j]))
				b.err[i * svccnt + j] = -r;
		}
	return insert_batch(a, b, fi_addr, flags, context);
}

/* Appends generator s at the end of the AV (under the write lock): readers
 * see the range before the end that covers it. */
static int publish_range(header &h, sym_range &s, uint64_t *base)
{
	s.base = h.end;
	h.ranges[h.nranges] = s;
	__atomic_store_n(&h.nranges, h.nranges + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h.end, s.base + s.count, __ATOMIC_RELEASE);
	__atomic_add_fetch(&h.gen, 1, __ATOMIC_RELEASE);
	*base = s.base;
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
	arena &r = *a->reg;
	wlock lk(r);
	header &h = *r.hdr;
	if (h.nranges >= max_ranges)
		return -FI_ENOSPC;
	if (h.end + s.count > h.max_slots)
		return -FI_ENOSPC;
	return publish_range(h, s, base);
}

/* Symmetric AV, named nodes: one node table entry per node. */
int sym_named(av_obj *a, const std::vector<key> &nodes, size_t svccnt, uint16_t port0,
	      uint64_t *base)
{
	arena &r = *a->reg;
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
	return publish_range(h, s, base);
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
	if (text_refused(a, "fi_av_insertsym"))
		return -FI_EINVAL;
	if (nodecnt > UINT32_MAX || svccnt > 65536 || nodecnt * svccnt > a->reg->hdr->max_slots) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insertsym: %zu x %zu addresses is too many\n", nodecnt,
			svccnt);
		return -FI_EINVAL;
	}
	if (int r = check_count(a, uint64_t(nodecnt) * svccnt, "fi_av_insertsym"))
		return r;
	if (a->fmt->from_service)
		return sym_by_service(a, node, nodecnt, service, svccnt, fi_addr, flags, context);
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
	if (int r = node_names(a, node, nodecnt, names))
		return r;
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

} // namespace wu::av::detail
