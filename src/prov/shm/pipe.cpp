/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: the pipelined eager path for messages above one bounce
 * slot, up to FI_SHM_PIPE_MAX.
 *
 * The sender copies the message fragment by fragment into free slots of
 * its own and pushes a cell per fragment at once: PIPE (the header, the
 * first fragment, a token) then PFRAG (token, offset).  No round trip: the
 * receiver copies each fragment out as it pops it, into the matched
 * receive or, unmatched, into a buffer counted as an unexpected message,
 * so its copy overlaps the sender's.  The sender never waits for a slot:
 * when none is free (or the queue is full) the rest of the message joins
 * the peer's backlog, copied, and progress pushes it as slots come back.
 * Fragments of one message arrive in order (one sender, one queue), so
 * what has arrived is always a prefix. */
#include "config.h"

#include <cstring>

#include "core/log.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

namespace {

/* Largest pipelined message a receiver accepts (what it may buffer). */
constexpr uint64_t pipe_len_cap = uint64_t(64) << 20;

void frag_cell(wire &c, const remote *r, uint64_t token, size_t off, size_t n)
{
	c.kind = K_PFRAG;
	c.sender = r->id_there;
	c.tag = token;
	c.cq_data = off;
	c.len = n;
}

int push_wire(remote *r, const wire &w)
{
	shm_tp::cell c;
	to_cell(w, c);
	return r->p->push(c);
}

/* Bytes [from, len) of x still to go: queued behind, the op on the last. */
void queue_rest(shm_ep *ep, remote *r, const prov::msg_xfer &x, size_t len, size_t from, uint64_t token,
		txop *o)
{
	size_t frag = ep->pipe_frag;
	while (from < len) {
		size_t n = std::min(frag, len - from);
		pending p;
		frag_cell(p.c, r, token, from, n);
		p.need_slot = true;
		p.payload.resize(n);
		copy_from_iov(x.iov, x.count, from, p.payload.data(), n);
		from += n;
		p.op = from >= len ? o : nullptr;
		send_cell(ep, r, std::move(p));
	}
}

pipe_in *find(shm_ep *ep, const pipe_key &k)
{
	auto it = ep->pipes->find(k);
	return it == ep->pipes->end() ? nullptr : &it->second;
}

pipe_key key_of(uint32_t peer, uint32_t gen, const wire &c)
{
	uint64_t token;
	memcpy(&token, c.data, 8);
	return {peer, gen, token};
}

/* The first fragment out of the sender's slot into wherever e's bytes go. */
void take_head(remote *r, pipe_in &e)
{
	if (!e.head_in_slot)
		return;
	e.head_in_slot = false;
	const char *from = static_cast<const char *>(r->p->bounce_addr(uint32_t(e.c.arg)));
	if (from) {
		if (e.o) {
			if (!e.drop && e.into)
				prov::copy_to_op(e.o, e.off, from, std::min(e.head_n, e.into));
		} else if (e.buf) {
			memcpy(e.buf.get(), from, e.head_n);
		}
		r->p->bounce_release(uint32_t(e.c.arg));
	}
	e.got = e.head_n;
}

/* e is matched to o now: what arrived so far lands in it. */
void to_op(shm_ep *ep, remote *r, pipe_in &e, rxop *o, size_t off, size_t into, fi_addr_t src)
{
	e.o = o;
	e.u = nullptr;
	e.off = off;
	e.into = into;
	e.src = src;
	e.drop = o->discard;
	if (e.head_in_slot) {
		take_head(r, e);
	} else if (e.buf && !e.drop && into) {
		prov::copy_to_op(o, off, e.buf.get(), std::min(e.got, into));
	}
	e.buf.reset();
	if (e.drop) {
		/* Nothing lands: the receive completes now, the fragments are
		 * still released as they come. */
		finish(ep, o, e.c, off, into, src, 0);
		e.o = nullptr;
	}
}

/* Every byte arrived: completes what waits on it; true when e is done. */
bool complete(shm_ep *ep, pipe_in &e)
{
	if (e.got < e.c.len)
		return false;
	if (e.o) {
		finish(ep, e.o, e.c, e.off, e.into, e.src, 0);
		return true;
	}
	if (e.u) {
		/* An unexpected message like any other from now on. */
		e.u->bytes = std::move(e.buf);
		e.u->pipe = false;
		return true;
	}
	return e.drop; /* set aside: it stays until on_message takes it */
}

} // namespace

