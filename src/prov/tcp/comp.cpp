/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: completions.  Collected under ep->b.mtx (prov::ep_base),
 * posted by flush() once it is released; the transmit completion and the
 * source address of a connection (receives: prov/common/rx.h). */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

/* ---- completions ---- */

void push_comp(tcp_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err,
	       size_t olen, const void *err_data, size_t err_len)
{
	ep->b.push(cq, cntr, c, err, olen, err_data, err_len);
}

/* Posts collected completions; called without ep->b.mtx. */
void flush(tcp_ep *ep) noexcept
{
	ep->b.flush();
}

/* Completes a transmit-side op (send/write/read) and frees it. */
void complete_tx(tcp_ep *ep, op *o, int err)
{
	ep->b.complete_tx(o->kind, o->tagged, o->context, o->kind == OP_READ ? o->len : 0, o->want_comp, err,
			  o->inject);
	if (ep->tx_inflight)
		ep->tx_inflight--;
	dispose(o); /* its queue let it go */
}

fi_addr_t src_of(tcp_ep *ep, conn *c)
{
	if (ep->b.type != FI_EP_RDM || !ep->b.av)
		return FI_ADDR_NOTAVAIL;
	if (c && c->src == FI_ADDR_NOTAVAIL && !c->peer.empty()) {
		c->src = ep->b.peer_lookup(c->peer.data(), c->peer.size());
		if (c->src != FI_ADDR_NOTAVAIL)
			ep->fa_peer.emplace(c->src, tcp_ep::fa_entry{c->peer, ep->b.av_shared ? av::entry_stamp(ep->b.av, c->src) : 0});
	}
	return c ? c->src : FI_ADDR_NOTAVAIL;
}

} // namespace wu::tcp::detail
