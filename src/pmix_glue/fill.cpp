/* SPDX-License-Identifier: BSD-3-Clause */
/* Filling an AV with the ranks of a job in each mode (modex, direct,
 * symmetric, launcher), and publishing the own endpoint's name. */
#include "pmix_glue/session_impl.h"

#include <pmix.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fi_errno.h>

#include "av/av.h"
#include "core/addr.h"
#include "core/domain.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "pmix_glue/layout.h"
#include "pmix_glue/wire.h"

namespace wu::pmix::detail {

/* ---- addresses ---- */

bool is_v4(const std::vector<uint8_t> &a)
{
	return a.size() == sizeof(sockaddr_in) && reinterpret_cast<const sockaddr *>(a.data())->sa_family == AF_INET;
}

uint16_t port_of(const std::vector<uint8_t> &a)
{
	const auto *sa = reinterpret_cast<const sockaddr *>(a.data());
	if (sa->sa_family == AF_INET)
		return ntohs(reinterpret_cast<const sockaddr_in *>(a.data())->sin_port);
	return ntohs(reinterpret_cast<const sockaddr_in6 *>(a.data())->sin6_port);
}

std::vector<uint8_t> with_port(std::vector<uint8_t> a, uint16_t port)
{
	auto *sa = reinterpret_cast<sockaddr *>(a.data());
	if (sa->sa_family == AF_INET)
		reinterpret_cast<sockaddr_in *>(a.data())->sin_port = htons(port);
	else
		reinterpret_cast<sockaddr_in6 *>(a.data())->sin6_port = htons(port);
	return a;
}

bool same_host(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b)
{
	return a.size() == b.size() && with_port(a, 0) == with_port(b, 0);
}

std::string host_text(const std::vector<uint8_t> &a)
{
	return addr::sockaddr_text(a.data(), a.size(), false);
}

uint32_t ip_of(const std::vector<uint8_t> &a)
{
	return ntohl(reinterpret_cast<const sockaddr_in *>(a.data())->sin_addr.s_addr);
}

bool sym_format(uint32_t f)
{
	return f == FI_SOCKADDR_IN || f == FI_SOCKADDR_IN6;
}

/* Whether the symmetric layout applies to names of format f: sockaddrs,
 * or a local format that tells their network part (core/launcher.h). */
bool sym_ok(uint32_t f)
{
	const local_format *lf = local_format_for(f);
	return sym_format(f) || (lf && lf->net_part);
}

/* The sockaddr other nodes reach name at (name itself for sockaddrs);
 * empty when there is none. */
std::vector<uint8_t> net_of(uint32_t f, const std::vector<uint8_t> &name)
{
	if (sym_format(f))
		return name;
	const local_format *lf = local_format_for(f);
	uint8_t sa[sizeof(sockaddr_in6)];
	long n = lf && lf->net_part ? lf->net_part(name.data(), name.size(), sa, sizeof sa) : -FI_EINVAL;
	if (n != long(sizeof(sockaddr_in)) && n != long(sizeof(sockaddr_in6)))
		return {};
	return std::vector<uint8_t>(sa, sa + n);
}

/* ---- filling ---- */

int check_av(fid_av *av)
{
	if (!av || !av::is_av(&av->fid)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: av is not a Wireup address vector\n");
		return -FI_EINVAL;
	}
	return 0;
}

/* One insert of every name, in rank order; fi_addr of rank 0 in *base.
 * Names of a local_format differ in length (a local peer's has no network
 * part): they go at the format's stride, or back to back. */
int bulk_insert(fid_av *av, uint32_t addr_format, const std::vector<std::vector<uint8_t>> &names,
		fi_addr_t *base)
{
	size_t n = names.size();
	size_t len = names.empty() ? 0 : names[0].size();
	const local_format *lf = local_format_for(addr_format);
	const bool packed = lf && !lf->stride;
	if (lf)
		len = packed ? size_t(FI_NAME_MAX) : lf->stride;
	std::vector<uint8_t> buf;
	buf.reserve(n * len);
	for (const auto &nm : names) {
		if (packed) {
			buf.insert(buf.end(), nm.begin(), nm.end());
			continue;
		}
		if (nm.size() > len) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: a %zu-byte name is longer than the format's %zu; nothing was inserted\n",
				nm.size(), len);
			return -FI_EINVAL;
		}
		buf.insert(buf.end(), nm.begin(), nm.end());
		buf.resize(buf.size() + (len - nm.size()), 0);
	}
	std::vector<fi_addr_t> out(n, FI_ADDR_NOTAVAIL);
	int r = fi_av_insert(av, buf.data(), n, out.data(), 0, nullptr);
	if (r != int(n)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: fi_av_insert of %zu ranks stored %d (%s)\n", n,
			r, r < 0 ? fi_strerror(-r) : "some were rejected");
		return r < 0 ? r : -FI_EINVAL;
	}
	(void)addr_format;
	for (size_t i = 1; i < n; i++)
		if (out[i] != out[0] + i) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: the AV gave rank %zu fi_addr %llu, not %llu: open an empty AV so that fi_addr == rank\n",
				i, (unsigned long long)out[i], (unsigned long long)(out[0] + i));
			return -FI_EINVAL;
		}
	*base = n ? out[0] : 0;
	return 0;
}

