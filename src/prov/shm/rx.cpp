/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: receives through the common receive core (prov/common/rx.h:
 * posting, FI_MULTI_RECV, FI_PEEK / FI_CLAIM / FI_DISCARD, cancel,
 * truncation) and the landing of INLINE / BOUNCE / LARGE messages: what
 * arrives is handed to the matching engine, and a receive that takes it,
 * at arrival or later (ep_transport::start), gets its body here. */
#include "config.h"

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "av/av.h"
#include "core/log.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

fi_addr_t src_of(shm_ep *ep, remote *r)
{
	if (r->addr == FI_ADDR_NOTAVAIL && ep->b.av) {
		std::string a = std::string(scheme) + r->name;
		r->addr = ep->b.peer_lookup(a.c_str(), a.size() + 1);
	}
	return r->addr;
}

namespace {

/* A body landed in o: true when o is released (an FI_MULTI_RECV buffer
 * only once nothing more lands in it). */
bool landed(shm_ep *ep, rxop *o)
{
	return ep->rx->done(o);
}

} // namespace

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
	void *buf = o->iov_cnt ? static_cast<char *>(o->iov[0].iov_base) + ((o->flags & FI_MULTI_RECV) ? off : 0)
			       : nullptr;
	size_t olen = c.len - into;
	if (!err && olen)
		err = FI_ETRUNC;
	prov::complete_rx(ep->b, o,
			  {.buf = buf,
			   .len = err && err != FI_ETRUNC ? 0 : into,
			   .olen = err == FI_ETRUNC ? olen : 0,
			   .src = src,
			   .kind = prov::msg_kind(c.flags & F_TAGGED, c.flags & F_DATA),
			   .tag = c.tag,
			   .data = c.cq_data,
			   .err = err,
			   .release = landed(ep, o)});
}

namespace {

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
				ssize_t n = r->p->cma_read(&here, 1, &there, 1);
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
		/* Offered a split: the sender copies part while we copy the rest. */
		if (!err && (c.flags & F_SPLIT) && split_land(ep, r, c, o, off, into, src, rem, rcnt))
			return;
		if (!err) {
			iovec lv[max_iov], rv[max_iov];
			size_t lcnt = prov::slice(o, off, into, lv);
			size_t rc = iov_slice(rem, rcnt, 0, into, rv, max_iov);
			ssize_t n = r->p->cma_read(lv, lcnt, rv, rc);
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
			/* Its process gone (what was read is not trusted): as for any dead peer. */
			int st = err == FI_EHOSTDOWN ? FI_EHOSTDOWN : FI_EIO;
			answer(ep, r, K_DONE, c.arg, 0, st);
			finish(ep, o, c, off, 0, src, st);
			return;
		}
	}
	uint64_t token = ep->next_id++;
	busy(ep);
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
		prov::copy_to_op(o, off, static_cast<const char *>(from), into);
	if (c.kind == K_BOUNCE && !bytes)
		r->p->bounce_release(uint32_t(c.arg));
	finish(ep, o, c, off, into, src, from ? 0 : FI_EIO);
}

} // namespace

void push_comp(shm_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err, size_t olen)
{
	ep->b.push(cq, cntr, c, err, olen);
}

void complete_tx(shm_ep *ep, txop *o, int err)
{
	std::unique_ptr<txop> done(o); /* its queue let it go: freed on return */
	/* A read reports its length (as tcp's do); the others 0. */
	ep->b.complete_tx(o->kind, o->tagged, o->context, o->kind == OP_READ ? o->len : 0, o->want_comp, err,
			  o->inject);
	split_release(ep, o);
}

