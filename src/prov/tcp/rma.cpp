/* tcp provider: RMA and atomics.  fi_read / fi_write and the fi_atomic
 * families with their ops tables, and the target side of ATOMIC frames. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

/* ATOMIC with its operands staged in c->small (decode checked the
 * operation and the length): check the region, apply, answer. */
void on_atomic(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	frame::atomic_desc d = frame::unpack_atomic(h.data);
	size_t n = size_t(d.count) * atomic::size_of(d.datatype);
	/* fi_mr(3): fetching needs FI_REMOTE_READ, updating FI_REMOTE_WRITE. */
	bool reads = d.family != uint8_t(atomic::kind::write), writes = d.op != FI_ATOMIC_READ;
	uint64_t access = (reads ? FI_REMOTE_READ : 0) | (writes ? FI_REMOTE_WRITE : 0);
	frame::header r;
	r.type = frame::ATOMIC_RESP;
	r.id = h.id;
	mr::ref ref;
	void *p = mr::check(ep->dom, h.tag, h.aux, n, access, ref);
	std::optional<mr::guard> g;
	if (p)
		g.emplace(ref); /* fi_close(mr) waits for the update; closed, it does not happen */
	if (!p || !*g) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
			       "atomic on key 0x%llx, address 0x%llx, %zu bytes: no registered region allows %s\n",
			       (unsigned long long)h.tag, (unsigned long long)h.aux, n,
			       reads && writes ? "FI_REMOTE_READ | FI_REMOTE_WRITE"
			       : reads	       ? "FI_REMOTE_READ"
					       : "FI_REMOTE_WRITE");
		r.data = FI_EACCES;
		enqueue(ep, c, control_item(r));
		return;
	}
	size_t rlen = frame::atomic_resp_len(d);
	txitem *t = control_item(r, nullptr, rlen);
	const char *operand = c->small.data();
	atomic::apply(d.op, d.datatype, p, writes ? operand : nullptr,
		      atomic::operands(d.op) == 2 ? operand + n : nullptr, rlen ? t->owned.get() : nullptr, d.count);
	g.reset();
	enqueue(ep, c, t);
	mr::remote_access(ep->dom, h.tag, access);
	if (writes)
		push_comp(ep, nullptr, ep->c_rwrite, cq::completion{});
	if (reads)
		push_comp(ep, nullptr, ep->c_rread, cq::completion{});
}

namespace {

ssize_t do_rma(tcp_ep *ep, bool write, const iovec *iov, size_t cnt, fi_addr_t peer,
	       const fi_rma_iov *rma, size_t rma_cnt, uint64_t data, uint64_t flags, void *ctx, bool inject_api)
{
	if (cnt > max_iov || (cnt && !iov) || rma_cnt != 1 || !rma)
		return -FI_EINVAL;
	size_t total = iov_total(iov, cnt);
	if (total != rma->len && !(write && total <= rma->len))
		return -FI_EINVAL;
	if (total > msg_limit(ep))
		return too_long(ep, write ? "RMA write" : "RMA read", total);
	if ((inject_api || (flags & FI_INJECT)) && total > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, peer, &err);
		if (!c)
			return err;
		auto *o = new op();
		o->kind = write ? OP_WRITE : OP_READ;
		o->context = ctx;
		o->flags = flags;
		for (size_t i = 0; i < cnt; i++)
			o->iov[i] = iov[i];
		o->iov_cnt = cnt;
		o->len = total;
		o->id = ep->next_id++;
		o->want_comp = !inject_api && (!ep->tx_sel || (flags & FI_COMPLETION));
		frame::header h;
		h.id = o->id;
		h.tag = rma->key;
		h.aux = rma->addr;
		txitem *t;
		if (write) {
			h.type = frame::WRITE;
			h.len = total;
			if (flags & FI_REMOTE_CQ_DATA) {
				h.flags = frame::F_CQ_DATA;
				h.data = data;
			}
			t = make_item(h, iov, cnt);
			if (inject_api || (flags & FI_INJECT))
				own_payload(t, iov, cnt, total);
		} else {
			h.type = frame::READ_REQ;
			h.data = total;
			t = make_item(h, nullptr, 0);
		}
		queue_pending(ep, c, t, o);
	}
	flush(ep);
	return 0;
}

/* ---- atomics (fi_atomic(3)) ---- */

