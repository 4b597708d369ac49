/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup endpoint: the data path.  A transmit call (send, inject, RMA,
 * atomic, each variant) finds its peer's sub-endpoint (route_fast: one
 * load) and makes the same call on it, through that endpoint's own ops
 * table, arguments unchanged: the sub-endpoint checks, logs and completes
 * it as for its own application.  That is why these are not ep_ops.h
 * tables: those rebuild every call as an xfer for an engine, and the
 * sub-endpoint would rebuild it again.  fi_inject* to a peer on shm first
 * tries shm's inject short path directly (prov::sub_ops::inject).  Receives
 * are posted here, into the receive context both sub-endpoints take
 * messages from (fi_recv / fi_trecv through a one-buffer short path),
 * through the common receive entries (prov::rx_ops). */
#include "config.h"

#include "core/log.h"
#include "core/shim.h"
#include "prov/common/ep_ops.h"
#include "prov/wireup/wx_ep.h"

namespace wu::wireup {

namespace {

/* Runs f on the sub-endpoint of peer a.  f only calls through a C ops
 * table (nothing throws); the slow path catches its own. */
template <class F>
inline ssize_t fwd(fid_ep *e, fi_addr_t a, F &&f) noexcept
{
	wx_ep *ep = wx_of(e);
	if (!ep) [[unlikely]]
		return -FI_EINVAL;
	fid_ep *s = route_fast(ep, a);
	if (!s) [[unlikely]] {
		if (ssize_t r = route_slow(ep, a, &s))
			return r;
	}
	return f(s);
}

/* ---- receives ---- */

ssize_t do_recv(wx_ep *ep, const prov::msg_xfer &x)
{
	if (ssize_t r = prov::check_caps(ep->info, x, true, P()))
		return r;
	ssize_t kind = prov::classify_recv(x, P());
	if (kind < 0)
		return kind;
	if (!ep->enabled) {
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: the endpoint is not enabled\n", x.where);
		return -FI_EOPBADSTATE;
	}
	if (ep->srx) [[unlikely]]
		return prov::srx_recv(ep->srx, x);
	unsigned fl;
	if (kind == prov::RX_PEEK) {
		fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
		if (const char *bad = prov::check_peek(&m, x.flags)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s (FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", x.where, bad);
			return -FI_EINVAL;
		}
		std::unique_lock g(ep->mtx);
		if (ssize_t r = prov::peek_claim(ep->rx, ep->rb, &m, x.flags))
			return r;
		rx_room(ep);
		fl = collected(ep);
	} else {
		std::unique_lock g(ep->mtx);
		if (ep->rx.full())
			return -FI_EAGAIN;
		prov::post_recv(ep->rx, ep->rb, x);
		rx_room(ep);
		fl = collected(ep);
	}
	flush(ep, fl);
	return 0;
}

/* fi_recv / fi_trecv: one buffer posted straight into the shared context
 * (no descriptor built, no classification: a one-buffer receive has no
 * FI_PEEK and no iovec to check); prov::general_path when do_recv must
 * take the call (it refuses and logs).  The sub-endpoints hear of room
 * only when the receive took a queued message: otherwise what they set
 * aside could not have moved on. */
template <bool Tagged>
ssize_t recv_one(wx_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	uint64_t flags = ep->rb->rx_flags(); /* FI_SETOPSFLAG sets the sub-endpoints' */
	/* Not enabled, refused or for a shared context: do_recv's. */
	if (!(ep->rx_fast & prov::rx_fast_bit(Tagged)) || ((flags & FI_MULTI_RECV) && Tagged))
		return prov::general_path;
	unsigned fl;
	{
		std::unique_lock g(ep->mtx);
		if (ep->rx.full())
			return prov::general_path;
		match::engine &eng = *ep->rx.eng;
		size_t queued = eng.queued_count(prov::queue_of(Tagged));
		prov::post_recv1(ep->rx, ep->rb, buf, len, src, tag, ignore, ctx, flags, Tagged);
		/* A directed receive: shm watches its peer's liveness (issue 30). */
		if (eng.queued_count(prov::queue_of(Tagged)) != queued || ep->rx.directed_hint)
			rx_room(ep);
		fl = collected(ep);
	}
	if (fl)
		flush(ep, fl);
	return 0;
}

/* The receive entries are the common ones (prov::rx_ops) over do_recv. */
struct wx_rx_traits {
	using ep_type = wx_ep;
	static wx_ep *lookup(fid_ep *e) noexcept { return wx_of(e); }
	static uint64_t rx_flags(wx_ep *ep) { return ep->rb->rx_flags(); }
	static ssize_t recv(wx_ep *ep, const prov::msg_xfer &x) { return do_recv(ep, x); }
	template <bool Tagged>
	static ssize_t recv1_of(wx_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
				void *ctx)
	{
		return recv_one<Tagged>(ep, buf, len, src, tag, ignore, ctx);
	}
};
using wx_rx = prov::rx_ops<wx_rx_traits>;

/* ---- fi_ops_msg ---- */

ssize_t m_send(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->msg->send(s, buf, len, desc, dest, ctx); });
}
ssize_t m_sendv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->msg->sendv(s, iov, desc, cnt, dest, ctx); });
}
ssize_t m_sendmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) { return s->msg->sendmsg(s, m, flags); });
}
/* fi_inject* to a peer on shm tries shm's short path first (no second
 * look-up and wrapping of the sub-endpoint's ops); what it leaves goes
 * through the sub-endpoint's ops as every other call. */
