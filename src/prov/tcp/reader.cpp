/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: the stream reader.  Reads a connection's bytes, validates
 * headers, dispatches frames and lands their bodies (the staging buffer, or
 * straight into receives and regions). */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

/* ---- receive side ---- */

bool protocol_error(tcp_ep *ep, conn *c, const char *what)
{
	st_bad_frames.fetch_add(1, std::memory_order_relaxed);
	std::string why = std::string("malformed frame from the wire (") + what + ")";
	conn_fail(ep, c, FI_EIO, why.c_str());
	return false;
}

void start_body(conn *c, body_kind k, size_t into, size_t discard)
{
	c->body_err = 0;
	c->in_body = true;
	c->bk = k;
	c->body_into = into;
	c->body_trunc = discard;
	c->body_left = into;
	c->discard_left = discard;
}

namespace {

void finish_body(tcp_ep *ep, conn *c)
{
	c->in_body = false;
	const frame::header &h = c->h;
	bool tagged = h.flags & frame::F_TAGGED;
	bool has_data = h.flags & frame::F_CQ_DATA;
	switch (c->bk) {
	case B_RECV: {
		op *o = c->rop;
		c->rop = nullptr;
		bool release = rx_done(ep, o);
		fi_addr_t src = (ep->b.info->caps & FI_SOURCE) || directed(ep) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
		complete_rx(ep, o,
			    {.buf = c->seg, .len = c->body_into, .olen = c->body_trunc, .src = src,
			     .kind = prov::msg_kind(tagged, has_data), .tag = h.tag, .data = h.data,
			     .err = c->body_trunc ? FI_ETRUNC : 0, .release = release});
		break;
	}
	case B_UNEXP: {
		unexp *u = c->ux;
		c->ux = nullptr;
		u->done = true;
		u->from = nullptr;
		if (op *o = u->claimed) {
			size_t into = u->claim_into;
			copy_to_op(o, u->claim_off, u->buf.get(), into);
			iovec first[max_iov];
			size_t k = slice(o, u->claim_off, into, first);
			bool release = rx_done(ep, o);
			complete_rx(ep, o,
				    {.buf = k ? first[0].iov_base : (o->iov_cnt ? o->iov[0].iov_base : nullptr),
				     .len = into, .olen = u->len - into, .src = u->src,
				     .kind = prov::msg_kind(u->tagged, u->has_data), .tag = u->tag, .data = u->data,
				     .err = u->len > into ? FI_ETRUNC : 0, .release = release});
			free_unexp(ep, u);
		}
		break;
	}
	case B_WRITE: {
		if (c->body_err) {
			/* Its region was closed while the body arrived (body_target_live). */
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
				       "RMA write to key 0x%llx: the region was closed while the data arrived\n",
				       (unsigned long long)h.tag);
			enqueue(ep, c, control_item(frame::WRITE_ACK, h.id, uint64_t(c->body_err)));
			break;
		}
		enqueue(ep, c, control_item(frame::WRITE_ACK, h.id, 0));
		mr::remote_access(ep->b.dom, h.tag, FI_REMOTE_WRITE);
		cq::completion cc;
		cc.flags = FI_RMA | FI_REMOTE_WRITE | (has_data ? FI_REMOTE_CQ_DATA : 0);
		cc.data = h.data;
		cc.len = h.len;
		push_comp(ep, has_data ? ep->b.rx_cq : nullptr, ep->b.c_rwrite, cc);
		break;
	}
	case B_READRESP: {
		op *o = c->rop;
		c->rop = nullptr;
		complete_tx(ep, o, c->body_trunc ? FI_ETRUNC : 0);
		break;
	}
	case B_RNDV: {
		op *o = c->rop;
		c->rop = nullptr;
		bool release = rx_done(ep, o);
		const rndv_rx &r = c->rv;
		complete_rx(ep, o,
			    {.buf = c->seg, .len = c->body_into, .olen = c->body_trunc, .src = r.src,
			     .kind = prov::msg_kind(r.tagged, r.has_data), .tag = r.tag, .data = r.data,
			     .err = c->body_trunc ? FI_ETRUNC : 0, .release = release});
		break;
	}
	case B_SMALL:
		switch (h.type) {
		case frame::HELLO:
			on_hello(ep, c);
			break;
		case frame::CHALLENGE:
			on_challenge(ep, c);
			break;
		case frame::HELLO_ACK:
			on_hello_ack(ep, c);
			break;
		case frame::ACCEPT:
			if (!cm_answer_proven(ep, c))
				break;
			c->state = C_READY;
			c->tx_window = c->tx_credit = h.aux;
			ep->connected = true;
			post_cm_event(ep, FI_CONNECTED, c->small.data() + frame::accept_auth,
				      c->small.size() - frame::accept_auth);
			flush_tx(ep, c);
			break;
		case frame::REJECT:
			if (!cm_answer_proven(ep, c))
				break;
			post_cm_error(ep, FI_ECONNREFUSED, c->small.substr(frame::accept_auth));
			conn_fail(ep, c, FI_ECONNREFUSED, nullptr, true);
			break;
		}
		break;
	case B_ATOMIC:
		on_atomic(ep, c);
		break;
	case B_DISCARD:
	case B_NONE:
		break;
	}
	c->bk = B_NONE;
}

