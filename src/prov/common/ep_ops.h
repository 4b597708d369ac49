/* SPDX-License-Identifier: BSD-3-Clause */
/* The fi_ops_msg, fi_ops_tagged, fi_ops_rma and fi_ops_atomic tables of an
 * endpoint, generated from one engine interface.  A provider writes a
 * traits class
 *
 *	struct my_traits {
 *		using ep_type = my_ep;
 *		static my_ep *lookup(fid_ep *e) noexcept;  // NULL: not ours
 *		static uint64_t tx_flags(my_ep *);          // tx_attr->op_flags
 *		static uint64_t rx_flags(my_ep *);          // rx_attr->op_flags
 *		static ssize_t send(my_ep *, const msg_xfer &);
 *		static ssize_t recv(my_ep *, const msg_xfer &);
 *		static ssize_t rma(my_ep *, const rma_xfer &);
 *		static ssize_t atomic(my_ep *, const atomic_xfer &);
 *		static int atomic_valid(my_ep *, const char *where, wu::atomic::kind,
 *					fi_datatype, fi_op, size_t *count);
 *	};
 *
 * and points its endpoint at ep_ops<my_traits>::msg, ::tagged, ::rma and
 * ::atomic (static const tables; fid_ep's members are not const, hence
 * the ops() helpers).  A traits class may also have
 *
 *		static ssize_t inject(my_ep *, const void *buf, size_t len, fi_addr_t dest,
 *				      uint64_t tag, uint64_t data, uint64_t kind); // msg_kind
 *
 * which fi_inject / fi_tinject / fi_injectdata / fi_tinjectdata try first
 * (a short path for the small messages latency is measured with); it
 * returns general_path when the call must go through send() instead, and
 * must not have changed anything then.  Likewise
 *
 *		static ssize_t recv1(my_ep *, void *buf, size_t len, fi_addr_t src, uint64_t tag,
 *				     uint64_t ignore, void *ctx, bool tagged);
 *
 * for fi_recv / fi_trecv (without desc: only for a provider that needs
 * no descriptors).  Every entry runs under wu::guard (no exception
 * crosses the C ABI), refuses an endpoint lookup() does not know and a NULL
 * msg of the *msg calls with -FI_EINVAL, and fills the descriptor as
 * xfer.h says; everything else (iov counts, lengths, inject_size, state)
 * the provider checks, once, in its engine. */
#ifndef WU_PROV_COMMON_EP_OPS_H
#define WU_PROV_COMMON_EP_OPS_H

#include <cstdint>

#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "core/iov.h"
#include "core/shim.h"
#include "prov/common/xfer.h"

namespace wu::prov {

/* The receive entries of fi_ops_msg and fi_ops_tagged: a part of ep_ops, and
 * on their own for an endpoint whose sends are not an engine's (wireup
 * forwards them to its sub-endpoints).  T needs ep_type, lookup, rx_flags
 * and recv, and may have recv1, as for ep_ops. */
template <class T>
class rx_ops {
protected:
	using ep_t = typename T::ep_type;
	static constexpr bool has_recv1 = requires { &T::recv1; };
	/* Or one per kind (T::recv1_of<Tagged>): with the kind a constant, gcc
	 * folds the provider's short path into fi_recv / fi_trecv; through a
	 * bool it did not (wireup: 28 instructions a message). */
	template <bool Tagged>
	static constexpr bool has_recv1_of = requires { &T::template recv1_of<Tagged>; };

	template <class F>
	static ssize_t call(fid_ep *e, const char *where, F &&fn) noexcept
	{
		return guard(where, [&]() -> ssize_t {
			ep_t *ep = T::lookup(e);
			if (!ep)
				return -FI_EINVAL;
			return fn(ep);
		});
	}

	/* ---- fi_ops_msg / fi_ops_tagged: the receives ---- */

	static msg_xfer mx(const char *where, const iovec *iov, void **desc, size_t cnt, fi_addr_t addr, void *ctx,
			   uint64_t flags, bool tagged)
	{
		return {.where = where, .iov = iov, .desc = desc, .count = cnt, .addr = addr, .context = ctx,
			.flags = flags, .tagged = tagged};
	}