/* Gets and checks every rank's ep record under key (from its node's blob
 * when nb is set and the blob has it); all or nothing. */
int gather_names(session &s, const std::string &ns, uint64_t job, uint32_t size, const char *key,
		 get_kind kind, uint32_t addr_format, std::vector<std::vector<uint8_t>> &names,
		 node_blobs *nb = nullptr)
{
	names.assign(size, {});
	std::vector<uint8_t> rec;
	const bool fixed = !local_format_for(addr_format);
	for (uint32_t r = 0; r < size; r++) {
		if (const local_format *f = computed_here(s, ns, r, addr_format)) {
			/* On this node: built here, nothing fetched. */
			if (int e = local_name(s, *f, ns, r, names[r])) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"wire-up: local rank %u of %s: no address; nothing was inserted\n",
					r, ns.c_str());
				return e;
			}
			continue;
		}
		if (nb) {
			int e = nb->find(s, r, names[r]);
			if (e && e != -FI_ENODATA)
				return e; /* a bad blob, logged */
			if (!e && fixed && r && names[r].size() != names[0].size()) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"wire-up: rank %u of %s, key %s: %zu-byte name, rank 0's is %zu; nothing was inserted\n",
					r, ns.c_str(), wire::key_blob, names[r].size(), names[0].size());
				return -FI_EINVAL;
			}
			if (!e)
				continue;
		}
		const char *k = key;
		int ret = get_peer(s, ns, r, k, kind, rec);
		if (ret == -FI_ENODATA && kind == get_kind::optional && strcmp(key, wire::key_lp) == 0) {
			k = PMIX_FABRIC_ENDPT;
			ret = get_peer(s, ns, r, k, kind, rec);
		}
		if (ret) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: rank %u of %s published no %s (%s); nothing was inserted\n", r,
				ns.c_str(), k, fi_strerror(-ret));
			return ret;
		}
		const uint8_t *nm;
		size_t len;
		std::string why;
		if (int e = wire::check_ep(rec, addr_format, job, r, &nm, &len, why)) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: rank %u of %s, key %s: %s; nothing was inserted\n", r, ns.c_str(),
				k, why.c_str());
			return e;
		}
		names[r].assign(nm, nm + len);
		if (fixed && r && names[r].size() != names[0].size()) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: rank %u of %s, key %s: %zu-byte name, rank 0's is %zu; nothing was inserted\n",
				r, ns.c_str(), k, names[r].size(), names[0].size());
			return -FI_EINVAL;
		}
	}
	return 0;
}

/* One generator or one single address, in rank order. */
struct segment {
	bool single;
	uint32_t node0, nodecnt, slot0, svccnt; /* generator */
	std::vector<uint8_t> name;		/* single */
	uint32_t first_rank;
};

