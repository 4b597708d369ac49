/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider internals: the RDM endpoint (ep.cpp), its protocol over
 * the transport of region.h (proto.cpp), receives and completions (rx.cpp),
 * RMA and atomics (rma.cpp).
 *
 * Protocol.  Every message is one or more 64-byte cells pushed into the
 * receiver's queue; the kinds are below.  A sender knows a peer by its
 * slot in the sender's table; the first cell to a peer (HELLO) carries the
 * sender's name and that slot, the peer attaches the sender's region and
 * answers (HELLO_ACK) with its own slot for the sender, which every later
 * cell carries in cell::sender.  Until the answer, cells wait in the
 * peer's backlog, as they do when its queue is full (retried by progress,
 * never dropped, never spun on).
 *  - up to inline_max bytes travel in the cell (INLINE);
 *  - up to the bounce size, in one of the sender's bounce slots (BOUNCE):
 *    the receiver copies out and releases the slot;
 *  - larger (LARGE): the cell names the sender's buffer; once a receive
 *    takes it, the receiver reads it with one cross-memory copy straight
 *    into the posted buffer and answers DONE (from FI_SHM_SPLIT_MIN on,
 *    F_SPLIT: both sides copy chunks, split.h); when the kernel refuses
 *    cross-memory attach it answers PULL and the sender streams the
 *    payload through its bounce slots (CHUNK).
 *  - above the bounce size up to FI_SHM_PIPE_MAX (PIPE): eager, in
 *    fragments through several of the sender's slots, one cell each; the
 *    receiver copies each out as it arrives, so both copies overlap.
 *  - RMA and atomics (RMA): a request header (plus operands) in a bounce
 *    slot; the target checks the MR key, applies it and answers
 *    RMA_REPLY, with read or fetched bytes in one of its own slots.  Larger
 *    transfers are split into slot-sized parts, or done by the target with
 *    one cross-memory copy when the kernel allows it.
 * A peer whose push fails with -FI_EHOSTDOWN, that says BYE as its
 * endpoint closes, or that stays silent while operations wait on it and
 * is found dead (peer::alive), fails them all with error completions. */
#ifndef WU_PROV_SHM_SHM_EP_H
#define WU_PROV_SHM_SHM_EP_H

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <rdma/fi_endpoint.h>

#include "prov/common/ep_base.h"
#include "core/owned.h"
#include "prov/common/cq.h"
#include "prov/common/match.h"
#include "prov/common/progress.h"
#include "prov/common/rx.h"
#include "prov/common/srx.h"
#include "prov/common/xfer.h"
#include "prov/shm/region.h"
#include "prov/shm/shm.h"
#include "prov/shm/shm_addr.h"
#include "prov/shm/split.h"

