/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive/matching engine (see match.h for the rules and the locking). */
#include "prov/common/match.h"

#include <algorithm>
#include <new>

#include <rdma/fi_errno.h>

#include "core/hash.h"
#include "core/owned.h"

namespace wu::match {

namespace {

constexpr size_t first_buckets = 64;
constexpr size_t first_chunk = 64, max_chunk = 4096;

void link_tail(link &head, link &n, void *owner)
{
	n.owner = owner;
	n.prev = head.prev;
	n.next = &head;
	head.prev->next = &n;
	head.prev = &n;
}

void link_del(link &n)
{
	n.prev->next = n.next;
	n.next->prev = n.prev;
	n.prev = n.next = &n;
}

bool tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
	return ((want ^ got) & ~ignore) == 0;
}

bool multi(queue_kind q, const recv *r)
{
	return q == queue_kind::msg && (r->flags & FI_MULTI_RECV);
}

/* An ignore mask of a few high bits, none of the low 32 (where MPI stacks
 * put the application's tag, which an MPI_ANY_TAG receive ignores):
 * MPICH's ch4:ofi ignores its protocol bits (52 to 54) in every receive of
 * a given tag. */
constexpr int key_bits_max = 16;
bool protocol_bits_only(uint64_t ignore)
{
	return ignore && !(ignore & 0xffffffffu) && __builtin_popcountll(ignore) <= key_bits_max;
}

} // namespace

link &engine::table::at(uint64_t tag) const
{
	/* Tags are structured (MPI packs context, rank and tag): mix every bit in. */
	return heads[wu::mix64(tag) & mask];
}

engine::engine()
{
	/* The first tables are small; failing here is the caller's bad_alloc,
	 * as for any object it creates. */
	for (queue &qu : qs_) {
		qu.recv_hash.heads = std::make_unique<link[]>(first_buckets);
		qu.recv_hash.mask = first_buckets - 1;
		qu.ux_hash.heads = std::make_unique<link[]>(first_buckets);
		qu.ux_hash.mask = first_buckets - 1;
	}
}

engine::~engine() = default;

/* Keyed receives live in the hash, the rest (and every msg one) in the wildcard list. */
bool engine::exact(queue_kind q, const recv *r) const
{
	return q == queue_kind::tagged && (r->ignore & key_) == 0;
}

/* Rebuilds a table with at least want buckets from its entries in order,
 * so each chain keeps posting (arrival) order.  Out of memory: the old
 * table stays, only its chains get longer. */
void engine::grow(table &t, link &all, bool recvs, size_t want)
{
	size_t n = t.mask + 1;
	while (n < want)
		n *= 2;
	auto heads = wu::try_make_array<link>(n);
	if (!heads)
		return;
	relink(t, std::move(heads), n, all, recvs);
}

/* t's chains rebuilt in heads (n of them) from its entries in order. */
void engine::relink(table &t, std::unique_ptr<link[]> heads, size_t n, link &all, bool recvs)
{
	t.heads = std::move(heads);
	t.mask = n - 1;
	for (link *l = all.next; l != &all; l = l->next) {
		if (recvs) {
			auto *r = static_cast<recv *>(l->owner);
			if (exact(r->q, r)) {
				r->bucket.prev = r->bucket.next = &r->bucket;
				link_tail(t.at(r->tag & key_), r->bucket, r);
			}
		} else {
			auto *u = static_cast<unexpected *>(l->owner);
			u->bucket.prev = u->bucket.next = &u->bucket;
			link_tail(t.at(u->m.tag & key_), u->bucket, u);
		}
	}
}

/* A tagged receive that ignores a few high bits of its tag (MPICH: every
 * receive of a given tag) would scan the wildcard list and the unexpected
 * messages one by one.  The first such receive to be posted makes the
 * tagged hash key on the other bits instead, once, while no wildcard
 * receive is posted (every posted receive is exact then, and stays keyed);
 * from then on receives ignoring only those bits hash like exact ones.  Out of memory:
 * nothing changes, they stay wildcards. */
