/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider descriptor, its fi_getinfo templates (one per interface and
 * endpoint type), and its fabric and domain objects. */
#include "prov/tcp/tcp.h"

#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "av/av.h"
#include "core/fid.h"
#include "core/info.h"
#include "core/log.h"
#include "core/shim.h"
#include "getinfo/filter.h"
#include "getinfo/nic.h"
#include "prov/common/info_template.h"
#include "prov/common/objects.h"
#include "prov/common/ops_tables.h"
#include "core/param.h"
#include "prov/common/atomic.h"
#include "prov/common/cq.h"
#include "prov/common/poll.h"
#include "prov/tcp/frame.h"
#include "prov/tcp/tcp_ep.h"

namespace wu::tcp {
namespace {

using wu::nic_info;

fi_provider tcp_prov_desc;

/* What one endpoint type offers; the same for every interface. */
void fill_common(fi_info &i, fi_ep_type type)
{
	prov::template_desc d;
	d.type = type;
	d.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |
		 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM |
		 FI_RMA_EVENT | /* the target counts each access (rma.cpp, reader.cpp) */
		 (type == FI_EP_RDM ? FI_SOURCE : 0);
	d.msg_order = FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAR | FI_ORDER_WAW |
		      FI_ORDER_WAS | FI_ORDER_SAR | FI_ORDER_SAW |
		      /* atomics travel in order on the peer's one connection and
		       * the target applies them in arrival order (on_atomic) */
		      FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW;
	d.protocol = FI_PROTO_SOCK_TCP;
	d.inject_size = 64;
	d.queue_size = 2048;
	d.rma_iov_limit = 4;
	d.max_msg_size = frame::max_payload; /* a real limit: longer sends fail with -FI_EMSGSIZE */
	d.max_order_size = SIZE_MAX;
	d.ep_cnt = 32768;
	d.max_ep_srx_ctx = 1; /* fi_srx_context (srx.cpp) */
	prov::fill_template(i, d);
}

std::string cidr(const nics::if_address &a)
{
	char buf[INET6_ADDRSTRLEN] = "";
	unsigned bits = a.prefix_len;
	if (a.family == AF_INET) {
		in_addr net = reinterpret_cast<const sockaddr_in *>(&a.addr)->sin_addr;
		uint32_t m = bits ? ~uint32_t{0} << (32 - bits) : 0;
		net.s_addr &= htonl(m);
		inet_ntop(AF_INET, &net, buf, sizeof(buf));
	} else {
		in6_addr net = reinterpret_cast<const sockaddr_in6 *>(&a.addr)->sin6_addr;
		for (unsigned k = 0; k < 16; k++) {
			unsigned keep = bits > 8 * k ? std::min(8u, bits - 8 * k) : 0;
			net.s6_addr[k] &= keep ? uint8_t(0xff << (8 - keep)) : 0;
		}
		inet_ntop(AF_INET6, &net, buf, sizeof(buf));
	}
	return std::string(buf) + "/" + std::to_string(bits);
}

/* One template per (endpoint type, address) of every NIC, built once; the
 * order is chosen per call, nearest NIC to the calling thread first. */
struct tmpl_entry {
	const nic_info *nic;
	fi_ep_type type;
	int family;
	fi_info *info;
};

struct templates {
	std::vector<tmpl_entry> all;
	/* When no caller can reorder the NICs (see build_templates), the
	 * order, computed once; empty otherwise. */
	std::vector<const fi_info *> fixed;
};

/* RDM before MSG, IPv4 before IPv6, then NIC locality as given. */
std::vector<const fi_info *> sorted(const templates &t, const std::vector<nics::ranked> &order)
{
	auto rank = [&](const nic_info *n) {
		for (size_t k = 0; k < order.size(); k++)
			if (order[k].nic == n)
				return k;
		return order.size();
	};
	std::vector<std::pair<std::tuple<int, int, size_t, size_t>, const fi_info *>> keyed;
	keyed.reserve(t.all.size());
	for (size_t k = 0; k < t.all.size(); k++) {
		const tmpl_entry &e = t.all[k];
		keyed.push_back({{e.type == FI_EP_RDM ? 0 : 1, e.family == AF_INET ? 0 : 1, rank(e.nic), k},
				 e.info});
	}
	std::sort(keyed.begin(), keyed.end(),
		  [](const auto &a, const auto &b) { return a.first < b.first; });
	std::vector<const fi_info *> out;
	out.reserve(keyed.size());
	for (auto &k : keyed)
		out.push_back(k.second);
	return out;
}

templates *build_templates()
{
	auto t = std::make_unique<templates>();
	const nics::nic_table &table = nics::system_table();
	/* NICs with a known locality, PCI and not: nic_table orders each
	 * group by distance to the caller (unknown last), so with at most one
	 * located NIC per group no binding can change the order. */
	int located[2] = {0, 0};
	for (const nic_info &n : table.all()) {
		if (n.is_verbs)
			continue;
		bool used = false;
		for (const nics::if_address &a : n.addresses) {
			if (a.family != AF_INET && a.family != AF_INET6)
				continue;
			used = true;
			for (fi_ep_type type : {FI_EP_RDM, FI_EP_MSG}) {
				fi_info *i = info_alloc();
				if (!i)
					throw std::bad_alloc();
				fill_common(*i, type);
				i->addr_format = a.family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
				i->src_addrlen = a.family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
				i->src_addr = malloc(i->src_addrlen);
				if (i->src_addr)
					memcpy(i->src_addr, &a.addr, i->src_addrlen);
				i->domain_attr->name = strdup(n.name.c_str());
				i->fabric_attr->name = strdup(cidr(a).c_str());
				i->fabric_attr->prov_name = strdup("tcp");
				i->fabric_attr->prov_version = prov::prov_version;
				/* Packed (wu::nic_dup), so each call's copy is one memcpy. */
				if (fid_nic *raw = nics::to_fid_nic(n)) {
					i->nic = nic_dup(raw);
					fi_close(&raw->fid);
				}
				if (!i->src_addr || !i->domain_attr->name || !i->fabric_attr->name ||
				    !i->fabric_attr->prov_name || !i->nic) {
					info_free(i);
					throw std::bad_alloc();
				}
				t->all.push_back({&n, type, a.family, i});
			}
		}
		if (used && !n.local_cpus.empty())
			located[n.pci.valid ? 0 : 1]++;
	}
	if (located[0] <= 1 && located[1] <= 1)
		t->fixed = sorted(*t, table.order(nullptr));
	return t.release();
}

const templates &get_templates()
{
	/* Built on first use (a throw leaves it to the next call); never
	 * freed: fi_getinfo may still run from other threads or atexit. */
	static const templates *t = build_templates();
	return *t;
}

/* A fabric (a subnet) or domain (an interface) fi_getinfo reports. */
bool tcp_known(const char *name, bool domain) noexcept
{
	for (const tmpl_entry &e : get_templates().all)
		if (strcmp(domain ? e.info->domain_attr->name : e.info->fabric_attr->name, name) == 0)
			return true;
	return false;
}

/* Data progress is manual unless asked: then the cm thread drives each
 * endpoint (see FI_ENABLE in ep.cpp). */
constexpr getinfo::template_opts tcp_opts = {.auto_control_progress = false, .auto_data_progress = true};

int tcp_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const fi_info *hints, fi_info **info) noexcept
{
	return guard("tcp_getinfo", [&]() -> int {
		/* hints->handle a passive endpoint (fabtests' msg_sockets lends its
		 * address to the active one): only its fabric and domain serve. */
		info_ptr narrowed(nullptr, info_free);
		if (const fi_info *pi = hints && hints->handle ? pep_info(hints->handle) : nullptr) {
			narrowed.reset(info_dup(hints));
			if (!narrowed)
				return -FI_ENOMEM;
			for (auto [mine, its] : {std::pair{&narrowed->fabric_attr->name, pi->fabric_attr->name},
						 std::pair{&narrowed->domain_attr->name, pi->domain_attr->name}})
				if (!*mine && its && !(*mine = strdup(its)))
					return -FI_ENOMEM;
			hints = narrowed.get();
		}
		const templates &t = get_templates();
		if (!t.fixed.empty() || t.all.empty())
			return getinfo::from_templates(t.fixed, version, node, service, flags, hints, info,
						       tcp_opts);
		std::vector<const fi_info *> order = sorted(t, nics::system_table().order_for_thread());
		return getinfo::from_templates(order, version, node, service, flags, hints, info, tcp_opts);
	});
}

/* ---- domain ---- */

constinit fi_ops tcp_domain_fi_ops = prov::domain_fi_ops();

/* CQs, counters, MRs and atomics are the shared engine's (src/prov/common). */
constinit fi_ops_domain tcp_domain_ops =
	prov::rdm_domain_ops(wu::av::ip_av_open, ep_open, prov::query_atomic<&tcp_prov_desc>, wu::tcp::srx_open);


int tcp_domain_open(prov::fabric *fab, fi_info *info, fid_domain **dom, void *context)
{
	return prov::domain_open(fab, info, &tcp_domain_ops, &wu::mr::ops, &tcp_domain_fi_ops, context, dom);
}

const prov::fabric_hooks tcp_hooks = {&tcp_prov_desc, tcp_domain_open, pep_open, tcp_known};

/* Provider knobs (FI_TCP_*). */
constexpr param::def tcp_knobs[] = {
	{FI_PARAM_STRING, "job_key", nullptr,
	 "Shared secret every process of one job sets alike; it is never sent, each side of a connection proves it holds it (HMAC over the other's nonce) and a connection that cannot is refused and logged (default: a random per-job secret through PMIx, else the per-user key file)"},
	{FI_PARAM_STRING, "job_key_file", nullptr,
	 "The per-user job key file, used without FI_TCP_JOB_KEY or PMIx; created with a random key (mode 0600) if missing, refused unless owned by the user and private (default: $XDG_CONFIG_HOME/wireup/tcp-job-key, else ~/.config/wireup/tcp-job-key)"},
	{FI_PARAM_SIZE_T, "rndv_size", "65536",
	 "Messages larger than this many bytes go by rendezvous (or within the peer's eager window): the payload moves only once a receive is posted, straight from the send buffer into the receive buffer (0 or above 65536: 65536, the most a receiver takes unannounced)"},
	{FI_PARAM_SIZE_T, "eager_window", "4194304",
	 "Bytes of larger-than-rndv_size messages a peer may send to this endpoint without rendezvous, held here until a receive takes them; the bound on what one peer's unexpected large messages cost (0: always rendezvous)"},
	{FI_PARAM_SIZE_T, "unexp_limit", "67108864",
	 "Bytes of unexpected messages outside the eager window (plus 64 per message) this endpoint holds for one peer; past it, that peer's connection is not read until receives take some, so TCP flow control holds the sender back (0: no limit)"},
	{FI_PARAM_SIZE_T, "unexp_msgs", "65536",
	 "Unexpected messages (of any size) this endpoint holds for one peer; past it, as past FI_TCP_UNEXP_LIMIT, that peer's connection is not read until receives take some (0: no limit)"},
	{FI_PARAM_SIZE_T, "sockbuf", "0",
	 "SO_SNDBUF and SO_RCVBUF of data connections in bytes (0: leave them to the kernel's autotuning)"},
	{FI_PARAM_STRING, "local_cc", "reno",
	 "TCP congestion control of connections whose peer is on this host (loopback or one of its own addresses); reno does not pace, where BBR holds back every burst after a pause (empty: the system's default)"},
	{FI_PARAM_INT, "conn_timeout", "30000",
	 "Milliseconds a step of a connection attempt (TCP connect, the peer's challenge, its answer) may take before its operations fail with FI_ETIMEDOUT; each step the peer takes starts it again (0: wait for the kernel)"},
	{FI_PARAM_INT, "auth_timeout", "0",
	 "Milliseconds an incoming connection may take to prove the job key (from its accept to a complete HELLO or CONNREQ) before it is closed (0: FI_TCP_CONN_TIMEOUT)"},
	{FI_PARAM_SIZE_T, "auth_pending", "0",
	 "Most incoming connections an endpoint (or passive endpoint) holds while they have not proven the job key; past it the oldest is closed, so that idle connections from others cannot take the job's descriptors (0: a quarter of the process's descriptor limit, within 64..4096)"},
	{FI_PARAM_SIZE_T, "auth_pending_per_addr", "0",
	 "Most of those from one source address; past it that address's oldest is closed (0: a quarter of FI_TCP_AUTH_PENDING, at least 16)"},
	{FI_PARAM_INT, "linger", "10000",
	 "Milliseconds fi_close of an RDM endpoint waits without progress for peers to take injected (or completion-less) sends still queued and bytes still in the kernel, before closing anyway (0: close at once)"},
};

void tcp_cleanup() noexcept
{
	/* Templates live as long as the process: fi_getinfo may still run from
	 * other threads or atexit handlers. */
}

} // namespace

fi_provider *prov_desc() noexcept
{
	provider();
	return &tcp_prov_desc;
}

const fi_provider *provider() noexcept
{
	fi_provider &p = tcp_prov_desc;
	if (prov::describe(p, "tcp", tcp_getinfo, prov::fabric_entry<tcp_hooks>, tcp_cleanup)) {
		param::define_all(&p, tcp_knobs);
	}
	return &p;
}

} // namespace wu::tcp