/* Fills av from node views (indexed by position), symmetric layout. */
int fill_symmetric(session &s, fid_av *av, const layout &lay, uint32_t size,
		   const std::vector<wire::node_view> &views, uint32_t addr_format, uint64_t job,
		   const std::string &ns, fi_addr_t *base, uint32_t *ndev_out)
{
	const uint32_t nn = lay.nn, ppn = lay.ppn;
	/* Deviants: (position, slot) -> name, checked up front. */
	std::vector<std::vector<std::pair<uint32_t, std::vector<uint8_t>>>> devs(nn);
	uint32_t ndev = 0;
	for (uint32_t k = 0; k < nn; k++) {
		for (const wire::deviant &d : views[k].devs) {
			uint32_t r = lay.rank_at(k, d.slot);
			const uint8_t *nm;
			size_t len;
			std::string why;
			if (d.slot >= ppn || r >= size) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"wire-up: node record of position %u lists slot %u of %u; nothing was inserted\n",
					k, d.slot, ppn);
				return -FI_EINVAL;
			}
			if (int e = wire::check_ep(d.record, addr_format, job, r, &nm, &len, why)) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"wire-up: rank %u of %s, key %s (off the layout): %s; nothing was inserted\n",
					r, ns.c_str(), wire::key_node, why.c_str());
				return e;
			}
			devs[k].push_back({d.slot, std::vector<uint8_t>(nm, nm + len)});
			ndev++;
		}
		std::sort(devs[k].begin(), devs[k].end(),
			  [](const auto &a, const auto &b) { return a.first < b.first; });
	}
	/* This node's ranks of a local format: as local peers reach them
	 * (core/launcher.h), one by one, not the generator's network names. */
	if (const local_format *lf = local_format_for(addr_format); lf && ns == s.nspace) {
		auto &mine = devs[lay.my_pos];
		mine.clear();
		for (uint32_t sl = 0; sl < ppn; sl++) {
			std::vector<uint8_t> nm;
			if (int e = local_name(s, *lf, ns, lay.rank_at(lay.my_pos, sl), nm))
				return e;
			mine.push_back({sl, std::move(nm)});
		}
	}
	auto dev_at = [&](uint32_t k, uint32_t slot) -> const std::vector<uint8_t> * {
		for (const auto &d : devs[k])
			if (d.first == slot)
				return &d.second;
		return nullptr;
	};
	auto follows = [&](const segment &g, uint32_t k) {
		/* Node k continues generator g: consecutive IPv4, same port base. */
		if (g.single || g.node0 + g.nodecnt != k || !is_v4(views[k].addr) ||
		    !is_v4(views[g.node0].addr))
			return false;
		return ip_of(views[k].addr) == ip_of(views[g.node0].addr) + g.nodecnt &&
		       views[k].port_base == views[g.node0].port_base;
	};
	std::vector<segment> segs;
	auto single = [&](uint32_t r, const std::vector<uint8_t> &nm) {
		segs.push_back({true, 0, 0, 0, 0, nm, r});
	};
	if (!lay.cyclic) {
		for (uint32_t k = 0; k < nn; k++) {
			if (devs[k].empty()) {
				if (!segs.empty() && segs.back().slot0 == 0 && segs.back().svccnt == ppn &&
				    follows(segs.back(), k))
					segs.back().nodecnt++;
				else
					segs.push_back({false, k, 1, 0, ppn, {}, k * ppn});
				continue;
			}
			for (uint32_t sl = 0; sl < ppn; sl++) {
				if (const auto *d = dev_at(k, sl)) {
					single(k * ppn + sl, *d);
				} else if (!segs.empty() && !segs.back().single && segs.back().node0 == k &&
					   segs.back().slot0 + segs.back().svccnt == sl) {
					segs.back().svccnt++;
				} else {
					segs.push_back({false, k, 1, sl, 1, {}, k * ppn + sl});
				}
			}
		}
	} else {
		for (uint32_t sl = 0; sl < ppn; sl++)
			for (uint32_t k = 0; k < nn; k++) {
				if (const auto *d = dev_at(k, sl))
					single(sl * nn + k, *d);
				else if (!segs.empty() && !segs.back().single && segs.back().slot0 == sl &&
					 follows(segs.back(), k))
					segs.back().nodecnt++;
				else
					segs.push_back({false, k, 1, sl, 1, {}, sl * nn + k});
			}
	}
	size_t gens = 0;
	for (const segment &g : segs)
		gens += !g.single;
	if (gens > 32)
		WU_INFO(&pmix_prov, FI_LOG_AV,
			"wire-up: the symmetric layout needs %zu generators, more than the AV's 32; the rest is stored address by address\n",
			gens);
	fi_addr_t b = FI_ADDR_NOTAVAIL;
	std::vector<fi_addr_t> out;
	for (const segment &g : segs) {
		size_t total = g.single ? 1 : size_t(g.nodecnt) * g.svccnt;
		out.assign(total, FI_ADDR_NOTAVAIL);
		int r;
		if (g.single) {
			r = fi_av_insert(av, g.name.data(), 1, out.data(), 0, nullptr);
		} else {
			std::string node = host_text(views[g.node0].addr);
			std::string svc = std::to_string(views[g.node0].port_base + g.slot0);
			r = fi_av_insertsym(av, node.c_str(), g.nodecnt, svc.c_str(), g.svccnt, out.data(),
					    0, nullptr);
		}
		if (r != int(total)) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: symmetric insert for ranks from %u stored %d of %zu (%s)\n",
				g.first_rank, r, total, r < 0 ? fi_strerror(-r) : "partial");
			return r < 0 ? r : -FI_EINVAL;
		}
		if (b == FI_ADDR_NOTAVAIL)
			b = out[0] - g.first_rank;
		if (out[0] != b + g.first_rank || out[total - 1] != b + g.first_rank + total - 1) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: rank %u got fi_addr %llu, not %llu: open an empty AV so that fi_addr == rank\n",
				g.first_rank, (unsigned long long)out[0],
				(unsigned long long)(b + g.first_rank));
			return -FI_EINVAL;
		}
	}
	*base = b;
	*ndev_out = ndev;
	return 0;
}

