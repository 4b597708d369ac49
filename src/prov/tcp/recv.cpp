/* tcp provider: the receive side on the shared matching engine
 * (prov/common/match.h).  The endpoint is the engine's transport
 * (ep_transport): arriving MSG and RTS frames go through arrive(); a queued
 * eager message's cookie is its unexp (the staged body), a queued RTS's its
 * unexp too (the rendezvous to grant); start() copies the staged bytes or
 * grants the rendezvous into the receive that took it.  The engine is the
 * endpoint's own, or the one of the shared receive context it is bound to
 * (srx.cpp): then every engine call from the endpoint's side also holds
 * srx->mtx (eng_lock). */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

bool directed(tcp_ep *ep)
{
	return ep->b.type == FI_EP_RDM &&
	       ((ep->b.info->caps & FI_DIRECTED_RECV) || (ep->srx && (ep->srx->attr.caps & FI_DIRECTED_RECV)));
}

/* Points tgt at [off, off+n) of the op's iovecs; returns the count. */
size_t slice(const op *o, size_t off, size_t n, iovec *tgt)
{
	size_t k = 0;
	for (size_t i = 0; i < o->iov_cnt && n; i++) {
		size_t l = o->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = std::min(l - off, n);
		tgt[k].iov_base = static_cast<char *>(o->iov[i].iov_base) + off;
		tgt[k].iov_len = take;
		k++;
		n -= take;
		off = 0;
	}
	return k;
}

