/* tcp provider: completions.  Collected under ep->mtx (prov::comp_batch),
 * posted by flush() once it is released; the transmit and receive completion
 * helpers. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

/* ---- completions ---- */

void push_comp(tcp_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err,
	       size_t olen, const void *err_data, size_t err_len)
{
	ep->comps.push(cq, cntr, c, err, olen, err_data, err_len);
}

/* Posts collected completions; called without ep->mtx. */
void flush(tcp_ep *ep) noexcept
{
	ep->comps.flush(ep->mtx);
}

namespace {

fid_cntr *tx_cntr(tcp_ep *ep, const op *o)
{
	switch (o->kind) {
	case OP_SEND: return ep->c_send;
	case OP_WRITE:
	case OP_ATOMIC: return ep->c_write;
	case OP_READ:
	case OP_FETCH: return ep->c_read;
	default: return ep->c_recv;
	}
}

uint64_t op_comp_flags(const op *o)
{
	switch (o->kind) {
	case OP_SEND: return FI_SEND | (o->tagged ? FI_TAGGED : FI_MSG);
	case OP_RECV: return FI_RECV | (o->tagged ? FI_TAGGED : FI_MSG);
	case OP_WRITE: return FI_RMA | FI_WRITE;
	case OP_READ: return FI_RMA | FI_READ;
	case OP_ATOMIC: return FI_ATOMIC | FI_WRITE;
	case OP_FETCH: return FI_ATOMIC | FI_READ;
	}
	return 0;
}

} // namespace

/* Completes a transmit-side op (send/write/read) and frees it. */
void complete_tx(tcp_ep *ep, op *o, int err)
{
	cq::completion c;
	c.op_context = o->context;
	c.flags = op_comp_flags(o);
	c.len = o->kind == OP_READ ? o->len : 0;
	fid_cq *cq = (err || o->want_comp) ? ep->tx_cq : nullptr;
	if (err)
		c.len = 0;
	push_comp(ep, cq, tx_cntr(ep, o), c, err);
	if (ep->tx_inflight)
		ep->tx_inflight--;
	delete o;
}

fi_addr_t src_of(tcp_ep *ep, conn *c)
{
	if (ep->type != FI_EP_RDM || !ep->av)
		return FI_ADDR_NOTAVAIL;
	if (c && c->src == FI_ADDR_NOTAVAIL && !c->peer.empty()) {
		c->src = av::reverse(ep->av, c->peer.data(), c->peer.size());
		if (c->src != FI_ADDR_NOTAVAIL)
			ep->fa_peer.emplace(c->src, tcp_ep::fa_entry{c->peer, ep->av_shared ? av::entry_stamp(ep->av, c->src) : 0});
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
	c.src_addr = src == FI_ADDR_NOTAVAIL || !ep->av ? FI_ADDR_NOTAVAIL : av::source_id(ep->av, src);
	if (release && (o->flags & FI_MULTI_RECV))
		c.flags |= FI_MULTI_RECV;
	/* A shared context's receive asks the endpoint it completes on. */
	bool want = o->srx ? !ep->rx_sel || (o->flags & FI_COMPLETION) : o->want_comp;
	push_comp(ep, (err || want) ? ep->rx_cq : nullptr, ep->c_recv, c, err, olen);
	if (release)
		release_rx(ep, o);
}

} // namespace wu::tcp::detail
