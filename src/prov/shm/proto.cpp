/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: peers, the cell protocol (shm_ep.h), sends and progress. */
#include "config.h"

#include <time.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "av/av.h"
#include "core/log.h"
#include "core/shim.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

int64_t now_ms() noexcept
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void to_cell(const wire &w, shm_tp::cell &c) noexcept
{
	c.kind = w.kind;
	c.flags = w.flags;
	c.inline_len = w.inline_len;
	c.sender = w.sender;
	/* tag .. data: 48 contiguous bytes in both */
	static_assert(offsetof(wire, data) + sizeof(wire::data) - offsetof(wire, tag) == wire_name_bytes);
	static_assert(sizeof(shm_tp::cell) - offsetof(shm_tp::cell, tag) == wire_name_bytes);
	memcpy(reinterpret_cast<unsigned char *>(&c) + offsetof(shm_tp::cell, tag),
	       reinterpret_cast<const unsigned char *>(&w) + offsetof(wire, tag), wire_name_bytes);
}

/* A wire is a cell's bytes after seq, field for field: region::pop_body
 * fills one without a second copy. */
static_assert(sizeof(wire) == shm_tp::region::body_size && std::is_trivially_copyable_v<wire>);
static_assert(offsetof(wire, kind) == offsetof(shm_tp::cell, kind) - 8 &&
	      offsetof(wire, flags) == offsetof(shm_tp::cell, flags) - 8 &&
	      offsetof(wire, inline_len) == offsetof(shm_tp::cell, inline_len) - 8 &&
	      offsetof(wire, sender) == offsetof(shm_tp::cell, sender) - 8 &&
	      offsetof(wire, tag) == offsetof(shm_tp::cell, tag) - 8 &&
	      offsetof(wire, cq_data) == offsetof(shm_tp::cell, cq_data) - 8 &&
	      offsetof(wire, len) == offsetof(shm_tp::cell, len) - 8 &&
	      offsetof(wire, arg) == offsetof(shm_tp::cell, arg) - 8 &&
	      offsetof(wire, data) == offsetof(shm_tp::cell, data) - 8);

namespace {

int push(remote *r, const wire &w)
{
	shm_tp::cell c;
	to_cell(w, c);
	return r->p->push(c);
}

} // namespace

/* ---- peers ---- */

namespace {

/* A peer found dead whose name a new process took: attach its region
 * and start over (a first cell again); false while it stays gone. */
bool reattach(shm_ep *ep, remote *r)
{
	shm_tp::peer *p = nullptr;
	if (shm_tp::peer::attach(r->name.c_str(), &p))
		return false;
	r->p.reset(p);
	r->dead = false;
	if (!ep->rx->dead_.empty())
		ep->rx->peer_up(src_of(ep, r)); /* its receives wait again */
	r->id_there = no_slot;
	r->hello_sent = false;
	r->stuck_since = 0;
	return true;
}

remote *add_remote(shm_ep *ep, const std::string &name, int *err)
{
	auto it = ep->by_name.find(name);
	if (it != ep->by_name.end()) {
		remote *r = ep->remotes[it->second].get();
		if (r->dead)
			reattach(ep, r);
		return r;
	}
	shm_tp::peer *p = nullptr;
	int r = shm_tp::peer::attach(name.c_str(), &p);
	if (r == -FI_ENOENT || r == -FI_EAGAIN) {
		/* Not there yet: a peer whose address was computed (a rank name)
		 * may not have enabled its endpoint; the caller retries. */
		WU_INFO(P(), FI_LOG_EP_DATA, "peer %s%s has no region yet: try again\n", scheme, name.c_str());
		*err = -FI_EAGAIN;
		return nullptr;
	}
	if (r) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "cannot attach peer %s%s: %s\n", scheme, name.c_str(),
			       fi_strerror(-r));
		*err = r;
		return nullptr;
	}
	auto rm = std::make_unique<remote>();
	rm->name = name;
	rm->p.reset(p);
	rm->slot = uint32_t(ep->remotes.size());
	remote *out = rm.get();
	ep->remotes.push_back(std::move(rm));
	ep->by_name.emplace(name, out->slot);
	return out;
}

