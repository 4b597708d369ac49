/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider descriptor, its fi_getinfo template, and its fabric, domain
 * and AV (FI_ADDR_STR names, shm_addr.h). */
#include "prov/shm/shm.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <rdma/fi_atomic.h>

#include "av/av.h"
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
#include "prov/common/srx.h"
#include "prov/shm/region.h"
#include "prov/shm/shm_addr.h"

namespace wu::shm {
namespace {

fi_provider shm_prov_desc;

constexpr char fabric_name[] = "shm";
constexpr char domain_name[] = "shm";

fi_info *build_template()
{
	prov::template_desc d;
	d.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |
		 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM |
		 /* the target applies every RMA itself (rma.cpp on_rma), then counts it */
		 FI_RMA_EVENT;
	/* One queue per receiver, filled in the order each sender pushes, and
	 * the target applies RMA and atomics in arrival order, every part of
	 * one before the next (a large transfer's single copy included): the
	 * orders hold for any size. */
	d.msg_order = FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAR | FI_ORDER_WAW |
		      FI_ORDER_WAS | FI_ORDER_SAR | FI_ORDER_SAW | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |
		      FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW;
	d.addr_format = FI_ADDR_STR;
	d.protocol = FI_PROTO_SHM;
	d.inject_size = 4096;
	d.rma_iov_limit = 4;
	d.max_order_size = SIZE_MAX;
	d.max_ep_srx_ctx = 1; /* fi_srx_context (prov/common/srx.h) */
	d.fabric_name = fabric_name;
	d.domain_name = domain_name;
	d.prov_name = "shm";
	d.prov_version = prov::prov_version;
	return prov::new_template(d);
}

const fi_info *get_template()
{
	/* Never freed: fi_getinfo may still run from other threads or atexit. */
	static const fi_info *t = build_template();
	return t;
}

constexpr getinfo::template_opts shm_opts = {.auto_control_progress = false, .auto_data_progress = true};

/* An address given to fi_getinfo: "fi_shm://name" text, kept as is. */
bool take_addr(const void *a, size_t len, void **out, size_t *outlen, const char *what)
{
	return prov::take_addr(&shm_prov_desc, a ? addr_len(a, len) : -FI_EINVAL, a, out, outlen, what,
			       "an fi_shm://<name> address", getinfo::set_reason);
}

/* The address node/service name (shm_addr.h): an fi_shm:// node as is, a
 * service on this host by its derived name, a node alone only checked to
 * be this host (it names no endpoint).  false with the reason set. */
bool named_addr(const char *node, const char *service, std::string &out)
{
	bool has_node = node && *node, has_svc = service && *service;
	if (has_node && strncmp(node, scheme, scheme_len) == 0) {
		if (has_svc) {
			WU_INFO(&shm_prov_desc, FI_LOG_CORE, "fi_getinfo: an fi_shm:// node takes no service\n");
			getinfo::set_reason("an fi_shm://<name> node takes no service");
			return false;
		}
		out = node;
		return true;
	}
	if (has_svc) {
		if (int r = service_addr(node, service, out)) {
			getinfo::set_reason(r == -FI_ENODATA ? "shm reaches only this host (node is another)"
							     : "service is not a port number 1-65535");
			return false;
		}
		return true;
	}
	if (has_node && node_is_here(node, false)) {
		getinfo::set_reason("shm reaches only this host (node is another)");
		return false;
	}
	return true;
}

int shm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const fi_info *hints,
		fi_info **info) noexcept
{
	return guard("shm_getinfo", [&]() -> int {
		if (hints && hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_ADDR_STR) {
			WU_INFO(&shm_prov_desc, FI_LOG_CORE, "fi_getinfo: hints ask for addr_format %u; shm addresses are FI_ADDR_STR\n",
				hints->addr_format);
			getinfo::set_reason("addresses are FI_ADDR_STR (fi_shm://<name>)");
			return -FI_ENODATA;
		}
		std::string named;
		if (!named_addr(node, service, named))
			return -FI_ENODATA;
		/* fi_getinfo(3): a service without a node is a source too. */
		const bool source = (flags & FI_SOURCE) || (!(node && *node) && service && *service);
		/* The template matcher places IP addresses; ours are placed here. */
		prov::info_ptr h = prov::hints_without_addrs(hints);
		const fi_info *t = get_template();
		fi_info *got = nullptr;
		int r = getinfo::from_templates({&t, 1}, version, nullptr, nullptr, 0, h.get(), &got, shm_opts);
		if (r)
			return r;
		prov::info_ptr out(got, info_free);
		if (!named.empty()) {
			bool ok = source ? take_addr(named.c_str(), named.size() + 1, &got->src_addr, &got->src_addrlen, "node")
					 : take_addr(named.c_str(), named.size() + 1, &got->dest_addr, &got->dest_addrlen, "node");
			if (!ok)
				return -FI_ENODATA;
		}
		if (hints && hints->src_addr && hints->src_addrlen &&
		    !take_addr(hints->src_addr, hints->src_addrlen, &got->src_addr, &got->src_addrlen,
			       "hints->src_addr"))
			return -FI_ENODATA;
		if (hints && hints->dest_addr && hints->dest_addrlen && !(!named.empty() && !source) &&
		    !take_addr(hints->dest_addr, hints->dest_addrlen, &got->dest_addr, &got->dest_addrlen,
			       "hints->dest_addr"))
			return -FI_ENODATA;
		if (!got->src_addr) {
			/* The process's own (ep.cpp gives each endpoint a name of its own). */
			std::string a = std::string(scheme) + process_name();
			if (!take_addr(a.c_str(), a.size() + 1, &got->src_addr, &got->src_addrlen, "src_addr"))
				return -FI_ENODATA;
		}
		*info = out.release();
		return 0;
	});
}

/* ---- AV: FI_ADDR_STR names, stored as their text ---- */

ssize_t validate_shm(const void *addr, size_t avail)
{
	return addr_len(addr, avail);
}

/* fi_av_insertsvc / insertsym: an fi_shm:// node as is, else the name the
 * service derives on this host (shm_addr.h). */
ssize_t shm_from_service(const char *node, const char *service, void *out, size_t outlen)
{
	std::string a;
	if (node && strncmp(node, scheme, scheme_len) == 0 && !(service && *service))
		a = node;
	else if (int r = service_addr(node, service, a))
		return r;
	if (addr_len(a.c_str(), a.size() + 1) < 0 || a.size() + 1 > outlen)
		return -FI_EINVAL;
	memcpy(out, a.c_str(), a.size() + 1);
	return ssize_t(a.size() + 1);
}

const av::av_format shm_fmt = {"shm", FI_ADDR_STR, addr_max, validate_shm, nullptr, nullptr,
			       FI_ADDR_STR, FI_ADDR_STR, nullptr, nullptr, shm_from_service};

/* Bound endpoints share the srx's lock (prov/common/srx.h). */
int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept
{
	return prov::srx_open({.prov = &shm_prov_desc, .own_locks = false}, domain, attr, out, context);
}

int shm_av_open(fid_domain *dom, fi_av_attr *attr, fid_av **av, void *context) noexcept
{
	return av::open(prov::domain_of(dom), &shm_fmt, attr, av, context);
}

/* ---- domain ---- */

constinit fi_ops shm_domain_fi_ops = prov::domain_fi_ops();

constinit fi_ops_domain shm_domain_ops =
	prov::rdm_domain_ops(shm_av_open, ep_open, prov::query_atomic<&shm_prov_desc>, srx_open);

int shm_domain_open(prov::fabric *fab, fi_info *info, fid_domain **dom, void *context)
{
	return prov::domain_open(fab, info, &shm_domain_ops, &wu::mr::ops, &shm_domain_fi_ops, context, dom);
}

const prov::fabric_hooks shm_hooks = {&shm_prov_desc, shm_domain_open, nullptr, prov::known_names<fabric_name, domain_name>};

/* Provider knobs (FI_SHM_*). */
constexpr param::def shm_knobs[] = {
	{FI_PARAM_STRING, "job", nullptr,
	 "Job id from which an endpoint's name is computed with its rank (PMIX_RANK), so that peers on a node find each other without exchanging names (default: the PMIx namespace, PMIX_NAMESPACE)"},
	{FI_PARAM_SIZE_T, "queue_cells", "1024",
	 "Cells (64 bytes each) in an endpoint's receive queue, rounded up to a power of two; a sender whose peer's queue is full keeps its message and retries in progress"},
	{FI_PARAM_SIZE_T, "bounce_slots", "64", "Bounce buffers in an endpoint's region, for medium messages and the copy fallback"},
	{FI_PARAM_SIZE_T, "bounce_size", "16384", "Bytes of one bounce buffer; messages up to this size go through one"},
	{FI_PARAM_BOOL, "cma", "true",
	 "Single copy with cross-memory attach (process_vm_readv) for messages and RMA larger than bounce_size; false (or a kernel that refuses it, logged once) pipelines them through bounce buffers"},
	{FI_PARAM_SIZE_T, "split_min", "65536",
	 "Messages of at least this many bytes (and above bounce_size) are copied by both sides at once when single copy is allowed: the receiver reads chunks while the sender, whenever its progress runs, writes others; 0 = the receiver alone"},
	{FI_PARAM_SIZE_T, "pipe_max", "262144",
	 "Messages above bounce_size up to this many bytes (at most 64 MiB) go eagerly in fragments through several bounce buffers, the receiver copying each out as it arrives (no round trip); larger ones by single copy; 0 = never (better when the node's CPUs are oversubscribed)"},
	{FI_PARAM_SIZE_T, "pipe_frag", "16384", "Bytes per fragment of a pipelined message (1024 .. bounce_size)"},
	{FI_PARAM_SIZE_T, "unexp_limit", "67108864",
	 "Bytes of unexpected messages an endpoint holds (64 plus the payload each; a message above bounce_size only its 64): past it further messages stay in the queue or their sender until receives take some; 0 = no limit"},
	{FI_PARAM_SIZE_T, "unexp_msgs", "65536",
	 "Unexpected messages (of any size) an endpoint holds; past it, as past FI_SHM_UNEXP_LIMIT, further messages stay in the queue or their sender until receives take some; 0 = no limit"},
	{FI_PARAM_INT, "dead_peer_ms", "1000",
	 "Milliseconds an operation waits on a peer before the peer's liveness (its pid and start time) is checked; a dead peer's operations complete in error"},
	{FI_PARAM_INT, "reap_age", "60",
	 "The first endpoint of a process removes this user's regions in /dev/shm whose owner has exited (a process killed by a signal leaves its own) and that are at least this many seconds old; -1 = never"},
	{FI_PARAM_INT, "linger", "10000",
	 "Milliseconds fi_close of an endpoint waits without progress for peers to take injected (or eager) sends still queued for them, before closing anyway (0: close at once)"},
};

void shm_cleanup() noexcept {}

} // namespace

fi_provider *prov_desc() noexcept
{
	provider();
	return &shm_prov_desc;
}

const fi_provider *provider() noexcept
{
	fi_provider &p = shm_prov_desc;
	if (prov::describe(p, "shm", shm_getinfo, prov::fabric_entry<shm_hooks>, shm_cleanup)) {
		param::define_all(&p, shm_knobs);
		shm_tp::set_log_provider(&p);
	}
	return &p;
}

} // namespace wu::shm
