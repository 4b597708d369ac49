/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive/matching engine every provider shares (a shared receive
 * context): posted receives and unexpected messages, for msg and tagged,
 * with tag + ignore, directed receives, FI_MULTI_RECV, FI_PEEK / FI_CLAIM /
 * FI_DISCARD, cancel and truncation.  It knows nothing of sockets or shared
 * memory: a transport hands it an arriving message (source, tag, length and
 * a cookie of its own) and gets back the receive it matched, or learns that
 * it was queued; when a receive is posted later, the engine calls the
 * message's transport back to start it (eager copy, rendezvous, ...).  One
 * engine can serve several transports at once: each message carries its
 * transport, so sources are fi_addr values in one address space shared by
 * them (the owner's AV).
 *
 * Matching rules:
 *  - msg and tagged are separate queues;
 *  - tag + ignore: a receive matches a tag t when ((tag ^ t) & ~ignore) == 0;
 *  - a receive with src != FI_ADDR_UNSPEC (FI_DIRECTED_RECV) matches only
 *    messages from that source; the owner passes FI_ADDR_UNSPEC when its
 *    endpoint has no FI_DIRECTED_RECV;
 *  - of the posted receives that match a message, the one posted first wins
 *    (sequence numbers order the exact-tag hash and the wildcard list);
 *  - of the unexpected messages that match a receive, the one that arrived
 *    first wins, so messages from one source are taken in arrival order;
 *  - FI_MULTI_RECV receives (msg only) take one message after another, each
 *    at the next offset, and leave the queue once less than min_free bytes
 *    are left; the transport reports when each body has landed
 *    (recv_done), and the buffer is released when none is still landing.
 *
 * Cost: a receive with ignore == 0 (an exact tag) finds its unexpected
 * message in a hash bucket, and an arriving message finds its receive in
 * the exact-tag bucket and at the head of the wildcard list: O(1) when no
 * directed receive or unmatched source is in the way.  Wildcard receives
 * scan the unexpected messages in arrival order.  A receive ignoring only
 * a few high bits of its tag (MPICH ignores its protocol bits in every
 * receive) counts as exact once the first one has made the hash key on the
 * other bits (maybe_rekey).  Receives are the caller's
 * nodes (no allocation); unexpected messages come from a pool.
 *
 * A provider uses it so: an arriving header (eager or rendezvous request)
 * is arrive(); on a match the body lands at r/off/into, else the message's
 * cookie keeps what the transport holds for it (staged bytes, a pending
 * request).  fi_recv is post(), and start() does what a match at arrival
 * would (copy, clear the rendezvous, or land the body when it is whole).
 * FI_PEEK is peek(); FI_CLAIM / FI_DISCARD with it hold() the message and
 * keep it in fi_context::internal[0]; a later FI_CLAIM finds it with
 * held(internal[0], context) and claim()s it.  fi_cancel is cancel().  An
 * FI_MULTI_RECV buffer is completed with FI_MULTI_RECV once recv_done,
 * called as each of its bodies lands, says it is released.  Counting
 * posted receives against rx_attr->size stays the provider's.
 *
 * Locking: the engine is not thread-safe.  Its owner (an endpoint, or a
 * shared receive context lending it to several endpoints) holds one lock
 * around every call, and transport callbacks run under that lock: they may
 * call recv_done but must not post, arrive, peek, claim or cancel. */
#ifndef WU_PROV_COMMON_MATCH_H
#define WU_PROV_COMMON_MATCH_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include <rdma/fabric.h>

namespace wu::match {

/* A doubly linked circular list node; owner points back at the node holding it. */
struct link {
	link *prev = this;
	link *next = this;
	void *owner = nullptr;
};

enum class queue_kind : uint8_t { msg = 0, tagged = 1 };

class engine;
struct transport;

/* An arriving message, as its transport describes it. */
struct message {
	transport *tp = nullptr;     /* who starts it when a receive takes it later */
	void *cookie = nullptr;      /* the transport's own handle for it */
	fi_addr_t src = FI_ADDR_NOTAVAIL; /* FI_ADDR_NOTAVAIL: not known yet (see transport::resolve) */
	uint64_t tag = 0;            /* ignored in the msg queue */
	uint64_t data = 0;           /* remote CQ data, if the transport carries it */
	uint64_t flags = 0;          /* the transport's, e.g. FI_REMOTE_CQ_DATA */
	size_t len = 0;
};

/* A posted receive: the caller's node, filled before post() and untouched
 * by the caller while the engine holds it (queued() or busy). */
struct recv {
	/* the caller's */
	void *context = nullptr;
	void *owner = nullptr;            /* e.g. the provider's operation */
	uint64_t flags = 0;               /* FI_MULTI_RECV is read; others are kept */
	uint64_t tag = 0, ignore = 0;     /* tagged queue only */
	fi_addr_t src = FI_ADDR_UNSPEC;   /* FI_ADDR_UNSPEC: any source */
	size_t len = 0;                   /* buffer bytes */
	size_t min_free = 0;              /* FI_MULTI_RECV: leave the queue below this */
	bool discard = false;             /* FI_DISCARD: takes a claimed message to drop it */

	/* the engine's */
	size_t used = 0; /* FI_MULTI_RECV: bytes handed out */
	int busy = 0;    /* FI_MULTI_RECV: bodies still landing */
	bool queued() const { return in_queue; }
	size_t room() const { return len - used; }

private:
	friend class engine;
	link all, bucket; /* posting order; hash bucket or wildcard list */
	uint64_t seq = 0;
	queue_kind q = queue_kind::msg;
	bool in_queue = false;
	bool spent = false; /* out of the queue for good: released once busy is 0 */
};

/* A queued unexpected message (engine-owned). */
struct unexpected {
	message m;

private:
	friend class engine;
	link all, bucket; /* arrival order; hash bucket */
	queue_kind q = queue_kind::msg;
	void *claim_ctx = nullptr;
	unexpected *next_free = nullptr;
};

/* What a transport does for the engine.  Every call runs under the
 * owner's lock (see the top). */
struct transport {
	/* A receive took the queued message m: start it into r at byte offset
	 * off, into bytes (m.len - into are truncated).  The engine has taken
	 * the message off its queues and frees its node when this returns.
	 * For FI_MULTI_RECV receives, call engine::recv_done once the body has
	 * landed (now or later).  r->discard: drop the message, no data. */
	virtual void start(engine &e, recv *r, const message &m, size_t off, size_t into) = 0;
	/* The engine drops a queued message it will never start (detach). */
	virtual void drop(engine &, const message &) {}
	/* The source of a message whose src was FI_ADDR_NOTAVAIL when it
	 * arrived (e.g. its peer entered the AV since); asked only when a
	 * directed receive needs it. */
	virtual fi_addr_t resolve(const message &m) { return m.src; }

protected:
	~transport() = default;
};

/* What arrive() found. */
struct match_result {
	recv *r = nullptr;           /* nullptr: the message was queued */
	unexpected *queued = nullptr; /* its queue entry then */
	size_t off = 0;              /* where the body lands in r */
	size_t into = 0;             /* bytes that fit; len - into are truncated */
	bool spent = false;          /* r left the queue (always, unless FI_MULTI_RECV with room left) */
};

class engine {
public:
	engine();
	~engine(); /* frees queued nodes without callbacks: detach() first */
	engine(const engine &) = delete;
	engine &operator=(const engine &) = delete;

	/* A message arrived.  0, and *out says whether a receive took it (the
	 * transport lands the body there) or it was queued; -FI_ENOMEM if it
	 * could not be queued (nothing changed). */
	int arrive(queue_kind q, const message &m, match_result *out) noexcept;

	/* Posts r: it takes queued messages that match (calling their
	 * transports' start), and is queued if it still wants more.  Returns
	 * true if r was queued, false if messages consumed it (then r belongs
	 * to the transports that started into it; an FI_MULTI_RECV one is
	 * released by recv_done).  used and busy start at 0; r must not be
	 * queued already (a second post of a queued r changes nothing). */
	bool post(queue_kind q, recv *r) noexcept;

	/* FI_MULTI_RECV: a body handed out for r has landed.  True when r is
	 * now released: it left the queue and nothing more lands in it. */
	bool recv_done(recv *r) noexcept;

	/* fi_cancel: the first posted receive (msg queue first) with this
	 * context and nothing landing in it, taken off its queue; nullptr if
	 * there is none. */
	recv *cancel(void *context) noexcept;
	/* Takes r off its queue (endpoint close, or a caller's own cancel). */
	void unpost(recv *r) noexcept;
	/* The oldest posted receive of a queue, or nullptr (to drain on close). */
	recv *first_posted(queue_kind q) const noexcept;
	/* A dead peer: the oldest posted receive (msg queue first) directed at
	 * src with nothing landing in it, taken off its queue; nullptr if none. */
	recv *unpost_from(fi_addr_t src) noexcept;
	/* Whether a receive directed at src is posted. */
	bool posted_from(fi_addr_t src) const noexcept;

	/* FI_PEEK: the queued message a receive (tag, ignore, src) would take
	 * now, or nullptr; nothing changes. */
	unexpected *peek(queue_kind q, uint64_t tag, uint64_t ignore, fi_addr_t src) noexcept;
	/* FI_PEEK | FI_CLAIM (or | FI_DISCARD): takes u (as peek returned it) off its
	 * queue and holds it for claim() with ctx.  -FI_ENOMEM: nothing changed. */
	int hold(unexpected *u, void *ctx) noexcept;
	/* FI_CLAIM: the message held for ctx, or nullptr if u is not one (a
	 * stale or foreign pointer is only compared, never read). */
	unexpected *held(const void *u, const void *ctx) const noexcept;
	/* Starts the held message u (as held() returned it) into r, at offset
	 * 0; r->discard drops it.  Anything else is ignored. */
	void claim(unexpected *u, recv *r) noexcept;

	/* Drops every queued (not held) message of tp, calling tp->drop: a
	 * transport endpoint leaving a shared engine.  Held ones stay until
	 * claimed; tp's start reports their error then. */
	void detach(transport *tp) noexcept;
	/* Drops one queued message (its transport no longer has it), no callback. */
	void unqueue(unexpected *u) noexcept;

	size_t posted_count(queue_kind q) const noexcept { return qs_[idx(q)].n_recv; }
	size_t queued_count(queue_kind q) const noexcept { return qs_[idx(q)].n_ux; }
	size_t held_count() const noexcept { return held_.size(); }

private:
	/* A chained hash of list heads by tag; grows, keeping each chain's order. */
	struct table {
		std::unique_ptr<link[]> heads;
		size_t mask = 0;
		link &at(uint64_t tag) const;
	};
	struct queue {
		link recv_all, recv_wild, ux_all;
		table recv_hash, ux_hash;
		size_t n_recv = 0, n_exact = 0, n_ux = 0;
	};
	static size_t idx(queue_kind q) { return q == queue_kind::tagged ? 1 : 0; }
	bool exact(queue_kind q, const recv *r) const;
	bool src_ok(fi_addr_t want, unexpected *u);
	recv *find_recv(queue &qu, queue_kind q, const message &m);
	unexpected *find_ux(queue &qu, queue_kind q, uint64_t tag, uint64_t ignore, fi_addr_t src);
	void enqueue_recv(queue &qu, recv *r);
	void dequeue_recv(recv *r);
	/* The first posted receive (msg queue first) with nothing landing
	 * in it that want(r) takes, off its queue; nullptr if none. */
	template <class Pred>
	recv *unpost_first(Pred &&want) noexcept;
	void dequeue_ux(unexpected *u);
	void grow(table &t, link &all, bool recvs, size_t want);
	void relink(table &t, std::unique_ptr<link[]> heads, size_t n, link &all, bool recvs);
	void maybe_rekey(queue &qu, uint64_t ignore);
	size_t next_chunk_size() const noexcept;
	unexpected *alloc_ux();
	void free_ux(unexpected *u);
	void start(recv *r, unexpected *u, size_t off, size_t into);

	queue qs_[2];
	/* The tag bits the tagged hash keys on (all, until maybe_rekey). */
	uint64_t key_ = ~uint64_t(0);
	uint64_t next_seq_ = 1;
	unexpected *free_ = nullptr;
	std::vector<std::unique_ptr<unexpected[]>> chunks_;
	std::unordered_set<const void *> held_;
};

} // namespace wu::match

#endif