/* A validated header: decide where its body goes. */
/* p: the local memory a WRITE (h.len bytes) or READ_REQ (h.data bytes)
 * targets.  False when it has none: the request is refused (FI_EACCES),
 * with a warning limited apart for writes and reads. */
template <bool Write>
bool rma_target(tcp_ep *ep, conn *c, const frame::header &h, mr::ref &ref, void *&p)
{
	uint64_t len = Write ? h.len : h.data;
	p = mr::check(ep->b.dom, h.tag, h.aux, len, Write ? FI_REMOTE_WRITE : FI_REMOTE_READ, ref);
	if (p || !len)
		return true;
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
		       "RMA %s key 0x%llx, address 0x%llx, %llu bytes: no such registered region\n",
		       Write ? "write to" : "read from", (unsigned long long)h.tag, (unsigned long long)h.aux,
		       (unsigned long long)len);
	enqueue(ep, c, control_item(Write ? frame::WRITE_ACK : frame::READ_RESP, h.id, FI_EACCES));
	return false;
}

void on_header(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	auto small = [&] {
		c->small.assign(h.len, '\0');
		c->tgt[0] = {c->small.data(), size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		start_body(c, B_SMALL, h.len, 0);
	};
	switch (c->state) {
	case C_ACCEPTING:
		if (h.type != frame::HELLO || ep->b.type != FI_EP_RDM)
			return (void)protocol_error(ep, c, "expected HELLO");
		return small();
	case C_HELLO_WAIT:
		if (c->chal_wait ? h.type != frame::CHALLENGE : h.type != frame::HELLO_ACK)
			return (void)protocol_error(ep, c, c->chal_wait ? "expected CHALLENGE" : "expected HELLO_ACK");
		return small();
	case C_CM_WAIT:
		if (!c->chal_wait && h.type == frame::CONNREQ && h.len == 0) {
			/* The passive endpoint reported the request: the answer is
			 * now up to its application, which may take its time (as
			 * with libfabric's tcp), so FI_TCP_CONN_TIMEOUT no longer runs. */
			c->deadline = 0;
			return;
		}
		if (c->chal_wait ? h.type != frame::CHALLENGE : h.type != frame::ACCEPT && h.type != frame::REJECT)
			return (void)protocol_error(ep, c, c->chal_wait ? "expected CHALLENGE" : "expected ACCEPT or REJECT");
		return small();
	case C_READY:
		break;
	default:
		return (void)protocol_error(ep, c, "frame in an unexpected state");
	}
	/* A peer that does not read its replies cannot queue more requests. */
	if ((h.type == frame::WRITE || h.type == frame::READ_REQ || h.type == frame::ATOMIC) &&
	    c->txq.size() >= frame::max_queued)
		return (void)protocol_error(ep, c, "requests while too many replies wait for the peer to read them");
	switch (h.type) {
	case frame::MSG:
		return on_msg(ep, c);
	case frame::CREDIT:
		if (h.data > c->tx_window - c->tx_credit)
			return (void)protocol_error(ep, c, "CREDIT gives back more than was sent");
		c->tx_credit += h.data;
		return;
	case frame::RTS:
		return on_rts(ep, c);
	case frame::CTS:
		return on_cts(ep, c);
	case frame::RDATA:
		return on_rdata(ep, c);
	case frame::WRITE: {
		void *p;
		if (!rma_target<true>(ep, c, h, c->wref, p))
			return start_body(c, B_DISCARD, 0, h.len);
		c->tgt[0] = {p, size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		return start_body(c, B_WRITE, h.len, 0);
	}
	case frame::READ_REQ: {
		mr::ref ref;
		void *p;
		if (!rma_target<false>(ep, c, h, ref, p))
			return;
		frame::header r;
		r.type = frame::READ_RESP;
		r.id = h.id;
		r.len = h.data;
		iovec v = {p, size_t(h.data)};
		txitem *t = make_item(r, &v, 1);
		if (h.data)
			t->mref = ref;
		enqueue(ep, c, t);
		mr::remote_access(ep->b.dom, h.tag, FI_REMOTE_READ);
		push_comp(ep, nullptr, ep->b.c_rread, cq::completion{});
		return;
	}
	case frame::ATOMIC:
		/* Staged whole: the operation runs once its operands are here. */
		c->small.resize(h.len);
		c->tgt[0] = {c->small.data(), size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		return start_body(c, B_ATOMIC, h.len, 0);
	case frame::WRITE_ACK:
	case frame::READ_RESP:
	case frame::ATOMIC_RESP: {
		auto it = c->pending.find(h.id);
		if (it == c->pending.end())
			return (void)protocol_error(ep, c, "reply for an unknown operation");
		op *o = it->second;
		bool fits = h.type == frame::WRITE_ACK	? o->kind == OP_WRITE
			    : h.type == frame::READ_RESP ? o->kind == OP_READ
							 : o->kind == OP_ATOMIC || o->kind == OP_FETCH;
		if (!fits)
			return (void)protocol_error(ep, c, "reply of the wrong kind");
		/* An atomic's old values fill its result buffers exactly. */
		if (h.type == frame::ATOMIC_RESP && !h.data && h.len != o->len)
			return (void)protocol_error(ep, c, "atomic response of the wrong length");
		c->pending.erase(it);
		if (h.type == frame::WRITE_ACK || h.data) {
			complete_tx(ep, o, int(h.data));
			return;
		}
		size_t into = std::min<size_t>(o->len, h.len);
		c->rop = o;
		c->tgt_cnt = slice(o, 0, into, c->tgt);
		return start_body(c, B_READRESP, into, h.len - into);
	}
	default:
		return (void)protocol_error(ep, c, "frame type not expected on a data connection");
	}
}



/* Reads from the socket into the staging buffer: >0 bytes, 0 would block,
 * -1 the connection failed (already handled). */
ssize_t fill(tcp_ep *ep, conn *c, size_t most = rbuf_size)
{
	if (c->rpos == c->rend)
		c->rpos = c->rend = 0;
	else if (c->rend == rbuf_size) {
		memmove(c->rbuf.get(), c->rbuf.get() + c->rpos, c->rend - c->rpos);
		c->rend -= c->rpos;
		c->rpos = 0;
	}
	size_t want = std::min(rbuf_size - c->rend, most);
	ssize_t n = recv(c->fd, c->rbuf.get() + c->rend, want, MSG_DONTWAIT);
	if (n > 0) {
		c->rend += size_t(n);
		c->drained = size_t(n) < want;
		ep->reads++;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	int err = n < 0 ? errno : 0;
	/* A peer that ends its connection between two frames (EOF, or a reset
	 * because it exited with bytes unread) is a job ending, not a fault:
	 * info.  Mid-frame it is a real failure and stays a warning. */
	bool between = !c->in_body && c->rend == c->rpos;
	const bool ready = c->state == C_READY;
	if ((n == 0 || err == ECONNRESET) && between && c->state == C_READY) {
		if (!c->msg)
			WU_INFO(P(), FI_LOG_EP_DATA, "connection to %s closed by the peer%s\n",
				c->peer.empty() ? "(unidentified peer)" : addr_text(c->peer).c_str(),
				n == 0 ? "" : " (reset)");
		conn_fail(ep, c, FI_ECONNRESET, nullptr);
	} else if ((n == 0 || err == ECONNRESET) && redial_closed(ep, c)) {
		/* dialed again (backoff) */
	} else if (n == 0) {
		conn_fail(ep, c, FI_ECONNRESET,
			  c->msg || c->state != C_READY ? nullptr : "peer closed the connection mid-message");
	} else {
		conn_fail(ep, c, FI_EIO, strerror(err));
	}
	if (ready)
		peer_gone(ep, c);
	return -1;
}

/* An RMA write body lands only under a live guard on its region: once
 * fi_close(mr) returned, the rest of the body is dropped and the write
 * fails with FI_EACCES at the initiator (finish_body). */
bool body_target_live(conn *c, std::optional<mr::guard> &g)
{
	if (c->bk != B_WRITE)
		return true;
	g.emplace(c->wref);
	if (*g)
		return true;
	g.reset();
	c->discard_left += c->body_left;
	c->body_left = 0;
	c->tgt_cnt = 0;
	c->body_err = FI_EACCES;
	return false;
}

} // namespace

void read_conn(tcp_ep *ep, conn *c)
{
	/* A short read empties the socket: asking again would only cost an
	 * EAGAIN on the latency path (epoll or the next pass finds more). */
	c->drained = false;
	/* The pass's first read is small: a message that fits arrives whole,
	 * and the body of a larger one mostly skips the staging buffer. */
	size_t most = first_read;
	for (int budget = 256;; budget--) {
		if (c->state == C_CLOSED || c->state == C_LOST)
			return;
		if (budget == 0) {
			/* Frames may sit in the staging buffer with nothing left in
			 * the socket, so epoll will not report them: revisit. */
			ep->backlog = true;
			return;
		}
		if (!c->in_body) {
			if (c->rx_paused)
				return;
			if (ux_over(ep, c) && !c->rx_ended) {
				rx_pause(ep, c);
				return;
			}
			if (c->rend - c->rpos < frame::hdr_size) {
				if (c->drained)
					return;
				/* Awaiting RDATA: take just a header, so that a payload
				 * behind it goes straight to the receive. */
				if (!c->rv_wait.empty() && c->rend == c->rpos)
					most = frame::hdr_size;
				ssize_t n = fill(ep, c, most);
				most = rbuf_size;
				if (n <= 0)
					return;
				continue;
			}
			frame::header h;
			frame::error e = frame::decode(c->rbuf.get() + c->rpos, c->rend - c->rpos, h);
			if (e != frame::error::ok) {
				protocol_error(ep, c, frame::to_string(e));
				return;
			}
			c->rpos += frame::hdr_size;
			c->h = h;
			on_header(ep, c);
			continue;
		}
		if (c->body_left) {
			size_t avail = c->rend - c->rpos;
			if (avail) {
				size_t n = std::min(avail, c->body_left);
				size_t done = 0;
				std::optional<mr::guard> g;
				if (!body_target_live(c, g))
					continue;
				for (size_t i = 0; i < c->tgt_cnt && done < n; i++) {
					size_t t = std::min(c->tgt[i].iov_len, n - done);
					memcpy(c->tgt[i].iov_base, c->rbuf.get() + c->rpos + done, t);
					done += t;
				}
				g.reset();
				iov_consume(c->tgt, c->tgt_cnt, n);
				c->rpos += n;
				c->body_left -= n;
				continue;
			}
			if (c->drained)
				return;
			if (c->body_left >= direct_read_min) {
				/* Zero-copy: straight into the destination. */
				size_t want = 0;
				for (size_t i = 0; i < c->tgt_cnt; i++)
					want += c->tgt[i].iov_len;
				std::optional<mr::guard> g;
				if (!body_target_live(c, g))
					continue;
				ssize_t n = readv(c->fd, c->tgt, int(c->tgt_cnt));
				g.reset();
				if (n > 0) {
					c->drained = size_t(n) < want;
					ep->reads++;
					iov_consume(c->tgt, c->tgt_cnt, size_t(n));
					c->body_left -= size_t(n);
					budget++;
					continue;
				}
				if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
					return;
				conn_fail(ep, c, n == 0 ? FI_ECONNRESET : FI_EIO,
					  n == 0 ? "peer closed the connection mid-message" : strerror(errno));
				return;
			}
			if (fill(ep, c, most) <= 0)
				return;
			most = rbuf_size;
			continue;
		}
		if (c->discard_left) {
			size_t avail = c->rend - c->rpos;
			if (avail) {
				size_t n = std::min(avail, c->discard_left);
				c->rpos += n;
				c->discard_left -= n;
				continue;
			}
			if (c->drained || fill(ep, c) <= 0)
				return;
			continue;
		}
		finish_body(ep, c);
	}
}

void accept_all(tcp_ep *ep)
{
	for (;;) {
		sockaddr_storage from{};
		socklen_t fl = sizeof from;
		unique_fd fd(accept4(ep->lfd, reinterpret_cast<sockaddr *>(&from), &fl, SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (fd < 0)
			return;
		set_nonblock_nodelay(fd);
		local_cc(fd, nullptr);
		conn *c = new_conn(ep, fd, false, C_ACCEPTING);
		fd.release(); /* c owns it */
		admit_incoming(ep, c, from, fl);
		send_challenge(ep, c);
	}
}

void connect_done(tcp_ep *ep, conn *c)
{
	int err = 0;
	socklen_t l = sizeof err;
	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err == ECONNREFUSED && may_retry(c) && !c->reached)
		return backoff(ep, c);
	if (err) {
		conn_fail(ep, c, FI_ECONNREFUSED,
			  c->msg ? nullptr
				 : (std::string("connect: ") + strerror(err) +
				    (c->reached ? std::string(" (") + refused_after_answer + ")" : std::string()))
					   .c_str());
		if (c->reached)
			peer_gone(ep, c);
		return;
	}
	tcp_connected(ep, c);
	c->state = c->msg ? C_CM_WAIT : C_HELLO_WAIT;
	flush_tx(ep, c);
}

} // namespace wu::tcp::detail