/* r's backlog is about to get an entry: progress must visit r. */
void list(shm_ep *ep, remote *r)
{
	busy(ep);
	if (!r->listed) {
		r->listed = true;
		ep->backlogged.push_back(r->slot);
		/* The auto-progress thread may sleep with nothing of its own
		 * to wait on: it must come back to retry this. */
		if (ep->autop.on())
			ep->autop.arm_in(1);
	}
}

/* Pushes p now; -FI_EAGAIN when the queue (or the bounce pool) is full. */
int try_push(shm_ep *ep, remote *r, pending &p)
{
	int slot = -1;
	if (p.need_slot) {
		slot = ep->rg->bounce_get();
		if (slot < 0)
			return -FI_EAGAIN;
		memcpy(ep->rg->bounce_addr(slot), p.payload.data(), p.payload.size());
		p.c.arg = uint64_t(slot);
	}
	if (p.c.kind != K_HELLO)
		p.c.sender = r->id_there;
	int ret = push(r, p.c);
	if (ret) {
		if (slot >= 0)
			ep->rg->bounce_put(slot);
		return ret;
	}
	if (p.op)
		complete_tx(ep, p.op, 0);
	return 0;
}

/* Pushes what r's backlog holds, in order, as far as it goes. */
void drain(shm_ep *ep, remote *r)
{
	while (!r->backlog.empty() && !r->dead) {
		pending &p = r->backlog.front();
		if (p.c.kind != K_HELLO && r->id_there == no_slot)
			return;
		int ret = try_push(ep, r, p);
		if (ret == -FI_EAGAIN) {
			if (!r->stuck_since)
				r->stuck_since = now_ms();
			return;
		}
		if (ret) {
			peer_dead(ep, r, fi_strerror(-ret));
			return;
		}
		r->stuck_since = 0;
		r->backlog.pop_front();
		if (ep->tx_busy)
			ep->tx_busy--;
	}
}

void say_hello(shm_ep *ep, remote *r)
{
	if (r->hello_sent)
		return;
	r->hello_sent = true;
	pending p;
	p.c.kind = K_HELLO;
	p.c.sender = r->slot;
	/* The name fills the 48 bytes after cell::sender. */
	auto *dst = reinterpret_cast<unsigned char *>(&p.c.tag);
	memset(dst, 0, 48);
	memcpy(dst, ep->name.data(), std::min(ep->name.size(), size_t(47)));
	list(ep, r);
	r->backlog.push_front(std::move(p));
	ep->tx_busy++;
}

void on_hello(shm_ep *ep, const wire &c)
{
	char name[48];
	memcpy(name, &c.tag, 47);
	name[47] = '\0';
	size_t n = strnlen(name, 47);
	if (!valid_name(name, n)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "endpoint %s: a first cell carries no valid name; dropped\n",
			       ep->name.c_str());
		return;
	}
	int err = 0;
	remote *r = add_remote(ep, std::string(name, n), &err);
	if (!r)
		return;
	if (r->dead || !r->p->alive()) {
		/* Its name was taken over by a new process: that one speaks now. */
		peer_dead(ep, r, "its process is gone");
		if (!reattach(ep, r))
			return;
	}
	r->id_there = c.sender;
	pending p;
	p.c.kind = K_HELLO_ACK;
	p.c.arg = r->slot;
	/* Ahead of anything that waited for the peer's answer. */
	list(ep, r);
	r->backlog.push_front(std::move(p));
	ep->tx_busy++;
	drain(ep, r);
}

remote *sender_of(shm_ep *ep, const wire &c)
{
	if (c.sender >= ep->remotes.size()) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "endpoint %s: a cell of kind %u names unknown peer %u; dropped\n",
			       ep->name.c_str(), unsigned(c.kind), unsigned(c.sender));
		return nullptr;
	}
	return ep->remotes[c.sender].get();
}

void on_done(shm_ep *ep, remote *r, const wire &c)
{
	auto it = ep->waiting.find(c.arg);
	if (it == ep->waiting.end() || it->second->peer != r->slot) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s answers an operation we do not have\n", r->name.c_str());
		return;
	}
	txop *o = it->second;
	ep->waiting.erase(it);
	if (r->waiting)
		r->waiting--;
	complete_tx(ep, o, int(c.len));
}

