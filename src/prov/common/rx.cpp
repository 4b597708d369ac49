/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive core (rx.h): posting, multi-receive bookkeeping, peek and
 * claim, cancel and the receive completion. */
#include "config.h"
#include "prov/common/rx.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/log.h"
#include "core/owned.h"

namespace wu::prov {

op *new_op(op_kind k, void *ctx, uint64_t flags, const iovec *iov, size_t cnt, size_t len)
{
	owned<op> o = make_owned<op>();
	o->kind = k;
	o->context = ctx;
	o->flags = flags;
	for (size_t i = 0; i < cnt; i++)
		o->iov[i] = iov[i];
	o->iov_cnt = cnt;
	o->len = len;
	return o.release(); /* the caller's queues own it */
}

size_t slice(const op *o, size_t off, size_t n, iovec *tgt) noexcept
{
	return iov_slice(o->iov, o->iov_cnt, off, n, tgt, max_iov);
}

size_t copy_to_op(op *o, size_t off, const char *src, size_t n) noexcept
{
	return copy_to_iov(o->iov, o->iov_cnt, off, src, n);
}

/* ---- the receive context ---- */

void rx_ctx::drain() noexcept
{
	for (auto q : {match::queue_kind::msg, match::queue_kind::tagged})
		while (match::recv *r = eng->first_posted(q)) {
			eng->unpost(r);
			release(op_of(r));
		}
}

bool rx_ctx::done(op *o) noexcept
{
	if (!(o->flags & FI_MULTI_RECV))
		return true;
	return eng->recv_done(&o->mr);
}

op *rx_ctx::cancel(void *context) noexcept
{
	match::recv *r = eng->cancel(context);
	return r ? op_of(r) : nullptr;
}

namespace {

/* A receive that failed because its peer is gone: nothing landed. */
void complete_dead(ep_base &b, op *o, fi_addr_t a)
{
	complete_rx(b, o,
		    {.buf = o->iov_cnt ? o->iov[0].iov_base : nullptr, .src = a, .kind = msg_kind(o->tagged),
		     .tag = o->tag, .err = FI_EHOSTDOWN});
}

} // namespace

void rx_ctx::peer_down(ep_base &b, fi_addr_t a) noexcept
{
	if (!directed || a == FI_ADDR_UNSPEC || a == FI_ADDR_NOTAVAIL)
		return;
	size_t n = 0;
	while (match::recv *r = eng->unpost_from(a)) {
		complete_dead(b, op_of(r), a);
		n++;
	}
	if (n)
		WU_WARN(prov, FI_LOG_EP_DATA, "peer fi_addr %llu is gone: %zu receive(s) directed at it fail with FI_EHOSTDOWN\n",
			(unsigned long long)a, n);
	for (dead_peer &d : dead_)
		if (d.addr == a) {
			d.by = &b;
			return;
		}
	try {
		dead_.push_back({a, &b});
	} catch (...) {
		/* Only later receives miss the mark: they wait as before. */
		WU_WARN(prov, FI_LOG_EP_DATA, "out of memory marking peer fi_addr %llu as gone\n", (unsigned long long)a);
	}
}

void rx_ctx::peer_up(fi_addr_t a) noexcept
{
	for (size_t i = 0; i < dead_.size(); i++)
		if (dead_[i].addr == a) {
			dead_[i] = dead_.back();
			dead_.pop_back();
			return;
		}
}

void rx_ctx::forget(const ep_base *b) noexcept
{
	std::erase_if(dead_, [b](const dead_peer &d) { return d.by == b; });
}

/* ---- checks ---- */

ssize_t check_recv(const iovec *iov, size_t cnt, uint64_t flags, bool tagged) noexcept
{
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (tagged || cnt != 1))
		return -FI_EINVAL;
	return 0;
}

ssize_t classify_recv(const msg_xfer &x, fi_provider *prov)
{
	if (x.msg_api && (x.flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))) {
		if (x.tagged)
			return RX_PEEK;
		/* Taking them as a plain receive would consume what the
		 * application only meant to look at. */
		WU_WARN(prov, FI_LOG_EP_DATA,
			"%s: FI_PEEK/FI_CLAIM/FI_DISCARD are supported on tagged receives only (fi_trecvmsg)\n",
			x.where);
		return -FI_EOPNOTSUPP;
	}
	if (ssize_t r = check_recv(x.iov, x.count, x.flags, x.tagged))
		return r;
	return RX_POST;
}

ssize_t check_caps(const fi_info *info, const msg_xfer &x, bool recv, fi_provider *prov)
{
	if (!(info->caps & (x.tagged ? FI_TAGGED : FI_MSG))) {
		WU_WARN(prov, FI_LOG_EP_DATA, "%s: the endpoint was opened without %s\n", x.where,
			x.tagged ? "FI_TAGGED" : "FI_MSG");
		return -FI_EOPNOTSUPP;
	}
	size_t limit = recv ? info->rx_attr->iov_limit : info->tx_attr->iov_limit;
	if (x.count > limit) {
		WU_WARN(prov, FI_LOG_EP_DATA, "%s: %zu buffers, more than the endpoint's iov_limit %zu\n", x.where,
			x.count, limit);
		return -FI_EINVAL;
	}
	return 0;
}

