/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: the wire protocol.  The transmit queue and partial writes,
 * the eager window (CREDIT), eager messages, rendezvous (RTS/CTS/RDATA) and
 * the send path. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

uint32_t conn_events(const conn *c)
{
	/* Paused, a peer that shuts its side is still seen (EPOLLRDHUP). */
	return (c->rx_paused ? uint32_t(EPOLLRDHUP) : uint32_t(EPOLLIN)) | (c->want_out ? uint32_t(EPOLLOUT) : 0u);
}

namespace {
/* Gives epoll the events c now waits for (polled directly: applied when it
 * is registered again). */
void rearm(tcp_ep *ep, conn *c)
{
	if (!c->in_epoll || c->fd < 0)
		return;
	epoll_event e{};
	e.events = conn_events(c);
	e.data.ptr = c;
	epoll_ctl(ep->epfd, EPOLL_CTL_MOD, c->fd, &e);
}
} // namespace

void want_out(tcp_ep *ep, conn *c, bool on)
{
	if (c->want_out == on || c->fd < 0)
		return;
	c->want_out = on;
	rearm(ep, c);
}

void rx_pause(tcp_ep *ep, conn *c)
{
	c->rx_paused = true;
	rearm(ep, c);
	WU_INFO(P(), FI_LOG_EP_DATA,
		"not reading from %s until receives take its unexpected messages: %llu messages, %llu bytes "
		"held (FI_TCP_UNEXP_MSGS %llu, FI_TCP_UNEXP_LIMIT %llu)\n",
		addr_text(c->peer).c_str(), (unsigned long long)c->ux_count, (unsigned long long)c->ux_held,
		(unsigned long long)ep->ux_msgs, (unsigned long long)ep->ux_limit);
}

void rx_resume(tcp_ep *ep, conn *c)
{
	if (!c->rx_paused)
		return;
	c->rx_paused = false;
	rearm(ep, c);
	/* Frames already staged make no epoll event: the next pass reads
	 * them; under auto progress a write-ready event wakes that pass. */
	if (c->rend > c->rpos) {
		ep->backlog = true;
		if (ep->autop.on())
			want_out(ep, c, true);
	}
}

namespace {

void tx_done(tcp_ep *ep, conn *c, txitem *t)
{
	switch (t->after) {
	case AFTER_COMPLETE:
		complete_tx(ep, t->o, 0);
		break;
	case AFTER_PENDING:
		c->pending[t->o->id] = t->o;
		break;
	case AFTER_CLOSE:
		dispose(t);
		conn_fail(ep, c, 0, nullptr);
		return;
	case AFTER_NONE:
		break;
	}
	dispose(t);
}

/* Drops the first n bytes (fewer than t->left) of an item: partial write. */
void advance(txitem *t, size_t n)
{
	t->left -= n;
	int k = 0;
	while (n > 0) {
		if (n >= t->iov[k].iov_len) {
			n -= t->iov[k].iov_len;
			k++;
		} else {
			t->iov[k].iov_base = static_cast<char *>(t->iov[k].iov_base) + n;
			t->iov[k].iov_len -= n;
			n = 0;
		}
	}
	memmove(t->iov, t->iov + k, (t->cnt - k) * sizeof(iovec));
	t->cnt -= k;
}

/* The region a read response is sent from was closed (fi_close(mr) returned):
 * no byte more is read from it.  Not started, the response becomes an
 * FI_EACCES one; partly written, its frame cannot be finished, so the
 * connection fails (the initiator's operations complete in error).  False
 * if the connection died. */
bool revoke_read(tcp_ep *ep, conn *c, txitem *t)
{
	frame::header h;
	if (frame::decode(t->hdr, frame::hdr_size, h) != frame::error::ok || t->left < frame::hdr_size + h.len) {
		conn_fail(ep, c, FI_EIO, "a region was closed while a read response was being sent from it");
		return false;
	}
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "RMA read from key 0x%llx: the region was closed before the reply\n",
		       (unsigned long long)t->mref.key);
	h.data = FI_EACCES;
	h.len = 0;
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	t->mref = {};
	return true;
}

/* A write to c failed with err: is that a peer that ended its job with
 * nothing of this side's application depending on the connection (only
 * CREDIT, CTS or replies to the peer's own requests still to write)?  Then
 * it is info, as an end of connection between frames is. */
