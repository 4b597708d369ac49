/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: its endpoints on the common shared receive contexts
 * (prov/common/srx.h).  tcp's endpoints keep their own locks (own_locks):
 * an srx call takes every bound endpoint's mtx and then the engine's,
 * because posting a receive may start messages of any bound endpoint
 * (copy a staged body, write a CTS on its connection, push its
 * completion); an endpoint's own path takes its mtx, then the engine's
 * (eng_lock in recv.cpp). */
#include "config.h"
#include "prov/common/srx.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

void member_flush(void *ep) noexcept
{
	flush(static_cast<tcp_ep *>(ep));
}

} // namespace

/* fi_ep_bind(ep, &srx->fid, flags): before fi_enable, one srx per endpoint. */
int srx_attach(tcp_ep *ep, prov::srx *srx, uint64_t flags)
{
	return prov::srx_attach(srx, {.ep = ep, .b = &ep->b, .flush = member_flush}, flags, [&]() -> const char * {
		std::lock_guard g(ep->b.mtx);
		if (const char *bad = prov::srx_refuse(ep->srx, ep->b.enabled, ep->rx != &ep->own_rx))
			return bad;
		ep->srx = srx;
		ep->rx = &srx->rx;
		return nullptr;
	});
}

/* fi_close(ep): its messages left the engine already (free_rx_state). */
void srx_detach(tcp_ep *ep)
{
	prov::srx *srx = ep->srx;
	if (!srx)
		return;
	prov::srx_detach(srx, ep);
	std::lock_guard g(ep->b.mtx);
	ep->srx = nullptr;
	ep->rx = &ep->own_rx;
}

} // namespace wu::tcp::detail

namespace wu::tcp {

int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept
{
	return prov::srx_open({.prov = detail::P(), .own_locks = true}, domain, attr, out, context);
}

} // namespace wu::tcp
