/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive core every provider shares, on the matching engine
 * (match.h): the operation record, a receive context (an engine and the
 * receives counted against it: an endpoint's own, or a shared one that
 * several endpoints bind), the argument checks of fi_recv / fi_trecv /
 * fi_*msg, posting, FI_MULTI_RECV bookkeeping, FI_PEEK / FI_CLAIM /
 * FI_DISCARD, fi_cancel, and the receive completion with truncation.
 *
 * The transport keeps what is about its wire: how a message's body lands
 * (staged bytes, rendezvous, single copy), what a queued or held message
 * keeps (its cookie in the engine), and which endpoint its completions go
 * to.  It derives its engine transport from rx_transport, which adds the
 * two hooks FI_PEEK needs.
 *
 * A provider uses it so: its endpoint holds an ep_base and an rx_ctx (size
 * from rx_attr->size, directed for RDM with FI_DIRECTED_RECV, prov for its
 * logs) and an rx_transport whose base is the endpoint's.  A receive call
 * goes through classify_recv: RX_PEEK to peek_claim (after check_peek),
 * RX_POST to post_recv under the endpoint's lock once the context is not
 * full().  An arriving message is engine::arrive() with the transport as
 * message.tp; its body lands in op_of(r) (slice / copy_to_op), and
 * complete_rx(..., {.release = rx.done(o)}) reports it.  fi_cancel is
 * rx.cancel + complete_canceled; close is rx.drain().
 *
 * Locking: every function here runs under the locks of its receive
 * context's owner (an endpoint's mtx, or all a shared context takes) and
 * only collects completions (ep_base::push); the caller flushes after. */
#ifndef WU_PROV_COMMON_RX_H
#define WU_PROV_COMMON_RX_H

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <rdma/fi_tagged.h>

#include "core/free_list.h"
#include "core/iov.h"
#include "core/owned.h"
#include "prov/common/ep_base.h"
#include "prov/common/match.h"
#include "prov/common/xfer.h"

namespace wu::prov {

constexpr size_t max_iov = 4;
static_assert(max_iov == atomic::max_iocs, "one iov_limit for every list");

struct rx_ctx;

/* One operation: a receive, and for a provider that wants one record for
 * everything, its sends, RMA and atomics too. */
struct op {
	op_kind kind = OP_RECV;
	bool tagged = false;
	bool want_comp = true; /* success completion to the CQ */
	bool inject = false;   /* fi_inject*: no completion at all, not even an error */
	bool discard = false;  /* swallows a message dropped by FI_DISCARD */
	void *context = nullptr;
	uint64_t flags = 0;
	iovec iov[max_iov];
	size_t iov_cnt = 0;
	size_t len = 0;
	fi_addr_t addr = FI_ADDR_UNSPEC;
	uint64_t tag = 0, ignore = 0, data = 0;
	uint64_t id = 0;
	rx_ctx *rx = nullptr; /* a receive: the context it counts against */
	match::recv mr;       /* a receive's node in the matching engine (owner: this op) */
};

/* A new op of kind k for ctx over iov[0..cnt), len bytes in all. */
op *new_op(op_kind k, void *ctx, uint64_t flags, const iovec *iov, size_t cnt, size_t len);
/* Points tgt (max_iov entries) at [off, off+n) of o's buffers; returns the count. */
size_t slice(const op *o, size_t off, size_t n, iovec *tgt) noexcept;
/* Copies n bytes to offset off of o's buffers; returns the bytes that fit. */
size_t copy_to_op(op *o, size_t off, const char *src, size_t n) noexcept;

/* A receive context: a matching engine and the receives posted to it. */
struct rx_ctx {
	owned<match::engine> eng = make_owned<match::engine>();
	std::atomic<size_t> posted{0}; /* counted against size (rx_attr->size) */
	size_t size = 2048;
	size_t min_multi_recv = 64; /* FI_OPT_MIN_MULTI_RECV */
	bool directed = false;      /* FI_DIRECTED_RECV: sources filter receives */
	bool shared = false;        /* fi_srx_context: completions ask the endpoint they land on */
	fi_provider *prov = nullptr; /* its log lines */