bool pipe_send(shm_ep *ep, remote *r, const prov::msg_xfer &x, size_t len, txop *o)
{
	if (!ep->pipe_max || len > ep->pipe_max || len <= ep->rg->bounce_size() || len > pipe_len_cap ||
	    !r->backlog.empty() || r->id_there == no_slot || r->dead)
		return false;
	int slot = ep->rg->bounce_get();
	if (slot < 0)
		return false;
	size_t frag = ep->pipe_frag, n = std::min(frag, len);
	uint64_t token = ep->next_id++;
	copy_from_iov(x.iov, x.count, 0, ep->rg->bounce_addr(slot), n);
	wire c;
	c.kind = K_PIPE;
	c.flags = uint8_t((x.tagged ? F_TAGGED : 0) | ((x.flags & FI_REMOTE_CQ_DATA) ? F_DATA : 0));
	c.sender = r->id_there;
	c.tag = x.tagged ? x.tag : 0;
	c.cq_data = (x.flags & FI_REMOTE_CQ_DATA) ? x.data : 0;
	c.len = len;
	c.arg = uint64_t(slot);
	uint64_t n64 = n;
	memcpy(c.data, &token, 8);
	memcpy(c.data + 8, &n64, 8);
	if (push_wire(r, c)) {
		/* Full or gone: the LARGE path queues it or finds the peer dead. */
		ep->rg->bounce_put(slot);
		return false;
	}
	size_t off = n;
	while (off < len) {
		slot = ep->rg->bounce_get();
		if (slot < 0)
			break;
		n = std::min(frag, len - off);
		copy_from_iov(x.iov, x.count, off, ep->rg->bounce_addr(slot), n);
		wire f;
		frag_cell(f, r, token, off, n);
		f.arg = uint64_t(slot);
		int ret = push_wire(r, f);
		if (ret) {
			ep->rg->bounce_put(slot);
			if (ret == -FI_EAGAIN)
				break;
			peer_dead(ep, r, fi_strerror(-ret));
			complete_tx(ep, o, FI_EHOSTDOWN);
			return true;
		}
		off += n;
	}
	if (off >= len)
		complete_tx(ep, o, 0);
	else
		queue_rest(ep, r, x, len, off, token, o);
	return true;
}

void pipe_head(shm_ep *ep, remote *r, const wire &c)
{
	uint64_t n;
	memcpy(&n, c.data + 8, 8);
	const void *slot = r->p->bounce_addr(uint32_t(c.arg));
	pipe_key k = key_of(r->slot, r->gen, c);
	if (!slot || c.len > pipe_len_cap || n == 0 || n > c.len || n > r->p->bounce_size() || find(ep, k)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a pipelined message with bad lengths; dropped\n",
			       r->name.c_str());
		if (slot)
			r->p->bounce_release(uint32_t(c.arg));
		return;
	}
	pipe_in &e = (*ep->pipes)[k];
	e.c = c;
	e.head_n = size_t(n);
	busy(ep);
	ux_arrive(ep, r, c);
}

size_t pipe_park(shm_ep *ep, remote *r, const wire &c)
{
	pipe_in *e = find(ep, key_of(r->slot, r->gen, c));
	if (!e)
		return 0;
	e->buf = std::make_unique_for_overwrite<char[]>(size_t(c.len));
	take_head(r, *e);
	return size_t(c.len);
}

