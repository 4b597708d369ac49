/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup provider descriptor, its fi_getinfo templates (one per tcp RDM
 * template: the interface tcp reaches remote peers through, plus shm on
 * this host), and its fabric, domain and AV (wx_addr.h addresses). */
#include "prov/wireup/wireup.h"

#include "config.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rdma/fi_atomic.h>

#include "av/av.h"
#include "core/addr.h"
#include "core/info.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "getinfo/filter.h"
#include "prov/common/atomic.h"
#include "prov/common/cq.h"
#include "prov/common/info_template.h"
#include "prov/common/objects.h"
#include "prov/common/ops_tables.h"
#include "prov/common/poll.h"
#include "prov/shm/shm.h"
#include "prov/shm/shm_addr.h"
#include "prov/tcp/tcp.h"
#include "prov/wireup/wx_addr.h"
#include "prov/wireup/wx_ep.h"

namespace wu::wireup {
namespace {

fi_provider wx_prov_desc;

using prov::info_ptr;

/* What both sub-providers honour, from tcp's RDM template t and shm's s:
 * caps and orders they share (and both kinds of communication), each
 * limit the smaller.  Names stay tcp's (the interface remote peers are
 * reached through: fabric = its subnet, domain = its name). */
/* *addr = the wireup address of p (false, logged, when p is malformed). */
bool set_addr(void **addr, size_t *len, const parts &p)
{
	unsigned char buf[addr_max];
	return prov::take_addr(&wx_prov_desc, encode(p, buf, sizeof buf), buf, addr, len, "the address of node/service",
			       "a wireup address", getinfo::set_reason);
}

fi_info *merge(const fi_info *t, const fi_info *s)
{
	fi_info *i = info_dup(t);
	if (!i)
		throw std::bad_alloc();
	info_ptr g(i, info_free);
	auto lo = [](auto a, auto b) { return std::min(a, b); };
	const uint64_t comm = FI_LOCAL_COMM | FI_REMOTE_COMM;
	i->caps = (t->caps & (s->caps | comm)) | comm;
	i->mode = t->mode | s->mode;
	i->tx_attr->caps &= s->tx_attr->caps;
	i->rx_attr->caps &= s->rx_attr->caps;
	i->tx_attr->msg_order &= s->tx_attr->msg_order;
	i->rx_attr->msg_order &= s->rx_attr->msg_order;
	i->tx_attr->comp_order &= s->tx_attr->comp_order;
	i->rx_attr->comp_order &= s->rx_attr->comp_order;
	i->tx_attr->inject_size = lo(t->tx_attr->inject_size, s->tx_attr->inject_size);
	i->tx_attr->size = lo(t->tx_attr->size, s->tx_attr->size);
	i->tx_attr->iov_limit = lo(t->tx_attr->iov_limit, s->tx_attr->iov_limit);
	i->tx_attr->rma_iov_limit = lo(t->tx_attr->rma_iov_limit, s->tx_attr->rma_iov_limit);
	i->rx_attr->size = lo(t->rx_attr->size, s->rx_attr->size);
	i->rx_attr->iov_limit = lo(t->rx_attr->iov_limit, s->rx_attr->iov_limit);
	i->rx_attr->total_buffered_recv = lo(t->rx_attr->total_buffered_recv, s->rx_attr->total_buffered_recv);
	fi_ep_attr &e = *i->ep_attr;
	e.protocol = FI_PROTO_UNSPEC; /* two protocols, chosen per peer */
	e.protocol_version = 1;
	e.max_msg_size = lo(t->ep_attr->max_msg_size, s->ep_attr->max_msg_size);
	e.msg_prefix_size = 0;
	e.max_order_raw_size = lo(t->ep_attr->max_order_raw_size, s->ep_attr->max_order_raw_size);
	e.max_order_war_size = lo(t->ep_attr->max_order_war_size, s->ep_attr->max_order_war_size);
	e.max_order_waw_size = lo(t->ep_attr->max_order_waw_size, s->ep_attr->max_order_waw_size);
	e.mem_tag_format = t->ep_attr->mem_tag_format;
	fi_domain_attr &d = *i->domain_attr;
	const fi_domain_attr &sd = *s->domain_attr;
	/* Both are FI_THREAD_SAFE, control AUTO / data MANUAL. */
	d.threading = lo(d.threading, sd.threading);
	d.mr_key_size = lo(d.mr_key_size, sd.mr_key_size);
	d.cq_data_size = lo(d.cq_data_size, sd.cq_data_size);
	d.cq_cnt = lo(d.cq_cnt, sd.cq_cnt);
	d.ep_cnt = lo(d.ep_cnt, sd.ep_cnt);
	d.cntr_cnt = lo(d.cntr_cnt, sd.cntr_cnt);
	d.mr_cnt = lo(d.mr_cnt, sd.mr_cnt);
	d.mr_iov_limit = lo(d.mr_iov_limit, sd.mr_iov_limit);
	d.max_err_data = lo(d.max_err_data, sd.max_err_data);
	d.mr_mode = d.mr_mode | sd.mr_mode;
	d.max_ep_srx_ctx = 1; /* fi_srx_context (prov/common/srx.h), lent to both sub-endpoints */
	d.max_ep_stx_ctx = 0;
	d.caps = comm;
	i->addr_format = format()->addr_format;
	free(i->src_addr);
	free(i->dest_addr);
	i->src_addr = i->dest_addr = nullptr;
	i->src_addrlen = i->dest_addrlen = 0;
	free(i->fabric_attr->prov_name);
	i->fabric_attr->prov_name = strdup("wireup");
	i->fabric_attr->prov_version = prov::prov_version;
	if (!i->fabric_attr->prov_name)
		throw std::bad_alloc();
	return g.release();
}

struct templates {
	std::vector<const fi_info *> all;
};

templates *build_templates()
{
	auto t = std::make_unique<templates>();
	info_ptr h(info_alloc(), info_free);
	if (!h)
		throw std::bad_alloc();
	h->ep_attr->type = FI_EP_RDM;
	const uint32_t v = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	fi_info *tl = nullptr, *sl = nullptr;
	tcp::provider()->getinfo(v, nullptr, nullptr, 0, h.get(), &tl);
	info_ptr tg(tl, info_free);
	shm::provider()->getinfo(v, nullptr, nullptr, 0, h.get(), &sl);
	info_ptr sg(sl, info_free);
	if (!tl || !sl) {
		WU_INFO(&wx_prov_desc, FI_LOG_CORE, "no wireup templates: %s offers no RDM endpoint\n",
			!tl ? "tcp" : "shm");
		return t.release();
	}
	for (const fi_info *i = tl; i; i = i->next)
		if (i->ep_attr->type == FI_EP_RDM) {
			info_ptr m(merge(i, sl), info_free);
			/* src_addr: the interface (port 0), as tcp's template has it. */
			parts p;
			p.host = host_id();
			p.tcp = i->src_addr;
			p.tcp_len = i->src_addrlen;
			if (i->src_addr && !set_addr(&m->src_addr, &m->src_addrlen, p))
				continue;
			t->all.push_back(m.release());
		}
	return t.release();
}

const templates &get_templates()
{
	/* Built on first use; never freed: fi_getinfo may still run from
	 * other threads or atexit. */
	static const templates *t = build_templates();
	return *t;
}

bool known(const char *name, bool domain) noexcept
{
	for (const fi_info *i : get_templates().all)
		if (strcmp(domain ? i->domain_attr->name : i->fabric_attr->name, name) == 0)
			return true;
	return false;
}

/* Auto data progress on request: each sub-endpoint runs its own. */
constexpr getinfo::template_opts wx_opts = {.auto_control_progress = false, .auto_data_progress = true};

/* An address given to fi_getinfo: a wireup address, kept as is. */
bool take_addr(const void *a, size_t len, void **out, size_t *outlen, const char *what)
{
	parts p;
	return prov::take_addr(&wx_prov_desc, a ? decode(a, len, &p) : -FI_EINVAL, a, out, outlen, what,
			       "a wireup address", getinfo::set_reason);
}

/* Places node/service in entry i (fi_getinfo(3): a source with FI_SOURCE
 * or a service alone, else a destination).  The tcp part is what tcp's
 * fi_getinfo gives for i's interface; the shm part is the name the port
 * derives on this host (shm_addr.h) when the address is this host's, so a
 * node/service address of an endpoint equals the fi_getname of one bound
 * there.  false (reason set) when i's interface cannot serve them. */
bool place(fi_info *i, uint32_t version, const char *node, const char *service, uint64_t flags, bool source)
{
	parts own;
	if (!i->src_addr || decode(i->src_addr, i->src_addrlen, &own) < 0 || !own.tcp)
		return false;
	info_ptr th(info_alloc(), info_free);
	if (!th)
		throw std::bad_alloc();
	th->ep_attr->type = FI_EP_RDM;
	th->addr_format = own.tcp_len == sizeof(sockaddr_in) ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
	th->domain_attr->name = strdup(i->domain_attr->name);
	th->fabric_attr->name = strdup(i->fabric_attr->name);
	if (!th->domain_attr->name || !th->fabric_attr->name)
		throw std::bad_alloc();
	fi_info *tg = nullptr;
	if (tcp::provider()->getinfo(version, node, service, flags, th.get(), &tg) || !tg) {
		getinfo::set_reason(std::string("the tcp part: node/service do not fit ") + i->domain_attr->name);
		return false;
	}
	info_ptr tgo(tg, info_free);
	uint16_t port = 0;
	bool has_port = shm::service_port(service, &port) == 0;
	parts p;
	std::string name;
	if (source) {
		p.tcp = tg->src_addr;
		p.tcp_len = tg->src_addrlen;
		p.host = host_id();
	} else {
		p.tcp = tg->dest_addr;
		p.tcp_len = tg->dest_addrlen;
		/* Another host's id is not known here: tcp reaches it. */
		p.host = shm::node_is_here(node, true) == 0 ? host_id() : 0;
	}
	if (has_port && p.host == host_id()) {
		name = shm::port_name(port);
		p.shm = name.c_str();
		p.shm_len = name.size();
	}
	if (!p.tcp)
		return false;
	return source ? set_addr(&i->src_addr, &i->src_addrlen, p) : set_addr(&i->dest_addr, &i->dest_addrlen, p);
}

/* Sockaddr mode (wx_addr.h): entry i's addresses become their tcp parts,
 * in format `want`; false when its interface is of the other family. */
bool to_sockaddr(fi_info *i, uint32_t want)
{
	auto tcp_part = [](void *&a, size_t &len) {
		parts p;
		if (!a)
			return true;
		if (decode(a, len, &p) < 0 || !p.tcp)
			return false;
		void *c = malloc(p.tcp_len);
		if (!c)
			throw std::bad_alloc();
		memcpy(c, p.tcp, p.tcp_len);
		free(a);
		a = c;
		len = p.tcp_len;
		return true;
	};
	if (!tcp_part(i->src_addr, i->src_addrlen) || !tcp_part(i->dest_addr, i->dest_addrlen))
		return false;
	size_t len = i->src_addr ? i->src_addrlen : i->dest_addrlen;
	uint32_t have = len == sizeof(sockaddr_in6) ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	if (want != FI_SOCKADDR && want != have)
		return false;
	i->addr_format = have;
	return true;
}

/* hints->src_addr / dest_addr into entry i: wireup addresses, or in
 * sockaddr mode sockaddrs. */
bool take_hint_addr(bool sock, const void *a, size_t len, void **out, size_t *outlen, const char *what)
{
	if (!sock)
		return take_addr(a, len, out, outlen, what);
	return prov::take_addr(&wx_prov_desc, a ? sock_len(a, len) : -FI_EINVAL, a, out, outlen, what,
			       "a sockaddr_in or sockaddr_in6", getinfo::set_reason);
}

int wx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const fi_info *hints,
	       fi_info **info) noexcept
{
	return guard("wireup_getinfo", [&]() -> int {
		const uint32_t want = hints ? hints->addr_format : uint32_t(FI_FORMAT_UNSPEC);
		const bool sock = is_sock_format(want);
		if (want != FI_FORMAT_UNSPEC && want != format()->addr_format && !sock) {
			WU_INFO(&wx_prov_desc, FI_LOG_CORE,
				"fi_getinfo: hints ask for addr_format %u; wireup addresses are FI_FORMAT_UNSPEC (their own binary form) or, on request, FI_SOCKADDR*\n",
				want);
			getinfo::set_reason("wireup addresses are their own format (FI_FORMAT_UNSPEC) or FI_SOCKADDR*");
			return -FI_ENODATA;
		}
		const bool has_node = node && *node, has_svc = service && *service;
		if (has_node && strstr(node, "://")) {
			WU_INFO(&wx_prov_desc, FI_LOG_CORE, "fi_getinfo: node \"%.64s\" is an address string; wireup takes a host and port\n", node);
			getinfo::set_reason("node is an address string; wireup takes a host name or IP address and a port");
			return -FI_ENODATA;
		}
		prov::info_ptr h = prov::hints_without_addrs(hints);
		if (sock)
			h->addr_format = FI_FORMAT_UNSPEC; /* the templates' (converted below) */
		const templates &t = get_templates();
		if (t.all.empty()) {
			getinfo::set_reason("tcp or shm offers no RDM endpoint here");
			return -FI_ENODATA;
		}
		fi_info *got = nullptr;
		int r = getinfo::from_templates(t.all, version, nullptr, nullptr, 0, h.get(), &got, wx_opts);
		if (r)
			return r;
		info_ptr out(got, info_free);
		if (has_node || has_svc) {
			/* fi_getinfo(3): a service without a node is a source too. */
			const bool source = (flags & FI_SOURCE) || !has_node;
			fi_info *keep = nullptr, **tail = &keep;
			while (fi_info *i = out.release()) {
				out.reset(i->next);
				i->next = nullptr;
				info_ptr one(i, info_free);
				if (place(i, version, node, service, flags, source)) {
					*tail = one.release();
					tail = &(*tail)->next;
				}
			}
			out.reset(keep);
			if (!keep) {
				WU_INFO(&wx_prov_desc, FI_LOG_CORE, "fi_getinfo: no interface serves node \"%.64s\" service \"%.16s\"\n",
					has_node ? node : "", has_svc ? service : "");
				return -FI_ENODATA;
			}
		}
		if (sock) {
			fi_info *keep = nullptr, **tail = &keep;
			while (fi_info *i = out.release()) {
				out.reset(i->next);
				i->next = nullptr;
				info_ptr one(i, info_free);
				if (to_sockaddr(i, want)) {
					*tail = one.release();
					tail = &(*tail)->next;
				}
			}
			out.reset(keep);
			if (!keep) {
				WU_INFO(&wx_prov_desc, FI_LOG_CORE, "fi_getinfo: no interface has addr_format %u\n", want);
				getinfo::set_reason("no interface of the asked sockaddr family");
				return -FI_ENODATA;
			}
		}
		for (fi_info *i = out.get(); i; i = i->next) {
			if (hints && hints->src_addr && hints->src_addrlen &&
			    !take_hint_addr(sock, hints->src_addr, hints->src_addrlen, &i->src_addr, &i->src_addrlen,
					    "hints->src_addr"))
				return -FI_ENODATA;
			if (hints && hints->dest_addr && hints->dest_addrlen && !(has_node && !(flags & FI_SOURCE)) &&
			    !take_hint_addr(sock, hints->dest_addr, hints->dest_addrlen, &i->dest_addr,
					    &i->dest_addrlen, "hints->dest_addr"))
				return -FI_ENODATA;
		}
		*info = out.release();
		return 0;
	});
}

/* fi_av_insertsvc / insertsym: the address place() gives a destination
 * (the tcp part as the tcp AV resolves it; the shm part when node is this
 * host). */
ssize_t wx_from_service(const char *node, const char *service, void *out, size_t outlen)
{
	addr::parsed_addr pa;
	if (int r = addr::parse_node_service(node, service, 0, FI_SOCKADDR, pa)) {
		WU_WARN(&wx_prov_desc, FI_LOG_AV, "node \"%.64s\" service \"%.16s\" do not resolve to an IP address and port: %s\n",
			node ? node : "", service ? service : "", fi_strerror(-r));
		return r;
	}
	parts p;
	p.tcp = &pa.bin.ss;
	p.tcp_len = pa.len;
	uint16_t port = 0;
	std::string name;
	if (shm::service_port(service, &port) == 0 && shm::node_is_here(node, true) == 0) {
		p.host = host_id();
		name = shm::port_name(port);
		p.shm = name.c_str();
		p.shm_len = name.size();
	}
	long n = encode(p, out, outlen);
	if (n < 0)
		WU_WARN(&wx_prov_desc, FI_LOG_AV, "node \"%.64s\" service \"%.16s\": no wireup address (%s)\n", node ? node : "",
			service ? service : "", fi_strerror(int(-n)));
	return n;
}

/* Our AV format: wx_addr.h's plus the node/service form. */
const av::av_format *av_format_of() noexcept
{
	static const av::av_format f = [] {
		av::av_format c = *format();
		c.from_service = wx_from_service;
		return c;
	}();
	return &f;
}

/* ---- domain ---- */

int wx_av_open(fid_domain *dom, fi_av_attr *attr, fid_av **av, void *context) noexcept
{
	prov::domain *d = prov::domain_of(dom);
	/* A sockaddr-mode domain's entries are sockaddrs (wx_addr.h). */
	const av::av_format *sf = d && d->info ? sock_format(d->info->addr_format) : nullptr;
	return av::open(d, sf ? sf : av_format_of(), attr, av, context);
}

constinit fi_ops wx_domain_fi_ops = prov::domain_fi_ops();

constinit fi_ops_domain wx_domain_ops =
	prov::rdm_domain_ops(wx_av_open, ep_open, prov::query_atomic<&wx_prov_desc>, srx_open);

int wx_domain_open(prov::fabric *fab, fi_info *info, fid_domain **dom, void *context)
{
	return prov::domain_open(fab, info, &wx_domain_ops, &wu::mr::ops, &wx_domain_fi_ops, context, dom);
}

const prov::fabric_hooks wx_hooks = {&wx_prov_desc, wx_domain_open, nullptr, known};

/* Provider knobs (FI_WIREUP_*). */
constexpr param::def wx_knobs[] = {
	{FI_PARAM_BOOL, "shm", "true",
	 "Peers on this host through the shm provider; false: every peer through tcp"},
	{FI_PARAM_INT, "tcp_poll", "32",
	 "While no transfer went through tcp lately, a CQ or counter read progresses the tcp side only every this many reads (rounded up to a power of two), so that an idle tcp side costs shm latency nothing; 1: every read"},
	{FI_PARAM_INT, "tcp_idle_poll_us", "50",
	 "While the tcp side has no connection (only its listener to poll, for a peer's first connect), those reads progress it only if this many microseconds passed since it was last progressed; 0: at the FI_WIREUP_TCP_POLL rate"},
};

void wx_cleanup() noexcept {}

} // namespace

fi_provider *prov_desc() noexcept
{
	provider();
	return &wx_prov_desc;
}

const fi_provider *provider() noexcept
{
	fi_provider &p = wx_prov_desc;
	if (prov::describe(p, "wireup", wx_getinfo, prov::fabric_entry<wx_hooks>, wx_cleanup)) {
		param::define_all(&p, wx_knobs);
	}
	return &p;
}

} // namespace wu::wireup
