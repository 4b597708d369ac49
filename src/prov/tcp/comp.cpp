/* tcp provider: completions.  Collected under ep->b.mtx (prov::comp_batch),
 * posted by flush() once it is released; the transmit and receive completion
 * helpers. */
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
	ep->b.complete_tx(o->kind, o->tagged, o->context, o->kind == OP_READ ? o->len : 0, o->want_comp, err);
	if (ep->tx_inflight)
		ep->tx_inflight--;
	delete o;
}

fi_addr_t src_of(tcp_ep *ep, conn *c)
{
	if (ep->b.type != FI_EP_RDM || !ep->b.av)
		return FI_ADDR_NOTAVAIL;
	if (c && c->src == FI_ADDR_NOTAVAIL && !c->peer.empty()) {
		c->src = av::reverse(ep->b.av, c->peer.data(), c->peer.size());
		if (c->src != FI_ADDR_NOTAVAIL)
			ep->fa_peer.emplace(c->src, tcp_ep::fa_entry{c->peer, ep->b.av_shared ? av::entry_stamp(ep->b.av, c->src) : 0});
	}
	return c ? c->src : FI_ADDR_NOTAVAIL;
}

namespace {

/* A receive is done with: it no longer counts against the rx size of
 * whoever it was posted to. */
void release_rx(tcp_ep *ep, op *o)
{
	if (o->srx) {
		if (o->srx->posted)
			o->srx->posted--;
	} else if (ep->rx_posted) {
		ep->rx_posted--;
	}
	delete o;
}

} // namespace

/* Completes a receive of len bytes at buf (olen: bytes truncated). */
void complete_rx(tcp_ep *ep, op *o, void *buf, size_t len, fi_addr_t src, bool tagged, uint64_t tag,
		 bool has_data, uint64_t data, size_t olen, int err, bool release)
{
	if (o->discard) [[unlikely]] {
		if (release)
			release_rx(ep, o);
		return;
	}
	cq::completion c;
	c.op_context = o->context;
	c.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0);
	c.len = len;
	c.buf = buf;
	c.data = has_data ? data : 0;
	c.tag = tagged ? tag : 0;
	c.src_addr = src == FI_ADDR_NOTAVAIL || !ep->b.av ? FI_ADDR_NOTAVAIL : av::source_id(ep->b.av, src);
	if (release && (o->flags & FI_MULTI_RECV))
		c.flags |= FI_MULTI_RECV;
	/* A shared context's receive asks the endpoint it completes on. */
	bool want = o->srx ? !ep->b.rx_sel || (o->flags & FI_COMPLETION) : o->want_comp;
	push_comp(ep, (err || want) ? ep->b.rx_cq : nullptr, ep->b.c_recv, c, err, olen);
	if (release)
		release_rx(ep, o);
}

} // namespace wu::tcp::detail
