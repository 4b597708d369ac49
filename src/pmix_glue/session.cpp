/* SPDX-License-Identifier: BSD-3-Clause */
/* The PMIx wire-up: session, mode choice, the ops table and the "pmix:"
 * named AV; fill.cpp fills an AV in each of the four modes.  See session.h
 * and include/rdma/fi_ext_wireup.h. */
#include "pmix_glue/session.h"
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
#include <cstdio>
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
#include "core/launcher.h"
#include "core/log.h"
#include "core/owned.h"
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

namespace detail {

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
	{FI_PARAM_INT, "card_wait", "60000",
	 "Modex and direct modes: milliseconds the first rank of a node waits for its local peers' cards before it puts the node blob without the missing ones (in modex they all reach the fence that follows anyway) (default: 60000)"},
	{FI_PARAM_BOOL, "node_records", "1",
	 "Modex and direct modes: the first rank of each node publishes one record with its node's addresses, and a rank fetches one record per node instead of one per rank (default: 1)"},
	{FI_PARAM_STRING, "node_ports", "20000-32767",
	 "Modex and direct modes with node records: the first endpoint of the rank in slot s of its node listens on B + s, B derived from the job's namespace within this range of ports (a port that is taken: any port, the rank is an exception in its node's record); empty or 0: any port (default: 20000-32767)"},
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
	if (g_sess)
		drop_note(*g_sess);
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

/* The job's data of the session's rank, once per job and rank; on a
 * failure the PMIx session ends again. */
static int read_job(session &s)
{
	if (s.job_read)
		return 0;
	client &c = *s.cl;
	int r = c.job_u32(s.nspace, PMIX_JOB_SIZE, s.size);
	if (!r)
		r = c.proc_u32(s.nspace, s.rank, PMIX_LOCAL_RANK, s.local_rank);
	if (r) {
		WU_WARN(&pmix_prov, FI_LOG_CORE,
			"namespace %s: the launcher gave no job size or local rank for rank %u; the wire-up needs PMIX_JOB_SIZE and PMIX_LOCAL_RANK\n",
			s.nspace.c_str(), s.rank);
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
	s.local_peers.clear();
	if (c.job_string(s.nspace, PMIX_LOCAL_PEERS, peers) == 0)
		s.local_peers = parse_ranks(peers);
	if (s.local_peers.empty())
		s.local_peers = {s.rank};
	s.local_size = uint32_t(s.local_peers.size());
	s.job_read = true;
	return 0;
}

/* The session, initialised (PMIx_Init) on first use. */
int get_session(session *&out)
{
	if (!g_sess)
		g_sess = &make_immortal<session>();
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
	const uint64_t had_job = s.job;
	const uint32_t had_rank = s.rank;
	if (int r = s.cl->init(s.nspace, s.rank))
		return r;
	s.job = wire::job_id(s.nspace);
	/* Cards taken into an earlier blob are reused only by the same rank
	 * of the same job (a PMIx session ended and begun again). */
	if (s.job != had_job || s.rank != had_rank) {
		s.own_blob.clear();
		s.job_read = false;
	}
	if (int r = read_job(s))
		return r;
	s.up = true;
	s.mode = FI_WIREUP_AUTO;
	s.published = false;
	s.have_layout = false;
	s.deviants = 0;
	s.bytes_put = s.gets = s.fences = 0;
	s.local_gets = s.local_bytes = s.bytes_got = 0;
	s.local_computed = s.local_noted = 0;
	s.gets_again = 0;
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
	/* Counted by whose data it is: fetches of node-local peers are what
	 * a local_format (core/launcher.h) saves. */
	bool local = rank != wildcard_rank && is_local_peer(s, ns, rank);
	auto count = [&](int r) {
		s.gets++;
		s.local_gets += local;
		if (r == 0) {
			s.bytes_got += out.size();
			if (local)
				s.local_bytes += out.size();
		}
		return r;
	};
	if (kind != get_kind::direct && kind != get_kind::local)
		return count(s.cl->get(ns, rank, key, kind, out));
	int tries = std::max(1, param::get_int(&pmix_prov, "direct_retries").value);
	int r = 0;
	for (int i = 0; i < tries; i++) {
		r = count(s.cl->get(ns, rank, key, kind, out));
		if (r != -FI_ENODATA && r != -FI_ETIMEDOUT)
			return r;
		if (i + 1 < tries) {
			s.gets_again++;
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
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

/* Rank 0's entry, so that every rank decides alike.  A probe of launcher
 * data, not a fetch of a peer's address: counted in gets and bytes_got,
 * never as a local peer's. */
bool launcher_probe(session &s, const std::string &ns, const char *key)
{
	std::vector<uint8_t> v;
	s.gets++;
	int r = s.cl->get(ns, 0, key, get_kind::optional, v);
	if (r == 0)
		s.bytes_got += v.size();
	return r == 0;
}

bool launcher_has_ranks(session &s, const std::string &ns)
{
	return launcher_probe(s, ns, wire::key_lp) || launcher_probe(s, ns, PMIX_FABRIC_ENDPT);
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
	/* 0 is a format too: FI_FORMAT_UNSPEC, the wireup provider's. */
	prov::domain *d = prov::domain_of(domain);
	if (!d || !d->info)
		return -FI_EINVAL;
	return av_fill(av, format_of(domain), nspace, flags, info);
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

} // namespace detail

using namespace detail;

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
		drop_note(*g_sess);
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
		publish_body(*s, addr_format, name, len, FI_WIREUP_FLAGS(FI_WIREUP_DIRECT),
			     publish_origin::enable);
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

/* The node port rule's port for slot of a job of nspace on a node of
 * nlocal ranks: lo + (job id mod the bases that leave room for nlocal)
 * within FI_PMIX_NODE_PORTS "lo-hi"; 0 when off or it does not fit. */
uint32_t node_port(const std::string &nspace, uint32_t slot, uint32_t nlocal)
{
	std::string r = knob_string("node_ports");
	unsigned lo = 0, hi = 0;
	char tail = 0;
	if (r.empty() || r == "0")
		return 0;
	if (sscanf(r.c_str(), "%u-%u%c", &lo, &hi, &tail) != 2 || lo == 0 || hi > 65535 || lo > hi) {
		WU_WARN(&pmix_prov, FI_LOG_CORE,
			"FI_PMIX_NODE_PORTS=%s is not \"lo-hi\" (1 <= lo <= hi <= 65535); endpoints listen on any port\n",
			r.c_str());
		return 0;
	}
	if (nlocal == 0 || slot >= nlocal || hi - lo + 1 < nlocal)
		return 0;
	uint64_t bases = uint64_t(hi - lo + 1) - nlocal + 1;
	return lo + uint32_t(wire::job_id(nspace) % bases) + slot;
}

namespace {

/* A layout port inside the kernel's ephemeral range can be taken by any
 * outgoing connection on the node (the launcher's own, PMIx's): the rank
 * then listens elsewhere and, by host names, nobody learns where. */
void warn_if_ephemeral(uint32_t p, bool sym)
{
	unsigned lo = 0, hi = 0;
	FILE *f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (!f)
		return;
	const bool ok = std::fscanf(f, "%u %u", &lo, &hi) == 2;
	std::fclose(f);
	if (ok && p >= lo && p <= hi)
		WU_WARN_ONCE(&pmix_prov, FI_LOG_CORE,
			     "%s port %u lies in the kernel's ephemeral range %u-%u (net.ipv4.ip_local_port_range): any outgoing connection may take it; choose %s below %u\n",
			     sym ? "symmetric layout" : "node port rule", p, lo, hi,
			     sym ? "FI_PMIX_PORT_BASE" : "FI_PMIX_NODE_PORTS", lo);
}

} // namespace

int symmetric_port(uint16_t *port) noexcept
{
	return guard("fi_wireup symmetric_port", [&]() -> int {
		static bool taken;
		std::lock_guard<std::recursive_mutex> g(g_mu);
		if (taken || !port ||
		    (!getenv("PMIX_NAMESPACE") && !g_next_is_test && !(g_sess && g_sess->up)))
			return -FI_ENODATA;
		param::define_all(&pmix_prov, knobs);
		int pb = param::get_int(&pmix_prov, "port_base").value;
		std::string m = knob_string("mode");
		/* Symmetric with a port base; else the node rule of the modes that
		 * put node records (auto may become either). */
		const bool sym = pb > 0 && (m == "symmetric" || m == "auto");
		const bool rule = !sym && (m == "auto" || m == "modex" || m == "direct") &&
				  param::get_bool(&pmix_prov, "node_records").value;
		if (!sym && !rule)
			return -FI_ENODATA;
		bool was_up = g_sess && g_sess->up;
		session *s;
		if (int r = get_session(s))
			return r;
		uint32_t p = 0, slot = 0;
		int r = 0;
		if (sym) {
			r = ensure_layout(*s);
			slot = s->lay.my_slot;
			p = uint32_t(pb) + slot;
		} else {
			auto it = std::find(s->local_peers.begin(), s->local_peers.end(), s->rank);
			slot = uint32_t(it - s->local_peers.begin());
			p = node_port(s->nspace, slot, uint32_t(s->local_peers.size()));
		}
		if (!was_up && s->cl->guest()) {
			/* As in endpoint_named: the session belongs to an MPI library. */
			s->cl->finalize();
			s->up = false;
		}
		if (r || p == 0 || p > 65535)
			return -FI_ENODATA;
		taken = true;
		warn_if_ephemeral(p, sym);
		*port = uint16_t(p);
		WU_INFO(&pmix_prov, FI_LOG_CORE, "%s: rank %u (slot %u) listens on port %u\n",
			sym ? "symmetric layout" : "node port rule", s->rank, slot, p);
		return 0;
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
			 * get up to its 5 s timeout); a local NOT-FOUND or a timeout is
			 * retried for a minute, since the per-user key this rank falls
			 * back to differs from its peers' and fails every handshake
			 * (10 of 256 ranks did at 16 x 16 on two cores). */
			const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
			for (bool said = false;; said = true) {
				r = s->cl->get(s->nspace, 0, key, get_kind::direct, v);
				if ((r != -FI_ENODATA && r != -FI_ETIMEDOUT) || std::chrono::steady_clock::now() >= until)
					break;
				if (!said) /* once: asks go every 20 ms for up to a minute */
					WU_INFO(&pmix_prov, FI_LOG_CORE,
						"PMIx: job key of %s not there yet (%s); asking again for up to 60 s\n",
						s->nspace.c_str(), fi_strerror(-r));
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
	if (g_sess) {
		g_sess->up = false;
		drop_note(*g_sess);
		g_sess->job_read = false; /* another fake job, maybe of the same name */
		g_sess->own_blob.clear();
	}
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
	if (strcmp(name, FI_WIREUP_PMIX_OPS) != 0) {
		/* e.g. 2.x's "fi_profile_ops": no profile counters here */
		WU_INFO(&core_prov, FI_LOG_DOMAIN, "fi_open_ops: a domain has no interface \"%s\" (only \"%s\")\n",
			name, FI_WIREUP_PMIX_OPS);
		return -FI_ENOSYS;
	}
	*ops = &wireup_ops;
	return 0;
}

} // namespace wu::pmix

/* Called by src/api before the first fabric opens. */
void wu::pmix::register_hooks() noexcept
{
	static constexpr wu::launcher::hooks hooks = {wu::pmix::job_secret, wu::pmix::endpoint_named,
						      wu::pmix::domain_ops_open, wu::pmix::symmetric_port};
	wu::av::register_named_open(FI_WIREUP_AV_PREFIX, wu::pmix::named_av_open);
	wu::launcher::set_hooks(&hooks);
}