const char *check_peek(const fi_msg_tagged *m, uint64_t flags) noexcept
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

/* ---- posting ---- */

namespace {

/* A directed receive o was queued while some peers are known gone. */
[[gnu::noinline]] void posted_while_dead(rx_ctx &rx, ep_base *b, op *o)
{
	for (const rx_ctx::dead_peer &d : rx.dead_)
		if (d.addr == o->addr) {
			if (o->mr.busy)
				return; /* an FI_MULTI_RECV buffer already took a message */
			rx.eng->unpost(&o->mr);
			WU_INFO(rx.prov, FI_LOG_EP_DATA, "receive directed at fi_addr %llu, which is gone: FI_EHOSTDOWN\n",
				(unsigned long long)o->addr);
			complete_dead(b ? *b : *d.by, o, o->addr);
			return;
		}
}

/* post_recv and post_recv1 once o's buffers are set. */
[[gnu::always_inline]] inline void post_op(rx_ctx &rx, ep_base *b, op *o, void *ctx, uint64_t flags, bool tagged,
					   fi_addr_t src, uint64_t tag, uint64_t ignore)
{
	o->context = ctx;
	o->flags = flags;
	o->tagged = tagged;
	o->addr = rx.directed ? src : FI_ADDR_UNSPEC;
	o->tag = tag;
	o->ignore = ignore;
	o->rx = &rx;
	/* A shared context's receive asks the endpoint it completes on. */
	if (!rx.shared && b)
		o->want_comp = b->rx_wants(flags);
	match::recv &r = o->mr;
	r.context = ctx;
	r.owner = o;
	r.flags = flags;
	r.tag = tag;
	r.ignore = ignore;
	r.src = o->addr;
	r.len = o->len;
	r.min_free = rx.min_multi_recv;
	rx.posted.store(rx.posted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	if (rx.eng->post(queue_of(tagged), &o->mr) && o->addr != FI_ADDR_UNSPEC) {
		rx.directed_hint = true;
		if (!rx.dead_.empty()) [[unlikely]]
			posted_while_dead(rx, b, o);
	}
}

} // namespace

void post_recv(rx_ctx &rx, ep_base *b, const msg_xfer &x)
{
	op *o = rx.take();
	for (size_t i = 0; i < x.count; i++)
		o->iov[i] = x.iov[i];
	o->iov_cnt = x.count;
	o->len = iov_total(x.iov, x.count);
	post_op(rx, b, o, x.context, x.flags, x.tagged, x.addr, x.tag, x.ignore);
}

void post_recv1(rx_ctx &rx, ep_base *b, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
		void *ctx, uint64_t flags, bool tagged)
{
	op *o = rx.take();
	o->iov[0] = {buf, len};
	o->iov_cnt = 1;
	o->len = len;
	post_op(rx, b, o, ctx, flags, tagged, src, tag, ignore);
}

/* ---- completions ---- */

void complete_rx(ep_base &b, op *o, const rx_end &e)
{
	if (o->discard) [[unlikely]] {
		if (e.release)
			o->rx->release(o);
		return;
	}
	const bool tagged = e.kind & FI_TAGGED, has_data = e.kind & FI_REMOTE_CQ_DATA;
	cq::completion c;
	c.op_context = o->context;
	c.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0);
	c.len = e.len;
	c.buf = e.buf;
	c.data = has_data ? e.data : 0;
	c.tag = tagged ? e.tag : 0;
	c.src_addr = e.src == FI_ADDR_NOTAVAIL || !b.av ? FI_ADDR_NOTAVAIL : av::source_id(b.av, e.src);
	if (e.release && (o->flags & FI_MULTI_RECV))
		c.flags |= FI_MULTI_RECV;
	bool want = o->rx && o->rx->shared ? b.rx_wants(o->flags) : o->want_comp;
	b.push((e.err || want) ? b.rx_cq : nullptr, b.c_recv, c, e.err, e.olen);
	if (e.release)
		o->rx->release(o);
}

void complete_rx_one(ep_base &b, op *o, size_t len, size_t olen, fi_addr_t src, uint64_t cflags, uint64_t tag,
		     uint64_t data)
{
	cq::completion c;
	c.op_context = o->context;
	c.flags = FI_RECV | cflags;
	c.len = len;
	c.buf = o->iov[0].iov_base;
	c.data = data;
	c.tag = tag;
	c.src_addr = src == FI_ADDR_NOTAVAIL || !b.av ? FI_ADDR_NOTAVAIL : av::source_id(b.av, src);
	bool want = o->rx->shared ? b.rx_wants(o->flags) : o->want_comp;
	if (olen) [[unlikely]]
		b.push(b.rx_cq, b.c_recv, c, FI_ETRUNC, olen);
	else
		b.push(want ? b.rx_cq : nullptr, b.c_recv, c);
	o->rx->release(o);
}