namespace wu::shm {

inline fi_provider *P() { return prov_desc(); }

using prov::max_iov;
constexpr uint32_t no_slot = UINT32_MAX;

enum cell_kind : uint8_t {
	K_HELLO = 1,
	K_HELLO_ACK,
	K_INLINE,
	K_BOUNCE,
	K_LARGE,
	K_DONE,
	K_PULL,
	K_CHUNK,
	K_RMA,
	K_RMA_REPLY,
	K_BYE, /* the sender closes: what waits on it fails now */
	K_PIPE,  /* a pipelined eager message's first fragment (pipe.cpp) */
	K_PFRAG, /* one of its further fragments */
};

/* cell::flags */
constexpr uint8_t F_TAGGED = 1;
constexpr uint8_t F_DATA = 2;    /* cq_data is remote CQ data */
constexpr uint8_t F_IOVLIST = 4; /* LARGE: data[] holds (iovec *, count) in the sender's memory */
constexpr uint8_t F_SPLIT = 8;   /* LARGE: inline_len names the sender's slot holding a split_ctl (split.h) */

struct shm_ep;
struct txop;

/* A cell's protocol fields, copyable (shm_tp::cell holds the queue's atomic). */
struct wire {
	uint8_t kind = 0;
	uint8_t flags = 0;
	uint16_t inline_len = 0;
	uint32_t sender = 0;
	uint64_t tag = 0;
	uint64_t cq_data = 0;
	uint64_t len = 0;
	uint64_t arg = 0;
	unsigned char data[shm_tp::inline_max] = {};
};
/* The 48 bytes from tag on: a HELLO's name. */
inline constexpr size_t wire_name_bytes = 48;
void to_cell(const wire &w, shm_tp::cell &c) noexcept;

/* One queued cell for a peer; a payload to copy into a bounce slot when
 * it is pushed (need_slot). */
struct pending {
	wire c;
	std::vector<char> payload;
	bool need_slot = false;
	txop *op = nullptr; /* completed once pushed (eager sends), or nullptr */
};

/* A peer endpoint, attached on first use in either direction. */
struct remote {
	std::string name; /* without the scheme */
	std::unique_ptr<shm_tp::peer> p;
	uint32_t slot = 0;         /* ours for it */
	uint32_t id_there = no_slot; /* its for us: cell::sender of what we push */
	bool hello_sent = false;
	bool dead = false;
	uint32_t gen = 0; /* counts deaths: what came from an earlier sender of this name */
	fi_addr_t addr = FI_ADDR_NOTAVAIL; /* in our AV, once known */
	std::deque<pending> backlog;
	bool listed = false;      /* in shm_ep::backlogged */
	int64_t stuck_since = 0; /* a push failed with -FI_EAGAIN then (ms), 0: not stuck */
	size_t waiting = 0;      /* our operations awaiting its answer */
};

using prov::op_kind;
using prov::OP_ATOMIC;
using prov::OP_FETCH;
using prov::OP_READ;
using prov::OP_SEND;
using prov::OP_WRITE;

/* A transmit-side operation that outlives its call. */
struct txop {
	op_kind kind = OP_SEND;
	uint64_t id = 0;
	void *context = nullptr;
	uint64_t flags = 0;
	bool tagged = false;
	bool want_comp = true;
	bool inject = false; /* fi_inject*: no completion at all, not even an error */
	uint32_t peer = 0;
	iovec iov[max_iov]{};
	size_t cnt = 0;
	size_t len = 0;
	/* LARGE sends through bounce slots (PULL) */
	bool pulling = false;
	uint64_t pull_token = 0;
	size_t pull_off = 0;
	/* LARGE sends offered for a split copy (split.h): the lent slot, and
	 * the receiver's buffers once it published them */
	int split_slot = -1;
	bool split_ready = false;
	uint64_t split_chunk = 0, split_into = 0;
	size_t split_cnt = 0; /* 0: nothing (more) for us to copy */
	iovec split_to[max_iov]{};
	/* RMA / atomics: parts still unanswered, first error */
	size_t parts = 0;
	int err = 0;
	/* fetch / compare / read results land here */
	iovec res[max_iov]{};
	size_t res_cnt = 0;
	size_t res_size = 0; /* atomics: element size */
};

/* A posted receive: the receive core's operation. */
using rxop = prov::op;

/* An unexpected message's cookie: its bytes (INLINE, BOUNCE copied out so
 * the sender's slot comes back at once), or the LARGE cell. */
struct ux {
	wire c;
	uint32_t peer = 0;
	std::unique_ptr<char[]> bytes;
	bool large = false;
	uint32_t gen = 0; /* LARGE, PIPE: remote::gen at arrival (its buffer lives in that sender) */
	size_t cost = 0;  /* counted in shm_ep::ux_bytes (FI_SHM_UNEXP_LIMIT) */
	bool pipe = false; /* a PIPE message still arriving: its bytes are in shm_ep::pipes */
};

/* A pipelined message being received: which peer (and its gen) and the
 * sender's token. */
struct pipe_key {
	uint32_t peer, gen;
	uint64_t token;
	bool operator<(const pipe_key &k) const noexcept
	{
		return peer != k.peer ? peer < k.peer : gen != k.gen ? gen < k.gen : token < k.token;
	}
};
struct pipe_in {
	wire c;                 /* its first cell */
	rxop *o = nullptr;      /* the receive it lands in, once matched */
	ux *u = nullptr;        /* unmatched and queued in the engine: bytes go to buf */
	std::unique_ptr<char[]> buf;
	size_t off = 0, into = 0, got = 0;
	size_t head_n = 0;      /* bytes of the first fragment */
	bool head_in_slot = true; /* the first fragment is still in the sender's slot */
	bool drop = false;      /* discarded: fragments are only released */
	fi_addr_t src = FI_ADDR_NOTAVAIL;
};

/* A message cell set aside while the unexpected messages are at
 * FI_SHM_UNEXP_LIMIT (unexp.cpp), with a BOUNCE one's payload copied out
 * (its sender's slot comes back: that sender's answers to us must not
 * wait behind it). */
struct parked {
	wire c;
	uint32_t peer = 0;
	uint32_t gen = 0;
	size_t cost = 0; /* counted in shm_ep::park_bytes */
	std::unique_ptr<char[]> bytes;
};

/* A LARGE message being pulled through the sender's bounce slots. */
struct rx_pull {
	rxop *o = nullptr;
	uint32_t peer = 0;
	size_t off = 0, into = 0, len = 0, got = 0;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	bool tagged = false;
	uint64_t tag = 0;
	uint64_t data = 0;
	bool has_data = false;
};

/* A split LARGE receive waiting on the chunks its sender claimed. */
struct split_wait {
	rxop *o = nullptr;
	uint32_t peer = 0;
	split_ctl *ctl = nullptr; /* in the sender's slot */
	uint64_t id = 0;          /* the sender's operation (DONE's arg) */
	size_t off = 0, into = 0;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	wire c; /* the LARGE cell */
};

/* The endpoint as the receive core's transport (rx.cpp). */
struct ep_transport final : prov::rx_transport {
	shm_ep *ep = nullptr;
	void start(match::engine &e, match::recv *r, const match::message &m, size_t off, size_t into) override;
	void drop(match::engine &e, const match::message &m) override;
	fi_addr_t resolve(const match::message &m) override;
	prov::rx_info describe(const match::message &m) override;
	void hold(const match::message &) override {} /* the cookie keeps the message as it is */
};

constexpr uint32_t ep_magic = 0x5753484d; /* "WSHM" */

struct shm_ep {
	fid_ep ep; /* first */
	uint32_t magic = ep_magic;
	prov::ep_base b; /* bindings, enable, lock, completions */
	std::string name; /* ours, without the scheme */
	bool generated = false; /* not given: a taken rank name falls back to a pid name */
	owned<shm_tp::region> rg;
	/* The matching engine and posted receives: the endpoint's own, or the
	 * one a wireup endpoint lent it (lend_rx, sub.cpp), which its lender
	 * drains at close. */
	prov::rx_ctx own_rx;
	prov::rx_ctx *rx = &own_rx;
	/* The shared receive context bound with fi_ep_bind (srx.h): rx is
	 * its, and b.mtx its lock, from then on. */
	prov::srx *srx = nullptr;
	uint8_t rx_fast = 0; /* prov::rx_fast_mask, set at fi_enable */
	owned<ep_transport> tp = make_owned<ep_transport>(); /* by pointer: shm_ep stays standard-layout */
	std::vector<std::unique_ptr<remote>> remotes;
	std::vector<uint32_t> backlogged; /* slots of peers that may have a backlog: progress visits only these */
	std::unordered_map<std::string, uint32_t> by_name;
	/* fi_addr -> slot + 1 (0: not looked up), for the AV of this process
	 * only (a shared AV changes behind our back); cleared by fi_av_remove. */
	std::vector<uint32_t> fa_slot;
	std::unordered_map<uint64_t, txop *> waiting;   /* by id: LARGE sends and RMA awaiting answers */
	std::vector<txop *> pulls_out;                   /* LARGE sends streaming CHUNKs */
	std::unordered_map<uint64_t, rx_pull> pulls_in; /* by token */
	std::vector<txop *> splits_out;  /* LARGE sends that lent a split block */
	std::vector<split_wait> splits_in; /* split receives waiting on the sender's chunks */
	size_t split_min = 0;            /* FI_SHM_SPLIT_MIN (0: never) */
	/* pipelined messages arriving (by pointer: shm_ep stays standard-layout) */
	owned<std::map<pipe_key, pipe_in>> pipes = make_owned<std::map<pipe_key, pipe_in>>();
	size_t pipe_max = 0, pipe_frag = 0; /* FI_SHM_PIPE_MAX (0: never), FI_SHM_PIPE_FRAG */
	/* Set by progress when nothing above waits on it; cleared (under the
	 * lock) by whatever queues work for progress.  With an idle queue it
	 * lets a poll return without taking the lock. */
	std::atomic<bool> quiet{false};
	/* Quiet polls since the last look at peers that posted receives are
	 * directed at (FI_DIRECTED_RECV): one in 1024 takes the lock for it. */
	std::atomic<uint32_t> quiet_polls{0};
	/* FI_SHM_UNEXP_LIMIT (unexp.cpp): bytes the unexpected messages cost
	 * (0: none), and message cells set aside, in order, once at it; so
	 * with FI_SHM_UNEXP_MSGS and their count. */
	size_t ux_bytes = 0, ux_limit = 0, park_bytes = 0;
	size_t ux_count = 0, ux_msgs = 0;
	std::deque<parked> parked_cells;
	uint64_t next_id = 1;
	size_t tx_busy = 0;
	bool cma = true;        /* FI_SHM_CMA and the kernel allow single copy */
	bool cma_checked = false;
	int dead_ms = 1000;
	int64_t next_live_check = 0;
	/* FI_PROGRESS_AUTO: the cm engine's thread watches the region's
	 * wait_fd (progress.h); a thread of ours sleeping on the region when
	 * the transport offers no descriptor. */
	prov::auto_runner autop;
	std::thread auto_thr;
	std::atomic<bool> auto_stop{false};
	bool want_auto = false;
};

shm_ep *ep_of(fid *f) noexcept;
inline shm_ep *ep_of(fid_ep *e) noexcept { return e ? ep_of(&e->fid) : nullptr; }

int64_t now_ms() noexcept;

/* Copies an inline payload (at most shm_tp::inline_max bytes) with a few
 * moves: memcpy of a variable length is a library call. */
inline void copy_small(void *dst, const void *src, size_t len) noexcept
{
	static_assert(shm_tp::inline_max <= 16);
	auto *d = static_cast<unsigned char *>(dst);
	auto *s = static_cast<const unsigned char *>(src);
	if (len >= 8) { /* two 8-byte moves that may overlap */
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + len - 8, &b, 8);
	} else if (len >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + len - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + len - 4, &b, 4);
	} else {
		for (size_t i = 0; i < len; i++)
			d[i] = s[i];
	}
}