[[gnu::noinline]] void engine::maybe_rekey(queue &qu, uint64_t ignore)
{
	if (key_ != ~uint64_t(0) || !protocol_bits_only(ignore) || qu.recv_wild.next != &qu.recv_wild)
		return;
	size_t nr = qu.recv_hash.mask + 1, nu = qu.ux_hash.mask + 1;
	auto hr = wu::try_make_array<link>(nr), hu = wu::try_make_array<link>(nu);
	if (!hr || !hu)
		return;
	key_ = ~ignore;
	relink(qu.recv_hash, std::move(hr), nr, qu.recv_all, true);
	relink(qu.ux_hash, std::move(hu), nu, qu.ux_all, false);
}

/* Nodes in the pool's next chunk: doubling from first_chunk up to
 * max_chunk, then max_chunk each.  Doubled while below the cap, never
 * shifted by the chunk count: 64 << 58 wrapped to 0 (a chunk of no node,
 * then a null free list read, issue 32). */
size_t engine::next_chunk_size() const noexcept
{
	size_t n = first_chunk;
	for (size_t i = 0; i < chunks_.size() && n < max_chunk; i++)
		n *= 2;
	return std::min(n, max_chunk);
}

unexpected *engine::alloc_ux()
{
	if (!free_) {
		size_t n = next_chunk_size();
		auto chunk = wu::try_make_array<unexpected>(n);
		if (!chunk)
			return nullptr;
		unexpected *c = chunk.get();
		try {
			chunks_.push_back(std::move(chunk));
		} catch (...) {
			return nullptr; /* chunk frees it */
		}
		for (size_t i = n; i-- > 0;) {
			c[i].next_free = free_;
			free_ = &c[i];
		}
	}
	unexpected *u = free_;
	if (!u) [[unlikely]]
		return nullptr;
	free_ = u->next_free;
	u->next_free = nullptr;
	return u;
}

void engine::free_ux(unexpected *u)
{
	u->m = message();
	u->claim_ctx = nullptr;
	u->next_free = free_;
	free_ = u;
}

/* A directed receive takes only its source's messages; a message whose
 * source was unknown on arrival is asked again (its peer may be in the AV now). */
bool engine::src_ok(fi_addr_t want, unexpected *u)
{
	if (want == FI_ADDR_UNSPEC)
		return true;
	if (u->m.src == FI_ADDR_NOTAVAIL && u->m.tp)
		u->m.src = u->m.tp->resolve(u->m);
	return u->m.src == want;
}

/* Inlined into arrive, its only caller: once per message. */
[[gnu::always_inline]] inline recv *engine::find_recv(queue &qu, queue_kind q, const message &m)
{
	recv *best = nullptr;
	if (q == queue_kind::tagged && qu.n_exact) {
		if (qu.n_exact == 1 && qu.recv_wild.next == &qu.recv_wild) {
			/* The only receive posted (a ping-pong's): no hashing. */
			auto *r = static_cast<recv *>(qu.recv_all.next->owner);
			bool ok = tag_match(r->tag, r->ignore, m.tag) && (r->src == FI_ADDR_UNSPEC || r->src == m.src);
			return ok ? r : nullptr;
		}
		link &h = qu.recv_hash.at(m.tag & key_);
		for (link *l = h.next; l != &h; l = l->next) {
			auto *r = static_cast<recv *>(l->owner);
			if ((r->tag == m.tag || tag_match(r->tag, r->ignore, m.tag)) &&
			    (r->src == FI_ADDR_UNSPEC || r->src == m.src)) {
				best = r;
				break;
			}
		}
	}
	/* The wildcard list is in posting order: past best's sequence number
	 * nothing there can win. */
	for (link *l = qu.recv_wild.next; l != &qu.recv_wild; l = l->next) {
		auto *r = static_cast<recv *>(l->owner);
		if (best && r->seq > best->seq)
			break;
		if ((q == queue_kind::msg || tag_match(r->tag, r->ignore, m.tag)) &&
		    (r->src == FI_ADDR_UNSPEC || r->src == m.src))
			return r;
	}
	return best;
}

unexpected *engine::find_ux(queue &qu, queue_kind q, uint64_t tag, uint64_t ignore, fi_addr_t src)
{
	if (q == queue_kind::tagged && (ignore & key_) == 0) {
		link &h = qu.ux_hash.at(tag & key_);
		for (link *l = h.next; l != &h; l = l->next) {
			auto *u = static_cast<unexpected *>(l->owner);
			if (tag_match(tag, ignore, u->m.tag) && src_ok(src, u))
				return u;
		}
		return nullptr;
	}
	for (link *l = qu.ux_all.next; l != &qu.ux_all; l = l->next) {
		auto *u = static_cast<unexpected *>(l->owner);
		if ((q == queue_kind::msg || tag_match(tag, ignore, u->m.tag)) && src_ok(src, u))
			return u;
	}
	return nullptr;
}