	rx_ctx() = default;
	rx_ctx(const rx_ctx &) = delete;
	rx_ctx &operator=(const rx_ctx &) = delete;

	bool full() const noexcept { return posted >= size; }
	/* A receive is done with: its room comes back, and it is freed (kept
	 * for the next post_recv unless shared: no allocation per receive). */
	void release(op *o) noexcept;
	/* A receive record for post_recv, from the kept ones if any: what
	 * post_recv does not set is as new op() makes it. */
	op *take();
	/* Close: every posted receive goes, without completions (fi_close(3)). */
	void drain() noexcept;
	/* FI_MULTI_RECV: a body for o has landed; true when o is released
	 * (always true for other receives). */
	bool done(op *o) noexcept;
	/* fi_cancel: the first receive posted with context, off its queue. */
	op *cancel(void *context) noexcept;

	/* Dead peers (issue 30: a rank blocked on a receive from a killed
	 * rank must see an error, not hang).  b learnt that peer a is gone
	 * (its connection broke, its process exited): every receive directed
	 * at a fails with FI_EHOSTDOWN on b, those posted now and those
	 * posted later, until peer_up(a) (a new connection from a, or a left
	 * the AV).  Any-source receives stay. */
	void peer_down(ep_base &b, fi_addr_t a) noexcept;
	void peer_up(fi_addr_t a) noexcept;
	/* b leaves this (shared) context: its marks go. */
	void forget(const ep_base *b) noexcept;

	/* rx_ctx's own (public: its holders stay standard-layout). */
	struct dead_peer {
		fi_addr_t addr;
		ep_base *by; /* where a later post without an endpoint completes */
	};
	std::vector<dead_peer> dead_; /* few: peers of this context known gone */
	/* A directed receive was queued since a liveness scan cleared it:
	 * providers that learn of deaths only by looking (shm) look then. */
	bool directed_hint = false;

