/* SPDX-License-Identifier: BSD-3-Clause */
/* ucx provider descriptor, its fi_getinfo template, and its fabric, domain
 * (one UCP context) and AV (ucx_addr.h addresses, variable length). */
#include "prov/ucx/ucx.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "av/av.h"
#include "core/info.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "getinfo/filter.h"
#include "prov/common/cq.h"
#include "prov/common/info_template.h"
#include "prov/common/objects.h"
#include "prov/common/ops_tables.h"
#include "prov/common/poll.h"
#include "prov/ucx/ucx_addr.h"
#include "prov/ucx/ucx_ep.h"

namespace wu::ucx {
namespace {

fi_provider ucx_prov_desc;

constexpr char fabric_name[] = "ucx";
constexpr char domain_name[] = "ucx";

/* What UCP gives: tag matching (msg through the reserved space), RMA
 * with rkeys.  Not offered, so fi_getinfo refuses them: FI_ATOMIC (not
 * mapped onto UCP atomics), FI_MULTI_RECV (UCP receives are one message
 * each), FI_RMA_EVENT and remote CQ data (UCP's put tells the target
 * nothing; the tag has no room for data), shared contexts. */
constexpr uint64_t caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |
			  FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM;
/* The application's share of the tag (ucx_addr.h). */
constexpr uint64_t tag_format = user_mask;

fi_info *build_template()
{
	prov::template_desc d;
	d.caps = caps;
	d.msg_order = FI_ORDER_SAS; /* UCP keeps the order of tagged sends on one endpoint; RMA is unordered. */
	d.inject_size = 4096;
	d.iov_limit = max_iov;
	d.rma_iov_limit = 1;
	d.mem_tag_format = tag_format;
	d.cq_data_size = 0;
	d.fabric_name = fabric_name;
	d.domain_name = domain_name;
	d.prov_name = "ucx";
	d.prov_version = prov::prov_version;
	return prov::new_template(d);
}

const fi_info *get_template()
{
	/* Never freed: fi_getinfo may still run from other threads or atexit. */
	static const fi_info *t = build_template();
	return t;
}

/* FI_SOURCE costs here: the sender id in every tag makes each receive a
 * wildcard one for UCP (ucx_addr.h). */
constexpr getinfo::template_opts ucx_opts = {
	.auto_control_progress = false, .auto_data_progress = true, .costly_caps = FI_SOURCE};

/* An address given to fi_getinfo (hints): kept as is when it is one of ours. */
bool take_addr(const void *a, size_t len, void **out, size_t *outlen, const char *what)
{
	return prov::take_addr(&ucx_prov_desc, a ? addr_check(a, len) : -FI_EINVAL, a, out, outlen, what,
			       "a ucx address (fi_getname of a ucx endpoint)", getinfo::set_reason);
}

int ucx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const fi_info *hints,
		fi_info **info) noexcept
{
	return guard("ucx_getinfo", [&]() -> int {
		if (hints && hints->addr_format != FI_FORMAT_UNSPEC) {
			getinfo::set_reason("addresses are UCP worker addresses (FI_FORMAT_UNSPEC)");
			return -FI_ENODATA;
		}
		if ((node && *node) || (service && *service)) {
			getinfo::set_reason("ucx endpoints have no node or service: their address is the UCP worker's");
			return -FI_ENODATA;
		}
		if (hints && hints->ep_attr && (hints->ep_attr->mem_tag_format & ~tag_format)) {
			getinfo::set_reason("ep_attr->mem_tag_format asks for tag bits above bit 31; ucx carries "
					    "the sender in the upper half of the UCP tag");
			return -FI_ENODATA;
		}
		prov::info_ptr h = prov::hints_without_addrs(hints);
		const fi_info *t = get_template();
		fi_info *got = nullptr;
		int r = getinfo::from_templates({&t, 1}, version, nullptr, nullptr, 0, h.get(), &got, ucx_opts);
		if (r)
			return r;
		prov::info_ptr out(got, info_free);
		for (fi_info *g = got; g; g = g->next)
			if (!g->ep_attr->mem_tag_format)
				g->ep_attr->mem_tag_format = tag_format;
		if (hints && hints->src_addr && hints->src_addrlen) {
			/* A worker address cannot be chosen: only a dest_addr means something. */
			getinfo::set_reason("ucx endpoints take no src_addr (their address is the UCP worker's)");
			return -FI_ENODATA;
		}
		if (hints && hints->dest_addr && hints->dest_addrlen &&
		    !take_addr(hints->dest_addr, hints->dest_addrlen, &got->dest_addr, &got->dest_addrlen,
			       "hints->dest_addr"))
			return -FI_ENODATA;
		(void)flags;
		*info = out.release();
		return 0;
	});
}

/* ---- AV: variable-length binary addresses; part 0 is the sender id ---- */

ssize_t validate_ucx(const void *addr, size_t avail)
{
	return addr_check(addr, avail);
}

size_t id_part(const void *addr, size_t len, int which, void *out, size_t outlen)
{
	if (which != 0 || addr_check(addr, len) < 0)
		return 0;
	uint32_t id = addr_id(addr);
	memcpy(out, &id, std::min(sizeof id, outlen));
	return sizeof id;
}

ssize_t print_ucx(const void *addr, size_t len, char *buf, size_t buflen)
{
	return addr_print(addr, len, buf, buflen);
}

const av::av_format ucx_fmt = {"ucx", FI_FORMAT_UNSPEC, addr_max, validate_ucx, nullptr, nullptr,
			       FI_FORMAT_UNSPEC, FI_FORMAT_UNSPEC, id_part, print_ucx};

int ucx_av_open(fid_domain *dom, fi_av_attr *attr, fid_av **av, void *context) noexcept
{
	return av::open(prov::domain_of(dom), &ucx_fmt, attr, av, context);
}

/* ---- domain: one UCP context ---- */

int ucx_domain_close(fid *f) noexcept
{
	return guard("fi_close(domain)", [&]() -> int {
		prov::domain *pd = prov::domain_of(reinterpret_cast<fid_domain *>(f));
		ucx_domain *d = pd ? ucx_domain_of(pd) : nullptr;
		if (!d)
			return -FI_EINVAL;
		if (int r = prov::domain_fini(&d->d))
			return r;
		ucp_cleanup(d->ctx);
		d->magic = 0;
		std::unique_ptr<ucx_domain> gone(d); /* fi_close frees what the open handed out as a fid */
		return 0;
	});
}

constinit fi_ops ucx_domain_fi_ops = prov::domain_fi_ops(launcher::domain_ops_open, ucx_domain_close);

/* No atomics: fi_query_atomic is -FI_ENOSYS (getinfo refuses FI_ATOMIC). */
constinit fi_ops_domain ucx_domain_ops =
	prov::rdm_domain_ops(ucx_av_open, ep_open, WU_NOSYS(fi_ops_domain, query_atomic));

/* With UCP_ERR_HANDLING_MODE_PEER, UCX 1.13 over tcp has no zero-copy
 * rendezvous lane: a large message goes as active-message fragments of
 * UCX_TCP_RX_SEG_SIZE (64 KiB), a sendmsg and a receive wake-up each,
 * which made 1 MiB 1.5x ucx_perftest's (whose endpoints ask for no error
 * handling).  Larger fragments take most of that back.  Left alone: an
 * UCX_TCP_RX_SEG_SIZE of the user's, no peer failure handling (UCX then
 * has its zero-copy lane), and a UCX_TLS without tcp (UCX warns about a
 * key no transport took). */
constexpr const char *tcp_seg_size = "256K";

bool tls_has_tcp(const char *tls) noexcept
{
	if (!tls || !*tls)
		return true; /* UCX's default: all */
	const bool except = *tls == '^';
	bool named = false;
	for (const char *t = tls + except; *t;) {
		size_t n = strcspn(t, ",");
		if ((n == 3 && !strncmp(t, "tcp", 3)) || (!except && n == 3 && !strncmp(t, "all", 3)))
			named = true;
		t += n + (t[n] == ',');
	}
	return except ? !named : named;
}

void tune_config(ucp_config_t *cfg) noexcept
{
	bool peer_errors = true;
	try {
		peer_errors = param::get_bool(P(), "peer_errors", true).value;
	} catch (...) {
		return; /* no memory for the knob's lookup: UCX's default, and cfg is released by the caller */
	}
	if (getenv("UCX_TCP_RX_SEG_SIZE") || !tls_has_tcp(getenv("UCX_TLS")) || !peer_errors)
		return;
	/* A transport key: UCX hands it to each transport that has one. */
	if (ucp_config_modify(cfg, "RX_SEG_SIZE", tcp_seg_size) != UCS_OK)
		WU_INFO(P(), FI_LOG_DOMAIN, "fi_domain: UCX did not take RX_SEG_SIZE=%s; its default stays\n",
			tcp_seg_size);
}

int ucx_domain_open(prov::fabric *fab, fi_info *info, fid_domain **dom, void *context)
{
	/* UCX is loaded here, not at process start (ucx_dl.h). */
	if (!load()) {
		WU_WARN(P(), FI_LOG_DOMAIN, "fi_domain: UCX could not be loaded; no ucx domain\n");
		return -FI_ENOSYS;
	}
	auto d = std::make_unique<ucx_domain>();
	ucp_config_t *cfg = nullptr;
	/* UCX_* from the environment (UCX_TLS, UCX_NET_DEVICES, ...). */
	if (int r = fi_err(ucp_config_read(nullptr, nullptr, &cfg), "fi_domain: ucp_config_read"))
		return r;
	tune_config(cfg);
	ucp_params_t p{};
	p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
	/* RMA only when asked: its lanes (posix's over shared memory) are
	 * one more transport every ucp_worker_progress polls, 57 of a 165
	 * instruction poll.  WAKEUP: blocking through the worker's fd. */
	d->rma = !info || !info->caps || (info->caps & rma_caps);
	p.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP | (d->rma ? UCP_FEATURE_RMA : 0);
	p.mt_workers_shared = 1; /* endpoints (workers) of one domain run in any threads */
	p.name = "wireup-ucx";
	ucs_status_t s = ucp_init(&p, cfg, &d->ctx);
	ucp_config_release(cfg);
	if (int r = fi_err(s, "fi_domain: ucp_init"))
		return r;
	ucp_context_attr_t ca{};
	ca.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
	if (ucp_context_query(d->ctx, &ca) == UCS_OK && ca.request_size)
		d->req_pre = (ca.request_size + op_align - 1) / op_align * op_align;
	int r = prov::domain_init(&d->d, fab, info, &ucx_domain_ops, &mr_ops, &ucx_domain_fi_ops, context);
	if (r) {
		ucp_cleanup(d->ctx);
		return r;
	}
	*dom = &d.release()->d.fid;
	return 0;
}

const prov::fabric_hooks ucx_hooks = {&ucx_prov_desc, ucx_domain_open, nullptr, prov::known_names<fabric_name, domain_name>};

/* Provider knobs (FI_UCX_*); UCX's own come from UCX_* (ucp_config_read). */
constexpr param::def ucx_knobs[] = {
	{FI_PARAM_BOOL, "peer_errors", "true",
	 "Create UCP endpoints with UCP_ERR_HANDLING_MODE_PEER, so that a peer that dies fails the operations waiting on it with error completions; a peer whose transports cannot report failures (UCX 1.13's posix, sysv and self) is reached without it, and false never asks for it (UCX may then pick faster transports)"},
	{FI_PARAM_INT, "linger", "250",
	 "Milliseconds fi_close of an endpoint lets its UCP endpoints flush what was sent (injected sends count as done) before closing them by force; a peer that does not progress meanwhile may lose them"},
};

void ucx_cleanup() noexcept {}

} // namespace

ucx_domain *ucx_domain_of(prov::domain *d) noexcept
{
	if (!d || d->fab->hooks != &ucx_hooks)
		return nullptr;
	auto *u = reinterpret_cast<ucx_domain *>(d);
	return u->magic == domain_magic ? u : nullptr;
}

fi_provider *prov_desc() noexcept
{
	provider();
	return &ucx_prov_desc;
}

const fi_provider *provider() noexcept
{
	fi_provider &p = ucx_prov_desc;
	if (prov::describe(p, "ucx", ucx_getinfo, prov::fabric_entry<ucx_hooks>, ucx_cleanup))
		param::define_all(&p, ucx_knobs);
	return &p;
}

} // namespace wu::ucx