/* FI_SHM_BOUNCE_SIZE as regions are created with it (1 KiB .. 16 MiB). */
uint32_t bounce_size_param();

/* Work for progress is queued (under ep->mtx): polls must take the lock. */
inline void busy(shm_ep *ep) noexcept { ep->quiet.store(false, std::memory_order_relaxed); }
/* A directed receive may wait on a peer (rx_ctx::directed_hint): progress
 * stays off its quiet path so that check_liveness finds that peer if it
 * dies (issue 30).  Under ep->mtx. */
inline void watch_directed(shm_ep *ep) noexcept
{
	if (ep->rx->directed_hint)
		busy(ep);
}

/* ---- proto.cpp (under ep->mtx unless said) ---- */
/* The peer named by fi_addr, attached if new; nullptr with *err set. */
remote *peer_of(shm_ep *ep, fi_addr_t addr, int *err);
/* fi_av_remove notice (ep_base::av_removed). */
void av_removed(void *arg, fi_addr_t fa) noexcept;
/* Queues or pushes c (+ payload) to r, in order. */
void send_cell(shm_ep *ep, remote *r, pending &&p);
/* Returns the cells it took from the queue. */
int progress_locked(shm_ep *ep);
/* Under ep->mtx: the live peer a new transmit to addr goes to, or nullptr
 * with *err (-FI_EOPBADSTATE before fi_enable, -FI_EAGAIN with tx_attr->size
 * operations in flight, after a progress pass when retry, peer_of's error,
 * -FI_EHOSTDOWN). */
