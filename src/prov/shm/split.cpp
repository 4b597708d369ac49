/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: the split copy of a LARGE message (split.h). */
#include "config.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "core/log.h"
#include "core/param.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

void (*split_test_hook)(split_point where, split_ctl *ctl) = nullptr;

namespace {

/* Chunks small enough that the two sides share the work evenly, large
 * enough that a system call per chunk stays cheap against its copy. */
constexpr uint64_t chunk_min = 32 << 10, chunk_max = 256 << 10, chunk_floor = 4096;

uint64_t chunk_for(size_t len)
{
	uint64_t c = (uint64_t(len) / 8 + 4095) & ~uint64_t(4095);
	return std::min(std::max(c, chunk_min), chunk_max);
}

split_ctl *ctl_of(shm_ep *ep, const txop *o)
{
	return static_cast<split_ctl *>(ep->rg->bounce_addr(o->split_slot));
}

/* Claims and copies chunks until none is left; false when a copy failed
 * (failed is set, its bytes counted all the same).  The peer's pidfd is
 * checked once before the run and once after it (cma.cpp), not around
 * each chunk: a poll is a system call, and 1 MiB took 16 of them.  The
 * side that completes the operation (the receiver) does so only after its
 * own run returned, so a peer gone meanwhile still fails it. */
bool take_chunks(split_ctl *ctl, uint64_t into, uint64_t chunk, bool write, shm_tp::peer &p, const iovec *mine,
		 size_t mcnt, const iovec *theirs, size_t tcnt)
{
	uint64_t nch = (into + chunk - 1) / chunk;
	const bool alive = p.cma_alive();
	for (;;) {
		uint64_t k = ctl->next.fetch_add(1, std::memory_order_acq_rel);
		if (k >= nch) {
			if (alive && p.cma_alive())
				return true;
			ctl->failed.store(1, std::memory_order_relaxed);
			return false;
		}
		if (split_test_hook && write)
			split_test_hook(SPLIT_TX_CLAIMED, ctl);
		uint64_t at = k * chunk, n = std::min(chunk, into - at);
		iovec lv[max_iov], rv[max_iov];
		size_t lc = iov_slice(mine, mcnt, size_t(at), size_t(n), lv, max_iov);
		size_t rc = iov_slice(theirs, tcnt, size_t(at), size_t(n), rv, max_iov);
		ssize_t got = alive ? p.cma_copy_unchecked(write, lv, lc, rv, rc) : -FI_EHOSTDOWN;
		bool ok = got == ssize_t(n);
		if (!ok)
			ctl->failed.store(1, std::memory_order_relaxed);
		/* release: the bytes are in place before done says so */
		ctl->done.fetch_add(n, std::memory_order_release);
		if (!ok)
			return false;
	}
}

/* The receive is complete once every claimed chunk is. */
bool copied(const split_wait &w)
{
	return w.ctl->done.load(std::memory_order_acquire) >= w.into;
}

/* Answers and completes w, copied: held in no list (an answer that finds
 * the sender dead fails what waits on it, splits_in included). */
void finish_split(shm_ep *ep, split_wait w)
{
	remote *r = ep->remotes[w.peer].get();
	bool failed = w.ctl->failed.load(std::memory_order_relaxed);
	/* From here on the block is the sender's again. */
	w.ctl = nullptr;
	if (failed)
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s: a split cross-memory copy failed\n", r->name.c_str());
	answer(ep, r, K_DONE, w.id, 0, failed ? FI_EIO : 0);
	finish(ep, w.o, w.c, w.off, failed ? 0 : w.into, w.src, failed ? FI_EIO : 0);
}

} // namespace

size_t split_min_param()
{
	return param::get_size(P(), "split_min").value;
}

int split_offer(shm_ep *ep, txop *o)
{
	if (!ep->split_min || o->len < ep->split_min || !ep->cma || ep->rg->bounce_size() < sizeof(split_ctl))
		return -1;
	int slot = ep->rg->bounce_get();
	if (slot < 0)
		return -1;
	void *at = ep->rg->bounce_addr(slot);
	if (reinterpret_cast<uintptr_t>(at) % alignof(split_ctl)) {
		ep->rg->bounce_put(slot);
		return -1;
	}
	auto *ctl = std::construct_at(static_cast<split_ctl *>(at)); /* in the slot: nothing owned */
	ctl->cnt = 0;
	ctl->into = 0;
	ctl->chunk = chunk_for(o->len);
	ctl->next.store(0, std::memory_order_relaxed);
	ctl->done.store(0, std::memory_order_relaxed);
	ctl->failed.store(0, std::memory_order_relaxed);
	/* published by the push of the LARGE cell (release) */
	ctl->state.store(SPLIT_IDLE, std::memory_order_relaxed);
	o->split_slot = slot;
	o->split_chunk = ctl->chunk;
	o->split_ready = false;
	o->split_cnt = 0;
	busy(ep);
	ep->splits_out.push_back(o);
	return slot;
}

