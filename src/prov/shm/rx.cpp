/* shm provider: receives on the common matching engine (posted receives,
 * unexpected messages, FI_PEEK / FI_CLAIM / FI_DISCARD, FI_MULTI_RECV,
 * cancel, truncation), the landing of INLINE / BOUNCE / LARGE messages,
 * and completions. */
#include "config.h"

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "av/av.h"
#include "core/log.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {
namespace {

match::queue_kind qk(bool tagged)
{
	return tagged ? match::queue_kind::tagged : match::queue_kind::msg;
}

/* The iovecs covering [off, off + len) of iov; how many (at most max_iov). */
size_t sub_iov(const iovec *iov, size_t cnt, size_t off, size_t len, iovec *out)
{
	size_t n = 0;
	for (size_t i = 0; i < cnt && len && n < max_iov; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t take = std::min(len, iov[i].iov_len - off);
		out[n++] = {static_cast<char *>(iov[i].iov_base) + off, take};
		len -= take;
		off = 0;
	}
	return n;
}

fi_addr_t src_of(shm_ep *ep, remote *r)
{
	if (r->addr == FI_ADDR_NOTAVAIL && ep->b.av) {
		std::string a = std::string(scheme) + r->name;
		r->addr = av::reverse(ep->b.av, a.c_str(), a.size() + 1);
	}
	return r->addr;
}

void release_rx(shm_ep *ep, rxop *o)
{
	if (ep->rx_posted)
		ep->rx_posted--;
	delete o;
}

/* A body landed in o: true when o is released (an FI_MULTI_RECV buffer
 * only once nothing more lands in it). */
bool landed(shm_ep *ep, rxop *o)
{
	return !(o->flags & FI_MULTI_RECV) || ep->eng->recv_done(&o->r);
}

void answer(shm_ep *ep, remote *r, cell_kind k, uint64_t arg, uint64_t tag, uint64_t status)
{
	pending p;
	p.c.kind = k;
	p.c.arg = arg;
	p.c.tag = tag;
	p.c.len = status;
	send_cell(ep, r, std::move(p));
}

void finish(shm_ep *ep, rxop *o, const wire &c, size_t off, size_t into, fi_addr_t src, int err)
{
	void *buf = o->cnt ? static_cast<char *>(o->iov[0].iov_base) + ((o->flags & FI_MULTI_RECV) ? off : 0)
			   : nullptr;
	size_t olen = c.len - into;
	if (!err && olen)
		err = FI_ETRUNC;
	complete_rx(ep, o, buf, err && err != FI_ETRUNC ? 0 : into, src, c.flags & F_TAGGED, c.tag,
		    c.flags & F_DATA, c.cq_data, err == FI_ETRUNC ? olen : 0, err, landed(ep, o));
}

/* A LARGE message's body into o: one cross-memory copy, or a pull
 * through the sender's bounce slots. */
void land_large(shm_ep *ep, remote *r, const wire &c, rxop *o, size_t off, size_t into, fi_addr_t src)
{
	if (r->dead) {
		finish(ep, o, c, off, 0, src, FI_EHOSTDOWN);
		return;
	}
	if (o->discard || into == 0) {
		answer(ep, r, K_DONE, c.arg, 0, 0);
		finish(ep, o, c, off, into, src, 0);
		return;
	}
	if (use_cma(ep, r)) {
		uint64_t a, l;
		memcpy(&a, c.data, 8);
		memcpy(&l, c.data + 8, 8);
		iovec rem[max_iov];
		size_t rcnt = 1;
		int err = 0;
		if (c.flags & F_IOVLIST) {
			/* The sender's iovec array, read from its memory. */
			if (l == 0 || l > max_iov) {
				err = FI_EINVAL;
			} else {
				iovec here{rem, size_t(l) * sizeof(iovec)}, there{reinterpret_cast<void *>(uintptr_t(a)),
										 size_t(l) * sizeof(iovec)};
				ssize_t n = shm_tp::cma_read(r->p->pid(), &here, 1, &there, 1);
				if (n != ssize_t(here.iov_len))
					err = n < 0 ? int(-n) : EIO;
				rcnt = size_t(l);
			}
		} else {
			rem[0] = {reinterpret_cast<void *>(uintptr_t(a)), size_t(l)};
		}
		if (!err && iov_total(rem, rcnt) != c.len) {
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s: a large message's buffers do not add up to its length\n",
				       r->name.c_str());
			err = EINVAL;
		}
		if (!err) {
			iovec lv[max_iov], rv[max_iov];
			size_t lcnt = sub_iov(o->iov, o->cnt, off, into, lv);
			size_t rc = sub_iov(rem, rcnt, 0, into, rv);
			ssize_t n = shm_tp::cma_read(r->p->pid(), lv, lcnt, rv, rc);
			if (n == ssize_t(into)) {
				answer(ep, r, K_DONE, c.arg, 0, 0);
				finish(ep, o, c, off, into, src, 0);
				return;
			}
			err = n < 0 ? int(-n) : EIO;
			if (err == EPERM || err == ENOSYS) {
				/* Refused after all: pull it instead, and from now on. */
				WU_WARN_ONCE(P(), FI_LOG_EP_DATA,
					     "single copy (process_vm_readv) refused: %s; large messages go through bounce "
					     "buffers\n",
					     strerror(err));
				ep->cma = false;
				err = 0;
			}
		}
		if (err) {
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s: cross-memory copy failed: %s\n", r->name.c_str(),
				       strerror(err));
			answer(ep, r, K_DONE, c.arg, 0, FI_EIO);
			finish(ep, o, c, off, 0, src, FI_EIO);
			return;
		}
	}
	uint64_t token = ep->next_id++;
	rx_pull &pl = ep->pulls_in[token];
	pl.o = o;
	pl.peer = r->slot;
	pl.off = off;
	pl.into = into;
	pl.len = size_t(c.len);
	pl.src = src;
	pl.tagged = c.flags & F_TAGGED;
	pl.tag = c.tag;
	pl.data = c.cq_data;
	pl.has_data = c.flags & F_DATA;
	answer(ep, r, K_PULL, c.arg, token, 0);
}