/* Node address from a host name (hostname variant). */
int resolve_host(const std::string &host, uint32_t addr_format, uint16_t port,
		 std::vector<uint8_t> &out)
{
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
	if (e || !res) {
		WU_WARN(&pmix_prov, FI_LOG_AV,
			"wire-up: host name %s of the launcher's node list does not resolve: %s (set FI_PMIX_SYM_NODE_ADDR=leader)\n",
			host.c_str(), gai_strerror(e));
		return -FI_ENODATA;
	}
	const auto *p = reinterpret_cast<const uint8_t *>(res->ai_addr);
	out.assign(p, p + res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* Address of own slot's expected endpoint in the layout: node address
 * with port base + slot. */
bool on_layout(const std::vector<uint8_t> &name, const std::vector<uint8_t> &node_addr,
	       uint16_t port_base, uint32_t slot)
{
	return same_host(name, node_addr) && uint32_t(port_of(name)) == uint32_t(port_base) + slot;
}

int publish_body(session &s, uint32_t addr_format, const void *name, size_t len, uint64_t flags,
		 publish_origin origin)
{
	std::string why;
	if (!name || !wire::validate_name(addr_format, name, len, why)) {
		WU_WARN(&pmix_prov, FI_LOG_CORE, "wire-up publish: %s\n",
			name ? why.c_str() : "name is NULL");
		return -FI_EINVAL;
	}
	int m = decide_mode(s, flags);
	if (m < 0)
		return m;
	s.mode = m;
	s.own_name.assign(static_cast<const uint8_t *>(name), static_cast<const uint8_t *>(name) + len);
	s.own_format = addr_format;
	s.published = true;
	/* Local peers compute this name, or read the note left here. */
	if (int r = note_own(s, addr_format, name, len))
		return r;
	auto rec = wire::encode_ep(addr_format, s.job, s.rank, name, len);
	switch (m) {
	case FI_WIREUP_LAUNCHER:
		return 0; /* the launcher published for us */
	case FI_WIREUP_SYMMETRIC: {
		std::vector<uint8_t> net = net_of(addr_format, s.own_name);
		if (!sym_ok(addr_format) || net.empty()) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"symmetric wire-up declined: address format %u has no port layout; using modex\n",
				addr_format);
			s.mode = FI_WIREUP_MODEX;
			break;
		}
		int pb = param::get_int(&pmix_prov, "port_base").value;
		if (knob_string("sym_node_addr") == "hostname") {
			std::vector<uint8_t> node;
			if (pb <= 0) {
				WU_WARN(&pmix_prov, FI_LOG_CORE,
					"FI_PMIX_SYM_NODE_ADDR=hostname needs FI_PMIX_PORT_BASE\n");
				return -FI_EINVAL;
			}
			if (int r = resolve_host(s.lay.hosts[s.lay.my_pos], addr_format, uint16_t(pb), node))
				return r;
			if (!on_layout(net, node, uint16_t(pb), s.lay.my_slot)) {
				WU_WARN(&pmix_prov, FI_LOG_CORE,
					"rank %u: endpoint %s:%u is off the layout %s:%u (host name %s, slot %u); with FI_PMIX_SYM_NODE_ADDR=hostname nobody learns it: use leader\n",
					s.rank, host_text(net).c_str(), port_of(net),
					host_text(node).c_str(), pb + s.lay.my_slot,
					s.lay.hosts[s.lay.my_pos].c_str(), s.lay.my_slot);
				return -FI_EADDRNOTAVAIL;
			}
			return 0;
		}
		if (s.lay.my_slot == 0)
			return 0; /* the leader puts the node record in av_fill */
		if (int r = put(s, wire::key_local, rec, true))
			return r;
		return s.cl->commit();
	}
	default:
		break;
	}
	if (int r = put(s, wire::key_ep, rec, false))
		return r;
	/* The node blob goes out in the same commit as the first rank's own
	 * record: whoever finds one finds the other.  From fi_enable in a
	 * process whose PMIx session an MPI library owns, without waiting for
	 * the local peers' cards: the first rank would wait there for every
	 * peer's fi_enable (a hidden collective inside MPI_Init, polled while
	 * the peers start) for a blob only our own "pmix:" AVs read, and they
	 * fetch the ranks a blob lacks one by one.  A blob there must be: a
	 * direct get of one that is never put waits out the server's timeout. */
	const bool wait = !(origin == publish_origin::enable && s.cl->guest());
	if (node_records_on(s.mode))
		if (int r = publish_node(s, addr_format, wait))
			return r;
	return s.cl->commit();
}