	/* One buffer: the iovec lives in the caller of the engine. */
	template <bool Tagged>
	static ssize_t recv1(fid_ep *e, const char *where, void *buf, size_t len, void *desc, fi_addr_t src,
			     uint64_t tag, uint64_t ignore, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) -> ssize_t {
			if constexpr (has_recv1_of<Tagged>) {
				ssize_t r = T::template recv1_of<Tagged>(ep, buf, len, src, tag, ignore, ctx);
				if (r != general_path)
					return r;
			} else if constexpr (has_recv1) {
				ssize_t r = T::recv1(ep, buf, len, src, tag, ignore, ctx, Tagged);
				if (r != general_path)
					return r;
			}
			iovec v{buf, len};
			msg_xfer x = mx(where, &v, desc ? &desc : nullptr, 1, src, ctx, T::rx_flags(ep), Tagged);
			x.tag = tag;
			x.ignore = ignore;
			return T::recv(ep, x);
		});
	}

	template <bool Tagged>
	static ssize_t recvv(fid_ep *e, const char *where, const iovec *iov, void **desc, size_t cnt,
			     fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) {
			msg_xfer x = mx(where, iov, desc, cnt, src, ctx, T::rx_flags(ep), Tagged);
			x.tag = tag;
			x.ignore = ignore;
			return T::recv(ep, x);
		});
	}

public:
	static ssize_t m_recv(fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src, void *ctx) noexcept
	{
		return recv1<false>(e, "fi_recv", buf, len, desc, src, 0, 0, ctx);
	}
	static ssize_t m_recvv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t src, void *ctx) noexcept
	{
		return recvv<false>(e, "fi_recvv", iov, desc, cnt, src, 0, 0, ctx);
	}
	static ssize_t m_recvmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
	{
		return call(e, "fi_recvmsg", [&](ep_t *ep) -> ssize_t {
			if (!m)
				return -FI_EINVAL;
			msg_xfer x = mx("fi_recvmsg", m->msg_iov, m->desc, m->iov_count, m->addr, m->context, flags, false);
			x.data = m->data;
			x.msg_api = true;
			return T::recv(ep, x);
		});
	}
	static ssize_t t_recv(fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			      uint64_t ignore, void *ctx) noexcept
	{
		return recv1<true>(e, "fi_trecv", buf, len, desc, src, tag, ignore, ctx);
	}
	static ssize_t t_recvv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t src, uint64_t tag,
			       uint64_t ignore, void *ctx) noexcept
	{
		return recvv<true>(e, "fi_trecvv", iov, desc, cnt, src, tag, ignore, ctx);
	}
	static ssize_t t_recvmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
	{
		return call(e, "fi_trecvmsg", [&](ep_t *ep) -> ssize_t {
			if (!m)
				return -FI_EINVAL;
			msg_xfer x = mx("fi_trecvmsg", m->msg_iov, m->desc, m->iov_count, m->addr, m->context, flags, true);
			x.tag = m->tag;
			x.ignore = m->ignore;
			x.data = m->data;
			x.msg_api = true;
			return T::recv(ep, x);
		});
	}
};

template <class T>
class ep_ops : rx_ops<T> {
	using base = rx_ops<T>;
	using typename base::ep_t;
	using base::call;
	using base::m_recv, base::m_recvv, base::m_recvmsg, base::t_recv, base::t_recvv, base::t_recvmsg;
	using base::mx;
	static constexpr bool has_inject = requires { &T::inject; };

	/* ---- fi_ops_msg / fi_ops_tagged: the sends ---- */