template <bool Tagged, bool Data, class F>
inline ssize_t inject(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t tag,
		      F &&general) noexcept
{
	wx_ep *ep = wx_of(e);
	if (ep && ep->shm_inject && shm_route(ep, dest)) [[likely]] {
		ssize_t r = ep->shm_inject(ep->sub[part_shm], buf, len, dest, tag, data, prov::msg_kind(Tagged, Data));
		if (r != prov::general_path)
			return r;
	}
	return fwd(e, dest, general);
}

ssize_t m_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest) noexcept
{
	return inject<false, false>(e, buf, len, 0, dest, 0,
				    [&](fid_ep *s) { return s->msg->inject(s, buf, len, dest); });
}
ssize_t m_senddata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
		   void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->msg->senddata(s, buf, len, desc, data, dest, ctx); });
}
ssize_t m_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest) noexcept
{
	return inject<false, true>(e, buf, len, data, dest, 0,
				   [&](fid_ep *s) { return s->msg->injectdata(s, buf, len, data, dest); });
}

/* ---- fi_ops_tagged ---- */

ssize_t t_send(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
	       void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->tagged->send(s, buf, len, desc, dest, tag, ctx); });
}
ssize_t t_sendv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t tag,
		void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->tagged->sendv(s, iov, desc, cnt, dest, tag, ctx); });
}
ssize_t t_sendmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) { return s->tagged->sendmsg(s, m, flags); });
}
ssize_t t_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t tag) noexcept
{
	return inject<true, false>(e, buf, len, 0, dest, tag,
				   [&](fid_ep *s) { return s->tagged->inject(s, buf, len, dest, tag); });
}
ssize_t t_senddata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
		   uint64_t tag, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->tagged->senddata(s, buf, len, desc, data, dest, tag, ctx); });
}
ssize_t t_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t tag) noexcept
{
	return inject<true, true>(e, buf, len, data, dest, tag,
				  [&](fid_ep *s) { return s->tagged->injectdata(s, buf, len, data, dest, tag); });
}

/* ---- fi_ops_rma ---- */

ssize_t r_read(fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
	       void *ctx) noexcept
{
	return fwd(e, src, [&](fid_ep *s) { return s->rma->read(s, buf, len, desc, src, addr, key, ctx); });
}
ssize_t r_readv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t src, uint64_t addr, uint64_t key,
		void *ctx) noexcept
{
	return fwd(e, src, [&](fid_ep *s) { return s->rma->readv(s, iov, desc, cnt, src, addr, key, ctx); });
}
ssize_t r_readmsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) { return s->rma->readmsg(s, m, flags); });
}
ssize_t r_write(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->rma->write(s, buf, len, desc, dest, addr, key, ctx); });
}
ssize_t r_writev(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->rma->writev(s, iov, desc, cnt, dest, addr, key, ctx); });
}
ssize_t r_writemsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) { return s->rma->writemsg(s, m, flags); });
}
ssize_t r_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->rma->inject(s, buf, len, dest, addr, key); });
}
ssize_t r_writedata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
		    uint64_t addr, uint64_t key, void *ctx) noexcept
{
	return fwd(e, dest,
		   [&](fid_ep *s) { return s->rma->writedata(s, buf, len, desc, data, dest, addr, key, ctx); });
}
ssize_t r_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t addr,
		     uint64_t key) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->rma->injectdata(s, buf, len, data, dest, addr, key); });
}

/* ---- fi_ops_atomic ---- */

