/* The PMIx wire-up: session, mode choice, the four modes, the ops table and
 * the "pmix:" named AV.  See wireup.h and include/rdma/fi_ext_wireup.h. */
#include "pmix_glue/wireup.h"

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

namespace wu::pmix {

fi_provider pmix_prov = {
	.version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.context = {},
	.name = "pmix",
	.getinfo = nullptr,
	.fabric = nullptr,
	.cleanup = nullptr,
};

namespace {

constexpr param::def knobs[] = {
	{FI_PARAM_STRING, "mode", "auto",
	 "PMIx wire-up mode: auto, modex, direct, symmetric or launcher (default: auto)"},
	{FI_PARAM_INT, "port_base", "0",
	 "Symmetric layout: the rank in slot s of its node listens on port_base + s; 0 takes the port of each node's first rank (default: 0)"},
	{FI_PARAM_STRING, "sym_node_addr", "leader",
	 "Symmetric mode: node addresses come from one record per node put by its first rank (leader), or from the launcher's host names with no exchange at all (hostname; needs FI_PMIX_PORT_BASE) (default: leader)"},
	{FI_PARAM_SIZE_T, "direct_min", "4096",
	 "With mode auto, jobs of at least this many ranks use the direct mode (default: 4096)"},
	{FI_PARAM_INT, "direct_retries", "100",
	 "Direct mode: PMIx_Get attempts for a peer that has not published yet, 20 ms apart (default: 100)"},
	{FI_PARAM_BOOL, "auto_publish", "1",
	 "Publish an endpoint's name when a provider enables it, for the zero-code \"pmix:\" AV (default: 1)"},
};

const char *mode_name(int m)
{
	switch (m) {
	case FI_WIREUP_MODEX: return "modex";
	case FI_WIREUP_DIRECT: return "direct";
	case FI_WIREUP_SYMMETRIC: return "symmetric";
	case FI_WIREUP_LAUNCHER: return "launcher";
	default: return "auto";
	}
}

/* What a direct-mode AV needs to resolve an entry. */
struct resolver_ctx {
	std::string nspace;
	uint64_t job;
	uint32_t addr_format;
	fi_addr_t base;
};

struct session {
	std::unique_ptr<client> cl;
	bool up = false;
	bool fake = false;
	std::string nspace;
	uint64_t job = 0;
	uint32_t rank = 0, size = 0, local_rank = 0, local_size = 0, num_nodes = 0, node_id = 0;
	std::vector<uint32_t> local_peers;
	int mode = FI_WIREUP_AUTO; /* decided for the own namespace */
	bool published = false;
	std::vector<uint8_t> own_name;
	uint32_t own_format = 0;
	bool have_layout = false;
	std::string layout_why; /* why symmetric was declined ("" if not) */
	layout lay;
	uint32_t deviants = 0;
	uint64_t bytes_put = 0, gets = 0, fences = 0;
	std::list<resolver_ctx> resolvers; /* kept while the process lives */
};

std::recursive_mutex g_mu;
session *g_sess;			    /* never freed: AV resolvers point into it */
std::unique_ptr<client> g_next_client;	    /* for tests */
bool g_next_is_test;

std::string knob_string(const char *name)
{
	return param::get_string(&pmix_prov, name).value;
}

void finalize_at_exit()
{
	std::lock_guard<std::recursive_mutex> g(g_mu);
	if (g_sess && g_sess->up && !g_sess->fake) {
		g_sess->cl->finalize();
		g_sess->up = false;
	}
}

std::vector<uint32_t> parse_ranks(const std::string &s)
{
	std::vector<uint32_t> out;
	const char *p = s.c_str();
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p)
			break;
		out.push_back(uint32_t(v));
		p = *end == ',' ? end + 1 : end;
	}
	std::sort(out.begin(), out.end());
	return out;
}