void split_release(shm_ep *ep, txop *o) noexcept
{
	if (o->split_slot < 0)
		return;
	for (size_t k = 0; k < ep->splits_out.size(); k++)
		if (ep->splits_out[k] == o) {
			ep->splits_out[k] = ep->splits_out.back();
			ep->splits_out.pop_back();
			break;
		}
	ep->rg->bounce_put(o->split_slot);
	o->split_slot = -1;
}

bool split_land(shm_ep *ep, remote *r, const wire &c, prov::op *o, size_t off, size_t into, fi_addr_t src,
		const iovec *rem, size_t rcnt)
{
	const void *p = r->p->bounce_addr(c.inline_len);
	if (!p || r->p->bounce_size() < sizeof(split_ctl) || reinterpret_cast<uintptr_t>(p) % alignof(split_ctl))
		return false;
	auto *ctl = static_cast<split_ctl *>(const_cast<void *>(p));
	uint64_t chunk = ctl->chunk;
	if (chunk < chunk_floor || ctl->state.load(std::memory_order_acquire) != SPLIT_IDLE) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s: a large message's split block is not usable; one copy\n",
			       r->name.c_str());
		return false;
	}
	iovec lv[max_iov];
	size_t lcnt = prov::slice(o, off, into, lv);
	ctl->cnt = uint32_t(lcnt);
	for (size_t i = 0; i < lcnt; i++) {
		ctl->iov[i][0] = uint64_t(uintptr_t(lv[i].iov_base));
		ctl->iov[i][1] = lv[i].iov_len;
	}
	ctl->into = into;
	ctl->state.store(SPLIT_READY, std::memory_order_release);
	if (split_test_hook)
		split_test_hook(SPLIT_RX_PUBLISHED, ctl);
	take_chunks(ctl, into, chunk, false, *r->p, lv, lcnt, rem, rcnt);
	split_wait w;
	w.o = o;
	w.peer = r->slot;
	w.ctl = ctl;
	w.id = c.arg;
	w.off = off;
	w.into = into;
	w.src = src;
	w.c = c;
	if (copied(w)) {
		finish_split(ep, w);
	} else {
		/* The sender is still writing its chunks: progress finishes it. */
		busy(ep);
		ep->splits_in.push_back(w);
	}
	return true;
}

void split_progress(shm_ep *ep)
{
	/* Receives: the sender's chunks done? */
	for (size_t k = 0; k < ep->splits_in.size();) {
		if (copied(ep->splits_in[k])) {
			split_wait w = ep->splits_in[k];
			ep->splits_in.erase(ep->splits_in.begin() + ptrdiff_t(k));
			finish_split(ep, w);
			continue;
		}
		k++;
	}
	/* Sends: the receiver published where the message lands; take chunks. */
	for (size_t k = 0; k < ep->splits_out.size(); k++) {
		txop *o = ep->splits_out[k];
		split_ctl *ctl = ctl_of(ep, o);
		if (!o->split_ready) {
			if (ctl->state.load(std::memory_order_acquire) != SPLIT_READY)
				continue;
			o->split_ready = true;
			/* The receiver's word, read once and held to the message. */
			uint32_t cnt = ctl->cnt;
			uint64_t into = ctl->into, sum = 0;
			bool ok = cnt >= 1 && cnt <= max_iov && into <= o->len;
			for (uint32_t i = 0; ok && i < cnt; i++) {
				o->split_to[i] = {reinterpret_cast<void *>(uintptr_t(ctl->iov[i][0])), size_t(ctl->iov[i][1])};
				sum += ctl->iov[i][1];
			}
			if (!ok || sum != into) {
				WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
					       "peer %s: a split block names buffers that do not fit the message; the "
					       "receiver copies alone\n",
					       ep->remotes[o->peer]->name.c_str());
				continue;
			}
			o->split_cnt = cnt;
			o->split_into = into;
		}
		if (!o->split_cnt)
			continue;
		remote *r = ep->remotes[o->peer].get();
		/* No single copy with it from here (gone, no pidfd): the receiver copies alone. */
		if (r->dead || !r->p->proc()) {
			o->split_cnt = 0;
			continue;
		}
		take_chunks(ctl, o->split_into, o->split_chunk, true, *r->p, o->iov, o->cnt, o->split_to,
			    o->split_cnt);
		/* Whatever happened, there is nothing more for us to take. */
		o->split_cnt = 0;
	}
}

void split_peer_dead(shm_ep *ep, uint32_t peer)
{
	for (size_t k = 0; k < ep->splits_in.size();) {
		split_wait &w = ep->splits_in[k];
		if (w.peer != peer) {
			k++;
			continue;
		}
		prov::op *o = w.o;
		wire c = w.c;
		size_t off = w.off;
		fi_addr_t src = w.src;
		ep->splits_in.erase(ep->splits_in.begin() + ptrdiff_t(k));
		finish(ep, o, c, off, 0, src, FI_EHOSTDOWN);
	}
}

void split_free(shm_ep *ep)
{
	for (auto &w : ep->splits_in)
		if (!w.o->mr.queued())
			ep->rx->release(w.o);
	ep->splits_in.clear();
}

} // namespace wu::shm