bool peer_gone_quietly(const conn *c, int err)
{
	if ((err != EPIPE && err != ECONNRESET) || c->state != C_READY || c->msg || c->in_body ||
	    !c->pending.empty() || !c->rv_wait.empty())
		return false;
	for (const txitem *t : c->txq) {
		frame::header h;
		if (t->o || frame::decode(t->hdr, frame::hdr_size, h) != frame::error::ok)
			return false;
		switch (h.type) {
		case frame::CREDIT:
		case frame::CTS:
		case frame::WRITE_ACK:
		case frame::READ_RESP:
		case frame::ATOMIC_RESP:
			break;
		default:
			return false;
		}
	}
	return true;
}

} // namespace

/* Writes what the connection may send now, several queued frames per
 * sendmsg.  False if the connection died. */
bool flush_tx(tcp_ep *ep, conn *c)
{
	constexpr size_t batch_iov = 64;
	while (!c->txq.empty()) {
		iovec v[batch_iov];
		size_t k = 0, items = 0;
		for (txitem *t : c->txq) {
			bool may = c->state == C_READY || (t->control && c->state != C_CONNECTING &&
							     c->state != C_LOST && c->state != C_CLOSED && !c->chal_wait);
			if (!may || k + size_t(t->cnt) > batch_iov || (t->mref.serial && items))
				break;
			memcpy(v + k, t->iov, size_t(t->cnt) * sizeof(iovec));
			k += size_t(t->cnt);
			items++;
			if (t->mref.serial)
				break; /* a read response goes in a write of its own, under its guard */
		}
		if (!items)
			break;
		std::optional<mr::guard> g;
		if (c->txq.front()->mref.serial) {
			g.emplace(c->txq.front()->mref);
			if (!*g) {
				if (!revoke_read(ep, c, c->txq.front()))
					return false;
				continue;
			}
		}
		msghdr m{};
		m.msg_iov = v;
		m.msg_iovlen = k;
		ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		g.reset();
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				want_out(ep, c, true);
				return true;
			}
			int err = errno;
			const bool ready = c->state == C_READY;
			if (peer_gone_quietly(c, err)) {
				WU_INFO(P(), FI_LOG_EP_DATA,
					"connection to %s closed by the peer (%s) with only replies left to write\n",
					addr_text(c->peer).c_str(), strerror(err));
				conn_fail(ep, c, FI_ECONNRESET, nullptr);
			} else {
				conn_fail(ep, c, FI_EIO, strerror(err));
			}
			if (ready)
				peer_gone(ep, c);
			return false;
		}
		size_t left = size_t(n);
		for (; items; items--) {
			txitem *t = c->txq.front();
			if (left < t->left) {
				if (left)
					advance(t, left);
				want_out(ep, c, true);
				return true;
			}
			left -= t->left;
			c->txq.pop_front();
			tx_done(ep, c, t);
			if (c->state == C_CLOSED)
				return false;
		}
	}
	if (c->state != C_CONNECTING) /* EPOLLOUT also says the connect completed */
		want_out(ep, c, false);
	return true;
}

txitem *make_item(const frame::header &h, const iovec *iov, size_t cnt)
{
	txitem *t = make_owned<txitem>().release(); /* the caller queues it (c->txq owns it) */
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	for (size_t i = 0; i < cnt; i++) {
		if (!iov[i].iov_len)
			continue;
		t->iov[t->cnt++] = iov[i];
		t->left += iov[i].iov_len;
	}
	return t;
}

/* payload null with plen > 0: the caller fills t->owned. */
txitem *control_item(frame::header h, const void *payload, size_t plen)
{
	h.len = plen;
	owned<txitem> made = make_owned<txitem>();
	txitem *t = made.get();
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	if (plen) {
		t->owned = std::make_unique_for_overwrite<char[]>(plen);
		if (payload)
			memcpy(t->owned.get(), payload, plen);
		t->iov[1] = {t->owned.get(), plen};
		t->cnt = 2;
		t->left += plen;
	}
	t->control = true;
	return made.release(); /* the caller queues it (c->txq owns it) */
}

