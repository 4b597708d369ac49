/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive contexts (fi_srx_context, fi_endpoint(3) "Shared
 * Contexts") for every provider that matches in software: one receive
 * context (rx.h: an engine and the receives posted to it) that endpoints
 * bind with fi_ep_bind before fi_enable and then take every receive from.
 * A message arriving on any of them matches the srx's receives, and its
 * completion goes to the CQ of the endpoint it arrived on; receives posted
 * on a bound endpoint go to the srx.
 *
 * Locks, two ways (srx_desc::own_locks):
 *  - shared (shm, wireup): a bound endpoint's lock becomes the srx's one
 *    mutex (ep_lock::share, as a wireup endpoint lends its own to its
 *    sub-endpoints), so every engine call of every bound endpoint runs
 *    under it and the endpoints' paths need nothing more;
 *  - own (tcp): each endpoint keeps its lock and takes eng_mtx around its
 *    engine calls; an srx call takes every bound endpoint's lock in bind
 *    order, then eng_mtx.
 * Either way an srx call holds bind_mtx first (no endpoint binds or leaves
 * meanwhile) and posts the completions it collected once the endpoint
 * locks are released, still under bind_mtx. */
#ifndef WU_PROV_COMMON_SRX_H
#define WU_PROV_COMMON_SRX_H

#include <cstdint>
#include <mutex>
#include <vector>

#include <rdma/fi_endpoint.h>

#include "core/log.h"
#include "prov/common/ep_base.h"
#include "prov/common/ep_mutex.h"
#include "prov/common/objects.h"
#include "prov/common/rx.h"
#include "prov/common/xfer.h"

namespace wu::prov {

/* An endpoint bound to an srx, as the srx sees it. */
struct srx_member {
	void *ep = nullptr;   /* the provider's endpoint */
	ep_base *b = nullptr; /* its base: its AV, where a cancel or FI_ENOMSG completes */
	/* Without locks: posts what the endpoint collected. */
	void (*flush)(void *ep) noexcept = nullptr;
	/* Optional, under the locks, after a post or claim on the srx: the
	 * endpoint moves on what it set aside for want of room. */
	void (*rx_room)(void *ep) noexcept = nullptr;
};

struct srx {
	fid_ep ep; /* first; fclass FI_CLASS_SRX_CTX */
	uint32_t magic;
	fi_provider *prov; /* its log lines */
	domain *dom;
	child_ref parent; /* on dom->children */
	fi_rx_attr attr{};
	bool own_locks = false;
	std::mutex bind_mtx;
	ep_mutex lock;                /* shared: every bound endpoint's lock */
	std::recursive_mutex eng_mtx; /* own: the engine's (a callback may come back) */
	rx_ctx rx;                    /* its engine and the receives posted to it */
	std::vector<srx_member> eps;  /* bound, in bind order */
};

struct srx_desc {
	fi_provider *prov;
	bool own_locks; /* see the top */
};

/* fi_ops_domain::srx_ctx of a provider described by d. */
int srx_open(const srx_desc &d, fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept;
/* The srx f is, or nullptr. */
srx *srx_of(fid *f) noexcept;

/* A receive posted to the srx or through an endpoint bound to it. */
ssize_t srx_recv(srx *s, const msg_xfer &x);
/* FI_PEEK / FI_CLAIM / FI_DISCARD on the srx or a bound endpoint. */
ssize_t srx_peek_claim(srx *s, const fi_msg_tagged *m, uint64_t flags);

/* fi_ep_bind(ep, &srx->fid, flags): the common checks (flags 0, one
 * domain, one AV among the sharing endpoints), then local() under
 * bind_mtx: the provider's own checks and switch, which returns why not
 * or nullptr once the endpoint takes its receives from s. */
const char *srx_check_attach(srx *s, const srx_member &m, uint64_t flags) noexcept;
/* The endpoint's own state at the bind: why it cannot take an srx (it has
 * one, it is enabled, it is a sub-endpoint lent a context), or nullptr. */
const char *srx_refuse(bool bound, bool enabled, bool lent) noexcept;
template <class F>
int srx_attach(srx *s, const srx_member &m, uint64_t flags, F &&local)
{
	if (flags) {
		WU_WARN(s->prov, FI_LOG_EP_CTRL, "fi_ep_bind(srx): bound with flags 0 (fi_endpoint(3))\n");
		return -FI_EBADFLAGS;
	}
	std::lock_guard<std::mutex> g(s->bind_mtx);
	s->eps.reserve(s->eps.size() + 1); /* before local(): nothing to undo */
	const char *bad = srx_check_attach(s, m, flags);
	if (!bad)
		bad = local();
	if (bad) {
		WU_WARN(s->prov, FI_LOG_EP_CTRL, "fi_ep_bind(srx): %s\n", bad);
		return -FI_EINVAL;
	}
	s->eps.push_back(m);
	return 0;
}
/* fi_close of a bound endpoint: it leaves s (its messages left the engine). */
void srx_detach(srx *s, const void *ep) noexcept;
/* ep's base changed (a wireup endpoint lost a sub-endpoint; nullptr: none left). */
void srx_rebase(srx *s, const void *ep, ep_base *b) noexcept;
/* fi_ep_bind(ep, av) on an endpoint bound to s: bind() under bind_mtx
 * once av is the AV the other sharing endpoints use. */
bool srx_other_av(const srx *s, const void *ep, const fid *av) noexcept;
template <class F>
int srx_bind_av(srx *s, const void *ep, fid *av, F &&bind)
{
	std::lock_guard<std::mutex> g(s->bind_mtx);
	if (srx_other_av(s, ep, av)) {
		WU_WARN(s->prov, FI_LOG_EP_CTRL,
			"fi_ep_bind(av): endpoints sharing a receive context must use one address vector "
			"(fi_endpoint(3))\n");
		return -FI_EINVAL;
	}
	return bind();
}

/* fi_ep_bind of bfid to an endpoint bound to srx `bound` (or nullptr):
 * attach() for an srx, bind() for the rest, an AV checked first
 * (srx_bind_av) once bound. */
template <class Attach, class Bind>
int srx_ep_bind(srx *bound, const void *ep, fid *bfid, Attach &&attach, Bind &&bind)
{
	if (bfid->fclass == FI_CLASS_SRX_CTX)
		return attach();
	if (bfid->fclass == FI_CLASS_AV && bound)
		return srx_bind_av(bound, ep, bfid, bind);
	return bind();
}

} // namespace wu::prov

#endif