/* The session, initialised (PMIx_Init) on first use. */
int get_session(session *&out)
{
	if (!g_sess)
		g_sess = new session;
	session &s = *g_sess;
	if (s.up) {
		out = &s;
		return 0;
	}
	param::define_all(&pmix_prov, knobs);
	if (g_next_is_test) {
		s.cl = std::move(g_next_client);
		s.fake = true;
		g_next_is_test = false;
	} else if (!s.cl || s.fake) {
		s.cl = make_real_client();
		s.fake = false;
	}
	if (!s.cl)
		return -FI_EINVAL;
	if (int r = s.cl->init(s.nspace, s.rank))
		return r;
	s.job = wire::job_id(s.nspace);
	client &c = *s.cl;
	int r = c.job_u32(s.nspace, PMIX_JOB_SIZE, s.size);
	if (!r)
		r = c.proc_u32(s.nspace, s.rank, PMIX_LOCAL_RANK, s.local_rank);
	if (r) {
		WU_WARN(&pmix_prov, FI_LOG_CORE,
			"namespace %s: the launcher gave no %s for rank %u; the wire-up needs PMIX_JOB_SIZE and PMIX_LOCAL_RANK\n",
			s.nspace.c_str(), r == 0 ? "" : "job size or local rank", s.rank);
		c.finalize();
		return r;
	}
	/* The rest is optional: locality degrades to "only myself". */
	if (c.job_u32(s.nspace, PMIX_LOCAL_SIZE, s.local_size))
		s.local_size = 1;
	if (c.job_u32(s.nspace, PMIX_NUM_NODES, s.num_nodes))
		s.num_nodes = 1;
	if (c.proc_u32(s.nspace, s.rank, PMIX_NODEID, s.node_id))
		s.node_id = 0;
	std::string peers;
	if (c.job_string(s.nspace, PMIX_LOCAL_PEERS, peers) == 0)
		s.local_peers = parse_ranks(peers);
	if (s.local_peers.empty())
		s.local_peers = {s.rank};
	s.local_size = uint32_t(s.local_peers.size());
	s.up = true;
	s.mode = FI_WIREUP_AUTO;
	s.published = false;
	s.have_layout = false;
	s.deviants = 0;
	s.bytes_put = s.gets = s.fences = 0;
	if (!s.fake) {
		static std::once_flag once;
		std::call_once(once, [] { atexit(finalize_at_exit); });
	}
	WU_INFO(&pmix_prov, FI_LOG_CORE, "PMIx: %s rank %u of %u, local %u of %u, %u nodes\n",
		s.nspace.c_str(), s.rank, s.size, s.local_rank, s.local_size, s.num_nodes);
	out = &s;
	return 0;
}

int get_peer(session &s, const std::string &ns, uint32_t rank, const char *key, get_kind kind,
	     std::vector<uint8_t> &out)
{
	s.gets++;
	if (kind != get_kind::direct && kind != get_kind::local)
		return s.cl->get(ns, rank, key, kind, out);
	int tries = std::max(1, param::get_int(&pmix_prov, "direct_retries").value);
	int r = 0;
	for (int i = 0; i < tries; i++) {
		r = s.cl->get(ns, rank, key, kind, out);
		if (r != -FI_ENODATA && r != -FI_ETIMEDOUT)
			return r;
		if (i + 1 < tries) {
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
			s.gets++;
		}
	}
	return r;
}

int put(session &s, const char *key, const std::vector<uint8_t> &v, bool local_only)
{
	if (int r = s.cl->put(key, v.data(), v.size(), local_only))
		return r;
	s.bytes_put += v.size();
	return 0;
}

int fence(session &s, bool collect)
{
	s.fences++;
	return s.cl->fence(collect, {});
}

/* ---- launcher-published data ---- */

bool launcher_has_nodes(session &s, const std::string &ns, std::vector<uint8_t> &table)
{
	return get_peer(s, ns, wildcard_rank, wire::key_lpn, get_kind::optional, table) == 0;
}