void on_pull(shm_ep *ep, remote *r, const wire &c)
{
	auto it = ep->waiting.find(c.arg);
	if (it == ep->waiting.end() || it->second->peer != r->slot || it->second->pulling) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s pulls a message we do not have\n", r->name.c_str());
		return;
	}
	txop *o = it->second;
	o->pulling = true;
	o->pull_token = c.tag;
	o->pull_off = 0;
	busy(ep);
	ep->pulls_out.push_back(o);
}

/* Streams pulled LARGE sends through our bounce slots. */
void stream(shm_ep *ep)
{
	for (size_t k = 0; k < ep->pulls_out.size();) {
		txop *o = ep->pulls_out[k];
		remote *r = ep->remotes[o->peer].get();
		bool gone = r->dead;
		while (!gone && o->pull_off < o->len && r->backlog.empty()) {
			int slot = ep->rg->bounce_get();
			if (slot < 0)
				break;
			size_t n = std::min(o->len - o->pull_off, ep->rg->bounce_size());
			copy_from_iov(o->iov, o->cnt, o->pull_off, ep->rg->bounce_addr(slot), n);
			wire c;
			c.kind = K_CHUNK;
			c.sender = r->id_there;
			c.tag = o->pull_token;
			c.cq_data = o->pull_off;
			c.len = n;
			c.arg = uint64_t(slot);
			int ret = push(r, c);
			if (ret) {
				ep->rg->bounce_put(slot);
				if (ret != -FI_EAGAIN) {
					peer_dead(ep, r, fi_strerror(-ret));
					gone = true;
				} else if (!r->stuck_since) {
					r->stuck_since = now_ms();
				}
				break;
			}
			r->stuck_since = 0;
			o->pull_off += n;
		}
		if (gone) {
			/* peer_dead completed it */
			continue;
		}
		if (o->pull_off >= o->len) {
			/* Every byte is out of the buffer: the send is done. */
			ep->pulls_out.erase(ep->pulls_out.begin() + ptrdiff_t(k));
			ep->waiting.erase(o->id);
			if (r->waiting)
				r->waiting--;
			complete_tx(ep, o, 0);
			continue;
		}
		k++;
	}
}

void handle(shm_ep *ep, const wire &c)
{
	if (c.kind == K_HELLO) {
		on_hello(ep, c);
		return;
	}
	remote *r = sender_of(ep, c);
	if (!r)
		return;
	switch (c.kind) {
	case K_HELLO_ACK:
		r->id_there = uint32_t(c.arg);
		drain(ep, r);
		return;
	case K_INLINE:
	case K_BOUNCE:
	case K_LARGE:
		ux_arrive(ep, r, c);
		return;
	case K_DONE:
		on_done(ep, r, c);
		return;
	case K_PULL:
		on_pull(ep, r, c);
		return;
	case K_CHUNK:
		on_chunk(ep, r, c);
		return;
	case K_RMA:
		on_rma(ep, r, c);
		return;
	case K_RMA_REPLY:
		on_rma_reply(ep, r, c);
		return;
	case K_BYE:
		peer_dead(ep, r, "its endpoint closed");
		return;
	case K_PIPE:
		pipe_head(ep, r, c);
		return;
	case K_PFRAG:
		pipe_frag(ep, r, c);
		return;
	default:
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "peer %s sent a cell of unknown kind %u; dropped\n",
			       r->name.c_str(), unsigned(c.kind));
	}
}

/* Peers we wait on that stayed silent: is their owner still there? */
void check_liveness(shm_ep *ep)
{
	int64_t now = now_ms();
	if (now < ep->next_live_check)
		return;
	ep->next_live_check = now + ep->dead_ms;
	bool pulls = !ep->pulls_in.empty() || !ep->splits_in.empty() || !ep->pipes->empty();
	const bool directed = ep->rx->directed_hint;
	bool still_directed = false;
	for (auto &rp : ep->remotes) {
		remote *r = rp.get();
		if (r->dead)
			continue;
		bool owes = r->waiting || (!r->backlog.empty() && (r->stuck_since || r->id_there == no_slot));
		if (!owes && pulls)
			for (auto &p : ep->pulls_in)
				owes |= p.second.peer == r->slot;
		if (!owes && pulls)
			for (auto &w : ep->splits_in)
				owes |= w.peer == r->slot;
		if (!owes && pulls)
			owes = pipe_owed(ep, r->slot);
		if (!owes && directed) {
			fi_addr_t a = src_of(ep, r);
			owes = a != FI_ADDR_NOTAVAIL && ep->rx->eng->posted_from(a);
			still_directed |= owes;
		}
		if (owes && !r->p->alive())
			peer_dead(ep, r, "its process is gone");
	}
	/* No receive waits on a known peer: back to the quiet path (a new
	 * directed receive sets the hint again). */
	if (directed && !still_directed)
		ep->rx->directed_hint = false;
}

} // namespace