/* Inlined into post, its only caller: once per receive. */
[[gnu::always_inline]] inline void engine::enqueue_recv(queue &qu, recv *r)
{
	r->seq = next_seq_++;
	/* Before r is on recv_all: a rekey hashes what is there. */
	if (r->q == queue_kind::tagged && (r->ignore & key_)) [[unlikely]]
		maybe_rekey(qu, r->ignore);
	link_tail(qu.recv_all, r->all, r);
	if (exact(r->q, r)) {
		/* r is on recv_all already: a grow() links it into its bucket
		 * (linking it again would make it its own successor). */
		size_t before = qu.recv_hash.mask;
		if (qu.n_exact + 1 > qu.recv_hash.mask + 1)
			grow(qu.recv_hash, qu.recv_all, true, 2 * (qu.n_exact + 1));
		if (before == qu.recv_hash.mask)
			link_tail(qu.recv_hash.at(r->tag & key_), r->bucket, r);
		qu.n_exact++;
	} else {
		link_tail(qu.recv_wild, r->bucket, r);
	}
	qu.n_recv++;
	r->in_queue = true;
}

[[gnu::always_inline]] inline void engine::dequeue_recv(recv *r)
{
	if (!r->in_queue)
		return;
	queue &qu = qs_[idx(r->q)];
	link_del(r->all);
	link_del(r->bucket);
	if (exact(r->q, r))
		qu.n_exact--;
	qu.n_recv--;
	r->in_queue = false;
}

void engine::dequeue_ux(unexpected *u)
{
	if (u->all.next == &u->all)
		return; /* held: on no queue */
	queue &qu = qs_[idx(u->q)];
	link_del(u->all);
	link_del(u->bucket);
	qu.n_ux--;
}

void engine::start(recv *r, unexpected *u, size_t off, size_t into)
{
	message m = u->m;
	free_ux(u);
	if (m.tp)
		m.tp->start(*this, r, m, off, into);
}

int engine::arrive(queue_kind q, const message &m, match_result *out) noexcept
{
	if (!out)
		return -FI_EINVAL;
	*out = match_result();
	queue &qu = qs_[idx(q)];
	if (recv *r = find_recv(qu, q, m)) {
		out->r = r;
		out->off = r->used;
		out->into = std::min(r->room(), m.len);
		if (multi(q, r)) {
			r->used += out->into;
			r->busy++;
			out->spent = r->room() < r->min_free;
		} else {
			out->spent = true;
		}
		if (out->spent) {
			dequeue_recv(r);
			r->spent = true;
		}
		return 0;
	}
	unexpected *u = alloc_ux();
	if (!u)
		return -FI_ENOMEM;
	u->m = m;
	u->q = q;
	link_tail(qu.ux_all, u->all, u);
	if (q == queue_kind::tagged) {
		if (qu.n_ux + 1 > qu.ux_hash.mask + 1) {
			/* u is on ux_all already: grow() puts it in its bucket. */
			size_t before = qu.ux_hash.mask;
			grow(qu.ux_hash, qu.ux_all, false, 2 * (qu.n_ux + 1));
			if (before == qu.ux_hash.mask)
				link_tail(qu.ux_hash.at(m.tag & key_), u->bucket, u);
		} else {
			link_tail(qu.ux_hash.at(m.tag & key_), u->bucket, u);
		}
	} else {
		u->bucket.prev = u->bucket.next = &u->bucket; /* msg messages are in no hash */
	}
	qu.n_ux++;
	out->queued = u;
	return 0;
}