size_t copy_to_op(op *o, size_t off, const char *src, size_t n)
{
	iovec t[max_iov];
	size_t k = slice(o, off, n, t), done = 0;
	for (size_t i = 0; i < k; i++) {
		memcpy(t[i].iov_base, src + done, t[i].iov_len);
		done += t[i].iov_len;
	}
	return done;
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

match::queue_kind qk(bool tagged)
{
	return tagged ? match::queue_kind::tagged : match::queue_kind::msg;
}

op *op_of(match::recv *r)
{
	return static_cast<op *>(r->owner);
}

/* Takes the shared context's engine lock (recursive: a transport callback
 * running under an srx call may fail a connection, which comes back here). */
struct eng_lock {
	std::recursive_mutex *m;
	explicit eng_lock(tcp_ep *ep) : m(ep->srx ? &ep->srx->mtx : nullptr)
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
		ep->eng->unqueue(u->qe);
	ux_unlink(u);
	delete u;
}

void resolve_src(tcp_ep *ep, unexp *u)
{
	if (u->src == FI_ADDR_NOTAVAIL && ep->b.av && !u->peer.empty())
		u->src = av::reverse(ep->b.av, u->peer.data(), u->peer.size());
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
	return ep->eng->recv_done(&o->mr);
}

int rx_arrive(tcp_ep *ep, bool tagged, const match::message &m, match::match_result *res)
{
	eng_lock g(ep);
	return ep->eng->arrive(qk(tagged), m, res);
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
	ep->eng->unqueue(qe);
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

/* fi_av_remove: a queued message from fa no longer has that source. */
void av_forget_unexp(tcp_ep *ep, fi_addr_t fa)
{
	eng_lock g(ep);
	each_live(ep, [&](unexp *u) {
		if (u->src != fa)
			return;
		u->src = FI_ADDR_NOTAVAIL;
		if (u->qe)
			u->qe->m.src = FI_ADDR_NOTAVAIL;
	});
}

/* Endpoint close: its unexpected messages go, and the receives posted to
 * its own engine (a shared context keeps its receives). */
void free_rx_state(tcp_ep *ep)
{
	eng_lock g(ep);
	each_live(ep, [&](unexp *u) { drop_unexp(ep, u); });
	if (ep->srx)
		return;
	for (auto q : {match::queue_kind::msg, match::queue_kind::tagged})
		while (match::recv *r = ep->eng->first_posted(q)) {
			ep->eng->unpost(r);
			delete op_of(r);
		}
}

/* fi_cancel: the first receive posted with context, off its queue. */
op *cancel_recv(tcp_ep *ep, void *context)
{
	eng_lock g(ep);
	match::recv *r = ep->eng->cancel(context);
	return r ? op_of(r) : nullptr;
}

/* ---- the transport ---- */

/* A receive took queued message m: copy its staged body (or let it land
 * when whole), or grant its rendezvous. */
void ep_transport::start(match::engine &e, match::recv *r, const match::message &m, size_t off, size_t into)
{
	auto *u = static_cast<unexp *>(m.cookie);
	op *o = op_of(r);
	if (!u) [[unlikely]] {
		complete_rx(ep, o, nullptr, 0, m.src, false, m.tag, false, 0, 0, FI_EIO,
			    !(o->flags & FI_MULTI_RECV) || e.recv_done(r));
		return;
	}
	u->qe = nullptr;
	u->held = false;
	ux_unlink(u);
	resolve_src(ep, u);
	bool multi = o->flags & FI_MULTI_RECV;
	if (u->claim_err || (u->rts && !u->from)) {
		complete_rx(ep, o, nullptr, 0, u->src, u->tagged, u->tag, false, 0, 0,
			    u->claim_err ? u->claim_err : FI_ECONNRESET, !multi || e.recv_done(r));
		delete u;
		return;
	}
	if (u->rts) {
		rndv_rx rr;
		rr.o = o;
		rr.off = off;
		rr.into = into;
		rr.len = u->len;
		rr.src = u->src;
		rr.tagged = u->tagged;
		rr.has_data = u->has_data;
		rr.tag = u->tag;
		rr.data = u->data;
		conn *c = u->from;
		uint64_t id = u->rts_id;
		delete u;
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
	complete_rx(ep, o, k ? first[0].iov_base : (o->iov_cnt ? o->iov[0].iov_base : nullptr), into, u->src,
		    u->tagged, u->tag, u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0,
		    !multi || e.recv_done(r));
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
	delete u;
}

fi_addr_t ep_transport::resolve(const match::message &m)
{
	auto *u = static_cast<unexp *>(m.cookie);
	if (!u)
		return m.src;
	resolve_src(ep, u);
	return u->src;
}

void complete_canceled(tcp_ep *ep, op *o)
{
	complete_rx(ep, o, o->iov_cnt ? o->iov[0].iov_base : nullptr, 0, FI_ADDR_NOTAVAIL, o->tagged, o->tag, false,
		    0, 0, FI_ECANCELED, true);
}

/* ---- posting ---- */

op *new_recv(const iovec *iov, size_t cnt, fi_addr_t src, uint64_t tag, uint64_t ignore, uint64_t flags,
	     void *ctx, bool tagged, bool dir, size_t min_free)
{
	op *o = new_op(OP_RECV, ctx, flags, iov, cnt, iov_total(iov, cnt));
	o->tagged = tagged;
	o->addr = dir ? src : FI_ADDR_UNSPEC;
	o->tag = tag;
	o->ignore = ignore;
	match::recv &r = o->mr;
	r.context = ctx;
	r.owner = o;
	r.flags = flags;
	r.tag = tag;
	r.ignore = ignore;
	r.src = o->addr;
	r.len = o->len;
	r.min_free = min_free;
	return o;
}

/* Posts o: it takes the queued messages that match, or waits. */
void post_recv(match::engine &e, op *o)
{
	e.post(qk(o->tagged), &o->mr);
}

ssize_t check_recv(const iovec *iov, size_t cnt, uint64_t flags, bool tagged)
{
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (tagged || cnt != 1))
		return -FI_EINVAL;
	return 0;
}

ssize_t do_recv(tcp_ep *ep, const prov::msg_xfer &x)
{
	if (x.msg_api && (x.flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))) {
		if (x.tagged) {
			fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
			return peek_claim(ep, &m, x.flags);
		}
		/* Taking them as a plain receive would consume what the
		 * application only meant to look at. */
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_recvmsg: FI_PEEK/FI_CLAIM/FI_DISCARD are supported on tagged receives "
			"only (fi_trecvmsg)\n");
		return -FI_EOPNOTSUPP;
	}
	const iovec *iov = x.iov;
	size_t cnt = x.count;
	fi_addr_t src = x.addr;
	uint64_t tag = x.tag, ignore = x.ignore, flags = x.flags;
	void *ctx = x.context;
	bool tagged = x.tagged;
	if (ssize_t r = check_recv(iov, cnt, flags, tagged))
		return r;
	if (ep->srx)
		return srx_recv(ep->srx, x);
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard<std::mutex> g(ep->b.mtx);
		if (!ep->b.enabled)
			return -FI_EOPBADSTATE;
		if (ep->rx_posted >= ep->b.info->rx_attr->size)
			return -FI_EAGAIN;
		op *o = new_recv(iov, cnt, src, tag, ignore, flags, ctx, tagged, directed(ep), ep->min_multi_recv);
		o->want_comp = !ep->b.rx_sel || (flags & FI_COMPLETION);
		ep->rx_posted++;
		post_recv(*ep->eng, o);
		post = !ep->b.comps.empty();
	}
	if (post)
		flush(ep);
	return 0;
}

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