/* The body of c into o at off (into bytes of it fit); bytes: where an
 * unexpected message's copy is, nullptr to read it from the cell or the
 * sender's slot. */
void land(shm_ep *ep, remote *r, const wire &c, rxop *o, size_t off, size_t into, fi_addr_t src,
	  const char *bytes)
{
	if (c.kind == K_LARGE) {
		land_large(ep, r, c, o, off, into, src);
		return;
	}
	const void *from = bytes;
	if (!from)
		from = c.kind == K_INLINE ? static_cast<const void *>(c.data) : r->p->bounce_addr(uint32_t(c.arg));
	if (!o->discard && from)
		copy_to_iov(o->iov, o->cnt, off, from, into);
	if (c.kind == K_BOUNCE && !bytes)
		r->p->bounce_release(uint32_t(c.arg));
	finish(ep, o, c, off, into, src, from ? 0 : FI_EIO);
}

} // namespace

void push_comp(shm_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err, size_t olen)
{
	ep->b.push(cq, cntr, c, err, olen);
}

void complete_rx(shm_ep *ep, rxop *o, void *buf, size_t len, fi_addr_t src, bool tagged, uint64_t tag,
		 bool has_data, uint64_t data, size_t olen, int err, bool release)
{
	if (!o->discard) {
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
		push_comp(ep, (err || o->want_comp) ? ep->b.rx_cq : nullptr, ep->b.c_recv, c, err, olen);
	}
	if (release)
		release_rx(ep, o);
}

void complete_tx(shm_ep *ep, txop *o, int err)
{
	ep->b.complete_tx(o->kind, o->tagged, o->context, 0, o->want_comp, err);
	delete o;
}

void on_message(shm_ep *ep, remote *r, const wire &c)
{
	/* What a hostile or broken peer could make us read past. */
	if ((c.kind == K_INLINE && (c.inline_len != c.len || c.len > shm_tp::inline_max)) ||
	    (c.kind == K_BOUNCE && c.len > ep->rg->bounce_size())) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a message cell with a bad length %llu; dropped\n",
			       r->name.c_str(), (unsigned long long)c.len);
		return;
	}
	bool tagged = c.flags & F_TAGGED;
	match::message m;
	m.tp = ep->tp.get();
	m.src = src_of(ep, r);
	m.tag = c.tag;
	m.data = c.cq_data;
	m.flags = (c.flags & F_DATA) ? FI_REMOTE_CQ_DATA : 0;
	m.len = size_t(c.len);
	match::match_result res;
	if (ep->eng->arrive(qk(tagged), m, &res)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "out of memory for an unexpected message from %s; dropped\n",
			       r->name.c_str());
		if (c.kind == K_BOUNCE)
			r->p->bounce_release(uint32_t(c.arg));
		else if (c.kind == K_LARGE)
			answer(ep, r, K_DONE, c.arg, 0, FI_ENOMEM);
		return;
	}
	if (res.r) {
		land(ep, r, c, static_cast<rxop *>(res.r->owner), res.off, res.into, m.src, nullptr);
		return;
	}
	auto *u = new ux();
	u->c = c;
	u->peer = r->slot;
	if (c.kind == K_LARGE) {
		u->large = true;
	} else if (c.len) {
		/* Copied out now: the sender's slot comes back whatever the
		 * application does with the message. */
		u->bytes.reset(new char[c.len]);
		const void *from = c.kind == K_INLINE ? static_cast<const void *>(c.data)
						      : r->p->bounce_addr(uint32_t(c.arg));
		if (from)
			memcpy(u->bytes.get(), from, c.len);
		else
			memset(u->bytes.get(), 0, c.len);
	}
	if (c.kind == K_BOUNCE)
		r->p->bounce_release(uint32_t(c.arg));
	res.queued->m.cookie = u;
}