/* An atomic call refused before anything was queued: says why, once in a while. */
ssize_t refuse(const char *where, ssize_t err, const char *why)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(int(-err)));
	return err;
}

/* Elements over an ioc list as byte iovecs of elements of size bytes;
 * false for a malformed list (no entries, too many, NULL addresses). */
bool ioc_bytes(const fi_ioc *v, size_t cnt, size_t size, iovec *out, size_t &elems)
{
	if (!v || !cnt || cnt > max_iov)
		return false;
	elems = 0;
	for (size_t i = 0; i < cnt; i++) {
		if ((!v[i].addr && v[i].count) || v[i].count > atomic::max_bytes)
			return false;
		out[i] = {v[i].addr, v[i].count * size};
		elems += v[i].count;
	}
	return true;
}

size_t ioc_count(const fi_ioc *v, size_t cnt)
{
	size_t n = 0;
	for (size_t i = 0; v && i < cnt; i++)
		n += v[i].count;
	return n;
}

/* One call of the fi_atomic(3) families: m as given (ATOMIC_READ ignores
 * its operands), with the compare buffers of the compare family and the
 * result buffers of fetch and compare. */
struct atomic_call {
	const char *where;
	atomic::kind k;
	const fi_msg_atomic *m;
	uint64_t flags;
	const fi_ioc *cmp = nullptr;
	size_t cmp_cnt = 0;
	fi_ioc *res = nullptr;
	size_t res_cnt = 0;
	bool inject_api = false;
};

ssize_t do_atomic(tcp_ep *ep, const atomic_call &a)
{
	const fi_msg_atomic *m = a.m;
	if (!m)
		return refuse(a.where, -FI_EINVAL, "msg is NULL");
	const char *why = nullptr;
	size_t max = 0;
	if (int r = atomic::check(m->datatype, m->op, a.k, &max, &why))
		return refuse(a.where, r, why);
	if (a.flags & FI_TAGGED)
		return refuse(a.where, -FI_EOPNOTSUPP, "atomics on tagged receive buffers (FI_TAGGED) are not supported");
	if (a.flags & FI_REMOTE_CQ_DATA)
		return refuse(a.where, -FI_EOPNOTSUPP, "remote CQ data is not carried by atomics");
	size_t size = atomic::size_of(m->datatype);
	bool fetch = a.k != atomic::kind::write;
	unsigned nops = atomic::operands(m->op);
	/* Operands (and compare values) go out as one payload. */
	iovec v[2 * max_iov];
	size_t k = 0, count = 0, n = 0;
	if (nops) {
		if (!ioc_bytes(m->msg_iov, m->iov_count, size, v, count))
			return refuse(a.where, -FI_EINVAL, "operand iocs missing, NULL or more than iov_limit");
		k = m->iov_count;
	}
	if (nops == 2) {
		if (!ioc_bytes(a.cmp, a.cmp_cnt, size, v + k, n) || n != count)
			return refuse(a.where, -FI_EINVAL, "compare iocs missing, NULL, too many or not matching the operands");
		k += a.cmp_cnt;
	}
	iovec rv[max_iov];
	if (fetch) {
		if (!ioc_bytes(a.res, a.res_cnt, size, rv, n) || (nops && n != count))
			return refuse(a.where, -FI_EINVAL, "result iocs missing, NULL, too many or not matching the operands");
		count = n; /* ATOMIC_READ: the results say how many */
	}
	if (!count)
		return refuse(a.where, -FI_EINVAL, "count is 0");
	if (count > max)
		return refuse(a.where, -FI_EMSGSIZE, "more elements than fi_atomicvalid's count");
	if (!m->rma_iov || m->rma_iov_count != 1 || m->rma_iov->count != count)
		return refuse(a.where, -FI_EINVAL, "needs one remote ioc of as many elements as the operands");
	size_t bytes = count * size;
	if ((a.inject_api || (a.flags & FI_INJECT)) && bytes > ep->info->tx_attr->inject_size)
		return refuse(a.where, -FI_EINVAL, "FI_INJECT operands above inject_size");
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, m->addr, &err);
		if (!c)
			return err;
		auto *o = new op();
		o->kind = fetch ? OP_FETCH : OP_ATOMIC;
		o->context = m->context;
		o->flags = a.flags;
		if (fetch) {
			for (size_t i = 0; i < a.res_cnt; i++)
				o->iov[i] = rv[i];
			o->iov_cnt = a.res_cnt;
			o->len = bytes;
		}
		o->id = ep->next_id++;
		o->want_comp = !a.inject_api && (!ep->tx_sel || (a.flags & FI_COMPLETION));
		frame::header h;
		h.type = frame::ATOMIC;
		h.id = o->id;
		h.tag = m->rma_iov->key;
		h.aux = m->rma_iov->addr;
		frame::atomic_desc d;
		d.op = uint8_t(m->op);
		d.datatype = uint8_t(m->datatype);
		d.family = uint8_t(a.k);
		d.count = uint32_t(count);
		h.data = frame::pack(d);
		h.len = bytes * nops;
		/* Always a copy: the caller's buffers are free at once (FI_INJECT
		 * costs nothing more) and compare values need no second iovec run. */
		txitem *t = make_item(h, nullptr, 0);
		own_payload(t, v, k, h.len);
		t->left += h.len;
		queue_pending(ep, c, t, o);
	}
	flush(ep);
	return 0;
}

