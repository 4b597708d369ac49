/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: the split copy of a LARGE message (split.cpp).
 *
 * One process_vm_readv of a large message keeps one core busy while the
 * sender idles in fi_cq_read.  A LARGE send of at least FI_SHM_SPLIT_MIN
 * bytes lends one of the sender's bounce slots as a control block
 * (F_SPLIT; cell::inline_len names the slot).  The receiver that takes
 * the message writes where it lands (its iovecs, bytes that fit) into the
 * block, publishes it (READY) and both sides then claim fixed-size chunks
 * from a shared counter: the receiver reads its chunks with
 * process_vm_readv, the sender (when its progress runs while the send is
 * outstanding) writes its chunks with process_vm_writev.  Every claimed
 * chunk is counted in `done` once copied (or failed, then `failed` is
 * set), so nobody touches the receive buffer after done reaches the
 * length.  A sender that is not progressing leaves every chunk to the
 * receiver; a chunk the sender claimed and has not finished is waited on
 * in the receiver's progress, and fails the receive (FI_EHOSTDOWN) when
 * the sender's process is found gone.  The receiver answers DONE as for a
 * single copy; the sender takes its slot back when the send completes. */
#ifndef WU_PROV_SHM_SPLIT_H
#define WU_PROV_SHM_SPLIT_H

#include <atomic>
#include <cstdint>

#include "prov/common/rx.h"

namespace wu::shm {

struct shm_ep;
struct remote;
struct txop;
struct wire;

enum : uint32_t {
	SPLIT_IDLE = 0,  /* offered: no receiver yet */
	SPLIT_READY = 1, /* the receiver's iovecs are in; chunks may be claimed */
};

/* In the sender's bounce slot; the sender writes chunk, the receiver
 * state/cnt/into/iov; both the counters.  Neither trusts what the other
 * wrote beyond its bounds. */
struct split_ctl {
	std::atomic<uint32_t> state;
	uint32_t cnt;   /* receiver's iovecs */
	uint64_t into;  /* bytes that land (<= the message) */
	uint64_t chunk; /* bytes per claim (the sender's choice) */
	uint64_t iov[prov::max_iov][2]; /* receiver's (base, len) */
	alignas(64) std::atomic<uint64_t> next; /* next chunk to claim */
	alignas(64) std::atomic<uint64_t> done; /* bytes of claimed chunks finished */
	std::atomic<uint32_t> failed;           /* a chunk's copy failed */
};

/* FI_SHM_SPLIT_MIN at endpoint open (0: never split). */
size_t split_min_param();
/* Sender: lends a slot to o (a LARGE send of len bytes); the slot or -1
 * when the pool is empty or the message too small. */
int split_offer(shm_ep *ep, txop *o);
/* Sender: gives the slot back (the send completed, or never left). */
void split_release(shm_ep *ep, txop *o) noexcept;
/* Receiver: lands a split LARGE message (remote iovecs rem[0..rcnt)) in
 * o at off, into bytes; answers DONE itself, now or from progress.
 * false when c names no usable control block: take the single copy. */
bool split_land(shm_ep *ep, remote *r, const wire &c, prov::op *o, size_t off, size_t into, fi_addr_t src,
		const iovec *rem, size_t rcnt);
/* Progress of both sides: chunks for our outstanding sends, receives
 * waiting on the sender's chunks. */
void split_progress(shm_ep *ep);
/* A peer is gone: receives waiting on its chunks fail. */
void split_peer_dead(shm_ep *ep, uint32_t peer);
/* Close: receives still waiting are released. */
void split_free(shm_ep *ep);

/* Tests only (the library links statically into them): called at the
 * points below with the control block; nullptr in production. */
enum split_point { SPLIT_RX_PUBLISHED, SPLIT_TX_CLAIMED };
extern void (*split_test_hook)(split_point where, split_ctl *ctl);

} // namespace wu::shm

#endif
