/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: the receive side, on the receive core (prov/common/rx.h)
 * and the matching engine (prov/common/match.h).  The endpoint is the
 * engine's transport (ep_transport): arriving MSG and RTS frames go through
 * arrive(); a queued eager message's cookie is its unexp (the staged body),
 * a queued RTS's its unexp too (the rendezvous to grant); start() copies the
 * staged bytes or grants the rendezvous into the receive that took it, and
 * describe()/hold() are what FI_PEEK and FI_CLAIM see of them.  The receive
 * context is the endpoint's own, or the one of the shared receive context
 * it is bound to (prov/common/srx.h): then every engine call from the
 * endpoint's side also holds srx->eng_mtx (eng_lock). */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

bool directed(tcp_ep *ep)
{
	/* A lent context (sub.cpp) is directed by its lender, whatever the
	 * sub-endpoint's own caps say. */
	return ep->b.type == FI_EP_RDM &&
	       ((ep->b.info->caps & FI_DIRECTED_RECV) || (ep->srx && (ep->srx->attr.caps & FI_DIRECTED_RECV)) ||
		ep->rx->directed);
}

/* ---- the endpoint's unexpected messages ---- */

namespace {

unexp &live_head(tcp_ep *ep)
{
	unexp &h = ep->ux_live;
	if (!h.next)
		h.next = h.prev = &h;
	return h;
}

template <class F>
void each_live(tcp_ep *ep, F &&fn)
{
	unexp &h = live_head(ep);
	for (unexp *u = h.next; u != &h;) {
		unexp *nx = u->next;
		fn(u);
		u = nx;
	}
}

using prov::op_of;
using prov::queue_of;

/* Takes the shared context's engine lock (recursive: a transport callback
 * running under an srx call may fail a connection, which comes back here). */
struct eng_lock {
	std::recursive_mutex *m;
	explicit eng_lock(tcp_ep *ep) : m(ep->srx ? &ep->srx->eng_mtx : nullptr)
	{
		if (m)
			m->lock();
	}
	~eng_lock()
	{
		if (m)
			m->unlock();
	}
	eng_lock(const eng_lock &) = delete;
	eng_lock &operator=(const eng_lock &) = delete;
};

/* Drops a queued or held message (no credit: its connection is gone or closing). */
void drop_unexp(tcp_ep *ep, unexp *u)
{
	if (u->qe)
		ep->rx->eng->unqueue(u->qe);
	ux_unlink(u);
	dispose(u);
}

void resolve_src(tcp_ep *ep, unexp *u)
{
	if (u->src == FI_ADDR_NOTAVAIL && ep->b.av && !u->peer.empty())
		u->src = ep->b.peer_lookup(u->peer.data(), u->peer.size());
}

} // namespace

void ux_link(tcp_ep *ep, unexp *u)
{
	unexp &h = live_head(ep);
	u->prev = h.prev;
	u->next = &h;
	h.prev->next = u;
	h.prev = u;
}

void ux_unlink(unexp *u)
{
	if (!u->next)
		return;
	u->prev->next = u->next;
	u->next->prev = u->prev;
	u->prev = u->next = nullptr;
}

/* FI_MULTI_RECV: a body for o has landed; true when o is released. */
bool rx_done(tcp_ep *ep, op *o)
{
	if (!(o->flags & FI_MULTI_RECV))
		return true;
	eng_lock g(ep);
	return ep->rx->done(o);
}

int rx_arrive(tcp_ep *ep, bool tagged, const match::message &m, match::match_result *res)
{
	eng_lock g(ep);
	return ep->rx->eng->arrive(queue_of(tagged), m, res);
}

/* A queued message's cookie is set once arrive() queued it (under the
 * endpoint lock, which every srx call also holds). */
void ux_queued(tcp_ep *ep, unexp *u, match::unexpected *qe)
{
	u->qe = qe;
	qe->m.cookie = u;
	ux_link(ep, u);
}

void ux_drop(tcp_ep *ep, unexp *u)
{
	eng_lock g(ep);
	drop_unexp(ep, u);
}

void ux_unqueue(tcp_ep *ep, match::unexpected *qe)
{
	eng_lock g(ep);
	ep->rx->eng->unqueue(qe);
}