/* fi_ops_rma */
ssize_t r_read(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, uint64_t addr, uint64_t key,
	       void *ctx) noexcept
{
	return ep_call(e, "fi_read", [&](tcp_ep *ep) {
		iovec v{buf, len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, false, &v, 1, src, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}

ssize_t r_readv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, uint64_t addr,
		uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_readv", [&](tcp_ep *ep) {
		fi_rma_iov r{addr, iov_total(iov, cnt), key};
		return do_rma(ep, false, iov, cnt, src, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}

ssize_t r_readmsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_readmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_rma(ep, false, m->msg_iov, m->iov_count, m->addr, m->rma_iov, m->rma_iov_count, 0, flags,
			      m->context, false);
	});
}

ssize_t r_write(fid_ep *e, const void *buf, size_t len, void *, fi_addr_t dest, uint64_t addr, uint64_t key,
		void *ctx) noexcept
{
	return ep_call(e, "fi_write", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}

ssize_t r_writev(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_writev", [&](tcp_ep *ep) {
		fi_rma_iov r{addr, iov_total(iov, cnt), key};
		return do_rma(ep, true, iov, cnt, dest, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}

ssize_t r_writemsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_writemsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_rma(ep, true, m->msg_iov, m->iov_count, m->addr, m->rma_iov, m->rma_iov_count, m->data,
			      flags, m->context, false);
	});
}

ssize_t r_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key) noexcept
{
	return ep_call(e, "fi_inject_write", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, 0, 0, nullptr, true);
	});
}

ssize_t r_writedata(fid_ep *e, const void *buf, size_t len, void *, uint64_t data, fi_addr_t dest,
		    uint64_t addr, uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_writedata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, data, tx_flags(ep) | FI_REMOTE_CQ_DATA, ctx, false);
	});
}

ssize_t r_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t addr,
		     uint64_t key) noexcept
{
	return ep_call(e, "fi_inject_writedata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, data, FI_REMOTE_CQ_DATA, nullptr, true);
	});
}

} // namespace

/* fi_ops_atomic */
using atomic::kind;

namespace {

/* The fi_msg_atomic of the non-msg calls: one remote ioc over all operands. */
fi_msg_atomic atomic_msg(const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, const fi_rma_ioc *rma,
			 fi_datatype dt, fi_op op, void *ctx)
{
	return {.msg_iov = iov, .desc = desc, .iov_count = cnt, .addr = dest, .rma_iov = rma, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = ctx, .data = 0};
}

ssize_t a_write(fid_ep *e, const void *buf, size_t count, void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		return do_atomic(ep, {"fi_atomic", kind::write, &m, tx_flags(ep)});
	});
}

ssize_t a_writev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		return do_atomic(ep, {"fi_atomicv", kind::write, &m, tx_flags(ep)});
	});
}

ssize_t a_writemsg(fid_ep *e, const fi_msg_atomic *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_atomicmsg",
		       [&](tcp_ep *ep) { return do_atomic(ep, {"fi_atomicmsg", kind::write, m, flags}); });
}

ssize_t a_inject(fid_ep *e, const void *buf, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		 fi_datatype dt, fi_op op) noexcept
{
	return ep_call(e, "fi_inject_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, nullptr, 1, dest, &r, dt, op, nullptr);
		atomic_call a{"fi_inject_atomic", kind::write, &m, FI_INJECT};
		a.inject_api = true;
		return do_atomic(ep, a);
	});
}