txitem *control_item(uint8_t type, uint64_t id, uint64_t data, const void *payload,
		     size_t plen)
{
	frame::header h;
	h.type = type;
	h.id = id;
	h.data = data;
	return control_item(h, payload, plen);
}

/* Queues an item and tries to write at once (the common, latency path). */
bool enqueue(tcp_ep *ep, conn *c, txitem *t)
{
	bool idle = c->txq.empty();
	c->txq.push_back(t);
	if (idle && c->fd >= 0)
		return flush_tx(ep, c);
	return true;
}

namespace {

/* ---- eager window (frame.h) ---- */

/* Queues a CREDIT frame with every owed window byte. */
void queue_credit(conn *c)
{
	frame::header h;
	h.type = frame::CREDIT;
	h.data = c->credit_owed;
	c->rx_out -= c->credit_owed;
	c->credit_owed = 0;
	c->txq.push_back(control_item(h));
}

/* This side no longer holds n window bytes that came over c.  They go back
 * with the next frame sent to that peer (do_send), or at once when half the
 * window is owed, so that a peer we never answer is not left without one.
 * now = false only queues that CREDIT (written on the next progress pass),
 * for callers walking the unexpected queues that a failing write would
 * change under them. */
void give_credit(tcp_ep *ep, conn *c, uint64_t n, bool now)
{
	if (!n || c->state != C_READY)
		return;
	c->credit_owed += n;
	if (c->credit_owed < ep->eager_window / 2)
		return;
	bool idle = c->txq.empty();
	queue_credit(c);
	if (!now)
		want_out(ep, c, true);
	else if (idle && c->fd >= 0)
		flush_tx(ep, c);
}

} // namespace

/* Frees an unexpected message; window bytes it held go back to the
 * connection they came over, if it still lives. */
void free_unexp(tcp_ep *ep, unexp *u)
{
	if (u->credit || u->ux_cost || u->counted)
		for (conn *c : ep->conns)
			if (c->serial == u->credit_conn) {
				give_credit(ep, c, u->credit, false);
				c->ux_held -= std::min(c->ux_held, u->ux_cost);
				if (u->counted && c->ux_count)
					c->ux_count--;
				if (c->rx_paused && ux_half(ep, c))
					rx_resume(ep, c);
				break;
			}
	dispose(u);
}

namespace {

/* May this send of n bytes skip the rendezvous?  Takes the window bytes. */
bool take_credit(conn *c, uint64_t n)
{
	if (c->state != C_READY || n > c->tx_credit)
		return false;
	c->tx_credit -= n;
	return true;
}

} // namespace

/* A header for a message (eager MSG frame) arrived. */
void on_msg(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	bool tagged = h.flags & frame::F_TAGGED;
	uint64_t credit = 0;
	if (h.flags & frame::F_CREDIT) {
		if (h.len > ep->eager_window - std::min(c->rx_out, ep->eager_window))
			return (void)protocol_error(ep, c, "eager message beyond the window this side announced");
		credit = h.len;
		c->rx_out += credit;
	}
	fi_addr_t src = (directed(ep) || (ep->b.info->caps & FI_SOURCE)) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
	if (directed(ep) && src == FI_ADDR_NOTAVAIL)
		src = src_of(ep, c);
	match::message m;
	m.tp = ep->tp.get();
	m.src = src;
	m.tag = h.tag;
	m.data = h.data;
	m.flags = (h.flags & frame::F_CQ_DATA) ? FI_REMOTE_CQ_DATA : 0;
	m.len = h.len;
	match::match_result res;
	if (rx_arrive(ep, tagged, m, &res))
		return (void)conn_fail(ep, c, FI_ENOMEM, "out of memory for an unexpected message");
	if (op *o = res.r ? static_cast<op *>(res.r->owner) : nullptr) {
		c->rop = o;
		c->tgt_cnt = slice(o, res.off, res.into, c->tgt);
		c->seg = c->tgt_cnt ? c->tgt[0].iov_base : o->iov[0].iov_base;
		start_body(c, B_RECV, res.into, h.len - res.into);
		/* Straight into the user's buffer: nothing held here.  (After
		 * start_body: should the CREDIT write fail, the connection's
		 * failure completes this receive.) */
		give_credit(ep, c, credit, true);
		return;
	}
	unexp *u;
	try {
		owned<unexp> made = make_owned<unexp>();
		if (h.len)
			made->buf = make_owned_for_overwrite<char[]>(h.len);
		u = made.release(); /* the engine's entry owns it (cookie) */
	} catch (const std::bad_alloc &) {
		ux_unqueue(ep, res.queued);
		return (void)conn_fail(ep, c, FI_ENOMEM, "out of memory for an unexpected message");
	}
	u->peer = c->peer;
	u->from = c;
	u->credit = credit;
	u->credit_conn = c->serial;
	if (!credit) {
		u->ux_cost = h.len + ux_overhead;
		c->ux_held += u->ux_cost;
	}
	u->counted = true;
	c->ux_count++;
	u->src = src;
	u->tagged = tagged;
	u->tag = h.tag;
	u->has_data = h.flags & frame::F_CQ_DATA;
	u->data = h.data;
	u->len = h.len;
	if (h.len)
		st_staged.fetch_add(h.len, std::memory_order_relaxed);
	ux_queued(ep, u, res.queued);
	c->ux = u;
	c->tgt[0] = {u->buf.get(), size_t(h.len)};
	c->tgt_cnt = h.len ? 1 : 0;
	start_body(c, B_UNEXP, h.len, 0);
}