void on_message(shm_ep *ep, remote *r, const wire &c, uint32_t gen, const char *bytes)
{
	/* What a hostile or broken peer could make us read past. */
	if ((c.kind == K_INLINE && (c.inline_len != c.len || c.len > shm_tp::inline_max)) ||
	    (c.kind == K_BOUNCE && c.len > r->p->bounce_size())) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a message cell with a bad length %llu; dropped\n",
			       r->name.c_str(), (unsigned long long)c.len);
		return;
	}
	bool tagged = c.flags & F_TAGGED;
	match::message m;
	m.tp = ep->tp.get();
	m.src = r->addr != FI_ADDR_NOTAVAIL ? r->addr : src_of(ep, r);
	m.tag = c.tag;
	m.data = c.cq_data;
	m.flags = (c.flags & F_DATA) ? FI_REMOTE_CQ_DATA : 0;
	m.len = size_t(c.len);
	match::match_result res;
	if (ep->rx->eng->arrive(prov::queue_of(tagged), m, &res)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "out of memory for an unexpected message from %s; dropped\n",
			       r->name.c_str());
		if (c.kind == K_BOUNCE && !bytes)
			r->p->bounce_release(uint32_t(c.arg));
		else if (c.kind == K_LARGE)
			answer(ep, r, K_DONE, c.arg, 0, FI_ENOMEM);
		else if (c.kind == K_PIPE) {
			ux gone;
			gone.c = c;
			gone.peer = r->slot;
			gone.gen = gen;
			pipe_drop(ep, &gone);
		}
		return;
	}
	if (res.r) {
		rxop *o = prov::op_of(res.r);
		if (c.kind == K_PIPE) {
			pipe_match(ep, r, c, gen, o, res.off, res.into, m.src);
			return;
		}
		if (c.kind != K_LARGE && o->iov_cnt == 1 && !o->discard && !(o->flags & FI_MULTI_RECV)) {
			/* The common case, without land's generality: one buffer,
			 * res.into bytes of it (res.off is 0). */
			const void *from = bytes ? bytes
					   : c.kind == K_INLINE ? static_cast<const void *>(c.data)
								: r->p->bounce_addr(uint32_t(c.arg));
			if (from) {
				if (c.kind == K_INLINE) /* res.into <= inline_max */
					copy_small(o->iov[0].iov_base, from, res.into);
				else if (res.into)
					memcpy(o->iov[0].iov_base, from, res.into);
				if (c.kind == K_BOUNCE && !bytes)
					r->p->bounce_release(uint32_t(c.arg));
				bool has_data = c.flags & F_DATA;
				prov::complete_rx_one(ep->b, o, res.into, size_t(c.len) - res.into, m.src,
						      (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0),
						      tagged ? c.tag : 0, has_data ? c.cq_data : 0);
				return;
			}
		}
		if (c.kind == K_LARGE && gen != r->gen) /* set aside, and its sender died since */
			finish(ep, o, c, res.off, 0, m.src, FI_EHOSTDOWN);
		else
			land(ep, r, c, o, res.off, res.into, m.src, bytes);
		return;
	}
	owned<ux> u = make_owned<ux>();
	u->c = c;
	u->peer = r->slot;
	/* A LARGE one stays in its sender: only its header counts. */
	u->cost = ux_overhead + (c.kind == K_LARGE ? 0 : size_t(c.len));
	ep->ux_bytes += u->cost;
	ep->ux_count++;
	if (c.kind == K_LARGE) {
		u->large = true;
		u->gen = gen;
	} else if (c.kind == K_PIPE) {
		pipe_unexp(ep, r, c, gen, u.get());
	} else if (c.len) {
		/* Copied out now: the sender's slot comes back whatever the
		 * application does with the message. */
		u->bytes = std::make_unique_for_overwrite<char[]>(c.len);
		const void *from = bytes ? bytes
				   : c.kind == K_INLINE ? static_cast<const void *>(c.data)
							: r->p->bounce_addr(uint32_t(c.arg));
		if (from)
			memcpy(u->bytes.get(), from, c.len);
		else
			memset(u->bytes.get(), 0, c.len);
	}
	if (c.kind == K_BOUNCE && !bytes)
		r->p->bounce_release(uint32_t(c.arg));
	res.queued->m.cookie = u.release(); /* the engine's entry owns it */
}

