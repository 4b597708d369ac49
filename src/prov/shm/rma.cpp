/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: RMA and atomics.  The initiator puts a request (header
 * plus write data or operands) in one of its bounce slots; the target
 * checks the MR key, applies it (atomics with the common engine) and
 * answers RMA_REPLY, read or fetched bytes in one of its own slots.
 * Transfers larger than a slot are done by the target with one
 * cross-memory copy against the initiator's buffers when the kernel allows
 * it, else split into slot-sized parts. */
#include "config.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include "core/log.h"
#include "prov/common/atomic.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {
namespace {

/* The request at the head of a bounce slot. */
struct rma_req {
	uint8_t kind;   /* op_kind */
	uint8_t cma;    /* target copies against src[] with process_vm_* */
	uint8_t family; /* atomics: atomic::kind */
	uint8_t has_data;
	int32_t datatype, op;
	uint64_t key, addr; /* the remote range */
	uint64_t len;       /* bytes of the range (atomics: elements) */
	uint64_t data;      /* remote CQ data */
	uint64_t part_off;  /* this part's offset in the initiator's buffer */
	uint32_t src_cnt;
	uint32_t pad;
	iovec src[max_iov]; /* cma: the initiator's buffers */
};

ssize_t refuse(const char *where, ssize_t err, const char *why)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(int(-err)));
	return err;
}

size_t slot_room(shm_ep *ep)
{
	size_t s = ep->rg->bounce_size();
	return s > sizeof(rma_req) ? s - sizeof(rma_req) : 0;
}

void queue_req(shm_ep *ep, remote *r, txop *o, const rma_req &q, const iovec *payload, size_t pcnt, size_t off,
	       size_t plen)
{
	pending p;
	p.c.kind = K_RMA;
	p.c.cq_data = o->id;
	p.need_slot = true;
	p.payload.resize(sizeof q + plen);
	memcpy(p.payload.data(), &q, sizeof q);
	if (plen)
		copy_from_iov(payload, pcnt, off, p.payload.data() + sizeof q, plen);
	p.c.len = plen;
	o->parts++;
	send_cell(ep, r, std::move(p));
}

void reply(shm_ep *ep, remote *r, uint64_t id, uint64_t part_off, int status, const void *bytes, size_t n)
{
	pending p;
	p.c.kind = K_RMA_REPLY;
	p.c.tag = id;
	p.c.cq_data = part_off;
	p.c.inline_len = uint16_t(status);
	p.c.len = n;
	p.c.arg = no_slot;
	if (n) {
		p.need_slot = true;
		p.payload.assign(static_cast<const char *>(bytes), static_cast<const char *>(bytes) + n);
	}
	send_cell(ep, r, std::move(p));
}

txop *new_op(shm_ep *ep, op_kind k, void *ctx, uint64_t flags, bool inject_api, remote *r)
{
	owned<txop> made = make_owned<txop>();
	txop *o = made.get();
	o->kind = k;
	o->id = ep->next_id++;
	o->context = ctx;
	o->flags = flags;
	o->want_comp = !inject_api && (!ep->b.tx_sel || (flags & FI_COMPLETION));
	o->inject = inject_api;
	o->peer = r->slot;
	busy(ep);
	ep->waiting.emplace(o->id, o);
	made.release(); /* ep->waiting owns it */
	r->waiting++;
	return o;
}

} // namespace