bool launcher_has_ranks(session &s, const std::string &ns)
{
	std::vector<uint8_t> v;
	if (get_peer(s, ns, 0, wire::key_lp, get_kind::optional, v) == 0)
		return true;
	return get_peer(s, ns, 0, PMIX_FABRIC_ENDPT, get_kind::optional, v) == 0;
}

/* ---- layout (symmetric) ---- */

int ensure_layout(session &s)
{
	if (s.have_layout)
		return s.layout_why.empty() ? 0 : -FI_ENODATA;
	node_map m;
	int r = s.cl->nodes(s.nspace, m);
	if (r) {
		s.layout_why = "the launcher's node map (PMIx_Resolve_nodes/peers) is not available";
	} else if (!analyze(m, s.size, s.rank, s.lay, s.layout_why)) {
		r = -FI_ENODATA;
	}
	if (r && s.layout_why.empty())
		s.layout_why = "no node map";
	s.have_layout = true;
	return s.layout_why.empty() ? 0 : -FI_ENODATA;
}

int decide_mode(session &s, uint64_t flags)
{
	int forced = int(flags & FI_WIREUP_MODE_MASK);
	if (forced > FI_WIREUP_LAUNCHER) {
		WU_WARN(&pmix_prov, FI_LOG_CORE, "wire-up mode %d in flags is not one of FI_WIREUP_*\n",
			forced);
		return -FI_EINVAL;
	}
	int m = forced;
	if (!m) {
		std::string p = knob_string("mode");
		if (p == "modex") m = FI_WIREUP_MODEX;
		else if (p == "direct") m = FI_WIREUP_DIRECT;
		else if (p == "symmetric") m = FI_WIREUP_SYMMETRIC;
		else if (p == "launcher") m = FI_WIREUP_LAUNCHER;
		else if (p != "auto" && !p.empty()) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"FI_PMIX_MODE=%s is not auto, modex, direct, symmetric or launcher; using auto\n",
				p.c_str());
		}
	}
	if (!m) {
		std::vector<uint8_t> t;
		if (launcher_has_nodes(s, s.nspace, t) || launcher_has_ranks(s, s.nspace))
			m = FI_WIREUP_LAUNCHER;
		else if (param::get_int(&pmix_prov, "port_base").value > 0 && ensure_layout(s) == 0)
			m = FI_WIREUP_SYMMETRIC;
		else if (s.size >= param::get_size(&pmix_prov, "direct_min").value)
			m = FI_WIREUP_DIRECT;
		else
			m = FI_WIREUP_MODEX;
	}
	if (m == FI_WIREUP_SYMMETRIC && ensure_layout(s) != 0) {
		WU_WARN(&pmix_prov, FI_LOG_CORE, "symmetric wire-up declined: %s; using modex instead\n",
			s.layout_why.c_str());
		m = FI_WIREUP_MODEX;
	}
	return m;
}

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

/* ---- filling ---- */

int check_av(fid_av *av)
{
	if (!av || !av::is_av(&av->fid)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: av is not a Wireup address vector\n");
		return -FI_EINVAL;
	}
	return 0;
}

