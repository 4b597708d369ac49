/* SPDX-License-Identifier: BSD-3-Clause */
/* The wireup endpoint (ep.cpp, data.cpp, route.cpp): a shm and a tcp
 * sub-endpoint (prov/common/sub_ep.h) on the wireup domain that share its
 * lock and its one receive context, so that a receive matches messages
 * of either transport.  A transmit call goes to the sub-endpoint the peer's
 * route names (decided once per fi_addr from its address: same host and
 * a shm part -> shm, else tcp) as the same call of that endpoint's own
 * ops; a receive is posted here, under the shared lock. */
#ifndef WU_PROV_WIREUP_WX_EP_H
#define WU_PROV_WIREUP_WX_EP_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <rdma/fi_endpoint.h>

#include "prov/common/cq.h"
#include "prov/common/ep_base.h"
#include "prov/common/rx.h"
#include "prov/common/srx.h"
#include "prov/common/sub_ep.h"
#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_addr.h"

namespace wu::wireup {

inline fi_provider *P() { return prov_desc(); }

/* A peer's transport, cached per fi_addr (0: not decided yet). */
enum route : uint8_t { R_NONE = 0, R_SHM, R_TCP, R_BAD };

/* Routes indexed by fi_addr, read without a lock; grown by copying under
 * the endpoint's lock (a reader may still hold the old table, kept until
 * close). */
struct route_table {
	size_t n = 0;
	std::unique_ptr<std::atomic<uint8_t>[]> v;
};

constexpr uint32_t wx_magic = 0x57585550; /* "WXUP" */

struct wx_ep {
	fid_ep ep; /* first */
	uint32_t magic = wx_magic;
	prov::ep_mutex mtx; /* the sub-endpoints' one lock (ep_lock::share) */
	prov::domain *dom = nullptr;
	child_ref parent; /* on dom->children */
	fi_info *info = nullptr; /* ours (freed at close) */
	prov::rx_ctx rx; /* lent to both sub-endpoints */
	/* Bound with fi_ep_bind (srx.h): the sub-endpoints take their
	 * receives from it, and its lock, instead of rx and mtx. */
	prov::srx *srx = nullptr;
	uint8_t rx_fast = 0; /* prov::rx_fast_mask, set at fi_enable: 0 before */
	/* Indexed by part_tcp / part_shm; nullptr: none (shm refused). */
	fid_ep *sub[2] = {nullptr, nullptr};
	prov::ep_base *sb[2] = {nullptr, nullptr};
	progress_fn spf[2]; /* the sub-endpoints' own progress (set at open, never changed) */
	/* Our progress calls spf[k] while live[k]: cleared before that
	 * sub-endpoint closes (atomic: CQ reads of other threads look). */
	std::atomic<bool> live[2] = {false, false};
	prov::ep_base *rb = nullptr; /* the base receives are posted through (CQs bound) */
	fid_av *av = nullptr;
	bool av_shared = false; /* other processes change entries: no route cache */
	bool enabled = false;
	/* Bound to a shm name (node/service, shm_addr.h): peers on this host
	 * reach us there, so without it the endpoint does not enable. */
	bool named_shm = false;
	/* Sockaddr mode (wx_addr.h): names and AV entries are the tcp part
	 * alone; no shm sub-endpoint. */
	bool sock = false;
	bool watching = false; /* av::watch_removes */
	uint64_t host = 0;
	std::atomic<route_table *> routes{nullptr};
	/* fi_av_remove notices so far (changed under mtx): a route decided
	 * from an AV entry read before a removal is not cached. */
	std::atomic<uint64_t> route_gen{0};
	std::vector<std::unique_ptr<route_table>> old_routes; /* under mtx */
	/* Progress: tcp every (poll_mask + 1)-th call, and on every call
	 * while tcp_hot (set by a transfer through tcp) counts down.  While
	 * tcp has no connection (*tcp_busy == 0) only its listener needs
	 * polling: those calls poll it only if idle_ns passed since then. */
	std::atomic<uint32_t> tick{0}, tcp_hot{0};
	uint32_t poll_mask = 31;
	uint32_t hot_calls = 4096;
	const std::atomic<size_t> *tcp_busy = nullptr; /* sub_ops::busy; nullptr: always busy */
	void (*rx_room[2])(fid_ep *) noexcept = {nullptr, nullptr}; /* sub_ops::rx_room */
	/* shm's sub_ops::inject while sub[part_shm] is open, else nullptr. */
	decltype(prov::sub_ops::inject) shm_inject = nullptr;
	int64_t idle_ns = 50000;
	std::atomic<int64_t> idle_polled{0}; /* clock of the last idle tcp poll */
	std::atomic<uint64_t> n_shm{0}, n_tcp{0}, n_bad{0};
};

wx_ep *wx_of(fid *f) noexcept;
inline wx_ep *wx_of(fid_ep *e) noexcept
{
	if (!e || e->fid.fclass != FI_CLASS_EP)
		return nullptr;
	auto *ep = reinterpret_cast<wx_ep *>(e);
	return ep->magic == wx_magic ? ep : nullptr;
}

/* ---- route.cpp ---- */
/* The sub-endpoint for a, decided (and cached) now; 0 or a negative errno
 * (-FI_EINVAL: no such entry, -FI_EHOSTUNREACH), logged. */
ssize_t route_slow(wx_ep *ep, fi_addr_t a, fid_ep **out) noexcept;
/* The tcp sub-endpoint's ep_base::src_ok: a message that came through
 * tcp is never attributed (matched as from, FI_SOURCE) to a peer we reach
 * through shm.  Such a peer is on this host and talks to us through shm
 * only, so whoever claims its address over tcp is not it.  Under ep's lock. */
bool tcp_source_ok(void *arg, fi_addr_t a) noexcept;
/* fi_av_remove notice: a's route is decided again on next use. */
void route_removed(void *arg, fi_addr_t a) noexcept;
void free_routes(wx_ep *ep) noexcept;

/* The cached route of a, or nullptr (decide with route_slow). */
inline fid_ep *route_fast(wx_ep *ep, fi_addr_t a) noexcept
{
	route_table *t = ep->routes.load(std::memory_order_acquire);
	if (!t || a >= t->n)
		return nullptr;
	switch (t->v[a].load(std::memory_order_relaxed)) {
	case R_SHM: return ep->sub[part_shm];
	case R_TCP:
		ep->tcp_hot.store(ep->hot_calls, std::memory_order_relaxed);
		return ep->sub[part_tcp];
	default: return nullptr;
	}
}

/* Whether a's cached route is shm (false: not decided yet, or not shm). */
inline bool shm_route(wx_ep *ep, fi_addr_t a) noexcept
{
	route_table *t = ep->routes.load(std::memory_order_acquire);
	return t && a < t->n && t->v[a].load(std::memory_order_relaxed) == R_SHM;
}

/* ---- data.cpp ---- */
extern fi_ops_msg wx_msg_ops;
extern fi_ops_tagged wx_tagged_ops;
extern fi_ops_rma wx_rma_ops;
extern fi_ops_atomic wx_atomic_ops;

/* ---- ep.cpp ---- */
int ep_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept;
/* fi_ops_domain::srx_ctx: bound endpoints and their sub-endpoints share its lock. */
int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept;
/* Posts what the sub-endpoints collected (flags from collected()). */
inline unsigned collected(wx_ep *ep) noexcept
{
	return (ep->sb[0] && !ep->sb[0]->comps.empty() ? 1u : 0u) | (ep->sb[1] && !ep->sb[1]->comps.empty() ? 2u : 0u);
}
/* Under the lock, after a receive, claim or discard: the sub-endpoints
 * move on what they set aside for want of room in our receive context. */
inline void rx_room(wx_ep *ep) noexcept
{
	for (int k : {part_tcp, part_shm})
		if (ep->rx_room[k] && ep->sub[k])
			ep->rx_room[k](ep->sub[k]);
}
inline void flush(wx_ep *ep, unsigned which) noexcept
{
	if (which & 1)
		ep->sb[0]->flush();
	if (which & 2)
		ep->sb[1]->flush();
}

} // namespace wu::wireup

#endif
