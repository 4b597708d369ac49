/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: its RDM endpoints as sub-endpoints of the wireup provider
 * (prov/common/sub_ep.h).  ep_open is tcp's own fi_endpoint for RDM only
 * (MSG endpoints need the tcp fabric's passive endpoints and connection
 * requests).  Of the domain it needs only what every prov::domain has: its
 * fi_info's domain_attr->data_progress, its src_addr when that is a
 * sockaddr (the interface to listen on; else the info's own src_addr, else
 * loopback), its MR table and children count; not the provider's name nor
 * the fabric.  The info's src_addr must be absent or a sockaddr. */
#include "config.h"

#include <mutex>

#include "prov/common/sub_ep.h"
#include "prov/tcp/tcp.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp {

namespace {

using detail::ep_of;
using detail::P;
using detail::tcp_ep;

int sub_ep_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept
{
	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: a tcp sub-endpoint is RDM only (type %d asked)\n",
			int(info->ep_attr->type));
		return -FI_EINVAL;
	}
	return ep_open(domain, info, ep, context);
}

prov::ep_base *base_of(fid_ep *e) noexcept
{
	tcp_ep *ep = e ? ep_of(&e->fid) : nullptr;
	return ep ? &ep->b : nullptr;
}

int lend_rx(fid_ep *e, prov::rx_ctx *rx) noexcept
{
	return guard("tcp lend_rx", [&]() -> int {
		tcp_ep *ep = e ? ep_of(&e->fid) : nullptr;
		if (!ep || !rx) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "lend_rx: %s is invalid\n", !ep ? "the endpoint" : "the receive context");
			return -FI_EINVAL;
		}
		std::lock_guard g(ep->b.mtx);
		const char *bad = nullptr;
		if (ep->b.type != FI_EP_RDM)
			bad = "the endpoint is not RDM";
		else if (ep->b.enabled)
			bad = "the endpoint is enabled; lend before fi_enable";
		else if (ep->srx)
			/* srx calls take every bound endpoint's lock: two sharing
			 * one mutex would deadlock, and the srx is its context. */
			bad = "the endpoint is bound to a shared receive context";
		if (bad) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "lend_rx: %s\n", bad);
			return -FI_EOPBADSTATE;
		}
		ep->rx = rx;
		return 0;
	});
}

const std::atomic<size_t> *busy(fid_ep *e) noexcept
{
	tcp_ep *ep = e ? ep_of(&e->fid) : nullptr;
	return ep ? &ep->n_conns : nullptr;
}

const prov::sub_ops ops = {"tcp", sub_ep_open, base_of, lend_rx, busy};

} // namespace

const prov::sub_ops *sub_ops() noexcept
{
	return &ops;
}

} // namespace wu::tcp