inline remote *tx_peer(shm_ep *ep, fi_addr_t addr, bool retry, int *err)
{
	if (!ep->b.enabled) {
		*err = -FI_EOPBADSTATE;
		return nullptr;
	}
	const size_t size = ep->b.info->tx_attr->size;
	if (ep->tx_busy + ep->waiting.size() >= size) {
		if (retry)
			progress_locked(ep);
		if (ep->tx_busy + ep->waiting.size() >= size) {
			*err = -FI_EAGAIN;
			return nullptr;
		}
	}
	remote *r = peer_of(ep, addr, err);
	if (r && r->dead) {
		*err = -FI_EHOSTDOWN;
		return nullptr;
	}
	return r;
}
/* Posts collected completions; without ep->mtx. */
void flush(shm_ep *ep) noexcept;
void progress_cb(void *arg) noexcept;
ssize_t do_send(shm_ep *ep, const prov::msg_xfer &x);
/* fi_inject* of an inline message to a peer with nothing queued ahead: one
 * cell written from the caller's buffer; prov::general_path when do_send
 * must take the call (its checks log why a call is refused). */
ssize_t inject_inline(shm_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
		      uint64_t kind) noexcept;
/* inject_inline on an endpoint of ep_open's without its look-up: the
 * multiplexer's entry (prov::sub_ops::inject). */
