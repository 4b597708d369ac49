/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: RMA and atomics.  The engines behind fi_read / fi_write and
 * the fi_atomic families (their ops tables are generated in ep.cpp), and
 * the target side of ATOMIC frames. */
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
	void *p = mr::check(ep->b.dom, h.tag, h.aux, n, access, ref);
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
	mr::remote_access(ep->b.dom, h.tag, access);
	if (writes)
		push_comp(ep, nullptr, ep->b.c_rwrite, cq::completion{});
	if (reads)
		push_comp(ep, nullptr, ep->b.c_rread, cq::completion{});
}

ssize_t do_rma(tcp_ep *ep, const prov::rma_xfer &x)
{
	bool write = x.write, inject_api = x.inject_api;
	const iovec *iov = x.iov;
	size_t cnt = x.count, rma_cnt = x.rma_count;
	fi_addr_t peer = x.addr;
	const fi_rma_iov *rma = x.rma;
	uint64_t data = x.data, flags = x.flags;
	void *ctx = x.context;
	if (cnt > max_iov || (cnt && !iov) || rma_cnt != 1 || !rma)
		return -FI_EINVAL;
	size_t total = iov_total(iov, cnt);
	if (total != rma->len && !(write && total <= rma->len))
		return -FI_EINVAL;
	if (total > msg_limit(ep))
		return too_long(ep, write ? "RMA write" : "RMA read", total);
	if ((inject_api || (flags & FI_INJECT)) && total > ep->b.info->tx_attr->inject_size)
		return -FI_EINVAL;
	{
		std::lock_guard g(ep->b.mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, peer, &err);
		if (!c)
			return err;
		op *o = new_op(write ? OP_WRITE : OP_READ, ctx, flags, iov, cnt, total);
		o->id = ep->next_id++;
		o->want_comp = !inject_api && (!ep->b.tx_sel || (flags & FI_COMPLETION));
		o->inject = inject_api;
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

namespace {

/* An atomic call refused before anything was queued: says why, once in a while. */
ssize_t refuse(const char *where, ssize_t err, const char *why)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(int(-err)));
	return err;
}

} // namespace

ssize_t do_atomic(tcp_ep *ep, const prov::atomic_xfer &a)
{
	const fi_msg_atomic *m = a.m;
	const char *why = nullptr;
	atomic::call ac;
	if (int r = atomic::check_call(a, ep->b.info->tx_attr->inject_size, &ac, &why))
		return refuse(a.where, r, why);
	/* Operands (and compare values) go out as one payload, ac.v[0..ac.k). */
	const size_t count = ac.count, bytes = ac.bytes;
	const bool fetch = ac.fetch;
	{
		std::lock_guard g(ep->b.mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, m->addr, &err);
		if (!c)
			return err;
		op *o = make_owned<op>().release(); /* its txitem, then c->pending, own it */
		o->kind = fetch ? OP_FETCH : OP_ATOMIC;
		o->context = m->context;
		o->flags = a.flags;
		if (fetch) {
			for (size_t i = 0; i < ac.res_cnt; i++)
				o->iov[i] = ac.res[i];
			o->iov_cnt = ac.res_cnt;
			o->len = bytes;
		}
		o->id = ep->next_id++;
		o->want_comp = !a.inject_api && (!ep->b.tx_sel || (a.flags & FI_COMPLETION));
		o->inject = a.inject_api;
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
		h.len = bytes * ac.nops;
		/* Always a copy: the caller's buffers are free at once (FI_INJECT
		 * costs nothing more) and compare values need no second iovec run. */
		txitem *t = make_item(h, nullptr, 0);
		own_payload(t, ac.v, ac.k, h.len);
		t->left += h.len;
		queue_pending(ep, c, t, o);
	}
	flush(ep);
	return 0;
}

/* fi_atomicvalid and friends: what atomic::check says, count included. */
int atomic_valid(const char *where, atomic::kind k, fi_datatype dt, fi_op op, size_t *count)
{
	return atomic::valid_for(P(), where, k, dt, op, count);
}

} // namespace wu::tcp::detail