	static constexpr size_t spare_max = 256;
	free_list<op, &op::context> spare_; /* released receives, chained through their context */
};

/* Inline: each runs once per receive on every provider's path. */
inline void rx_ctx::release(op *o) noexcept
{
	size_t n = posted.load(std::memory_order_relaxed);
	/* Only the owner's lock holder changes it; a reader (fi_rx_size_left) just loads. */
	if (n)
		posted.store(n - 1, std::memory_order_relaxed);
	if (!o)
		return;
	/* A shared context (tcp's srx) may release under another endpoint's
	 * lock than it posts under: no spares there. */
	if (shared) {
		dispose(o);
		return;
	}
	spare_.keep(o, spare_max);
}

inline op *rx_ctx::take()
{
	op *o = spare_.pop();
	if (!o)
		return make_owned<op>().release(); /* post_recv's queue owns it */
	/* What new op() gives and post_recv does not set (the engine sets
	 * its own fields of mr in engine::post). */
	o->kind = OP_RECV;
	o->want_comp = true;
	o->discard = false;
	o->data = 0;
	o->id = 0;
	o->mr.discard = false;
	return o;
}

/* What FI_PEEK reports of a queued message. */
struct rx_info {
	fi_addr_t src = FI_ADDR_NOTAVAIL; /* resolved where the AV now knows it */
	size_t len = 0;
	uint64_t tag = 0, data = 0;
	bool has_data = false;
};

/* A transport of messages that receive contexts queue. */
struct rx_transport : match::transport {
	ep_base *base = nullptr; /* the endpoint its messages complete on */
	/* A queued message m, as FI_PEEK reports it. */
	virtual rx_info describe(const match::message &m) = 0;
	/* FI_PEEK | FI_CLAIM (or | FI_DISCARD) took m off the queues: the
	 * transport keeps what it holds for m until start() claims it. */
	virtual void hold(const match::message &m) = 0;

protected:
	~rx_transport() = default;
};

inline match::queue_kind queue_of(bool tagged) noexcept
{
	return tagged ? match::queue_kind::tagged : match::queue_kind::msg;
}

inline op *op_of(match::recv *r) noexcept
{
	return static_cast<op *>(r->owner);
}

/* What a receive call asks for (classify_recv). */
enum rx_call : int { RX_POST = 0, RX_PEEK = 1 };
/* RX_PEEK: FI_PEEK / FI_CLAIM / FI_DISCARD on fi_trecvmsg (checked later
 * by check_peek); RX_POST: a receive to post, its buffers and flags
 * checked; else a negative errno (those flags on an untagged fi_recvmsg
 * are -FI_EOPNOTSUPP, logged with x.where). */
ssize_t classify_recv(const msg_xfer &x, fi_provider *prov);
/* The endpoint's caps allow x (fi_msg calls need FI_MSG, fi_tagged calls
 * FI_TAGGED: -FI_EOPNOTSUPP) and its buffers fit the receive (recv) or
 * transmit iov_limit (-FI_EINVAL); logged with x.where. */
ssize_t check_caps(const fi_info *info, const msg_xfer &x, bool recv, fi_provider *prov);
/* fi_recv family's buffers and flags: 0 or -FI_EINVAL. */
ssize_t check_recv(const iovec *iov, size_t cnt, uint64_t flags, bool tagged) noexcept;
/* FI_PEEK / FI_CLAIM / FI_DISCARD's arguments: nullptr, or why not. */
const char *check_peek(const fi_msg_tagged *m, uint64_t flags) noexcept;

/* Posts a receive of x to rx (the caller checked it and that rx is not
 * full): it takes the queued messages that match, or waits.  b is the
 * endpoint it was posted through (nullptr for a shared context's own
 * calls). */
void post_recv(rx_ctx &rx, ep_base *b, const msg_xfer &x);
/* post_recv of one buffer (fi_recv / fi_trecv), flags the endpoint's (the
 * caller checked them as check_recv does). */
void post_recv1(rx_ctx &rx, ep_base *b, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
		void *ctx, uint64_t flags, bool tagged);

/* The one-buffer receives (fi_recv, fi_trecv) an endpoint may post
 * straight through post_recv1, a bit each, computed once at fi_enable: one
 * test per receive instead of the caps, the iovec limit and a shared
 * context.  What it leaves out goes the general way, which refuses it or
 * hands it to the shared context.  Zero before fi_enable. */
enum : uint8_t { rx_fast_msg = 1, rx_fast_tagged = 2 };
inline uint8_t rx_fast_mask(const fi_info *info, bool shared_rx) noexcept
{
	if (shared_rx || !info->rx_attr->iov_limit)
		return 0;
	return uint8_t(((info->caps & FI_MSG) ? rx_fast_msg : 0) | ((info->caps & FI_TAGGED) ? rx_fast_tagged : 0));
}
inline constexpr uint8_t rx_fast_bit(bool tagged) noexcept
{
	return tagged ? rx_fast_tagged : rx_fast_msg;
}

/* How a receive ended, for complete_rx. */
struct rx_end {
	void *buf = nullptr; /* where its body starts */
	size_t len = 0;      /* bytes landed */
	size_t olen = 0;     /* bytes truncated */
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	uint64_t kind = 0; /* msg_kind of the message */
	uint64_t tag = 0, data = 0;
	int err = 0;
	bool release = true; /* the receive is done (else an FI_MULTI_RECV buffer goes on) */
};

/* Completes receive o on endpoint b as e says. */
void complete_rx(ep_base &b, op *o, const rx_end &e);
/* complete_rx of the eager fast path: a message landed whole (len bytes,
 * olen more truncated: FI_ETRUNC) in the one buffer of o, which takes one
 * message (no FI_MULTI_RECV, no discard) and is released.  cflags: what
 * the completion's flags add to FI_RECV (FI_MSG or FI_TAGGED, and
 * FI_REMOTE_CQ_DATA with data). */
void complete_rx_one(ep_base &b, op *o, size_t len, size_t olen, fi_addr_t src, uint64_t cflags, uint64_t tag,
		     uint64_t data);
/* The FI_ECANCELED completion of a receive fi_cancel took off its queue. */
void complete_canceled(ep_base &b, op *o);

/* FI_PEEK / FI_CLAIM / FI_DISCARD on rx (checked by check_peek): first is
 * the endpoint an FI_ENOMSG goes to (nullptr: nowhere). */
ssize_t peek_claim(rx_ctx &rx, ep_base *first, const fi_msg_tagged *m, uint64_t flags);

} // namespace wu::prov

#endif