ssize_t inject_sub(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
		   uint64_t kind) noexcept;
/* A peer is gone: every operation waiting on it fails. */
void peer_dead(shm_ep *ep, remote *r, const char *why);
/* r's fi_addr in our AV (looked up once known), or FI_ADDR_NOTAVAIL. */
fi_addr_t src_of(shm_ep *ep, remote *r);
bool use_cma(shm_ep *ep, remote *r);
/* Close: BYE to every peer that knows us, then frees what the protocol holds. */
void free_proto(shm_ep *ep);
/* Close: progresses until every peer took its backlog, or none moved for
 * FI_SHM_LINGER ms (linger.cpp). */
void linger_locked(shm_ep *ep);

/* ---- rx.cpp ---- */
ssize_t do_recv(shm_ep *ep, const prov::msg_xfer &x);
/* fi_ep_bind of an srx (prov::srx_ep_bind). */
int srx_bind(shm_ep *ep, fid *srx, uint64_t flags);
/* Under the lock, after a receive took queued messages (sub.cpp's rx_room). */
void rx_room_locked(shm_ep *ep) noexcept;
/* fi_recv / fi_trecv posted without a descriptor on the way;
 * prov::general_path when do_recv must take the call (it refuses and logs). */
template <bool Tagged>
ssize_t recv_one(shm_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx);
/* A message cell (INLINE / BOUNCE / LARGE) from r. */
/* bytes: a set-aside BOUNCE one's payload, nullptr to read the cell or slot. */
void on_message(shm_ep *ep, remote *r, const wire &c, uint32_t gen, const char *bytes = nullptr);
void on_chunk(shm_ep *ep, remote *r, const wire &c);
void complete_tx(shm_ep *ep, txop *o, int err);
/* Answers r with a cell of kind k (DONE, PULL). */
void answer(shm_ep *ep, remote *r, cell_kind k, uint64_t arg, uint64_t tag, uint64_t status);
/* Completes receive o of message c: into bytes landed at off (err: 0 or a
 * positive fabric errno; a short landing reports FI_ETRUNC). */