void on_chunk(shm_ep *ep, remote *r, const wire &c)
{
	auto it = ep->pulls_in.find(c.tag);
	const void *from = r->p->bounce_addr(uint32_t(c.arg));
	if (it == ep->pulls_in.end() || it->second.peer != r->slot || !from || c.len > r->p->bounce_size() ||
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
		prov::copy_to_op(pl.o, pl.off + at, static_cast<const char *>(from), std::min(n, pl.into - at));
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
	owned<ux> u(static_cast<ux *>(m.cookie)); /* the entry's: freed on return */
	rxop *o = prov::op_of(rv);
	if (!u) /* cannot happen: every queued message gets its cookie */
		return;
	ep->ux_bytes -= u->cost;
	ep->ux_count--;
	remote *r = ep->remotes[u->peer].get();
	if (u->pipe)
		pipe_start(ep, u.get(), o, off, into, m.src);
	else if (u->large && (r->dead || r->gen != u->gen))
		finish(ep, o, u->c, off, 0, m.src, FI_EHOSTDOWN); /* its sender is gone */
	else if (u->large)
		land_large(ep, r, u->c, o, off, into, m.src);
	else
		land(ep, r, u->c, o, off, into, m.src, u->bytes.get() ? u->bytes.get() : "");
}

void ep_transport::drop(match::engine &, const match::message &m)
{
	owned<ux> u(static_cast<ux *>(m.cookie)); /* the entry's: freed on return */
	remote *r = u ? ep->remotes[u->peer].get() : nullptr;
	if (u) {
		ep->ux_bytes -= u->cost;
		ep->ux_count--;
	}
	if (u && u->pipe)
		pipe_drop(ep, u.get());
	if (r && u->large && !r->dead && r->gen == u->gen)
		answer(ep, r, K_DONE, u->c.arg, 0, FI_ECANCELED);
}

fi_addr_t ep_transport::resolve(const match::message &m)
{
	auto *u = static_cast<ux *>(m.cookie);
	return u ? src_of(ep, ep->remotes[u->peer].get()) : m.src;
}

prov::rx_info ep_transport::describe(const match::message &m)
{
	prov::rx_info i;
	i.src = resolve(m);
	i.len = m.len;
	i.tag = m.tag;
	i.has_data = m.flags & FI_REMOTE_CQ_DATA;
	i.data = i.has_data ? m.data : 0;
	return i;
}

/* ---- posting ---- */

ssize_t do_recv(shm_ep *ep, const prov::msg_xfer &x)
{
	if (ssize_t r = prov::check_caps(ep->b.info, x, true, ep->b.prov))
		return r;
	/* Only the fi_*msg calls can peek: the others just check their buffers
	 * (b.prov, not P(): no provider set-up check per call). */
	ssize_t call = x.msg_api ? prov::classify_recv(x, ep->b.prov)
				 : prov::check_recv(x.iov, x.count, x.flags, x.tagged);
	if (call < 0)
		return call;
	if (ep->srx) [[unlikely]]
		return prov::srx_recv(ep->srx, x);
	if (call == prov::RX_PEEK) {
		fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
		if (const char *bad = prov::check_peek(&m, x.flags)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", x.where, bad);
			return -FI_EINVAL;
		}
		{
			std::lock_guard g(ep->b.mtx);
			if (!ep->b.enabled)
				return -FI_EOPBADSTATE;
			if (ssize_t r = prov::peek_claim(*ep->rx, &ep->b, &m, x.flags))
				return r;
			/* A claim or discard may have made room (FI_SHM_UNEXP_LIMIT). */
			ux_gate(ep);
		}
		flush(ep);
		return 0;
	}
	/* The common post completes nothing: no second trip through the lock. */
	return ep->b.locked(
		[&]() -> ssize_t {
			if (!ep->b.enabled)
				return -FI_EOPBADSTATE;
			if (ep->rx->full())
				return -FI_EAGAIN;
			prov::post_recv(*ep->rx, &ep->b, x);
			/* It may have taken unexpected messages: set-aside cells go on
			 * now, not only when progress next runs (FI_SHM_UNEXP_LIMIT). */
			ux_gate(ep);
			watch_directed(ep);
			return 0;
		},
		[ep] { flush(ep); });
}

template <bool Tagged>
ssize_t recv_one(shm_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	uint64_t flags = ep->b.info->rx_attr->op_flags; /* FI_SETOPSFLAG may change it */
	/* What do_recv would refuse, or hand to a shared context, goes to it. */
	if (!(ep->rx_fast & prov::rx_fast_bit(Tagged)) || (Tagged && (flags & FI_MULTI_RECV)))
		return prov::general_path;
	return ep->b.locked(
		[&]() -> ssize_t {
			if (!ep->b.enabled || ep->rx->full()) [[unlikely]]
				return prov::general_path;
			prov::post_recv1(*ep->rx, &ep->b, buf, len, src, tag, ignore, ctx, flags, Tagged);
			/* As do_recv: set-aside cells go on. */
			ux_gate(ep);
			watch_directed(ep);
			return 0;
		},
		[ep] { flush(ep); });
}

template ssize_t recv_one<false>(shm_ep *, void *, size_t, fi_addr_t, uint64_t, uint64_t, void *);
template ssize_t recv_one<true>(shm_ep *, void *, size_t, fi_addr_t, uint64_t, uint64_t, void *);

/* ---- shared receive contexts (prov/common/srx.h) ---- */

void rx_room_locked(shm_ep *ep) noexcept
{
	if (ep->b.enabled && ep->rg) {
		ux_gate(ep);
		watch_directed(ep);
	}
}

namespace {

void member_flush(void *ep) noexcept
{
	flush(static_cast<shm_ep *>(ep));
}

void member_room(void *ep) noexcept
{
	guard_void("shm srx room", [&] { rx_room_locked(static_cast<shm_ep *>(ep)); });
}

} // namespace

int srx_bind(shm_ep *ep, fid *f, uint64_t flags)
{
	prov::srx *s = prov::srx_of(f);
	if (!s) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind: not a shared receive context of ours\n");
		return -FI_EINVAL;
	}
	prov::srx_member m{.ep = ep, .b = &ep->b, .flush = member_flush, .rx_room = member_room};
	return prov::srx_attach(s, m, flags, [&]() -> const char * {
		{
			std::lock_guard g(ep->b.mtx);
			if (const char *bad = prov::srx_refuse(ep->srx, ep->b.enabled, ep->rx != &ep->own_rx))
				return bad;
		}
		/* Before fi_enable nothing else holds the lock: it becomes the srx's. */
		ep->b.mtx.share(s->lock);
		ep->rx = &s->rx;
		ep->srx = s;
		return nullptr;
	});
}

void free_rx(shm_ep *ep)
{
	/* Receives a pull was landing in, unless still posted (FI_MULTI_RECV:
	 * drained below). */
	for (auto &p : ep->pulls_in)
		if (!p.second.o->mr.queued())
			ep->rx->release(p.second.o);
	ep->pulls_in.clear();
	pipe_free(ep);
	split_free(ep);
	free_parked(ep);
	/* A lent context's posted receives are its lender's to drain; ours
	 * leave it with our queued messages. */
	if (ep->rx == &ep->own_rx)
		ep->rx->drain();
	else
		ep->rx->forget(&ep->b); /* the lender's context outlives us */
	ep->rx->eng->detach(ep->tp.get());
}

} // namespace wu::shm