int fill_modex(session &s, fid_av *av, uint32_t addr_format, fi_addr_t *base)
{
	if (int r = fence(s, true))
		return r;
	std::vector<std::vector<uint8_t>> names;
	node_blobs nb(s.nspace, s.job, addr_format, s.size, get_kind::cached);
	if (int r = gather_names(s, s.nspace, s.job, s.size, wire::key_ep, get_kind::cached,
				 addr_format, names, node_records_on(FI_WIREUP_MODEX) ? &nb : nullptr))
		return r;
	return bulk_insert(av, addr_format, names, base);
}

int resolve(void *ctx, fi_addr_t fi_addr, uint64_t token, void *addr, size_t *len)
{
	return guard("wireup resolve", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		auto *c = static_cast<resolver_ctx *>(ctx);
		if (!g_sess || !g_sess->up) {
			WU_WARN_SPARSE(&pmix_prov, FI_LOG_AV,
				       "wire-up: fi_addr %llu (rank %llu) is used after the wire-up was closed\n",
				       (unsigned long long)fi_addr, (unsigned long long)token);
			return -FI_ESHUTDOWN;
		}
		session &s = *g_sess;
		uint32_t rank = uint32_t(token);
		std::vector<uint8_t> rec;
		if (const local_format *f = computed_here(s, c->nspace, rank, c->addr_format)) {
			if (int e = local_name(s, *f, c->nspace, rank, rec))
				return e;
			if (rec.size() > *len)
				return -FI_ETOOSMALL;
			memcpy(addr, rec.data(), rec.size());
			*len = rec.size();
			return 0;
		}
		if (c->nb) {
			int e = c->nb->find(s, rank, rec);
			if (e && e != -FI_ENODATA)
				return e; /* a bad blob, logged */
			if (!e) {
				if (rec.size() > *len)
					return -FI_ETOOSMALL;
				memcpy(addr, rec.data(), rec.size());
				*len = rec.size();
				return 0;
			}
		}
		int r = get_peer(s, c->nspace, rank, wire::key_ep, get_kind::direct, rec);
		if (r) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: rank %u of %s has not published %s (%s, after FI_PMIX_DIRECT_RETRIES tries)\n",
				rank, c->nspace.c_str(), wire::key_ep, fi_strerror(-r));
			return r;
		}
		const uint8_t *nm;
		size_t n;
		std::string why;
		if (int e = wire::check_ep(rec, c->addr_format, c->job, rank, &nm, &n, why)) {
			WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: rank %u of %s, key %s: %s\n", rank,
				c->nspace.c_str(), wire::key_ep, why.c_str());
			return e;
		}
		if (n > *len)
			return -FI_ETOOSMALL;
		memcpy(addr, nm, n);
		*len = n;
		return 0;
	});
}