ssize_t do_rma(shm_ep *ep, const prov::rma_xfer &x)
{
	if (x.count > max_iov || (x.count && !x.iov) || x.rma_count != 1 || !x.rma)
		return refuse(x.where, -FI_EINVAL, "needs at most 4 local iovecs and one remote range");
	if (!(ep->b.info->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	size_t total = iov_total(x.iov, x.count);
	if (total != x.rma->len && !(x.write && total <= x.rma->len))
		return refuse(x.where, -FI_EINVAL, "local and remote lengths differ");
	if ((x.inject_api || (x.flags & FI_INJECT)) && total > ep->b.info->tx_attr->inject_size)
		return -FI_EINVAL;
	{
		std::lock_guard g(ep->b.mtx);
		int err = 0;
		remote *r = tx_peer(ep, x.addr, false, &err);
		if (!r)
			return err;
		txop *o = new_op(ep, x.write ? OP_WRITE : OP_READ, x.context, x.flags, x.inject_api, r);
		o->cnt = x.count;
		for (size_t i = 0; i < x.count; i++)
			o->iov[i] = x.iov[i];
		o->len = total;
		rma_req q{};
		q.kind = uint8_t(o->kind);
		q.key = x.rma->key;
		q.has_data = x.write && (x.flags & FI_REMOTE_CQ_DATA);
		q.data = x.data;
		size_t room = slot_room(ep);
		bool inject = x.inject_api || (x.flags & FI_INJECT);
		if (total > room && !inject && use_cma(ep, r)) {
			q.cma = 1;
			q.addr = x.rma->addr;
			q.len = total;
			q.src_cnt = uint32_t(x.count);
			for (size_t i = 0; i < x.count; i++)
				q.src[i] = x.iov[i];
			queue_req(ep, r, o, q, nullptr, 0, 0, 0);
		} else {
			/* Slot-sized parts (one for a zero-length transfer). */
			size_t off = 0;
			do {
				size_t n = std::min(total - off, room);
				q.addr = x.rma->addr + off;
				q.len = n;
				q.part_off = off;
				queue_req(ep, r, o, q, x.iov, x.count, off, x.write ? n : 0);
				if (r->dead)
					break; /* o failed and is gone (peer_dead) */
				off += n;
			} while (off < total);
		}
	}
	flush(ep);
	return 0;
}

ssize_t do_atomic(shm_ep *ep, const prov::atomic_xfer &a)
{
	const fi_msg_atomic *m = a.m;
	if (m && !(ep->b.info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	const char *why = nullptr;
	atomic::call ac;
	if (int r = atomic::check_call(a, ep->b.info->tx_attr->inject_size, &ac, &why))
		return refuse(a.where, r, why);
	const size_t size = ac.size, count = ac.count, bytes = ac.bytes, k = ac.k;
	const unsigned nops = ac.nops;
	const bool fetch = ac.fetch;
	const iovec *v = ac.v, *rv = ac.res;
	{
		std::lock_guard g(ep->b.mtx);
		int err = 0;
		remote *r = tx_peer(ep, m->addr, false, &err);
		if (!r)
			return err;
		/* Parts of as many elements as both our slots and the target's
		 * hold (operands, then compare values; the fetched ones come
		 * back in one of its slots): each element stays atomic. */
		size_t room = std::min(slot_room(ep), r->p->bounce_size() > sizeof(rma_req)
							     ? r->p->bounce_size() - sizeof(rma_req)
							     : 0);
		size_t per = room / (size * std::max(nops, 1u));
		if (!per)
			return refuse(a.where, -FI_EMSGSIZE, "an element larger than a bounce buffer (FI_SHM_BOUNCE_SIZE)");
		txop *o = new_op(ep, fetch ? OP_FETCH : OP_ATOMIC, m->context, a.flags, a.inject_api, r);
		if (fetch) {
			for (size_t i = 0; i < a.res_cnt; i++)
				o->iov[i] = rv[i];
			o->cnt = a.res_cnt;
			o->len = bytes;
		}
		rma_req q{};
		q.kind = uint8_t(o->kind);
		q.family = uint8_t(a.k);
		q.datatype = m->datatype;
		q.op = m->op;
		q.key = m->rma_iov->key;
		q.addr = m->rma_iov->addr;
		size_t nv = m->iov_count;
		for (size_t e0 = 0; e0 < count && !r->dead; e0 += per) {
			size_t n = std::min(per, count - e0);
			q.addr = m->rma_iov->addr + e0 * size;
			q.len = n;
			q.part_off = e0 * size;
			pending p;
			p.c.kind = K_RMA;
			p.c.cq_data = o->id;
			p.need_slot = true;
			p.payload.resize(sizeof q + n * size * nops);
			memcpy(p.payload.data(), &q, sizeof q);
			if (nops)
				copy_from_iov(v, nv, e0 * size, p.payload.data() + sizeof q, n * size);
			if (nops == 2)
				copy_from_iov(v + nv, k - nv, e0 * size, p.payload.data() + sizeof q + n * size, n * size);
			p.c.len = n * size * nops;
			o->parts++;
			send_cell(ep, r, std::move(p)); /* a dead peer fails o (peer_dead) */
		}
	}
	flush(ep);
	return 0;
}

/* Atomics larger than a slot go in parts, so the common engine's limit holds. */
int atomic_valid(const char *where, atomic::kind k, fi_datatype dt, fi_op op, size_t *count)
{
	return atomic::valid_for(P(), where, k, dt, op, count);
}

/* ---- target ---- */

void on_rma(shm_ep *ep, remote *r, const wire &c)
{
	const char *slot = static_cast<const char *>(r->p->bounce_addr(uint32_t(c.arg)));
	/* The request sits in the sender's slot: held to its slot size, not ours. */
	size_t ps = r->p->bounce_size();
	size_t room = std::min(slot_room(ep), ps > sizeof(rma_req) ? ps - sizeof(rma_req) : 0);
	if (!slot || c.len > room) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent an RMA request without a valid buffer; dropped\n",
			       r->name.c_str());
		if (slot)
			r->p->bounce_release(uint32_t(c.arg));
		return;
	}
	/* Copied out before anything is trusted: the slot stays writable by its owner. */
	rma_req q;
	memcpy(&q, slot, sizeof q);
	auto payload = std::make_unique_for_overwrite<char[]>(c.len ? c.len : 1);
	memcpy(payload.get(), slot + sizeof q, c.len);
	r->p->bounce_release(uint32_t(c.arg));
	uint64_t id = c.cq_data;
	bool atomic_op = q.kind == OP_ATOMIC || q.kind == OP_FETCH;
	size_t bytes = 0;
	uint64_t access = 0;
	if (atomic_op) {
		size_t size = atomic::size_of(q.datatype);
		unsigned nops = q.op >= 0 ? atomic::operands(q.op) : 0;
		if (q.family > uint8_t(atomic::kind::compare) ||
		    !atomic::valid(q.datatype, q.op, atomic::kind(q.family)) || !size || q.len > room / size ||
		    q.len * size * nops != c.len) {
			reply(ep, r, id, 0, FI_EINVAL, nullptr, 0);
			return;
		}
		bytes = q.len * size;
		bool reads = q.family != uint8_t(atomic::kind::write), writes = q.op != FI_ATOMIC_READ;
		access = (reads ? FI_REMOTE_READ : 0) | (writes ? FI_REMOTE_WRITE : 0);
	} else if (q.kind == OP_WRITE || q.kind == OP_READ) {
		bytes = q.len;
		access = q.kind == OP_WRITE ? FI_REMOTE_WRITE : FI_REMOTE_READ;
		if ((!q.cma && bytes > room) || (!q.cma && q.kind == OP_WRITE && c.len != bytes) ||
		    q.src_cnt > max_iov || (q.cma && iov_total(q.src, q.src_cnt) != bytes)) {
			reply(ep, r, id, q.part_off, FI_EINVAL, nullptr, 0);
			return;
		}
	} else {
		reply(ep, r, id, q.part_off, FI_EINVAL, nullptr, 0);
		return;
	}
	mr::ref ref;
	void *p = mr::check(ep->b.dom, q.key, q.addr, bytes, access, ref);
	std::optional<mr::guard> g;
	if (p)
		g.emplace(ref); /* fi_close(mr) waits for this access */
	if (!p || !*g) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
			       "RMA from %s on key 0x%llx, address 0x%llx, %zu bytes: no registered region allows it\n",
			       r->name.c_str(), (unsigned long long)q.key, (unsigned long long)q.addr, bytes);
		reply(ep, r, id, q.part_off, FI_EACCES, nullptr, 0);
		return;
	}
	int status = 0;
	std::unique_ptr<char[]> out;
	size_t out_len = 0;
	if (atomic_op) {
		if (q.family != uint8_t(atomic::kind::write)) {
			out = std::make_unique_for_overwrite<char[]>(bytes);
			out_len = bytes;
		}
		unsigned nops = atomic::operands(q.op);
		atomic::apply(q.op, q.datatype, p, nops ? payload.get() : nullptr,
			      nops == 2 ? payload.get() + bytes : nullptr, out.get(), q.len);
	} else if (q.cma) {
		iovec here{p, bytes};
		ssize_t n = q.kind == OP_WRITE ? r->p->cma_read(&here, 1, q.src, q.src_cnt)
					       : r->p->cma_write(&here, 1, q.src, q.src_cnt);
		if (n != ssize_t(bytes)) {
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "RMA from %s: cross-memory copy failed: %s\n",
				       r->name.c_str(), n < 0 ? strerror(int(-n)) : "short copy");
			status = FI_EIO;
		}
	} else if (q.kind == OP_WRITE) {
		memcpy(p, payload.get(), bytes);
	} else {
		out = std::make_unique_for_overwrite<char[]>(bytes ? bytes : 1);
		memcpy(out.get(), p, bytes);
		out_len = bytes;
	}
	g.reset();
	reply(ep, r, id, q.part_off, status, out.get(), status ? 0 : out_len);
	if (status)
		return;
	mr::remote_access(ep->b.dom, q.key, access);
	if (access & FI_REMOTE_WRITE) {
		cq::completion cc;
		cc.flags = (atomic_op ? FI_ATOMIC : FI_RMA) | FI_REMOTE_WRITE | (q.has_data ? FI_REMOTE_CQ_DATA : 0);
		cc.data = q.has_data ? q.data : 0;
		push_comp(ep, q.has_data ? ep->b.rx_cq : nullptr, ep->b.c_rwrite, cc);
	}
	if (access & FI_REMOTE_READ)
		push_comp(ep, nullptr, ep->b.c_rread, cq::completion{});
}