/* Largest fi_addr the endpoint remembers the peer of. */
constexpr fi_addr_t fa_cache_max = fi_addr_t{1} << 20;

remote *peer_of(shm_ep *ep, fi_addr_t addr, int *err)
{
	if (!ep->b.av) {
		*err = -FI_EINVAL;
		return nullptr;
	}
	if (addr < ep->fa_slot.size() && ep->fa_slot[addr]) {
		remote *r = ep->remotes[ep->fa_slot[addr] - 1].get();
		if (r->dead)
			reattach(ep, r);
		return r;
	}
	char buf[addr_max + 1];
	size_t n = ep->b.peer_addr(addr, buf, sizeof buf);
	if (n == 0 || n > addr_max || addr_len(buf, n) < 0) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "fi_addr %llu is no shm address in the endpoint's AV\n",
			       (unsigned long long)addr);
		*err = -FI_EINVAL;
		return nullptr;
	}
	remote *r = add_remote(ep, std::string(buf + scheme_len), err);
	if (!r)
		return nullptr;
	if (r->addr == FI_ADDR_NOTAVAIL)
		r->addr = addr;
	if (!ep->b.av_shared && addr < fa_cache_max) {
		if (ep->fa_slot.size() <= addr)
			ep->fa_slot.resize(size_t(addr) + 1);
		ep->fa_slot[addr] = r->slot + 1;
	}
	return r;
}

void av_removed(void *arg, fi_addr_t fa) noexcept
{
	auto *ep = static_cast<shm_ep *>(arg);
	std::lock_guard g(ep->b.mtx);
	if (fa < ep->fa_slot.size())
		ep->fa_slot[fa] = 0;
	ep->rx->peer_up(fa); /* fa may name another peer later */
	for (auto &r : ep->remotes)
		if (r->addr == fa)
			r->addr = FI_ADDR_NOTAVAIL;
}

void send_cell(shm_ep *ep, remote *r, pending &&p)
{
	if (r->id_there == no_slot)
		say_hello(ep, r);
	if (r->backlog.empty() && r->id_there != no_slot) {
		int ret = try_push(ep, r, p);
		if (ret == 0)
			return;
		if (ret != -FI_EAGAIN) {
			list(ep, r);
			r->backlog.push_back(std::move(p));
			ep->tx_busy++;
			peer_dead(ep, r, fi_strerror(-ret));
			return;
		}
		if (!r->stuck_since)
			r->stuck_since = now_ms();
	}
	list(ep, r);
	r->backlog.push_back(std::move(p));
	ep->tx_busy++;
	drain(ep, r);
}