/* One insert of every name, in rank order; fi_addr of rank 0 in *base. */
int bulk_insert(fid_av *av, uint32_t addr_format, const std::vector<std::vector<uint8_t>> &names,
		fi_addr_t *base)
{
	size_t n = names.size();
	size_t len = names.empty() ? 0 : names[0].size();
	std::vector<uint8_t> buf;
	buf.reserve(n * len);
	for (const auto &nm : names)
		buf.insert(buf.end(), nm.begin(), nm.end());
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

/* Gets and checks every rank's ep record under key; all or nothing. */
int gather_names(session &s, const std::string &ns, uint64_t job, uint32_t size, const char *key,
		 get_kind kind, uint32_t addr_format, std::vector<std::vector<uint8_t>> &names)
{
	names.assign(size, {});
	std::vector<uint8_t> rec;
	for (uint32_t r = 0; r < size; r++) {
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
		if (r && names[r].size() != names[0].size()) {
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
	(void)s;
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

int publish_body(session &s, uint32_t addr_format, const void *name, size_t len, uint64_t flags)
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
	auto rec = wire::encode_ep(addr_format, s.job, s.rank, name, len);
	switch (m) {
	case FI_WIREUP_LAUNCHER:
		return 0; /* the launcher published for us */
	case FI_WIREUP_SYMMETRIC: {
		if (!sym_format(addr_format)) {
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
			if (!on_layout(s.own_name, node, uint16_t(pb), s.lay.my_slot)) {
				WU_WARN(&pmix_prov, FI_LOG_CORE,
					"rank %u: endpoint %s:%u is off the layout %s:%u (host name %s, slot %u); with FI_PMIX_SYM_NODE_ADDR=hostname nobody learns it: use leader\n",
					s.rank, host_text(s.own_name).c_str(), port_of(s.own_name),
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
	return s.cl->commit();
}

int fill_modex(session &s, fid_av *av, uint32_t addr_format, fi_addr_t *base)
{
	if (int r = fence(s, true))
		return r;
	std::vector<std::vector<uint8_t>> names;
	if (int r = gather_names(s, s.nspace, s.job, s.size, wire::key_ep, get_kind::cached,
				 addr_format, names))
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
	s.resolvers.push_back({ns, wire::job_id(ns), addr_format, 0});
	resolver_ctx *c = &s.resolvers.back();
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
		uint16_t port_base = pb > 0 ? uint16_t(pb) : port_of(s.own_name);
		std::vector<uint8_t> node_addr = with_port(s.own_name, port_base);
		std::vector<wire::deviant> devs;
		if (!on_layout(s.own_name, node_addr, port_base, 0))
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
			std::vector<uint8_t> name(nm, nm + n);
			if (!on_layout(name, node_addr, port_base, sl)) {
				WU_INFO(&pmix_prov, FI_LOG_AV,
					"symmetric wire-up: rank %u at %s:%u is off the layout (%s:%u); it is published on its own\n",
					r, host_text(name).c_str(), port_of(name),
					host_text(node_addr).c_str(), port_base + sl);
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
	if (launcher_has_nodes(s, ns, table)) {
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
	fi_wireup_info v{};
	v.size = sz;
	v.mode = fi_wireup_mode(mode);
	v.rank = s.rank;
	v.job_size = size;
	v.local_rank = s.local_rank;
	v.local_size = s.local_size;
	v.num_nodes = s.num_nodes;
	v.node_id = s.node_id;
	v.base = base;
	v.local_peers = s.local_peers.data();
	v.bytes_put = s.bytes_put;
	v.gets = s.gets;
	v.fences = s.fences;
	v.deviants = s.deviants;
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

uint32_t format_of(fid_domain *domain)
{
	prov::domain *d = prov::domain_of(domain);
	if (!d || !d->info)
		return 0;
	return d->info->addr_format;
}

int op_publish(fid_domain *domain, const void *name, size_t len, uint32_t addr_format,
	       uint64_t flags)
{
	if (!prov::domain_of(domain))
		return -FI_EINVAL;
	return publish(addr_format, name, len, flags);
}

int op_av_fill(fid_domain *domain, fid_av *av, const char *nspace, uint64_t flags,
	       fi_wireup_info *info)
{
	uint32_t f = format_of(domain);
	if (!f)
		return -FI_EINVAL;
	return av_fill(av, f, nspace, flags, info);
}

int op_job_info(fid_domain *domain, const char *nspace, fi_wireup_info *info)
{
	if (!prov::domain_of(domain))
		return -FI_EINVAL;
	return job_info(nspace, info);
}

int op_is_local(fid_domain *domain, uint32_t rank)
{
	if (!prov::domain_of(domain))
		return -FI_EINVAL;
	return is_local(rank);
}

int op_close(fid_domain *domain)
{
	if (!prov::domain_of(domain))
		return -FI_EINVAL;
	return close();
}

fi_ops_wireup_pmix wireup_ops = {
	sizeof(fi_ops_wireup_pmix), op_publish, op_av_fill, op_job_info, op_is_local, op_close,
};

} // namespace

int publish(uint32_t addr_format, const void *name, size_t len, uint64_t flags) noexcept
{
	return guard("fi_wireup publish", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		session *s;
		if (int r = get_session(s))
			return r;
		return publish_body(*s, addr_format, name, len, flags);
	});
}

int av_fill(fid_av *av, uint32_t addr_format, const char *nspace, uint64_t flags,
	    fi_wireup_info *info) noexcept
{
	return guard("fi_wireup av_fill", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		session *s;
		if (int r = get_session(s))
			return r;
		return fill_body(*s, av, addr_format, nspace, flags, info);
	});
}

int job_info(const char *nspace, fi_wireup_info *info) noexcept
{
	return guard("fi_wireup job_info", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		session *s;
		if (int r = get_session(s))
			return r;
		std::string ns = nspace && *nspace ? nspace : s->nspace;
		uint32_t size = s->size;
		if (ns != s->nspace && s->cl->job_u32(ns, PMIX_JOB_SIZE, size))
			return -FI_ENODATA;
		fill_info(*s, info, s->mode, 0, ns, size);
		return 0;
	});
}

int is_local(uint32_t rank) noexcept
{
	return guard("fi_wireup is_local", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		session *s;
		if (int r = get_session(s))
			return r;
		return std::binary_search(s->local_peers.begin(), s->local_peers.end(), rank) ? 1 : 0;
	});
}

int close() noexcept
{
	return guard("fi_wireup close", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		if (!g_sess || !g_sess->up)
			return 0;
		g_sess->up = false;
		return g_sess->cl->finalize();
	});
}

void endpoint_named(const void *name, size_t len, uint32_t addr_format) noexcept
{
	guard_void("fi_wireup endpoint_named", [&] {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		if (!getenv("PMIX_NAMESPACE") && !g_next_is_test && !(g_sess && g_sess->up))
			return; /* not a PMIx client */
		param::define_all(&pmix_prov, knobs);
		if (!param::get_bool(&pmix_prov, "auto_publish").value)
			return;
		bool was_up = g_sess && g_sess->up;
		session *s;
		if (get_session(s) || s->published)
			return;
		publish_body(*s, addr_format, name, len, FI_WIREUP_FLAGS(FI_WIREUP_DIRECT));
		if (!was_up && s->cl->guest()) {
			/* An MPI library owns this process's PMIx session and ends it
			 * in its own finalize: our reference goes now, or our exit-time
			 * PMIx_Finalize would be the last one, run while libpmix is
			 * being unloaded.  The published key stays with the server. */
			WU_INFO(&pmix_prov, FI_LOG_CORE,
				"PMIx: endpoint published; the session belongs to another library in this process, reference dropped\n");
			s->cl->finalize();
			s->up = false;
		}
	});
}

int job_secret(unsigned char *out, size_t len) noexcept
{
	return guard("tcp job key through PMIx", [&]() -> int {
		static const char key[] = "wireup.tcp.jobkey";
		static std::string cached_ns;
		static std::vector<uint8_t> cached;
		std::lock_guard<std::recursive_mutex> g(g_mu);
		if (!out || !len)
			return -FI_EINVAL;
		if (!getenv("PMIX_NAMESPACE") && !g_next_is_test && !(g_sess && g_sess->up))
			return -FI_ENODATA; /* not a PMIx client */
		bool was_up = g_sess && g_sess->up;
		session *s;
		if (int r = get_session(s))
			return r;
		int r = 0;
		std::vector<uint8_t> v;
		if (cached_ns == s->nspace && cached.size() == len) {
			v = cached;
		} else if (s->rank == 0) {
			/* One value for the job, not one per rank: rank 0 draws it. */
			v.resize(len);
			if (getrandom(v.data(), len, 0) != ssize_t(len))
				r = -FI_EOTHER;
			if (!r)
				r = s->cl->put(key, v.data(), len, false);
			if (!r)
				r = s->cl->commit();
		} else {
			/* Rank 0 may not have put it yet (the server holds a direct
			 * get up to its timeout); a local NOT-FOUND is retried. */
			for (int i = 0; i < 3; i++) {
				r = s->cl->get(s->nspace, 0, key, get_kind::direct, v);
				if (r != -FI_ENODATA)
					break;
				std::this_thread::sleep_for(std::chrono::milliseconds(20));
			}
			if (!r && v.size() != len)
				r = -FI_EINVAL;
		}
		if (!was_up && s->cl->guest()) {
			/* As in endpoint_named: the session belongs to an MPI library. */
			s->cl->finalize();
			s->up = false;
		}
		if (r) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"PMIx: no job key for namespace %s from rank 0 (%s); the tcp provider falls back to the per-user key file\n",
				s->nspace.c_str(), fi_strerror(-r));
			return r;
		}
		cached_ns = s->nspace;
		cached = v;
		memcpy(out, v.data(), len);
		return 0;
	});
}

int named_av_open(prov::domain *dom, const av::av_format *fmt, fi_av_attr *attr, fid_av **out,
		  void *context) noexcept
{
	return guard("fi_av_open(pmix:)", [&]() -> int {
		std::lock_guard<std::recursive_mutex> g(g_mu);
		const char *ns = attr->name + strlen(FI_WIREUP_AV_PREFIX);
		if (attr->flags & FI_READ) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"fi_av_open(\"%s\"): a PMIx AV is filled by its opener; FI_READ does not apply\n",
				attr->name);
			return -FI_EINVAL;
		}
		session *s;
		if (int r = get_session(s))
			return r;
		std::string nss = *ns ? ns : s->nspace;
		/* No endpoint may exist yet: only modes that need nothing from this
		 * process now (launcher, symmetric by host names, direct) unless a
		 * mode is forced or this process published already. */
		int m = s->mode;
		if (m == FI_WIREUP_AUTO) {
			m = decide_mode(*s, 0);
			if (m < 0)
				return m;
			bool sym_free = m == FI_WIREUP_SYMMETRIC && knob_string("sym_node_addr") == "hostname";
			if (knob_string("mode") == "auto" && m != FI_WIREUP_LAUNCHER && !sym_free)
				m = FI_WIREUP_DIRECT;
		}
		fi_av_attr a = *attr;
		a.name = nullptr;
		if (m == FI_WIREUP_SYMMETRIC || m == FI_WIREUP_LAUNCHER)
			a.flags |= FI_SYMMETRIC;
		if (int r = av::open(dom, fmt, &a, out, context))
			return r;
		fi_wireup_info info{};
		info.size = sizeof info;
		int r = fill_body(*s, *out, fmt->addr_format, nss.c_str(), FI_WIREUP_FLAGS(m), &info);
		if (r) {
			fi_close(&(*out)->fid);
			*out = nullptr;
			return r;
		}
		attr->type = a.type;
		return 0;
	});
}

void use_client_for_tests(std::unique_ptr<client> c)
{
	std::lock_guard<std::recursive_mutex> g(g_mu);
	if (g_sess)
		g_sess->up = false;
	g_next_client = std::move(c);
	g_next_is_test = g_next_client != nullptr;
	if (g_sess && !g_next_is_test) {
		g_sess->cl.reset();
		g_sess->fake = false;
	}
}

int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context) noexcept
{
	(void)context;
	if (!fid || !name || !ops || flags)
		return -FI_EINVAL;
	if (strcmp(name, FI_WIREUP_PMIX_OPS) != 0)
		return -FI_ENOSYS;
	*ops = &wireup_ops;
	return 0;
}

} // namespace wu::pmix

/* Called by src/api before the first fabric opens. */
void wu::pmix::register_av_names() noexcept
{
	wu::av::register_named_open(FI_WIREUP_AV_PREFIX, wu::pmix::named_av_open);
}