void on_chunk(shm_ep *ep, remote *r, const wire &c)
{
	auto it = ep->pulls_in.find(c.tag);
	const void *from = r->p->bounce_addr(uint32_t(c.arg));
	if (it == ep->pulls_in.end() || it->second.peer != r->slot || !from || c.len > ep->rg->bounce_size() ||
	    c.cq_data > it->second.len || c.len > it->second.len - c.cq_data) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a chunk of no message we pull; dropped\n",
			       r->name.c_str());
		if (from)
			r->p->bounce_release(uint32_t(c.arg));
		return;
	}
	rx_pull &pl = it->second;
	size_t at = size_t(c.cq_data), n = size_t(c.len);
	if (at < pl.into)
		copy_to_iov(pl.o->iov, pl.o->cnt, pl.off + at, from, std::min(n, pl.into - at));
	r->p->bounce_release(uint32_t(c.arg));
	pl.got += n;
	if (pl.got < pl.len)
		return;
	rxop *o = pl.o;
	wire done;
	done.flags = uint8_t((pl.tagged ? F_TAGGED : 0) | (pl.has_data ? F_DATA : 0));
	done.tag = pl.tag;
	done.cq_data = pl.data;
	done.len = pl.len;
	size_t off = pl.off, into = pl.into;
	fi_addr_t src = pl.src;
	ep->pulls_in.erase(it);
	finish(ep, o, done, off, into, src, 0);
}

/* ---- the engine's transport ---- */

void ep_transport::start(match::engine &, match::recv *rv, const match::message &m, size_t off, size_t into)
{
	auto *u = static_cast<ux *>(m.cookie);
	auto *o = static_cast<rxop *>(rv->owner);
	if (!u) /* cannot happen: every queued message gets its cookie */
		return;
	remote *r = ep->remotes[u->peer].get();
	if (u->large)
		land_large(ep, r, u->c, o, off, into, m.src);
	else
		land(ep, r, u->c, o, off, into, m.src, u->bytes.get() ? u->bytes.get() : "");
	delete u;
}

void ep_transport::drop(match::engine &, const match::message &m)
{
	auto *u = static_cast<ux *>(m.cookie);
	if (u && u->large && !ep->remotes[u->peer]->dead)
		answer(ep, ep->remotes[u->peer].get(), K_DONE, u->c.arg, 0, FI_ECANCELED);
	delete u;
}

fi_addr_t ep_transport::resolve(const match::message &m)
{
	auto *u = static_cast<ux *>(m.cookie);
	return u ? src_of(ep, ep->remotes[u->peer].get()) : m.src;
}

/* ---- posting ---- */