	/* send, senddata, inject, injectdata: one buffer. */
	template <bool Tagged, bool Inject, bool Data>
	static ssize_t send1(fid_ep *e, const char *where, const void *buf, size_t len, void *desc, uint64_t data,
			     fi_addr_t dest, uint64_t tag, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) -> ssize_t {
			if constexpr (Inject && has_inject) {
				ssize_t r = T::inject(ep, buf, len, dest, tag, data, msg_kind(Tagged, Data));
				if (r != general_path)
					return r;
			}
			iovec v{const_cast<void *>(buf), len};
			uint64_t fl = (Inject ? FI_INJECT : T::tx_flags(ep)) | (Data ? FI_REMOTE_CQ_DATA : 0);
			msg_xfer x = mx(where, &v, desc ? &desc : nullptr, 1, dest, ctx, fl, Tagged);
			x.tag = tag;
			x.data = data;
			x.inject_api = Inject;
			return T::send(ep, x);
		});
	}

	template <bool Tagged>
	static ssize_t sendv(fid_ep *e, const char *where, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest,
			     uint64_t tag, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) {
			msg_xfer x = mx(where, iov, desc, cnt, dest, ctx, T::tx_flags(ep), Tagged);
			x.tag = tag;
			return T::send(ep, x);
		});
	}

	static ssize_t m_send(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx) noexcept
	{
		return send1<false, false, false>(e, "fi_send", buf, len, desc, 0, dest, 0, ctx);
	}
	static ssize_t m_sendv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, void *ctx) noexcept
	{
		return sendv<false>(e, "fi_sendv", iov, desc, cnt, dest, 0, ctx);
	}
	static ssize_t m_sendmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
	{
		return call(e, "fi_sendmsg", [&](ep_t *ep) -> ssize_t {
			if (!m)
				return -FI_EINVAL;
			msg_xfer x = mx("fi_sendmsg", m->msg_iov, m->desc, m->iov_count, m->addr, m->context, flags, false);
			x.data = m->data;
			x.msg_api = true;
			return T::send(ep, x);
		});
	}
	static ssize_t m_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest) noexcept
	{
		return send1<false, true, false>(e, "fi_inject", buf, len, nullptr, 0, dest, 0, nullptr);
	}
	static ssize_t m_senddata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
				  void *ctx) noexcept
	{
		return send1<false, false, true>(e, "fi_senddata", buf, len, desc, data, dest, 0, ctx);
	}
	static ssize_t m_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest) noexcept
	{
		return send1<false, true, true>(e, "fi_injectdata", buf, len, nullptr, data, dest, 0, nullptr);
	}

	static ssize_t t_send(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
			      void *ctx) noexcept
	{
		return send1<true, false, false>(e, "fi_tsend", buf, len, desc, 0, dest, tag, ctx);
	}
	static ssize_t t_sendv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t tag,
			       void *ctx) noexcept
	{
		return sendv<true>(e, "fi_tsendv", iov, desc, cnt, dest, tag, ctx);
	}
	static ssize_t t_sendmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
	{
		return call(e, "fi_tsendmsg", [&](ep_t *ep) -> ssize_t {
			if (!m)
				return -FI_EINVAL;
			msg_xfer x = mx("fi_tsendmsg", m->msg_iov, m->desc, m->iov_count, m->addr, m->context, flags, true);
			x.tag = m->tag;
			x.ignore = m->ignore;
			x.data = m->data;
			x.msg_api = true;
			return T::send(ep, x);
		});
	}
	static ssize_t t_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t tag) noexcept
	{
		return send1<true, true, false>(e, "fi_tinject", buf, len, nullptr, 0, dest, tag, nullptr);
	}
	static ssize_t t_senddata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
				  uint64_t tag, void *ctx) noexcept
	{
		return send1<true, false, true>(e, "fi_tsenddata", buf, len, desc, data, dest, tag, ctx);
	}
	static ssize_t t_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t tag) noexcept
	{
		return send1<true, true, true>(e, "fi_tinjectdata", buf, len, nullptr, data, dest, tag, nullptr);
	}

	/* ---- fi_ops_rma ---- */

	template <bool Write, bool Inject, bool Data>
	static ssize_t rma1(fid_ep *e, const char *where, const void *buf, size_t len, void *desc, uint64_t data,
			    fi_addr_t peer, uint64_t addr, uint64_t key, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) {
			iovec v{const_cast<void *>(buf), len};
			fi_rma_iov r{addr, len, key};
			uint64_t fl = (Inject ? FI_INJECT : T::tx_flags(ep)) | (Data ? FI_REMOTE_CQ_DATA : 0);
			rma_xfer x{.where = where, .write = Write, .iov = &v, .desc = desc ? &desc : nullptr,
				   .count = 1, .addr = peer, .rma = &r, .rma_count = 1, .data = data,
				   .context = ctx, .flags = fl, .inject_api = Inject};
			return T::rma(ep, x);
		});
	}

	template <bool Write>
	static ssize_t rmav(fid_ep *e, const char *where, const iovec *iov, void **desc, size_t cnt, fi_addr_t peer,
			    uint64_t addr, uint64_t key, void *ctx) noexcept
	{
		return call(e, where, [&](ep_t *ep) {
			fi_rma_iov r{addr, iov_total(iov, cnt), key};
			rma_xfer x{.where = where, .write = Write, .iov = iov, .desc = desc, .count = cnt,
				   .addr = peer, .rma = &r, .rma_count = 1, .context = ctx,
				   .flags = T::tx_flags(ep)};
			return T::rma(ep, x);
		});
	}

	template <bool Write>
	static ssize_t rmamsg(fid_ep *e, const char *where, const fi_msg_rma *m, uint64_t flags) noexcept
	{
		return call(e, where, [&](ep_t *ep) -> ssize_t {
			if (!m)
				return -FI_EINVAL;
			rma_xfer x{.where = where, .write = Write, .iov = m->msg_iov, .desc = m->desc,
				   .count = m->iov_count, .addr = m->addr, .rma = m->rma_iov,
				   .rma_count = m->rma_iov_count,
				   .data = Write ? m->data : 0, /* a read carries no remote CQ data */
				   .context = m->context, .flags = flags};
			return T::rma(ep, x);
		});
	}

	static ssize_t r_read(fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
			      void *ctx) noexcept
	{
		return rma1<false, false, false>(e, "fi_read", buf, len, desc, 0, src, addr, key, ctx);
	}
	static ssize_t r_readv(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t src, uint64_t addr,
			       uint64_t key, void *ctx) noexcept
	{
		return rmav<false>(e, "fi_readv", iov, desc, cnt, src, addr, key, ctx);
	}
	static ssize_t r_readmsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
	{
		return rmamsg<false>(e, "fi_readmsg", m, flags);
	}
	static ssize_t r_write(fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
			       uint64_t key, void *ctx) noexcept
	{
		return rma1<true, false, false>(e, "fi_write", buf, len, desc, 0, dest, addr, key, ctx);
	}
	static ssize_t r_writev(fid_ep *e, const iovec *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
				uint64_t key, void *ctx) noexcept
	{
		return rmav<true>(e, "fi_writev", iov, desc, cnt, dest, addr, key, ctx);
	}
	static ssize_t r_writemsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
	{
		return rmamsg<true>(e, "fi_writemsg", m, flags);
	}
	static ssize_t r_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
				uint64_t key) noexcept
	{
		return rma1<true, true, false>(e, "fi_inject_write", buf, len, nullptr, 0, dest, addr, key, nullptr);
	}
	static ssize_t r_writedata(fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
				   uint64_t addr, uint64_t key, void *ctx) noexcept
	{
		return rma1<true, false, true>(e, "fi_writedata", buf, len, desc, data, dest, addr, key, ctx);
	}
	static ssize_t r_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t addr, uint64_t key) noexcept
	{
		return rma1<true, true, true>(e, "fi_inject_writedata", buf, len, nullptr, data, dest, addr, key,
					      nullptr);
	}

	/* ---- fi_ops_atomic ---- */

	/* The fi_msg_atomic of the non-msg calls: one remote ioc over all operands. */
	static fi_msg_atomic amsg(const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, const fi_rma_ioc *rma,
				  fi_datatype dt, fi_op op, void *ctx) noexcept
	{
		return {.msg_iov = iov, .desc = desc, .iov_count = cnt, .addr = dest, .rma_iov = rma,
			.rma_iov_count = 1, .datatype = dt, .op = op, .context = ctx, .data = 0};
	}

	static atomic_xfer ax(const char *where, wu::atomic::kind k, const fi_msg_atomic *m, uint64_t flags) noexcept
	{
		return {.where = where, .k = k, .m = m, .flags = flags};
	}

	static ssize_t a_write(fid_ep *e, const void *buf, size_t count, void *desc, fi_addr_t dest, uint64_t addr,
			       uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
	{
		return call(e, "fi_atomic", [&](ep_t *ep) {
			fi_ioc v{const_cast<void *>(buf), count};
			fi_rma_ioc r{addr, count, key};
			fi_msg_atomic m = amsg(&v, &desc, 1, dest, &r, dt, op, ctx);
			return T::atomic(ep, ax("fi_atomic", wu::atomic::kind::write, &m, T::tx_flags(ep)));
		});
	}
	static ssize_t a_writev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
				uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
	{
		return call(e, "fi_atomicv", [&](ep_t *ep) {
			fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
			fi_msg_atomic m = amsg(iov, desc, cnt, dest, &r, dt, op, ctx);
			return T::atomic(ep, ax("fi_atomicv", wu::atomic::kind::write, &m, T::tx_flags(ep)));
		});
	}
	static ssize_t a_writemsg(fid_ep *e, const fi_msg_atomic *m, uint64_t flags) noexcept
	{
		return call(e, "fi_atomicmsg",
			    [&](ep_t *ep) { return T::atomic(ep, ax("fi_atomicmsg", wu::atomic::kind::write, m, flags)); });
	}
	static ssize_t a_inject(fid_ep *e, const void *buf, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
				fi_datatype dt, fi_op op) noexcept
	{
		return call(e, "fi_inject_atomic", [&](ep_t *ep) {
			fi_ioc v{const_cast<void *>(buf), count};
			fi_rma_ioc r{addr, count, key};
			fi_msg_atomic m = amsg(&v, nullptr, 1, dest, &r, dt, op, nullptr);
			atomic_xfer a = ax("fi_inject_atomic", wu::atomic::kind::write, &m, FI_INJECT);
			a.inject_api = true;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_readwrite(fid_ep *e, const void *buf, size_t count, void *desc, void *result, void *,
				   fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
				   void *ctx) noexcept
	{
		return call(e, "fi_fetch_atomic", [&](ep_t *ep) {
			fi_ioc v{const_cast<void *>(buf), count}, res{result, count};
			fi_rma_ioc r{addr, count, key};
			fi_msg_atomic m = amsg(&v, &desc, 1, dest, &r, dt, op, ctx);
			atomic_xfer a = ax("fi_fetch_atomic", wu::atomic::kind::fetch, &m, T::tx_flags(ep));
			a.res = &res;
			a.res_cnt = 1;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_readwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_ioc *resultv, void **,
				    size_t result_cnt, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt,
				    fi_op op, void *ctx) noexcept
	{
		return call(e, "fi_fetch_atomicv", [&](ep_t *ep) {
			/* ATOMIC_READ has no operands: the results say how many. */
			fi_rma_ioc r{addr, ioc_count(resultv, result_cnt), key};
			fi_msg_atomic m = amsg(iov, desc, cnt, dest, &r, dt, op, ctx);
			atomic_xfer a = ax("fi_fetch_atomicv", wu::atomic::kind::fetch, &m, T::tx_flags(ep));
			a.res = resultv;
			a.res_cnt = result_cnt;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_readwritemsg(fid_ep *e, const fi_msg_atomic *m, fi_ioc *resultv, void **, size_t result_cnt,
				      uint64_t flags) noexcept
	{
		return call(e, "fi_fetch_atomicmsg", [&](ep_t *ep) {
			atomic_xfer a = ax("fi_fetch_atomicmsg", wu::atomic::kind::fetch, m, flags);
			a.res = resultv;
			a.res_cnt = result_cnt;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_compwrite(fid_ep *e, const void *buf, size_t count, void *desc, const void *compare, void *,
				   void *result, void *, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt,
				   fi_op op, void *ctx) noexcept
	{
		return call(e, "fi_compare_atomic", [&](ep_t *ep) {
			fi_ioc v{const_cast<void *>(buf), count}, cmp{const_cast<void *>(compare), count},
				res{result, count};
			fi_rma_ioc r{addr, count, key};
			fi_msg_atomic m = amsg(&v, &desc, 1, dest, &r, dt, op, ctx);
			atomic_xfer a = ax("fi_compare_atomic", wu::atomic::kind::compare, &m, T::tx_flags(ep));
			a.cmp = &cmp;
			a.cmp_cnt = 1;
			a.res = &res;
			a.res_cnt = 1;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_compwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, const fi_ioc *comparev,
				    void **, size_t compare_cnt, fi_ioc *resultv, void **, size_t result_cnt,
				    fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
				    void *ctx) noexcept
	{
		return call(e, "fi_compare_atomicv", [&](ep_t *ep) {
			fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
			fi_msg_atomic m = amsg(iov, desc, cnt, dest, &r, dt, op, ctx);
			atomic_xfer a = ax("fi_compare_atomicv", wu::atomic::kind::compare, &m, T::tx_flags(ep));
			a.cmp = comparev;
			a.cmp_cnt = compare_cnt;
			a.res = resultv;
			a.res_cnt = result_cnt;
			return T::atomic(ep, a);
		});
	}
	static ssize_t a_compwritemsg(fid_ep *e, const fi_msg_atomic *m, const fi_ioc *comparev, void **,
				      size_t compare_cnt, fi_ioc *resultv, void **, size_t result_cnt,
				      uint64_t flags) noexcept
	{
		return call(e, "fi_compare_atomicmsg", [&](ep_t *ep) {
			atomic_xfer a = ax("fi_compare_atomicmsg", wu::atomic::kind::compare, m, flags);
			a.cmp = comparev;
			a.cmp_cnt = compare_cnt;
			a.res = resultv;
			a.res_cnt = result_cnt;
			return T::atomic(ep, a);
		});
	}

	template <wu::atomic::kind K>
	static int valid(fid_ep *e, const char *where, fi_datatype dt, fi_op op, size_t *count) noexcept
	{
		return int(call(e, where, [&](ep_t *ep) -> ssize_t { return T::atomic_valid(ep, where, K, dt, op, count); }));
	}
	static int a_writevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
	{
		return valid<wu::atomic::kind::write>(e, "fi_atomicvalid", dt, op, count);
	}
	static int a_readwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
	{
		return valid<wu::atomic::kind::fetch>(e, "fi_fetch_atomicvalid", dt, op, count);
	}
	static int a_compwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
	{
		return valid<wu::atomic::kind::compare>(e, "fi_compare_atomicvalid", dt, op, count);
	}

public:
	static inline const fi_ops_msg msg = {sizeof(fi_ops_msg), m_recv,	m_recvv,     m_recvmsg,
					      m_send,		  m_sendv,	m_sendmsg,   m_inject,
					      m_senddata,	  m_injectdata};
	static inline const fi_ops_tagged tagged = {sizeof(fi_ops_tagged), t_recv,	 t_recvv,
						    t_recvmsg,		   t_send,	 t_sendv,
						    t_sendmsg,		   t_inject,	 t_senddata,
						    t_injectdata};
	static inline const fi_ops_rma rma = {sizeof(fi_ops_rma), r_read,	r_readv,     r_readmsg,
					      r_write,		  r_writev,	r_writemsg,  r_inject,
					      r_writedata,	  r_injectdata};
	static inline const fi_ops_atomic atomic = {
		sizeof(fi_ops_atomic), a_write,	    a_writev,	     a_writemsg,       a_inject,
		a_readwrite,	       a_readwritev,  a_readwritemsg, a_compwrite,	a_compwritev,
		a_compwritemsg,	       a_writevalid,  a_readwritevalid, a_compwritevalid};

	/* fid_ep holds non-const pointers; nothing writes through them. */
	static fi_ops_msg *msg_ops() noexcept { return const_cast<fi_ops_msg *>(&msg); }
	static fi_ops_tagged *tagged_ops() noexcept { return const_cast<fi_ops_tagged *>(&tagged); }
	static fi_ops_rma *rma_ops() noexcept { return const_cast<fi_ops_rma *>(&rma); }
	static fi_ops_atomic *atomic_ops() noexcept { return const_cast<fi_ops_atomic *>(&atomic); }
};

} // namespace wu::prov

#endif