int fill_direct(session &s, fid_av *av, const std::string &ns, uint32_t size, uint32_t addr_format,
		fi_addr_t *base)
{
	s.resolvers.push_back({ns, wire::job_id(ns), addr_format, 0, nullptr});
	resolver_ctx *c = &s.resolvers.back();
	if (node_records_on(FI_WIREUP_DIRECT))
		c->nb = std::make_unique<node_blobs>(ns, c->job, addr_format, size, get_kind::direct);
	std::vector<uint64_t> tokens(size);
	for (uint32_t r = 0; r < size; r++)
		tokens[r] = r;
	std::vector<fi_addr_t> out(size);
	if (int r = av::set_resolver(av, resolve, c))
		return r;
	int r = av::reserve(av, tokens.data(), size, out.data());
	if (r != int(size)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: reserving %u entries: %s\n", size,
			fi_strerror(r < 0 ? -r : FI_EINVAL));
		return r < 0 ? r : -FI_EINVAL;
	}
	if (size && out[size - 1] != out[0] + size - 1) {
		WU_WARN(&pmix_prov, FI_LOG_AV,
			"wire-up: reserved entries are not contiguous: open an empty AV so that fi_addr == rank\n");
		return -FI_EINVAL;
	}
	*base = size ? out[0] : 0;
	c->base = *base;
	return 0;
}