/* Clears a rendezvous: remembers where its data lands, writes CTS. */
void grant(tcp_ep *ep, conn *c, uint64_t send_id, const rndv_rx &r)
{
	uint64_t token = ep->next_token++;
	if (c->rts_held)
		c->rts_held--;
	c->rv_wait.emplace(token, r);
	frame::header h;
	h.type = frame::CTS;
	h.id = send_id;
	h.aux = token;
	auto *t = make_item(h, nullptr, 0);
	t->control = true;
	enqueue(ep, c, t);
}

/* RTS: a receive that matches is cleared at once, else the request waits
 * in the unexpected queue (no buffer) until one is posted. */
void on_rts(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	if (c->rts_held >= frame::max_queued)
		return (void)protocol_error(ep, c, "more rendezvous requests waiting than allowed");
	c->rts_held++;
	rndv_rx r;
	r.tagged = h.flags & frame::F_TAGGED;
	r.has_data = h.flags & frame::F_CQ_DATA;
	r.tag = h.tag;
	r.data = h.data;
	r.len = size_t(h.aux);
	r.src = (directed(ep) || (ep->b.info->caps & FI_SOURCE)) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
	match::message m;
	m.tp = ep->tp.get();
	m.src = r.src;
	m.tag = h.tag;
	m.data = h.data;
	m.flags = r.has_data ? FI_REMOTE_CQ_DATA : 0;
	m.len = r.len;
	match::match_result res;
	if (rx_arrive(ep, r.tagged, m, &res))
		return (void)conn_fail(ep, c, FI_ENOMEM, "out of memory for a rendezvous request");
	if (res.r) {
		r.o = static_cast<op *>(res.r->owner);
		r.into = res.into;
		r.off = res.off;
		grant(ep, c, h.id, r);
		return;
	}
	unexp *u;
	try {
		u = make_owned<unexp>().release(); /* the engine's entry owns it (cookie) */
	} catch (const std::bad_alloc &) {
		ux_unqueue(ep, res.queued);
		return (void)conn_fail(ep, c, FI_ENOMEM, "out of memory for a rendezvous request");
	}
	u->peer = c->peer;
	u->from = c;
	u->src = r.src;
	u->tagged = r.tagged;
	u->tag = h.tag;
	u->has_data = r.has_data;
	u->data = h.data;
	u->len = r.len;
	u->rts = true;
	u->rts_id = h.id;
	ux_queued(ep, u, res.queued);
}

/* CTS: the receiver is ready; the payload goes from the send buffer. */
void on_cts(tcp_ep *ep, conn *c)
{
	auto it = c->pending.find(c->h.id);
	if (it == c->pending.end() || it->second->kind != OP_SEND)
		return (void)protocol_error(ep, c, "CTS for an unknown send");
	op *o = it->second;
	c->pending.erase(it);
	frame::header h;
	h.type = frame::RDATA;
	h.flags = frame::F_LAST;
	h.len = o->len;
	h.id = o->id;
	h.aux = c->h.aux;
	txitem *t = make_item(h, o->iov, o->iov_cnt);
	t->o = o;
	t->after = AFTER_COMPLETE;
	enqueue(ep, c, t);
}