void pipe_match(shm_ep *ep, remote *r, const wire &c, uint32_t gen, rxop *o, size_t off, size_t into,
		fi_addr_t src)
{
	pipe_key k = key_of(r->slot, gen, c);
	pipe_in *e = find(ep, k);
	if (!e) { /* its sender died before all of it arrived */
		finish(ep, o, c, off, 0, src, FI_EHOSTDOWN);
		return;
	}
	to_op(ep, r, *e, o, off, into, src);
	if (complete(ep, *e))
		ep->pipes->erase(k);
}

void pipe_unexp(shm_ep *ep, remote *r, const wire &c, uint32_t gen, ux *u)
{
	pipe_key k = key_of(r->slot, gen, c);
	u->gen = gen;
	pipe_in *e = find(ep, k);
	if (!e) { /* its sender died: a receive that takes it fails */
		u->pipe = true;
		return;
	}
	if (!e->buf)
		e->buf = std::make_unique_for_overwrite<char[]>(size_t(c.len));
	take_head(r, *e);
	e->u = u;
	u->pipe = true;
	if (complete(ep, *e))
		ep->pipes->erase(k);
}

void pipe_frag(shm_ep *ep, remote *r, const wire &c)
{
	pipe_key k{r->slot, r->gen, c.tag};
	pipe_in *e = find(ep, k);
	const char *from = static_cast<const char *>(r->p->bounce_addr(uint32_t(c.arg)));
	if (!e || !from || e->head_in_slot || c.cq_data != e->got || c.len == 0 || c.len > r->p->bounce_size() ||
	    c.len > e->c.len - e->got) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a fragment of no message we receive; dropped\n",
			       r->name.c_str());
		if (from)
			r->p->bounce_release(uint32_t(c.arg));
		return;
	}
	size_t at = e->got, n = size_t(c.len);
	if (e->o) {
		if (!e->drop && at < e->into)
			prov::copy_to_op(e->o, e->off + at, from, std::min(n, e->into - at));
	} else if (e->buf) {
		memcpy(e->buf.get() + at, from, n);
	}
	r->p->bounce_release(uint32_t(c.arg));
	e->got += n;
	if (complete(ep, *e))
		ep->pipes->erase(k);
}

void pipe_start(shm_ep *ep, ux *u, rxop *o, size_t off, size_t into, fi_addr_t src)
{
	pipe_key k = key_of(u->peer, u->gen, u->c);
	pipe_in *e = find(ep, k);
	if (!e) {
		finish(ep, o, u->c, off, 0, src, FI_EHOSTDOWN);
		return;
	}
	to_op(ep, ep->remotes[u->peer].get(), *e, o, off, into, src);
	if (complete(ep, *e))
		ep->pipes->erase(k);
}

void pipe_drop(shm_ep *ep, ux *u)
{
	pipe_key k = key_of(u->peer, u->gen, u->c);
	pipe_in *e = find(ep, k);
	if (!e)
		return;
	e->u = nullptr;
	e->buf.reset();
	e->drop = true;
	if (complete(ep, *e))
		ep->pipes->erase(k);
}

bool pipe_owed(const shm_ep *ep, uint32_t peer) noexcept
{
	auto it = ep->pipes->lower_bound(pipe_key{peer, 0, 0});
	for (; it != ep->pipes->end() && it->first.peer == peer; ++it)
		if (it->second.got < it->second.c.len)
			return true;
	return false;
}

void pipe_peer_dead(shm_ep *ep, uint32_t peer)
{
	auto it = ep->pipes->lower_bound(pipe_key{peer, 0, 0});
	while (it != ep->pipes->end() && it->first.peer == peer) {
		pipe_in &e = it->second;
		if (e.got >= e.c.len) { /* set aside whole: still deliverable */
			++it;
			continue;
		}
		if (e.o)
			finish(ep, e.o, e.c, e.off, 0, e.src, FI_EHOSTDOWN);
		/* An unmatched one's receive fails when it takes it (no entry). */
		it = ep->pipes->erase(it);
	}
}

void pipe_free(shm_ep *ep)
{
	for (auto &p : *ep->pipes)
		if (p.second.o && !p.second.o->mr.queued())
			ep->rx->release(p.second.o);
	ep->pipes->clear();
}

} // namespace wu::shm