void on_rma_reply(shm_ep *ep, remote *r, const wire &c)
{
	auto it = ep->waiting.find(c.tag);
	bool has_slot = c.arg != no_slot;
	const void *from = has_slot ? r->p->bounce_addr(uint32_t(c.arg)) : nullptr;
	if (it == ep->waiting.end() || it->second->peer != r->slot || it->second->kind == OP_SEND ||
	    (has_slot && !from)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s answers an RMA we do not have\n", r->name.c_str());
		if (from)
			r->p->bounce_release(uint32_t(c.arg));
		return;
	}
	txop *o = it->second;
	if (c.inline_len && !o->err)
		o->err = c.inline_len;
	if (from) {
		/* Read or fetched bytes for [part_off, part_off + len) of ours. */
		if (c.cq_data <= o->len && c.len <= o->len - c.cq_data && c.len <= r->p->bounce_size())
			copy_to_iov(o->iov, o->cnt, size_t(c.cq_data), from, size_t(c.len));
		r->p->bounce_release(uint32_t(c.arg));
	}
	if (o->parts)
		o->parts--;
	if (o->parts)
		return;
	ep->waiting.erase(it);
	if (r->waiting)
		r->waiting--;
	complete_tx(ep, o, o->err);
}

} // namespace wu::shm
