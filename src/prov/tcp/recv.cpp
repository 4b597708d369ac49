/* tcp provider: receive matching and the unexpected queues (posted receives,
 * tag matching, FI_PEEK / FI_CLAIM / FI_DISCARD).  What the other files call
 * is the matching boundary: find_recv / remove_recv (find, dequeue a posted
 * receive), do_recv (post, or take a queued unexpected message),
 * peek_claim, forget_claims, and the helpers directed, slice, copy_to_op. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

/* ---- matching ---- */

bool tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
	return ((want ^ got) & ~ignore) == 0;
}

} // namespace

bool directed(tcp_ep *ep)
{
	return ep->type == FI_EP_RDM && (ep->info->caps & FI_DIRECTED_RECV);
}

namespace {

bool recv_matches(tcp_ep *ep, op *o, bool tagged, uint64_t tag, fi_addr_t src)
{
	if (tagged && !tag_match(o->tag, o->ignore, tag))
		return false;
	if (directed(ep) && o->addr != FI_ADDR_UNSPEC && o->addr != src)
		return false;
	return true;
}

} // namespace

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

/* Messages held by FI_PEEK | FI_CLAIM that still needed connection c (a
 * rendezvous, or a body still arriving) fail when FI_CLAIM takes them. */
void forget_claims(tcp_ep *ep, conn *c, int err)
{
	for (unexp *u : ep->claimed_ux) {
		if (u->from != c)
			continue;
		u->from = nullptr;
		if (u->rts || !u->done) {
			u->claim_err = err;
			if (c->ux == u)
				c->ux = nullptr; /* the claim owns it, not the body */
		}
	}
}

op *find_recv(tcp_ep *ep, bool tagged, uint64_t tag, fi_addr_t src)
{
	auto &q = tagged ? ep->rq_tag : ep->rq_msg;
	for (auto it = q.begin(); it != q.end(); ++it)
		if (recv_matches(ep, *it, tagged, tag, src))
			return *it;
	return nullptr;
}

void remove_recv(tcp_ep *ep, op *o)
{
	auto &q = o->tagged ? ep->rq_tag : ep->rq_msg;
	auto it = std::find(q.begin(), q.end(), o);
	if (it != q.end())
		q.erase(it);
}

ssize_t do_recv(tcp_ep *ep, const iovec *iov, size_t cnt, fi_addr_t src, uint64_t tag, uint64_t ignore,
		uint64_t flags, void *ctx, bool tagged)
{
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (tagged || cnt != 1))
		return -FI_EINVAL;
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		if (!ep->enabled)
			return -FI_EOPBADSTATE;
		if (ep->rx_posted >= ep->info->rx_attr->size)
			return -FI_EAGAIN;
		auto *o = new op();
		o->kind = OP_RECV;
		o->tagged = tagged;
		o->context = ctx;
		o->flags = flags;
		for (size_t i = 0; i < cnt; i++)
			o->iov[i] = iov[i];
		o->iov_cnt = cnt;
		o->len = iov_total(iov, cnt);
		o->addr = directed(ep) ? src : FI_ADDR_UNSPEC;
		o->tag = tag;
		o->ignore = ignore;
		o->want_comp = !ep->rx_sel || (flags & FI_COMPLETION);
		ep->rx_posted++;
		bool multi = flags & FI_MULTI_RECV;
		auto &q = tagged ? ep->ux_tag : ep->ux_msg;
		for (auto it = q.begin(); it != q.end();) {
			unexp *u = *it;
			if (u->src == FI_ADDR_NOTAVAIL && ep->av && !u->peer.empty())
				u->src = av::reverse(ep->av, u->peer.data(), u->peer.size());
			if (!recv_matches(ep, o, tagged, u->tag, u->src)) {
				++it;
				continue;
			}
			it = q.erase(it);
			size_t into = std::min(op_room(o), u->len);
			size_t off = o->used;
			if (multi) {
				o->used += into;
				o->busy++;
			}
			if (u->rts) {
				rndv_rx r;
				r.o = o;
				r.off = off;
				r.into = into;
				r.len = u->len;
				r.src = u->src;
				r.tagged = u->tagged;
				r.has_data = u->has_data;
				r.tag = u->tag;
				r.data = u->data;
				grant(ep, u->from, u->rts_id, r);
				delete u;
				if (!multi || multi_spent(ep, o))
					goto posted;
				continue;
			}
			if (!u->done) {
				u->claimed = o;
				u->claim_off = off;
				if (!multi)
					goto posted;
			} else {
				copy_to_op(o, off, u->buf.get(), into);
				iovec first[max_iov];
				size_t k = slice(o, off, into, first);
				bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
				complete_rx(ep, o, k ? first[0].iov_base : o->iov[0].iov_base, into, u->src, u->tagged,
					    u->tag, u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0,
					    release);
				free_unexp(ep, u);
				if (release || !multi)
					goto posted;
			}
			if (multi && multi_spent(ep, o))
				goto posted; /* released by the bodies still landing */
		}
		(tagged ? ep->rq_tag : ep->rq_msg).push_back(o);
	posted:
		post = !ep->comps.empty();
	}
	if (post)
		flush(ep);
	return 0;
}