void peer_dead(shm_ep *ep, remote *r, const char *why)
{
	if (r->dead)
		return;
	r->dead = true;
	r->gen++;
	bool owed = !r->backlog.empty() || r->waiting;
	for (auto &p : ep->pulls_in)
		owed |= p.second.peer == r->slot;
	for (auto &w : ep->splits_in)
		owed |= w.peer == r->slot;
	owed |= pipe_owed(ep, r->slot);
	/* A peer closing with nothing of ours in flight is the normal end. */
	if (owed)
		WU_WARN(P(), FI_LOG_EP_DATA, "endpoint %s: peer %s%s is unreachable (%s); its operations fail\n",
			ep->name.c_str(), scheme, r->name.c_str(), why);
	else
		WU_INFO(P(), FI_LOG_EP_DATA, "endpoint %s: peer %s%s is gone (%s)\n", ep->name.c_str(), scheme,
			r->name.c_str(), why);
	for (pending &p : r->backlog) {
		if (ep->tx_busy)
			ep->tx_busy--;
		if (p.op) /* LARGE and RMA ones are in waiting: failed below */
			complete_tx(ep, p.op, FI_EHOSTDOWN);
	}
	r->backlog.clear();
	for (size_t k = 0; k < ep->pulls_out.size();)
		if (ep->pulls_out[k]->peer == r->slot)
			ep->pulls_out.erase(ep->pulls_out.begin() + ptrdiff_t(k));
		else
			k++;
	for (auto it = ep->waiting.begin(); it != ep->waiting.end();) {
		txop *o = it->second;
		if (o->peer != r->slot) {
			++it;
			continue;
		}
		it = ep->waiting.erase(it);
		complete_tx(ep, o, FI_EHOSTDOWN);
	}
	r->waiting = 0;
	for (auto it = ep->pulls_in.begin(); it != ep->pulls_in.end();) {
		if (it->second.peer != r->slot) {
			++it;
			continue;
		}
		rx_pull &pl = it->second;
		prov::complete_rx(ep->b, pl.o,
				  {.src = pl.src, .kind = prov::msg_kind(pl.tagged, pl.has_data), .tag = pl.tag,
				   .data = pl.data, .err = FI_EHOSTDOWN, .release = ep->rx->done(pl.o)});
		it = ep->pulls_in.erase(it);
	}
	split_peer_dead(ep, r->slot);
	pipe_peer_dead(ep, r->slot);
	/* Receives directed at it would wait forever (issue 30). */
	if (ep->rx->directed)
		ep->rx->peer_down(ep->b, src_of(ep, r));
	/* A later first cell from a process that took its name again revives it. */
	r->id_there = no_slot;
	r->hello_sent = false;
	r->stuck_since = 0;
}

bool use_cma(shm_ep *ep, remote *r)
{
	if (!ep->cma)
		return false;
	/* Single copy only through a pidfd of the peer's process (region.h). */
	if (!r->p->proc()) {
		int e = r->p->cma_error();
		if (e == -FI_ENOSYS || e == -FI_EPERM) {
			ep->cma = false;
			WU_WARN_ONCE(P(), FI_LOG_EP_DATA,
				     "single copy needs pidfd_open, which fails here: %s; large messages and RMA go "
				     "through bounce buffers (two copies)\n",
				     fi_strerror(-e));
		}
		return false;
	}
	if (!ep->cma_checked) {
		ep->cma_checked = true;
		const char *why = nullptr;
		if (!r->p->cma_probe(&why)) {
			if (!r->p->alive()) {
				/* A dead first peer says nothing of the kernel: ask the next one. */
				ep->cma_checked = false;
				return false;
			}
			ep->cma = false;
			WU_WARN_ONCE(P(), FI_LOG_EP_DATA,
				     "single copy (process_vm_readv) refused: %s; large messages and RMA go through "
				     "bounce buffers (two copies)\n",
				     why ? why : "unknown reason");
		}
	}
	return ep->cma;
}

namespace {
void progress_owed(shm_ep *ep);
} // namespace

int progress_locked(shm_ep *ep)
{
	if (!ep->b.enabled || !ep->rg)
		return 0;
	wire w;
	/* A bounded batch: a flood from peers cannot keep one call forever.
	 * After the first pop (which also checks a stalled head and
	 * disarms), a one-word look says whether another pop is worth it. */
	int n = 0;
	/* Quiet (every list below empty: whoever adds to one calls busy())
	 * and only inline messages since, which add to none: still quiet. */
	bool still_quiet = ep->quiet.load(std::memory_order_relaxed);
	for (; n < 256 && ux_gate(ep) && (n == 0 || ep->rg->ready()) && ep->rg->pop_body(&w); n++) {
		/* An inline message from a known peer with nothing set aside:
		 * what handle and ux_arrive would do, without their steps. */
		if (w.kind == K_INLINE && w.sender < ep->remotes.size() && ep->parked_cells.empty() && !ux_full(ep)) {
			remote *r = ep->remotes[w.sender].get();
			on_message(ep, r, w, r->gen);
			continue;
		}
		still_quiet = false;
		handle(ep, w);
	}
	if (still_quiet)
		return n;
	/* Nothing owed, queued or streaming (the common case): quiet. */
	if (ep->backlogged.empty() && ep->waiting.empty() && ep->pulls_in.empty() && !ep->tx_busy &&
	    ep->pulls_out.empty() && ep->splits_out.empty() && ep->splits_in.empty() && ep->parked_cells.empty() &&
	    ep->pipes->empty()) {
		ep->quiet.store(true, std::memory_order_release);
		return n;
	}
	progress_owed(ep);
	return n;
}