int fill_sym(session &s, fid_av *av, uint32_t addr_format, fi_addr_t *base)
{
	const layout &lay = s.lay;
	std::vector<wire::node_view> views(lay.nn);
	int pb = param::get_int(&pmix_prov, "port_base").value;
	if (knob_string("sym_node_addr") == "hostname") {
		for (uint32_t k = 0; k < lay.nn; k++) {
			if (int r = resolve_host(lay.hosts[k], addr_format, uint16_t(pb), views[k].addr))
				return r;
			views[k].node = k;
			views[k].port_base = uint16_t(pb);
		}
		return fill_symmetric(s, av, lay, s.size, views, addr_format, s.job, s.nspace, base,
				      &s.deviants);
	}
	if (lay.my_slot == 0) {
		/* Leader: learn which local ranks are off the layout, put the node record. */
		if (!s.published) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"symmetric wire-up: rank %u leads its node but published no endpoint\n",
				s.rank);
			return -FI_EINVAL;
		}
		std::vector<uint8_t> own_net = net_of(addr_format, s.own_name);
		if (own_net.empty()) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"symmetric wire-up: rank %u's name has no network address\n", s.rank);
			return -FI_EINVAL;
		}
		uint16_t port_base = pb > 0 ? uint16_t(pb) : port_of(own_net);
		std::vector<uint8_t> node_addr = with_port(own_net, port_base);
		std::vector<wire::deviant> devs;
		if (!on_layout(own_net, node_addr, port_base, 0))
			devs.push_back({0, wire::encode_ep(addr_format, s.job, s.rank,
							   s.own_name.data(), s.own_name.size())});
		std::vector<uint8_t> rec;
		for (uint32_t sl = 1; sl < lay.ppn; sl++) {
			uint32_t r = lay.rank_at(lay.my_pos, sl);
			if (int e = get_peer(s, s.nspace, r, wire::key_local, get_kind::local, rec)) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"symmetric wire-up: local rank %u put no %s (%s)\n", r,
					wire::key_local, fi_strerror(-e));
				return e;
			}
			const uint8_t *nm;
			size_t n;
			std::string why;
			if (int e = wire::check_ep(rec, addr_format, s.job, r, &nm, &n, why)) {
				WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: rank %u, key %s: %s\n", r,
					wire::key_local, why.c_str());
				return e;
			}
			std::vector<uint8_t> name = net_of(addr_format, std::vector<uint8_t>(nm, nm + n));
			if (name.empty() || !on_layout(name, node_addr, port_base, sl)) {
				WU_INFO(&pmix_prov, FI_LOG_AV,
					"symmetric wire-up: rank %u at %s:%u is off the layout (%s:%u); it is published on its own\n",
					r, name.empty() ? "(no network part)" : host_text(name).c_str(),
					name.empty() ? 0u : port_of(name), host_text(node_addr).c_str(),
					port_base + sl);
				devs.push_back({sl, rec});
			}
		}
		auto nrec = wire::encode_node(addr_format, s.job, lay.my_pos, port_base,
					      node_addr.data(), node_addr.size(), devs);
		if (int r = put(s, wire::key_node, nrec, false))
			return r;
		if (int r = s.cl->commit())
			return r;
	}
	if (int r = fence(s, true))
		return r;
	std::vector<uint8_t> rec;
	for (uint32_t k = 0; k < lay.nn; k++) {
		uint32_t leader = lay.rank_at(k, 0);
		if (k == lay.my_pos && local_format_for(addr_format))
			continue; /* this node's ranks are computed (fill_symmetric) */
		if (int e = get_peer(s, s.nspace, leader, wire::key_node, get_kind::cached, rec)) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"symmetric wire-up: node leader rank %u put no %s (%s); nothing was inserted\n",
				leader, wire::key_node, fi_strerror(-e));
			return e;
		}
		size_t off = 0;
		std::string why;
		if (int e = wire::parse_node(rec, off, addr_format, s.job, views[k], why)) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"symmetric wire-up: rank %u, key %s: %s; nothing was inserted\n", leader,
				wire::key_node, why.c_str());
			return e;
		}
	}
	return fill_symmetric(s, av, lay, s.size, views, addr_format, s.job, s.nspace, base,
			      &s.deviants);
}

int fill_launcher(session &s, fid_av *av, const std::string &ns, uint32_t size,
		  uint32_t addr_format, fi_addr_t *base, uint32_t *ndev)
{
	uint64_t job = wire::job_id(ns);
	std::vector<uint8_t> table;
	const bool sym = !local_format_for(addr_format);
	if (sym && launcher_has_nodes(s, ns, table)) {
		if (ns != s.nspace || ensure_layout(s) != 0) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"launcher-published node records of %s need the job's layout: %s\n",
				ns.c_str(), ns != s.nspace ? "only the own namespace has one" : s.layout_why.c_str());
			return -FI_ENODATA;
		}
		uint32_t count = 0;
		if (table.size() >= 4)
			memcpy(&count, table.data(), 4);
		if (table.size() < 4 || count != s.lay.nn) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"launcher key %s: %u node records for %u nodes; nothing was inserted\n",
				wire::key_lpn, count, s.lay.nn);
			return -FI_EINVAL;
		}
		std::vector<wire::node_view> views(s.lay.nn);
		size_t off = 4;
		for (uint32_t i = 0; i < count; i++) {
			wire::node_view v;
			std::string why;
			if (int e = wire::parse_node(table, off, addr_format, job, v, why)) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"launcher key %s, node %u: %s; nothing was inserted\n",
					wire::key_lpn, i, why.c_str());
				return e;
			}
			views[s.lay.pos_of_node[i]] = std::move(v);
		}
		return fill_symmetric(s, av, s.lay, size, views, addr_format, job, ns, base, ndev);
	}
	std::vector<std::vector<uint8_t>> names;
	if (int r = gather_names(s, ns, job, size, wire::key_lp, get_kind::optional, addr_format, names))
		return r;
	return bulk_insert(av, addr_format, names, base);
}