void complete_canceled(ep_base &b, op *o)
{
	complete_rx(b, o,
		    {.buf = o->iov_cnt ? o->iov[0].iov_base : nullptr, .kind = msg_kind(o->tagged), .tag = o->tag,
		     .err = FI_ECANCELED});
}

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

namespace {

op *new_claim_recv(rx_ctx &rx, ep_base &b, const fi_msg_tagged *m, uint64_t flags, bool discard)
{
	owned<op> o = make_owned<op>();
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
	o->mr.owner = o.get();
	o->mr.flags = o->flags;
	o->mr.len = o->len;
	o->mr.discard = discard;
	o->rx = &rx;
	if (!rx.shared)
		o->want_comp = b.rx_wants(flags);
	rx.posted.store(rx.posted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	return o.release(); /* the engine's claim owns it */
}

/* The completion a peek or a discard reports: the message's metadata,
 * no buffer (length 0 once discarded). */
cq::completion peek_comp(ep_base &b, void *ctx, const rx_info *u, bool discarded)
{
	cq::completion c;
	c.op_context = ctx;
	c.flags = FI_RECV | FI_TAGGED | (u && u->has_data ? FI_REMOTE_CQ_DATA : 0);
	if (!u)
		return c;
	c.len = discarded ? 0 : u->len;
	c.tag = u->tag;
	c.data = u->has_data ? u->data : 0;
	c.src_addr = u->src == FI_ADDR_NOTAVAIL || !b.av ? FI_ADDR_NOTAVAIL : av::source_id(b.av, u->src);
	return c;
}

rx_transport *tp_of(const match::unexpected *qe)
{
	return static_cast<rx_transport *>(qe->m.tp);
}

/* FI_PEEK [| FI_CLAIM | FI_DISCARD]: the first unexpected tagged message
 * that would match; FI_ENOMSG error completion when there is none. */
void peek(rx_ctx &rx, ep_base *first, const fi_msg_tagged *m, uint64_t flags)
{
	match::unexpected *qe = rx.eng->peek(match::queue_kind::tagged, m->tag, m->ignore,
					     rx.directed ? m->addr : FI_ADDR_UNSPEC);
	if (!qe) {
		if (first)
			first->push(first->rx_cq, nullptr, peek_comp(*first, m->context, nullptr, false), FI_ENOMSG);
		return;
	}
	rx_transport *tp = tp_of(qe);
	ep_base &b = *tp->base;
	rx_info u = tp->describe(qe->m);
	bool discard = flags & FI_DISCARD;
	b.push(b.rx_cq, nullptr, peek_comp(b, m->context, &u, discard));
	if (!discard && !(flags & FI_CLAIM))
		return;
	if (rx.eng->hold(qe, m->context)) {
		WU_WARN(rx.prov, FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK | FI_CLAIM): out of memory; the message stays queued\n");
		return;
	}
	tp->hold(qe->m);
	if (discard) {
		op *o = new_claim_recv(rx, b, m, flags, true);
		rx.eng->claim(qe, &o->mr);
		return;
	}
	static_cast<fi_context *>(m->context)->internal[0] = qe;
}

/* FI_CLAIM [| FI_DISCARD]: takes the message an FI_PEEK | FI_CLAIM with
 * this fi_context held. */
ssize_t claim(rx_ctx &rx, const fi_msg_tagged *m, uint64_t flags)
{
	match::unexpected *qe = rx.eng->held(static_cast<fi_context *>(m->context)->internal[0], m->context);
	if (!qe) {
		WU_WARN(rx.prov, FI_LOG_EP_DATA,
			"fi_trecvmsg(FI_CLAIM): the context holds no claimed message; pass the fi_context of a "
			"successful FI_PEEK | FI_CLAIM, unchanged\n");
		return -FI_EINVAL;
	}
	if (rx.full())
		return -FI_EAGAIN;
	static_cast<fi_context *>(m->context)->internal[0] = nullptr;
	rx_transport *tp = tp_of(qe);
	ep_base &b = *tp->base;
	bool discard = flags & FI_DISCARD;
	if (discard) {
		rx_info u = tp->describe(qe->m);
		b.push(b.rx_cq, nullptr, peek_comp(b, m->context, &u, true));
	}
	op *o = new_claim_recv(rx, b, m, flags, discard);
	rx.eng->claim(qe, &o->mr);
	return 0;
}

} // namespace

ssize_t peek_claim(rx_ctx &rx, ep_base *first, const fi_msg_tagged *m, uint64_t flags)
{
	if (flags & FI_PEEK) {
		peek(rx, first, m, flags);
		return 0;
	}
	return claim(rx, m, flags);
}

} // namespace wu::prov