ssize_t a_write(fid_ep *e, const void *buf, size_t count, void *desc, fi_addr_t dest, uint64_t addr,
		uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return fwd(e, dest,
		   [&](fid_ep *s) { return s->atomic->write(s, buf, count, desc, dest, addr, key, dt, op, ctx); });
}
ssize_t a_writev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return fwd(e, dest,
		   [&](fid_ep *s) { return s->atomic->writev(s, iov, desc, cnt, dest, addr, key, dt, op, ctx); });
}
ssize_t a_writemsg(fid_ep *e, const fi_msg_atomic *m, uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) { return s->atomic->writemsg(s, m, flags); });
}
ssize_t a_inject(fid_ep *e, const void *buf, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		 fi_datatype dt, fi_op op) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) { return s->atomic->inject(s, buf, count, dest, addr, key, dt, op); });
}
ssize_t a_readwrite(fid_ep *e, const void *buf, size_t count, void *desc, void *result, void *result_desc,
		    fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) {
		return s->atomic->readwrite(s, buf, count, desc, result, result_desc, dest, addr, key, dt, op, ctx);
	});
}
ssize_t a_readwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_ioc *resultv, void **result_desc,
		     size_t result_cnt, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
		     void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) {
		return s->atomic->readwritev(s, iov, desc, cnt, resultv, result_desc, result_cnt, dest, addr, key, dt,
					     op, ctx);
	});
}
ssize_t a_readwritemsg(fid_ep *e, const fi_msg_atomic *m, fi_ioc *resultv, void **result_desc, size_t result_cnt,
		       uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) {
		return s->atomic->readwritemsg(s, m, resultv, result_desc, result_cnt, flags);
	});
}
ssize_t a_compwrite(fid_ep *e, const void *buf, size_t count, void *desc, const void *compare, void *compare_desc,
		    void *result, void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt,
		    fi_op op, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) {
		return s->atomic->compwrite(s, buf, count, desc, compare, compare_desc, result, result_desc, dest, addr,
					    key, dt, op, ctx);
	});
}
ssize_t a_compwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, const fi_ioc *comparev,
		     void **compare_desc, size_t compare_cnt, fi_ioc *resultv, void **result_desc, size_t result_cnt,
		     fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return fwd(e, dest, [&](fid_ep *s) {
		return s->atomic->compwritev(s, iov, desc, cnt, comparev, compare_desc, compare_cnt, resultv,
					     result_desc, result_cnt, dest, addr, key, dt, op, ctx);
	});
}
ssize_t a_compwritemsg(fid_ep *e, const fi_msg_atomic *m, const fi_ioc *comparev, void **compare_desc,
		       size_t compare_cnt, fi_ioc *resultv, void **result_desc, size_t result_cnt,
		       uint64_t flags) noexcept
{
	if (!m)
		return -FI_EINVAL;
	return fwd(e, m->addr, [&](fid_ep *s) {
		return s->atomic->compwritemsg(s, m, comparev, compare_desc, compare_cnt, resultv, result_desc,
					       result_cnt, flags);
	});
}

/* What both sub-endpoints take: the smaller count, refused when one refuses. */
template <int Which>
int valid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	wx_ep *ep = wx_of(e);
	if (!ep || !count)
		return -FI_EINVAL;
	size_t best = SIZE_MAX;
	for (fid_ep *s : ep->sub) {
		if (!s)
			continue;
		size_t c = 0;
		int r = Which == 0 ? s->atomic->writevalid(s, dt, op, &c)
			: Which == 1 ? s->atomic->readwritevalid(s, dt, op, &c)
				     : s->atomic->compwritevalid(s, dt, op, &c);
		if (r)
			return r;
		best = std::min(best, c);
	}
	if (best == SIZE_MAX)
		return -FI_EOPBADSTATE;
	*count = best;
	return 0;
}

} // namespace

fi_ops_msg wx_msg_ops = {sizeof(fi_ops_msg), wx_rx::m_recv, wx_rx::m_recvv, wx_rx::m_recvmsg,
			 m_send, m_sendv, m_sendmsg, m_inject, m_senddata, m_injectdata};
fi_ops_tagged wx_tagged_ops = {sizeof(fi_ops_tagged), wx_rx::t_recv, wx_rx::t_recvv, wx_rx::t_recvmsg,
			       t_send, t_sendv, t_sendmsg, t_inject, t_senddata, t_injectdata};
fi_ops_rma wx_rma_ops = {sizeof(fi_ops_rma), r_read, r_readv, r_readmsg, r_write, r_writev,
			 r_writemsg, r_inject, r_writedata, r_injectdata};
fi_ops_atomic wx_atomic_ops = {sizeof(fi_ops_atomic), a_write, a_writev, a_writemsg, a_inject,
			       a_readwrite, a_readwritev, a_readwritemsg, a_compwrite, a_compwritev,
			       a_compwritemsg, valid<0>, valid<1>, valid<2>};

} // namespace wu::wireup