namespace {

/* progress_locked's rest, when something is owed, queued or streaming:
 * out of line, so that the common call keeps a small frame. */
[[gnu::noinline]] void progress_owed(shm_ep *ep)
{
	for (size_t k = 0; k < ep->backlogged.size();) {
		remote *r = ep->remotes[ep->backlogged[k]].get();
		drain(ep, r);
		if (r->backlog.empty()) {
			r->listed = false;
			ep->backlogged[k] = ep->backlogged.back();
			ep->backlogged.pop_back();
		} else {
			k++;
		}
	}
	if (!ep->pulls_out.empty())
		stream(ep);
	if (!ep->splits_out.empty() || !ep->splits_in.empty())
		split_progress(ep);
	if (!ep->waiting.empty() || !ep->pulls_in.empty() || !ep->splits_in.empty() || ep->tx_busy ||
	    !ep->pipes->empty() || ep->rx->directed_hint)
		check_liveness(ep);
	bool quiet = ep->backlogged.empty() && ep->pulls_out.empty() && ep->splits_out.empty() &&
		     ep->splits_in.empty() && ep->waiting.empty() && ep->pulls_in.empty() && !ep->tx_busy &&
		     ep->parked_cells.empty() && ep->pipes->empty();
	ep->quiet.store(quiet, std::memory_order_release);
}

} // namespace

void flush(shm_ep *ep) noexcept
{
	/* A full CQ kept completions back: polls must take the lock (not the
	 * quiet path) until a flush posts them, or they wait forever. */
	if (!ep->b.flush())
		busy(ep);
}

void progress_cb(void *arg) noexcept
{
	auto *ep = static_cast<shm_ep *>(arg);
	guard("shm progress", [&]() -> int {
		/* The common poll with nothing arrived and nothing owed: no
		 * lock, a load of two cache lines (what a peer pushes from
		 * now on, the next poll sees). */
		if (ep->quiet.load(std::memory_order_acquire) && ep->rg->idle()) {
			/* Receives directed at a peer that dies must fail: now and
			 * then a quiet poll looks at those peers (check_liveness
			 * reads the clock, at most every FI_SHM_DEAD_PEER_MS). */
			if ((ep->quiet_polls.fetch_add(1, std::memory_order_relaxed) & 1023) != 1023)
				return 0;
			bool failed;
			{
				std::lock_guard g(ep->b.mtx);
				if (ep->rx->directed_hint)
					check_liveness(ep);
				failed = !ep->b.comps.empty();
			}
			if (failed)
				flush(ep);
			return 0;
		}
		bool collected;
		{
			std::lock_guard g(ep->b.mtx);
			/* A pop takes back the auto-progress watch's arming: its
			 * thread arms it again shortly. */
			if (progress_locked(ep) && ep->autop.on())
				ep->autop.arm_in(1);
			/* Nothing collected (posted at once to a leaf CQ, or no
			 * traffic): no second trip through the lock.  What another
			 * thread adds later, that thread flushes. */
			collected = !ep->b.comps.empty();
		}
		if (collected)
			flush(ep);
		return 0;
	});
}

/* ---- sends ---- */