/* Messages held by FI_PEEK | FI_CLAIM that still needed connection c (a
 * rendezvous, or a body still arriving) fail when FI_CLAIM takes them. */
void forget_claims(tcp_ep *ep, conn *c, int err)
{
	each_live(ep, [&](unexp *u) {
		if (!u->held || u->from != c)
			return;
		u->from = nullptr;
		if (u->rts || !u->done) {
			u->claim_err = err;
			if (c->ux == u)
				c->ux = nullptr; /* the claim owns it, not the body */
		}
	});
}

/* Connection c failed: rendezvous requests from c can no longer be
 * served; whole messages from c stay. */
void drop_conn_unexp(tcp_ep *ep, conn *c)
{
	eng_lock g(ep);
	each_live(ep, [&](unexp *u) {
		if (u->from != c)
			return;
		if (u->rts && !u->held)
			drop_unexp(ep, u);
		else
			u->from = nullptr;
	});
}

void peer_gone(tcp_ep *ep, conn *c)
{
	if (c->msg || c->peer.empty() || !directed(ep))
		return;
	/* Another live connection to the same address: only this one went. */
	auto it = ep->peers.find(c->peer);
	if (it != ep->peers.end() && it->second != c && it->second->state != C_CLOSED)
		return;
	fi_addr_t a = src_of(ep, c);
	if (a == FI_ADDR_NOTAVAIL)
		return;
	eng_lock g(ep);
	ep->rx->peer_down(ep->b, a);
}

void peer_back(tcp_ep *ep, conn *c)
{
	if (c->msg || c->peer.empty())
		return;
	eng_lock g(ep);
	if (ep->rx->dead_.empty())
		return;
	ep->rx->peer_up(src_of(ep, c));
}

/* fi_av_remove: a queued message from fa no longer has that source (and
 * fa, given to another peer later, is not gone). */
void av_forget_unexp(tcp_ep *ep, fi_addr_t fa)
{
	eng_lock g(ep);
	ep->rx->peer_up(fa);
	each_live(ep, [&](unexp *u) {
		if (u->src != fa)
			return;
		u->src = FI_ADDR_NOTAVAIL;
		if (u->qe)
			u->qe->m.src = FI_ADDR_NOTAVAIL;
	});
}

/* Endpoint close: its unexpected messages go, and the receives posted to
 * its own engine (a shared context keeps its receives, and a lent one's
 * lender drains them). */
void free_rx_state(tcp_ep *ep)
{
	eng_lock g(ep);
	each_live(ep, [&](unexp *u) { drop_unexp(ep, u); });
	if (ep->rx == &ep->own_rx)
		ep->own_rx.drain();
	else
		ep->rx->forget(&ep->b); /* a shared or lent context outlives us */
}

/* fi_cancel: the first receive posted with context, off its queue. */
op *cancel_recv(tcp_ep *ep, void *context)
{
	eng_lock g(ep);
	return ep->rx->cancel(context);
}

/* ---- the transport ---- */

/* A receive took queued message m: copy its staged body (or let it land
 * when whole), or grant its rendezvous. */
void ep_transport::start(match::engine &e, match::recv *r, const match::message &m, size_t off, size_t into)
{
	auto *u = static_cast<unexp *>(m.cookie);
	op *o = op_of(r);
	if (!u) [[unlikely]] {
		complete_rx(ep, o,
			    {.src = m.src, .tag = m.tag, .err = FI_EIO,
			     .release = !(o->flags & FI_MULTI_RECV) || e.recv_done(r)});
		return;
	}
	u->qe = nullptr;
	u->held = false;
	ux_unlink(u);
	resolve_src(ep, u);
	bool multi = o->flags & FI_MULTI_RECV;
	if (u->claim_err || (u->rts && !u->from)) {
		complete_rx(ep, o,
			    {.src = u->src, .kind = prov::msg_kind(u->tagged), .tag = u->tag,
			     .err = u->claim_err ? u->claim_err : FI_ECONNRESET, .release = !multi || e.recv_done(r)});
		dispose(u);
		return;
	}
	if (u->rts) {
		rndv_rx rr{.o = o, .off = off, .into = into, .len = u->len, .src = u->src,
			   .tagged = u->tagged, .has_data = u->has_data, .tag = u->tag, .data = u->data};
		conn *c = u->from;
		uint64_t id = u->rts_id;
		dispose(u);
		grant(ep, c, id, rr);
		return;
	}
	if (!u->done) {
		u->claimed = o; /* finish_body completes and frees both */
		u->claim_off = off;
		u->claim_into = into;
		return;
	}
	copy_to_op(o, off, u->buf.get(), into);
	iovec first[max_iov];
	size_t k = slice(o, off, into, first);
	complete_rx(ep, o,
		    {.buf = k ? first[0].iov_base : (o->iov_cnt ? o->iov[0].iov_base : nullptr),
		     .len = into, .olen = u->len - into, .src = u->src, .kind = prov::msg_kind(u->tagged, u->has_data),
		     .tag = u->tag, .data = u->data, .err = u->len > into ? FI_ETRUNC : 0,
		     .release = !multi || e.recv_done(r)});
	free_unexp(ep, u);
}