ssize_t a_readwrite(fid_ep *e, const void *buf, size_t count, void *desc, void *result, void *result_desc,
		    fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_fetch_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count}, res{result, count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		atomic_call a{"fi_fetch_atomic", kind::fetch, &m, tx_flags(ep)};
		a.res = &res;
		a.res_cnt = 1;
		(void)result_desc;
		return do_atomic(ep, a);
	});
}

ssize_t a_readwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_ioc *resultv, void **,
		     size_t result_cnt, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
		     void *ctx) noexcept
{
	return ep_call(e, "fi_fetch_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(resultv, result_cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		atomic_call a{"fi_fetch_atomicv", kind::fetch, &m, tx_flags(ep)};
		a.res = resultv;
		a.res_cnt = result_cnt;
		return do_atomic(ep, a);
	});
}

ssize_t a_readwritemsg(fid_ep *e, const fi_msg_atomic *m, fi_ioc *resultv, void **, size_t result_cnt,
		       uint64_t flags) noexcept
{
	return ep_call(e, "fi_fetch_atomicmsg", [&](tcp_ep *ep) {
		atomic_call a{"fi_fetch_atomicmsg", kind::fetch, m, flags};
		a.res = resultv;
		a.res_cnt = result_cnt;
		return do_atomic(ep, a);
	});
}

ssize_t a_compwrite(fid_ep *e, const void *buf, size_t count, void *desc, const void *compare, void *,
		    void *result, void *, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
		    void *ctx) noexcept
{
	return ep_call(e, "fi_compare_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count}, cmp{const_cast<void *>(compare), count}, res{result, count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		atomic_call a{"fi_compare_atomic", kind::compare, &m, tx_flags(ep), &cmp, 1, &res, 1};
		return do_atomic(ep, a);
	});
}

ssize_t a_compwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, const fi_ioc *comparev, void **,
		     size_t compare_cnt, fi_ioc *resultv, void **, size_t result_cnt, fi_addr_t dest, uint64_t addr,
		     uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_compare_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		atomic_call a{"fi_compare_atomicv", kind::compare, &m,	   tx_flags(ep),
			      comparev,		    compare_cnt,   resultv, result_cnt};
		return do_atomic(ep, a);
	});
}

ssize_t a_compwritemsg(fid_ep *e, const fi_msg_atomic *m, const fi_ioc *comparev, void **, size_t compare_cnt,
		       fi_ioc *resultv, void **, size_t result_cnt, uint64_t flags) noexcept
{
	return ep_call(e, "fi_compare_atomicmsg", [&](tcp_ep *ep) {
		atomic_call a{"fi_compare_atomicmsg", kind::compare, m, flags, comparev, compare_cnt, resultv, result_cnt};
		return do_atomic(ep, a);
	});
}

/* fi_atomicvalid and friends: what atomic::check says, count included. */
int atomic_valid(fid_ep *e, const char *where, kind k, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return int(ep_call(e, where, [&](tcp_ep *) -> ssize_t {
		if (!count)
			return refuse(where, -FI_EINVAL, "count is NULL");
		const char *why = nullptr;
		int r = atomic::check(dt, op, k, count, &why);
		if (r == -FI_EOPNOTSUPP) {
			/* An expected answer (MPICH probes every pair at MPI_Init),
			 * not a fault: info, so that it prints nothing by default. */
			WU_INFO(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(FI_EOPNOTSUPP));
			return r;
		}
		return r ? refuse(where, r, why) : 0;
	}));
}

int a_writevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_atomicvalid", kind::write, dt, op, count);
}

int a_readwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_fetch_atomicvalid", kind::fetch, dt, op, count);
}

int a_compwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_compare_atomicvalid", kind::compare, dt, op, count);
}

} // namespace

fi_ops_rma rma_ops = {sizeof(fi_ops_rma), r_read,	 r_readv,    r_readmsg,	  r_write,
		      r_writev,		  r_writemsg, r_inject, r_writedata, r_injectdata};

fi_ops_atomic atomic_ops = {sizeof(fi_ops_atomic), a_write,	      a_writev,	    a_writemsg,	  a_inject,
			    a_readwrite,	   a_readwritev,    a_readwritemsg, a_compwrite, a_compwritev,
			    a_compwritemsg,	   a_writevalid,    a_readwritevalid, a_compwritevalid};

} // namespace wu::tcp::detail