void finish(shm_ep *ep, rxop *o, const wire &c, size_t off, size_t into, fi_addr_t src, int err);
void push_comp(shm_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err = 0, size_t olen = 0);
void free_rx(shm_ep *ep);

/* ---- unexp.cpp (under ep->mtx) ---- */
/* Message cells set aside at most (and at most another FI_SHM_UNEXP_LIMIT
 * of bytes); past them the queue is not read. */
constexpr size_t park_max = 1024;
/* What an unexpected message costs beyond its payload (as tcp counts it). */
constexpr size_t ux_overhead = 64;
inline bool ux_full(const shm_ep *ep) noexcept
{
	return (ep->ux_limit && ep->ux_bytes >= ep->ux_limit) || (ep->ux_msgs && ep->ux_count >= ep->ux_msgs);
}
/* Hands set-aside cells on while there is room; false when the queue
 * must not be read now. */
bool ux_resume(shm_ep *ep);
/* Progress may pop a cell: checked before each. */
inline bool ux_gate(shm_ep *ep) { return ep->parked_cells.empty() || ux_resume(ep); }
/* A message cell from r: set aside when at the limit (or behind others). */
void ux_arrive(shm_ep *ep, remote *r, const wire &c);
void free_parked(shm_ep *ep);

/* ---- pipe.cpp (under ep->mtx) ---- */
/* An eager send of len bytes (above a bounce slot, at most pipe_max) in
 * fragments, when nothing waits ahead for r and a slot is free: true when
 * taken (o is completed, or queued with its last fragment); false, nothing
 * pushed, when the caller must take the LARGE path. */
bool pipe_send(shm_ep *ep, remote *r, const prov::msg_xfer &x, size_t len, txop *o);
void pipe_head(shm_ep *ep, remote *r, const wire &c);
void pipe_frag(shm_ep *ep, remote *r, const wire &c);
/* ux_arrive sets a first cell aside: its fragments go to a buffer. */
size_t pipe_park(shm_ep *ep, remote *r, const wire &c);
/* on_message: c matched o, or is queued unexpected as u. */
void pipe_match(shm_ep *ep, remote *r, const wire &c, uint32_t gen, rxop *o, size_t off, size_t into,
		fi_addr_t src);
void pipe_unexp(shm_ep *ep, remote *r, const wire &c, uint32_t gen, ux *u);
/* The engine's start / drop of an unexpected one still arriving. */
void pipe_start(shm_ep *ep, ux *u, rxop *o, size_t off, size_t into, fi_addr_t src);
void pipe_drop(shm_ep *ep, ux *u);
/* Incomplete messages from r: does r owe us bytes; fail them (r died). */
bool pipe_owed(const shm_ep *ep, uint32_t peer) noexcept;
void pipe_peer_dead(shm_ep *ep, uint32_t peer);
void pipe_free(shm_ep *ep);

/* ---- rma.cpp ---- */
ssize_t do_rma(shm_ep *ep, const prov::rma_xfer &x);
ssize_t do_atomic(shm_ep *ep, const prov::atomic_xfer &x);
int atomic_valid(const char *where, atomic::kind k, fi_datatype dt, fi_op op, size_t *count);
void on_rma(shm_ep *ep, remote *r, const wire &c);
void on_rma_reply(shm_ep *ep, remote *r, const wire &c);

} // namespace wu::shm

#endif