/* RDATA: the body lands in the receive cleared for its token. */
void on_rdata(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	auto it = c->rv_wait.find(h.aux);
	if (it == c->rv_wait.end() || h.len != it->second.len || !(h.flags & frame::F_LAST))
		return (void)protocol_error(ep, c, "RDATA for no cleared rendezvous");
	c->rv = it->second;
	c->rv_wait.erase(it);
	op *o = c->rv.o;
	c->rop = o;
	c->tgt_cnt = slice(o, c->rv.off, c->rv.into, c->tgt);
	c->seg = c->tgt_cnt ? c->tgt[0].iov_base : (o->iov_cnt ? o->iov[0].iov_base : nullptr);
	start_body(c, B_RNDV, c->rv.into, h.len - c->rv.into);
}

/* ---- data-path entry points ---- */

/* FI_INJECT: the item sends its own copy, so the caller's buffer is free
 * when the call returns. */
void own_payload(txitem *t, const iovec *iov, size_t cnt, size_t total)
{
	t->owned = std::make_unique_for_overwrite<char[]>(total ? total : 1);
	copy_from_iov(iov, cnt, 0, t->owned.get(), total);
	t->cnt = 1;
	if (total)
		t->iov[t->cnt++] = {t->owned.get(), total};
}

/* Under ep->b.mtx: the connection a new transmit to dest goes on, or nullptr
 * with *err (-FI_EOPBADSTATE before fi_enable, -FI_EAGAIN while tx_attr->size
 * operations are in flight even after a progress pass, or conn_for's error). */
conn *tx_conn(tcp_ep *ep, fi_addr_t dest, ssize_t *err)
{
	if (!ep->b.enabled) {
		*err = -FI_EOPBADSTATE;
		return nullptr;
	}
	if (ep->tx_inflight >= ep->b.info->tx_attr->size) {
		progress_locked(ep);
		if (ep->tx_inflight >= ep->b.info->tx_attr->size) {
			*err = -FI_EAGAIN;
			return nullptr;
		}
	}
	int e = 0;
	conn *c = conn_for(ep, dest, &e);
	if (!c)
		*err = -e;
	return c;
}

/* Under ep->b.mtx: queues a request whose op completes on the target's reply. */
void queue_pending(tcp_ep *ep, conn *c, txitem *t, op *o)
{
	t->o = o;
	t->after = AFTER_PENDING;
	ep->tx_inflight++;
	enqueue(ep, c, t);
	reap(ep);
}

/* max_msg_size: what the endpoint's info says, never above what a frame carries. */
uint64_t msg_limit(const tcp_ep *ep)
{
	return std::min<uint64_t>(ep->b.info->ep_attr->max_msg_size, frame::max_payload);
}

ssize_t too_long(const tcp_ep *ep, const char *what, size_t total)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s of %zu bytes: above max_msg_size (%llu)\n", what, total,
		       (unsigned long long)msg_limit(ep));
	return -FI_EMSGSIZE;
}