namespace {

/* Every header field of a message cell of len bytes (K_INLINE: len <=
 * inline_max; K_BOUNCE: its slot in arg) to the peer that knows us as
 * sender; the payload is the caller's to copy. */
inline void msg_cell(shm_tp::cell &c, cell_kind kind, uint32_t sender, size_t len, uint64_t mk, uint64_t tag,
		     uint64_t data, uint64_t arg = 0) noexcept
{
	const bool tagged = mk & FI_TAGGED, has_data = mk & FI_REMOTE_CQ_DATA;
	c.kind = kind;
	c.flags = uint8_t((tagged ? F_TAGGED : 0) | (has_data ? F_DATA : 0));
	c.inline_len = uint16_t(kind == K_INLINE ? len : 0);
	c.sender = sender;
	c.tag = tagged ? tag : 0;
	c.cq_data = has_data ? data : 0;
	c.len = len;
	c.arg = arg;
}

/* An eager send pushed at once when nothing waits ahead of it for r;
 * false when it must take the queued path (hello not answered, backlog,
 * queue or bounce pool full, push error: send_cell deals with those).
 * Called before do_send builds its queued cell: it costs nothing then. */
bool push_now(shm_ep *ep, remote *r, const prov::msg_xfer &x, size_t len)
{
	if (!r->backlog.empty() || r->id_there == no_slot)
		return false;
	const uint64_t mk = prov::msg_kind(x.tagged, x.flags & FI_REMOTE_CQ_DATA);
	shm_tp::cell c;
	if (len <= shm_tp::inline_max) {
		/* One cell written straight from the caller's buffers. */
		msg_cell(c, K_INLINE, r->id_there, len, mk, x.tag, x.data);
		if (x.count == 1)
			copy_small(c.data, x.iov[0].iov_base, len);
		else
			copy_from_iov(x.iov, x.count, 0, c.data, len);
		return r->p->push(c) == 0;
	}
	int slot = ep->rg->bounce_get();
	if (slot < 0)
		return false;
	copy_from_iov(x.iov, x.count, 0, ep->rg->bounce_addr(slot), len);
	msg_cell(c, K_BOUNCE, r->id_there, len, mk, x.tag, x.data, uint64_t(slot));
	memset(c.data, 0, sizeof c.data); /* no stack bytes into the peer's queue */
	if (r->p->push(c) == 0)
		return true;
	ep->rg->bounce_put(slot);
	return false;
}

} // namespace

namespace {

/* inject_inline's body, also that of the multiplexer's entry (inject_sub):
 * nothing in it throws. */
[[gnu::always_inline]] inline ssize_t inject_cell(shm_ep *ep, const void *buf, size_t len, fi_addr_t dest,
						  uint64_t tag, uint64_t data, uint64_t mk) noexcept
{
	const fi_info *info = ep->b.info;
	const bool tagged = mk & FI_TAGGED;
	/* Whatever do_send would refuse, log or queue goes to it. */
	if (len > shm_tp::inline_max || len > info->tx_attr->inject_size || len > info->ep_attr->max_msg_size ||
	    (len && !buf) || !(info->caps & (tagged ? FI_TAGGED : FI_MSG)))
		return prov::general_path;
	std::lock_guard g(ep->b.mtx);
	/* A send counter, pending completions or a full transmit side: the
	 * general path, which counts, flushes or makes progress. */
	if (!ep->b.enabled || ep->b.c_send || !ep->b.comps.empty() ||
	    ep->tx_busy + ep->waiting.size() >= info->tx_attr->size || dest >= ep->fa_slot.size() ||
	    !ep->fa_slot[dest])
		return prov::general_path;
	remote *r = ep->remotes[ep->fa_slot[dest] - 1].get();
	if (r->dead || r->id_there == no_slot || !r->backlog.empty())
		return prov::general_path;
	shm_tp::cell c;
	msg_cell(c, K_INLINE, r->id_there, len, mk, tag, data);
	copy_small(c.data, buf, len);
	/* Full, or its owner gone: do_send queues or fails it (nothing
	 * was pushed). */
	return r->p->push(c) == 0 ? 0 : prov::general_path;
}

} // namespace

ssize_t inject_inline(shm_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
		      uint64_t kind) noexcept
{
	return inject_cell(ep, buf, len, dest, tag, data, kind);
}

ssize_t inject_sub(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
		   uint64_t kind) noexcept
{
	return inject_cell(container_of_fid<shm_ep>(e), buf, len, dest, tag, data, kind);
}