namespace {

op *new_claim_recv(rx_side &s, tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags, bool discard)
{
	auto *o = new op();
	o->kind = OP_RECV;
	o->tagged = true;
	o->context = m->context;
	o->flags = flags & ~(FI_PEEK | FI_CLAIM | FI_DISCARD);
	o->discard = discard;
	if (!discard) {
		for (size_t i = 0; i < m->iov_count; i++)
			o->iov[i] = m->msg_iov[i];
		o->iov_cnt = m->iov_count;
		o->len = iov_total(m->msg_iov, m->iov_count);
	}
	o->mr.context = m->context;
	o->mr.owner = o;
	o->mr.flags = o->flags;
	o->mr.len = o->len;
	o->mr.discard = discard;
	if (s.srx) {
		o->srx = s.srx;
		s.srx->posted++;
	} else {
		o->want_comp = !ep->b.rx_sel || (flags & FI_COMPLETION);
		ep->rx_posted++;
	}
	return o;
}

/* The completion a peek or a discard reports: the message's metadata,
 * no buffer (length 0 once discarded). */
cq::completion peek_comp(tcp_ep *ep, void *ctx, const unexp *u, bool discarded)
{
	cq::completion c;
	c.op_context = ctx;
	c.flags = FI_RECV | FI_TAGGED | (u && u->has_data ? FI_REMOTE_CQ_DATA : 0);
	if (!u)
		return c;
	c.len = discarded ? 0 : u->len;
	c.tag = u->tag;
	c.data = u->has_data ? u->data : 0;
	c.src_addr = u->src == FI_ADDR_NOTAVAIL || !ep->b.av ? FI_ADDR_NOTAVAIL : av::source_id(ep->b.av, u->src);
	return c;
}

tcp_ep *ep_of_msg(const match::unexpected *qe)
{
	return static_cast<ep_transport *>(qe->m.tp)->ep;
}

/* FI_PEEK [| FI_CLAIM | FI_DISCARD]: the first unexpected tagged message
 * that would match; FI_ENOMSG error completion when there is none. */
void peek_locked(rx_side &s, const fi_msg_tagged *m, uint64_t flags)
{
	match::unexpected *qe = s.eng->peek(match::queue_kind::tagged, m->tag, m->ignore,
					    s.directed ? m->addr : FI_ADDR_UNSPEC);
	if (!qe) {
		if (s.ep)
			push_comp(s.ep, s.ep->b.rx_cq, nullptr, peek_comp(s.ep, m->context, nullptr, false), FI_ENOMSG);
		return;
	}
	tcp_ep *ep = ep_of_msg(qe);
	auto *u = static_cast<unexp *>(qe->m.cookie);
	resolve_src(ep, u);
	bool discard = flags & FI_DISCARD;
	push_comp(ep, ep->b.rx_cq, nullptr, peek_comp(ep, m->context, u, discard));
	if (!discard && !(flags & FI_CLAIM))
		return;
	if (s.eng->hold(qe, m->context)) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK | FI_CLAIM): out of memory; the message stays queued\n");
		return;
	}
	u->held = true;
	if (discard) {
		op *o = new_claim_recv(s, ep, m, flags, true);
		s.eng->claim(qe, &o->mr);
		return;
	}
	static_cast<fi_context *>(m->context)->internal[0] = qe;
}