namespace {

rxop *new_rx(shm_ep *ep, const iovec *iov, size_t cnt, fi_addr_t src, uint64_t tag, uint64_t ignore,
	     uint64_t flags, void *ctx, bool tagged, bool discard)
{
	auto *o = new rxop();
	o->cnt = cnt;
	for (size_t i = 0; i < cnt; i++)
		o->iov[i] = iov[i];
	o->context = ctx;
	o->flags = flags & ~(FI_PEEK | FI_CLAIM | FI_DISCARD);
	o->tagged = tagged;
	o->want_comp = !ep->b.rx_sel || (flags & FI_COMPLETION);
	o->discard = discard;
	match::recv &r = o->r;
	r.context = ctx;
	r.owner = o;
	r.flags = o->flags;
	r.tag = tag;
	r.ignore = ignore;
	r.src = (ep->b.info->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	r.len = discard ? 0 : iov_total(iov, cnt);
	r.min_free = ep->min_multi_recv;
	r.discard = discard;
	ep->rx_posted++;
	return o;
}

cq::completion peek_comp(shm_ep *ep, void *ctx, const match::unexpected *u, bool discarded)
{
	cq::completion c;
	c.op_context = ctx;
	c.flags = FI_RECV | FI_TAGGED;
	if (!u)
		return c;
	const match::message &m = u->m;
	bool data = m.flags & FI_REMOTE_CQ_DATA;
	c.flags |= data ? FI_REMOTE_CQ_DATA : 0;
	c.len = discarded ? 0 : m.len;
	c.tag = m.tag;
	c.data = data ? m.data : 0;
	fi_addr_t src = ep->tp->resolve(m);
	c.src_addr = src == FI_ADDR_NOTAVAIL || !ep->b.av ? FI_ADDR_NOTAVAIL : av::source_id(ep->b.av, src);
	return c;
}

ssize_t peek_claim_locked(shm_ep *ep, const prov::msg_xfer &x)
{
	bool discard = x.flags & FI_DISCARD;
	if (x.flags & FI_PEEK) {
		match::unexpected *u = ep->eng->peek(match::queue_kind::tagged, x.tag, x.ignore,
						    (ep->b.info->caps & FI_DIRECTED_RECV) ? x.addr : FI_ADDR_UNSPEC);
		if (!u) {
			push_comp(ep, ep->b.rx_cq, nullptr, peek_comp(ep, x.context, nullptr, false), FI_ENOMSG);
			return 0;
		}
		push_comp(ep, ep->b.rx_cq, nullptr, peek_comp(ep, x.context, u, discard));
		if (!discard && !(x.flags & FI_CLAIM))
			return 0;
		if (ep->eng->hold(u, x.context)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK | FI_CLAIM): out of memory; the message stays queued\n");
			return 0;
		}
		if (discard) {
			rxop *o = new_rx(ep, nullptr, 0, FI_ADDR_UNSPEC, 0, 0, x.flags, x.context, true, true);
			ep->eng->claim(u, &o->r);
			return 0;
		}
		static_cast<fi_context *>(x.context)->internal[0] = u;
		return 0;
	}
	match::unexpected *u = ep->eng->held(static_cast<fi_context *>(x.context)->internal[0], x.context);
	if (!u) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_trecvmsg(FI_CLAIM): the context holds no claimed message; pass the fi_context of a "
			"successful FI_PEEK | FI_CLAIM, unchanged\n");
		return -FI_EINVAL;
	}
	if (ep->rx_posted >= ep->b.info->rx_attr->size)
		return -FI_EAGAIN;
	static_cast<fi_context *>(x.context)->internal[0] = nullptr;
	if (discard)
		push_comp(ep, ep->b.rx_cq, nullptr, peek_comp(ep, x.context, u, true));
	rxop *o = new_rx(ep, x.iov, x.count, FI_ADDR_UNSPEC, 0, 0, x.flags, x.context, true, discard);
	ep->eng->claim(u, &o->r);
	return 0;
}

} // namespace

ssize_t do_recv(shm_ep *ep, const prov::msg_xfer &x)
{
	if (x.count > ep->b.info->rx_attr->iov_limit || x.count > max_iov || (x.count && !x.iov))
		return -FI_EINVAL;
	if (x.tagged ? !(ep->b.info->caps & FI_TAGGED) : !(ep->b.info->caps & FI_MSG))
		return -FI_EOPNOTSUPP;
	bool pc = x.msg_api && (x.flags & (FI_PEEK | FI_CLAIM | FI_DISCARD));
	if (pc) {
		const char *bad = !x.tagged			       ? "supported on tagged receives only (fi_trecvmsg)"
				  : !(x.flags & (FI_PEEK | FI_CLAIM)) ? "FI_DISCARD needs FI_PEEK or FI_CLAIM"
				  : (x.flags & FI_MULTI_RECV)	       ? "FI_MULTI_RECV does not combine with them"
				  : ((x.flags & FI_CLAIM) && !x.context) ? "FI_CLAIM needs a struct fi_context"
									 : nullptr;
		if (bad) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", x.where, bad);
			return x.tagged ? -FI_EINVAL : -FI_EOPNOTSUPP;
		}
	}
	if ((x.flags & FI_MULTI_RECV) && !pc && (x.tagged || x.count != 1))
		return -FI_EINVAL;
	{
		std::lock_guard<std::mutex> g(ep->b.mtx);
		if (!ep->b.enabled)
			return -FI_EOPBADSTATE;
		if (pc) {
			if (ssize_t r = peek_claim_locked(ep, x))
				return r;
		} else {
			if (ep->rx_posted >= ep->b.info->rx_attr->size)
				return -FI_EAGAIN;
			rxop *o = new_rx(ep, x.iov, x.count, x.addr, x.tag, x.ignore, x.flags, x.context, x.tagged,
					 false);
			ep->eng->post(qk(x.tagged), &o->r);
		}
	}
	flush(ep);
	return 0;
}

rxop *cancel_recv(shm_ep *ep, void *context)
{
	match::recv *r = ep->eng->cancel(context);
	return r ? static_cast<rxop *>(r->owner) : nullptr;
}

void free_rx(shm_ep *ep)
{
	std::unordered_set<rxop *> all;
	for (auto q : {match::queue_kind::msg, match::queue_kind::tagged})
		while (match::recv *r = ep->eng->first_posted(q)) {
			ep->eng->unpost(r);
			all.insert(static_cast<rxop *>(r->owner));
		}
	for (auto &p : ep->pulls_in)
		all.insert(p.second.o);
	ep->pulls_in.clear();
	for (rxop *o : all)
		delete o;
	ep->eng->detach(ep->tp.get());
}

} // namespace wu::shm