bool engine::post(queue_kind q, recv *r) noexcept
{
	if (!r || r->in_queue)
		return r != nullptr; /* posted twice: relinking would corrupt both queues */
	queue &qu = qs_[idx(q)];
	r->q = q;
	r->used = 0;
	r->busy = 0;
	r->spent = false;
	/* Nothing queued to take: straight to the queue, whose links
	 * enqueue_recv sets (a ping-pong's every receive). */
	if (!qu.n_ux) [[likely]] {
		enqueue_recv(qu, r);
		return true;
	}
	r->all.prev = r->all.next = &r->all;
	r->bucket.prev = r->bucket.next = &r->bucket;
	bool many = multi(q, r);
	uint64_t ignore = q == queue_kind::msg ? ~uint64_t(0) : r->ignore;
	/* Before scanning queued messages too (enqueue_recv does it for the
	 * others), so that a scan can be a bucket's. */
	if (q == queue_kind::tagged && (ignore & key_)) [[unlikely]]
		maybe_rekey(qu, ignore);
	while (unexpected *u = qu.n_ux ? find_ux(qu, q, r->tag, ignore, r->src) : nullptr) {
		size_t off = r->used;
		size_t into = std::min(r->room(), u->m.len);
		if (many) {
			r->used += into;
			r->busy++;
		}
		/* Decided before start: the transport may release r in there. */
		bool spent = !many || r->room() < r->min_free;
		r->spent = spent;
		dequeue_ux(u);
		start(r, u, off, into);
		if (spent)
			return false;
	}
	enqueue_recv(qu, r);
	return true;
}

bool engine::recv_done(recv *r) noexcept
{
	if (!r)
		return false;
	if (r->busy > 0)
		r->busy--;
	return r->busy == 0 && r->spent;
}

template <class Pred>
recv *engine::unpost_first(Pred &&want) noexcept
{
	for (queue &qu : qs_)
		for (link *l = qu.recv_all.next; l != &qu.recv_all; l = l->next) {
			auto *r = static_cast<recv *>(l->owner);
			if (r->busy == 0 && want(r)) {
				dequeue_recv(r);
				return r;
			}
		}
	return nullptr;
}

recv *engine::cancel(void *context) noexcept
{
	return unpost_first([context](const recv *r) { return r->context == context; });
}

void engine::unpost(recv *r) noexcept
{
	if (r)
		dequeue_recv(r);
}

recv *engine::first_posted(queue_kind q) const noexcept
{
	const queue &qu = qs_[idx(q)];
	return qu.recv_all.next == &qu.recv_all ? nullptr : static_cast<recv *>(qu.recv_all.next->owner);
}

recv *engine::unpost_from(fi_addr_t src) noexcept
{
	return unpost_first([src](const recv *r) { return r->src == src; });
}

bool engine::posted_from(fi_addr_t src) const noexcept
{
	for (const queue &qu : qs_)
		for (const link *l = qu.recv_all.next; l != &qu.recv_all; l = l->next)
			if (static_cast<const recv *>(l->owner)->src == src)
				return true;
	return false;
}

unexpected *engine::peek(queue_kind q, uint64_t tag, uint64_t ignore, fi_addr_t src) noexcept
{
	return find_ux(qs_[idx(q)], q, tag, q == queue_kind::msg ? ~uint64_t(0) : ignore, src);
}

int engine::hold(unexpected *u, void *ctx) noexcept
{
	if (!u)
		return -FI_EINVAL;
	try {
		held_.insert(u);
	} catch (...) {
		return -FI_ENOMEM;
	}
	dequeue_ux(u);
	u->claim_ctx = ctx;
	return 0;
}

unexpected *engine::held(const void *u, const void *ctx) const noexcept
{
	if (!held_.count(u))
		return nullptr;
	auto *x = const_cast<unexpected *>(static_cast<const unexpected *>(u));
	return x->claim_ctx == ctx ? x : nullptr;
}

void engine::claim(unexpected *u, recv *r) noexcept
{
	if (!u || !r || !held_.erase(u))
		return; /* only a message held() returned */
	r->used = 0;
	r->busy = 0;
	r->spent = true;
	r->in_queue = false;
	start(r, u, 0, r->discard ? 0 : std::min(r->len, u->m.len));
}

void engine::detach(transport *tp) noexcept
{
	for (queue &qu : qs_) {
		for (link *l = qu.ux_all.next; l != &qu.ux_all;) {
			auto *u = static_cast<unexpected *>(l->owner);
			l = l->next;
			if (u->m.tp != tp)
				continue;
			message m = u->m;
			dequeue_ux(u);
			free_ux(u);
			tp->drop(*this, m);
		}
	}
}

void engine::unqueue(unexpected *u) noexcept
{
	if (!u)
		return;
	held_.erase(u);
	dequeue_ux(u);
	free_ux(u);
}

} // namespace wu::match