/* FI_CLAIM [| FI_DISCARD]: takes the message an FI_PEEK | FI_CLAIM with
 * this fi_context held. */
ssize_t claim_locked(rx_side &s, const fi_msg_tagged *m, uint64_t flags)
{
	match::unexpected *qe = s.eng->held(static_cast<fi_context *>(m->context)->internal[0], m->context);
	if (!qe) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_trecvmsg(FI_CLAIM): the context holds no claimed message; pass the fi_context of a "
			"successful FI_PEEK | FI_CLAIM, unchanged\n");
		return -FI_EINVAL;
	}
	if (s.full())
		return -FI_EAGAIN;
	static_cast<fi_context *>(m->context)->internal[0] = nullptr;
	tcp_ep *ep = ep_of_msg(qe);
	bool discard = flags & FI_DISCARD;
	if (discard)
		push_comp(ep, ep->b.rx_cq, nullptr, peek_comp(ep, m->context, static_cast<unexp *>(qe->m.cookie), true));
	op *o = new_claim_recv(s, ep, m, flags, discard);
	s.eng->claim(qe, &o->mr);
	return 0;
}

} // namespace

bool rx_side::full() const
{
	return srx ? srx->posted >= srx->attr.size : ep->rx_posted >= ep->b.info->rx_attr->size;
}

const char *check_peek(const fi_msg_tagged *m, uint64_t flags)
{
	if (!(flags & (FI_PEEK | FI_CLAIM)))
		return "FI_DISCARD needs FI_PEEK or FI_CLAIM";
	if (flags & FI_MULTI_RECV)
		return "FI_MULTI_RECV does not combine with FI_PEEK / FI_CLAIM";
	if ((flags & FI_CLAIM) && !m->context)
		return "FI_CLAIM needs a struct fi_context as the context";
	if (m->iov_count > max_iov || (m->iov_count && !m->msg_iov))
		return "bad iov";
	return nullptr;
}

/* Under the locks of s (the endpoint's, or every one of a shared context). */
ssize_t peek_claim_locked(rx_side &s, const fi_msg_tagged *m, uint64_t flags)
{
	if (flags & FI_PEEK) {
		peek_locked(s, m, flags);
		return 0;
	}
	return claim_locked(s, m, flags);
}

ssize_t peek_claim(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	const char *bad = nullptr;
	if (!(ep->b.info->caps & FI_TAGGED))
		bad = "the endpoint was opened without FI_TAGGED";
	else
		bad = check_peek(m, flags);
	if (bad) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return (ep->b.info->caps & FI_TAGGED) ? -FI_EINVAL : -FI_EOPNOTSUPP;
	}
	if (ep->srx)
		return srx_peek_claim(ep->srx, m, flags);
	{
		std::lock_guard<std::mutex> g(ep->b.mtx);
		if (!ep->b.enabled)
			return -FI_EOPBADSTATE;
		rx_side s{ep->eng, ep, nullptr, directed(ep)};
		if (ssize_t r = peek_claim_locked(s, m, flags))
			return r;
	}
	flush(ep);
	return 0;
}

} // namespace wu::tcp::detail