ssize_t do_send(shm_ep *ep, const prov::msg_xfer &x)
{
	if (x.count > ep->b.info->tx_attr->iov_limit || (x.count && !x.iov)) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %zu iovecs (at most %zu)\n", x.where, x.count,
			       ep->b.info->tx_attr->iov_limit);
		return -FI_EINVAL;
	}
	size_t len = iov_total(x.iov, x.count);
	if ((x.flags & FI_INJECT) && len > ep->b.info->tx_attr->inject_size) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %zu bytes injected (inject_size %zu)\n", x.where, len,
			       ep->b.info->tx_attr->inject_size);
		return -FI_EINVAL;
	}
	if (len > ep->b.info->ep_attr->max_msg_size)
		return -FI_EMSGSIZE;
	if (ssize_t r = prov::check_caps(ep->b.info, x, false, ep->b.prov))
		return r;
	bool flush_needed = true;
	{
		std::lock_guard g(ep->b.mtx);
		int err = 0;
		remote *r = tx_peer(ep, x.addr, true, &err);
		if (!r)
			return err;
		bool want = !x.inject_api && (!ep->b.tx_sel || (x.flags & FI_COMPLETION));
		bool eager = len <= ep->rg->bounce_size();
		/* Fast path: nothing queued ahead, so the cell goes out now and
		 * the send completes at once, with no txop on the heap and the
		 * payload copied once, straight into the cell or bounce slot. */
		if (eager && push_now(ep, r, x, len)) {
			if (want || ep->b.c_send)
				ep->b.complete_tx(OP_SEND, x.tagged, x.context, 0, want, 0);
			flush_needed = !ep->b.comps.empty();
			goto done;
		}
		pending p;
		p.c.kind = K_INLINE;
		p.c.flags = uint8_t((x.tagged ? F_TAGGED : 0) | ((x.flags & FI_REMOTE_CQ_DATA) ? F_DATA : 0));
		p.c.tag = x.tagged ? x.tag : 0;
		p.c.cq_data = (x.flags & FI_REMOTE_CQ_DATA) ? x.data : 0;
		p.c.len = len;
		txop *o = nullptr;
		if (want || !eager || ep->b.c_send) {
			o = make_owned<txop>().release(); /* its pending entry or ep->waiting owns it */
			o->kind = OP_SEND;
			o->context = x.context;
			o->flags = x.flags;
			o->tagged = x.tagged;
			o->want_comp = want;
			o->inject = x.inject_api;
			o->peer = r->slot;
		}
		if (len <= shm_tp::inline_max) {
			p.c.inline_len = uint16_t(len);
			copy_from_iov(x.iov, x.count, 0, p.c.data, len);
			p.op = o;
			send_cell(ep, r, std::move(p));
		} else if (eager) {
			p.c.kind = K_BOUNCE;
			p.need_slot = true;
			p.payload.resize(len);
			copy_from_iov(x.iov, x.count, 0, p.payload.data(), len);
			p.op = o;
			send_cell(ep, r, std::move(p));
		} else if (pipe_send(ep, r, x, len, o)) {
			flush_needed = true;
		} else {
			o->id = ep->next_id++;
			o->cnt = x.count;
			for (size_t i = 0; i < x.count; i++)
				o->iov[i] = x.iov[i];
			o->len = len;
			p.c.kind = K_LARGE;
			p.c.arg = o->id;
			if (split_offer(ep, o) >= 0) {
				p.c.flags |= F_SPLIT;
				p.c.inline_len = uint16_t(o->split_slot);
			}
			if (x.count == 1) {
				uint64_t a = uint64_t(uintptr_t(x.iov[0].iov_base)), l = x.iov[0].iov_len;
				memcpy(p.c.data, &a, 8);
				memcpy(p.c.data + 8, &l, 8);
			} else {
				p.c.flags |= F_IOVLIST;
				uint64_t a = uint64_t(uintptr_t(o->iov)), l = x.count;
				memcpy(p.c.data, &a, 8);
				memcpy(p.c.data + 8, &l, 8);
			}
			busy(ep);
			ep->waiting.emplace(o->id, o);
			r->waiting++;
			send_cell(ep, r, std::move(p));
		}
	}
done:
	if (flush_needed)
		flush(ep);
	return 0;
}

void free_proto(shm_ep *ep)
{
	/* Peers waiting on us learn it now rather than after a timeout (our
	 * process may live on); best effort: a full queue goes without. */
	for (auto &r : ep->remotes)
		if (!r->dead && r->id_there != no_slot) {
			wire c;
			c.kind = K_BYE;
			c.sender = r->id_there;
			(void)push(r.get(), c);
		}
	std::vector<owned<txop>> ops; /* the backlog's and the waiting list's, freed here */
	for (auto &r : ep->remotes)
		for (pending &p : r->backlog)
			if (p.op)
				ops.emplace_back(p.op);
	for (auto &w : ep->waiting)
		ops.emplace_back(w.second);
	ops.clear();
	ep->waiting.clear();
	ep->pulls_out.clear();
	ep->splits_out.clear();
	ep->backlogged.clear();
	ep->remotes.clear();
	ep->by_name.clear();
}

} // namespace wu::shm