ssize_t do_send(tcp_ep *ep, const prov::msg_xfer &x)
{
	const iovec *iov = x.iov;
	size_t cnt = x.count;
	fi_addr_t dest = x.addr;
	uint64_t tag = x.tag, data = x.data, flags = x.flags;
	void *ctx = x.context;
	bool tagged = x.tagged, inject_api = x.inject_api;
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	if (ssize_t r = prov::check_caps(ep->b.info, x, false, P()))
		return r;
	size_t total = iov_total(iov, cnt);
	if ((inject_api || (flags & FI_INJECT)) && total > ep->b.info->tx_attr->inject_size)
		return -FI_EINVAL;
	if (total > msg_limit(ep))
		return too_long(ep, "send", total);
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard g(ep->b.mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, dest, &err);
		if (!c)
			return err;
		/* Owed window bytes ride in the same write as this frame. */
		bool idle = c->txq.empty();
		if (c->credit_owed && c->state == C_READY)
			queue_credit(c);
		auto send_item = [&](txitem *t) {
			c->txq.push_back(t);
			if (idle && c->fd >= 0)
				flush_tx(ep, c);
		};
		frame::header h;
		h.type = frame::MSG;
		h.flags = (tagged ? frame::F_TAGGED : 0) | ((flags & FI_REMOTE_CQ_DATA) ? frame::F_CQ_DATA : 0);
		h.tag = tagged ? tag : 0;
		h.data = (flags & FI_REMOTE_CQ_DATA) ? data : 0;
		h.len = total;
		bool inject = inject_api || (flags & FI_INJECT);
		/* Receivers take at most max_eager bytes outside their window. */
		size_t plain = ep->rndv_size ? std::min<size_t>(ep->rndv_size, frame::max_eager) : frame::max_eager;
		bool large = !inject && total > plain;
		if (large && take_credit(c, total)) {
			h.flags |= frame::F_CREDIT; /* eager within the peer's window */
		} else if (large) {
			/* Rendezvous: RTS now, the payload once the receiver clears it. */
			op *o = new_op(OP_SEND, ctx, flags, iov, cnt, total);
			o->tagged = tagged;
			o->id = ep->next_id++;
			o->want_comp = !ep->b.tx_sel || (flags & FI_COMPLETION);
			h.type = frame::RTS;
			h.len = 0;
			h.aux = total;
			h.id = o->id;
			txitem *t = make_item(h, nullptr, 0);
			t->o = o;
			t->after = AFTER_PENDING;
			ep->tx_inflight++;
			st_rndv.fetch_add(1, std::memory_order_relaxed);
			send_item(t);
			reap(ep);
			post = !ep->b.comps.empty();
			goto sent;
		}
		{
		bool want_comp = !inject_api && (!ep->b.tx_sel || (flags & FI_COMPLETION));
		size_t early = 0; /* bytes the fast path wrote */
		int early_err = 0;
		if (c->state == C_READY && c->txq.empty() && c->fd >= 0) {
			/* Nothing queued: write now, and when the kernel takes it
			 * all, complete with nothing allocated or queued. */
			unsigned char hb[frame::hdr_size + small_send_max];
			frame::encode(h, hb);
			ssize_t n;
			if (total <= small_send_max) {
				/* One flat buffer: cheaper for the kernel than an iovec. */
				size_t off = frame::hdr_size + copy_from_iov(iov, cnt, 0, reinterpret_cast<char *>(hb) + frame::hdr_size, total);
				n = send(c->fd, hb, off, MSG_NOSIGNAL | MSG_DONTWAIT);
			} else {
				iovec v[max_iov + 1];
				int k = 0;
				v[k++] = {hb, frame::hdr_size};
				for (size_t i = 0; i < cnt; i++)
					if (iov[i].iov_len)
						v[k++] = iov[i];
				msghdr m{};
				m.msg_iov = v;
				m.msg_iovlen = size_t(k);
				n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			}
			if (n >= 0 && size_t(n) == frame::hdr_size + total) {
				cq::completion cc;
				cc.op_context = ctx;
				cc.flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
				push_comp(ep, want_comp ? ep->b.tx_cq : nullptr, ep->b.c_send, cc);
				post = !ep->b.comps.empty();
				goto sent;
			}
			if (n > 0)
				early = size_t(n);
			else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				early_err = errno;
		}
		txitem *t = make_item(h, iov, cnt);
		if (inject_api || (flags & FI_INJECT))
			own_payload(t, iov, cnt, total);
		op *o = make_owned<op>().release(); /* t owns it (t->o), freed by complete_tx */
		o->kind = OP_SEND;
		o->tagged = tagged;
		o->context = ctx;
		o->flags = flags;
		o->len = total;
		o->want_comp = want_comp;
		o->inject = inject_api;
		t->o = o;
		t->after = AFTER_COMPLETE;
		ep->tx_inflight++;
		if (early_err) {
			/* The connection broke: the send completes in error with it. */
			c->txq.push_back(t);
			conn_fail(ep, c, FI_EIO, strerror(early_err));
		} else if (early) {
			advance(t, early); /* the rest goes out as the socket drains */
			c->txq.push_back(t);
			want_out(ep, c, true);
		} else {
			send_item(t);
		}
		reap(ep);
		post = !ep->b.comps.empty();
		}
	}
sent:
	if (post)
		flush(ep);
	return 0;
}

} // namespace wu::tcp::detail