namespace {

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

/* Hands an unexpected message to a (non multi-recv) receive, as do_recv
 * does for a match: a rendezvous is cleared, a body still arriving lands
 * when it is whole, a whole one is copied now. */
void deliver_unexp(tcp_ep *ep, op *o, unexp *u)
{
	size_t into = std::min(o->len, u->len);
	if (u->claim_err || (u->rts && !u->from)) {
		complete_rx(ep, o, nullptr, 0, u->src, true, u->tag, false, 0, 0,
			    u->claim_err ? u->claim_err : FI_ECONNRESET, true);
		delete u;
		return;
	}
	if (u->rts) {
		rndv_rx r;
		r.o = o;
		r.into = into;
		r.len = u->len;
		r.src = u->src;
		r.tagged = u->tagged;
		r.has_data = u->has_data;
		r.tag = u->tag;
		r.data = u->data;
		grant(ep, u->from, u->rts_id, r);
		delete u;
		return;
	}
	if (!u->done) {
		u->claimed = o; /* finish_body completes and frees both */
		u->claim_off = 0;
		return;
	}
	copy_to_op(o, 0, u->buf.get(), into);
	iovec first[max_iov];
	size_t k = slice(o, 0, into, first);
	complete_rx(ep, o, k ? first[0].iov_base : o->iov[0].iov_base, into, u->src, u->tagged, u->tag,
		    u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0, true);
	free_unexp(ep, u);
}

op *new_claim_recv(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags, bool discard)
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
	o->want_comp = !ep->rx_sel || (flags & FI_COMPLETION);
	ep->rx_posted++;
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
	c.src_addr = u->src == FI_ADDR_NOTAVAIL || !ep->av ? FI_ADDR_NOTAVAIL : av::source_id(ep->av, u->src);
	return c;
}

/* FI_PEEK [| FI_CLAIM | FI_DISCARD]: the first unexpected tagged message
 * that would match; FI_ENOMSG error completion when there is none. */
void peek_locked(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	op probe;
	probe.kind = OP_RECV;
	probe.tagged = true;
	probe.tag = m->tag;
	probe.ignore = m->ignore;
	probe.addr = directed(ep) ? m->addr : FI_ADDR_UNSPEC;
	auto it = ep->ux_tag.begin();
	for (; it != ep->ux_tag.end(); ++it) {
		unexp *u = *it;
		if (u->src == FI_ADDR_NOTAVAIL && ep->av && !u->peer.empty())
			u->src = av::reverse(ep->av, u->peer.data(), u->peer.size());
		if (recv_matches(ep, &probe, true, u->tag, u->src))
			break;
	}
	if (it == ep->ux_tag.end()) {
		push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, nullptr, false), FI_ENOMSG);
		return;
	}
	unexp *u = *it;
	bool discard = flags & FI_DISCARD;
	push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, u, discard));
	if (!discard && !(flags & FI_CLAIM))
		return;
	ep->ux_tag.erase(it);
	if (discard)
		return deliver_unexp(ep, new_claim_recv(ep, m, flags, true), u);
	u->claim_ctx = m->context;
	ep->claimed_ux.insert(u);
	static_cast<fi_context *>(m->context)->internal[0] = u;
}

/* FI_CLAIM [| FI_DISCARD]: takes the message an FI_PEEK | FI_CLAIM with
 * this fi_context held. */
ssize_t claim_locked(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	auto *u = static_cast<unexp *>(static_cast<fi_context *>(m->context)->internal[0]);
	auto it = ep->claimed_ux.find(u);
	if (it == ep->claimed_ux.end() || u->claim_ctx != m->context) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_trecvmsg(FI_CLAIM): the context holds no claimed message; pass the fi_context of a "
			"successful FI_PEEK | FI_CLAIM, unchanged\n");
		return -FI_EINVAL;
	}
	if (ep->rx_posted >= ep->info->rx_attr->size)
		return -FI_EAGAIN;
	ep->claimed_ux.erase(it);
	static_cast<fi_context *>(m->context)->internal[0] = nullptr;
	bool discard = flags & FI_DISCARD;
	if (discard)
		push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, u, true));
	deliver_unexp(ep, new_claim_recv(ep, m, flags, discard), u);
	return 0;
}

} // namespace

ssize_t peek_claim(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	const char *bad = nullptr;
	if (!(ep->info->caps & FI_TAGGED))
		bad = "the endpoint was opened without FI_TAGGED";
	else if (!(flags & (FI_PEEK | FI_CLAIM)))
		bad = "FI_DISCARD needs FI_PEEK or FI_CLAIM";
	else if (flags & FI_MULTI_RECV)
		bad = "FI_MULTI_RECV does not combine with FI_PEEK / FI_CLAIM";
	else if ((flags & FI_CLAIM) && !m->context)
		bad = "FI_CLAIM needs a struct fi_context as the context";
	else if (m->iov_count > max_iov || (m->iov_count && !m->msg_iov))
		bad = "bad iov";
	if (bad) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return (ep->info->caps & FI_TAGGED) ? -FI_EINVAL : -FI_EOPNOTSUPP;
	}
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		if (!ep->enabled)
			return -FI_EOPBADSTATE;
		if (flags & FI_PEEK) {
			peek_locked(ep, m, flags);
		} else if (ssize_t r = claim_locked(ep, m, flags)) {
			return r;
		}
	}
	flush(ep);
	return 0;
}

} // namespace wu::tcp::detail