/* The endpoint leaves a shared engine (close): its queued messages go. */
void ep_transport::drop(match::engine &, const match::message &m)
{
	auto *u = static_cast<unexp *>(m.cookie);
	if (!u)
		return;
	u->qe = nullptr;
	ux_unlink(u);
	dispose(u);
}

fi_addr_t ep_transport::resolve(const match::message &m)
{
	auto *u = static_cast<unexp *>(m.cookie);
	if (!u)
		return m.src;
	resolve_src(ep, u);
	return u->src;
}

/* FI_PEEK: what the staged or requested message carries. */
prov::rx_info ep_transport::describe(const match::message &m)
{
	prov::rx_info i;
	auto *u = static_cast<unexp *>(m.cookie);
	if (!u)
		return i;
	resolve_src(ep, u);
	i.src = u->src;
	i.len = u->len;
	i.tag = u->tag;
	i.data = u->data;
	i.has_data = u->has_data;
	return i;
}

/* FI_PEEK | FI_CLAIM: the staged body (or the rendezvous request) stays
 * with the endpoint until FI_CLAIM starts it; a connection failing
 * meanwhile marks it (forget_claims). */
void ep_transport::hold(const match::message &m)
{
	if (auto *u = static_cast<unexp *>(m.cookie))
		u->held = true;
}

void complete_canceled(tcp_ep *ep, op *o)
{
	prov::complete_canceled(ep->b, o);
}

/* ---- posting ---- */

ssize_t do_recv(tcp_ep *ep, const prov::msg_xfer &x)
{
	if (ssize_t r = prov::check_caps(ep->b.info, x, true, P()))
		return r;
	ssize_t kind = prov::classify_recv(x, P());
	if (kind < 0)
		return kind;
	if (kind == prov::RX_PEEK) {
		fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
		return peek_claim(ep, &m, x.flags);
	}
	if (ep->srx)
		return prov::srx_recv(ep->srx, x);
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard g(ep->b.mtx);
		if (!ep->b.enabled)
			return -FI_EOPBADSTATE;
		if (ep->rx->full()) /* its own, or the one lent to it (sub.cpp) */
			return -FI_EAGAIN;
		prov::post_recv(*ep->rx, &ep->b, x);
		post = !ep->b.comps.empty();
	}
	if (post)
		flush(ep);
	return 0;
}

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

ssize_t peek_claim(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	const char *bad = nullptr;
	if (!(ep->b.info->caps & FI_TAGGED))
		bad = "the endpoint was opened without FI_TAGGED";
	else
		bad = prov::check_peek(m, flags);
	if (bad) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return (ep->b.info->caps & FI_TAGGED) ? -FI_EINVAL : -FI_EOPNOTSUPP;
	}
	if (ep->srx)
		return prov::srx_peek_claim(ep->srx, m, flags);
	{
		std::lock_guard g(ep->b.mtx);
		if (!ep->b.enabled)
			return -FI_EOPBADSTATE;
		if (ssize_t r = prov::peek_claim(*ep->rx, &ep->b, m, flags))
			return r;
	}
	flush(ep);
	return 0;
}

} // namespace wu::tcp::detail