void fill_info(const session &s, fi_wireup_info *info, int mode, fi_addr_t base,
	       const std::string &ns, uint32_t size)
{
	if (!info)
		return;
	size_t sz = info->size ? std::min(info->size, sizeof *info) : sizeof *info;
	fi_wireup_info v{.size = sz,
			 .mode = fi_wireup_mode(mode),
			 .rank = s.rank,
			 .job_size = size,
			 .local_rank = s.local_rank,
			 .local_size = s.local_size,
			 .num_nodes = s.num_nodes,
			 .node_id = s.node_id,
			 .base = base,
			 .local_peers = s.local_peers.data(),
			 .bytes_put = s.bytes_put,
			 .gets = s.gets,
			 .fences = s.fences,
			 .deviants = s.deviants,
			 .reserved = 0,
			 .nspace = {},
			 .bytes_got = s.bytes_got,
			 .local_gets = s.local_gets,
			 .local_bytes = s.local_bytes,
			 .local_computed = s.local_computed,
			 .local_noted = s.local_noted,
			 .gets_again = s.gets_again};
	snprintf(v.nspace, sizeof v.nspace, "%s", ns.c_str());
	memcpy(info, &v, sz);
}

int fill_body(session &s, fid_av *av, uint32_t addr_format, const char *nspace, uint64_t flags,
	      fi_wireup_info *info)
{
	if (int r = check_av(av))
		return r;
	std::string ns = nspace && *nspace ? nspace : s.nspace;
	bool own = ns == s.nspace;
	uint32_t size = s.size;
	if (!own && s.cl->job_u32(ns, PMIX_JOB_SIZE, size)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: namespace %s is unknown to PMIx\n", ns.c_str());
		return -FI_ENODATA;
	}
	int m;
	if (flags & FI_WIREUP_MODE_MASK || !own || s.mode == FI_WIREUP_AUTO) {
		m = decide_mode(s, flags);
		if (m < 0)
			return m;
		if (own && s.mode == FI_WIREUP_AUTO)
			s.mode = m;
	} else {
		m = s.mode;
	}
	if (!own && (m == FI_WIREUP_MODEX || m == FI_WIREUP_SYMMETRIC)) {
		WU_INFO(&pmix_prov, FI_LOG_AV,
			"wire-up: %s mode fences the own job only; namespace %s is filled in direct mode\n",
			mode_name(m), ns.c_str());
		m = FI_WIREUP_DIRECT;
	}
	if (m == FI_WIREUP_SYMMETRIC && s.published && s.own_format != addr_format) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: published format %u, the AV holds %u\n",
			s.own_format, addr_format);
		return -FI_EINVAL;
	}
	fi_addr_t base = 0;
	uint32_t ndev = 0;
	int r;
	switch (m) {
	case FI_WIREUP_MODEX:
		r = fill_modex(s, av, addr_format, &base);
		break;
	case FI_WIREUP_DIRECT:
		r = fill_direct(s, av, ns, size, addr_format, &base);
		break;
	case FI_WIREUP_SYMMETRIC:
		r = fill_sym(s, av, addr_format, &base);
		break;
	default:
		r = fill_launcher(s, av, ns, size, addr_format, &base, &ndev);
		if (!r && ndev)
			s.deviants = ndev;
		break;
	}
	if (r)
		return r;
	WU_INFO(&pmix_prov, FI_LOG_AV,
		"wire-up: %s: %u ranks of %s in the AV from fi_addr %llu; %llu bytes put, %llu gets, %llu fences\n",
		mode_name(m), size, ns.c_str(), (unsigned long long)base,
		(unsigned long long)s.bytes_put, (unsigned long long)s.gets,
		(unsigned long long)s.fences);
	fill_info(s, info, m, base, ns, size);
	return 0;
}

} // namespace wu::pmix::detail
