/* SPDX-License-Identifier: BSD-3-Clause */
/* The ops tables every built-in RDM provider fills alike but for a few
 * entries: each provider keeps its own static tables, initialised from
 * these (constant initialisation, no run-time set-up), so a new provider
 * names only what is its own. */
#ifndef WU_PROV_COMMON_OPS_TABLES_H
#define WU_PROV_COMMON_OPS_TABLES_H

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "core/fid.h"
#include "core/launcher.h"
#include "core/shim.h"
#include "prov/common/atomic.h"
#include "prov/common/cq.h"
#include "prov/common/objects.h"
#include "prov/common/poll.h"

namespace wu::prov {

/* fi_ops of a domain: close is prov::domain_close unless the provider's
 * domain holds more; fi_open_ops gives the launcher's extension
 * ("wireup_pmix", core/launcher.h) on every provider's domain. */
constexpr fi_ops domain_fi_ops(decltype(fi_ops::ops_open) ops_open = launcher::domain_ops_open,
			       decltype(fi_ops::close) close = domain_close)
{
	return {sizeof(fi_ops),	   close,		    WU_NOSYS(fi_ops, bind), WU_NOSYS(fi_ops, control),
		ops_open,	   WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set)};
}

/* fi_query_atomic of provider P: the common atomic engine's answer. */
template <const fi_provider *P>
int query_atomic(fid_domain *, fi_datatype dt, fi_op op, fi_atomic_attr *attr, uint64_t flags) noexcept
{
	return WU_GUARD({ return wu::atomic::query_for(P, dt, op, attr, flags); });
}

/* fi_ops_domain of an RDM provider on the common CQs, counters and poll
 * sets: the AV, endpoints, atomics answer and (optional) shared receive
 * contexts are its own. */
constexpr fi_ops_domain rdm_domain_ops(decltype(fi_ops_domain::av_open) av_open,
				       decltype(fi_ops_domain::endpoint) endpoint,
				       decltype(fi_ops_domain::query_atomic) query,
				       decltype(fi_ops_domain::srx_ctx) srx = WU_NOSYS(fi_ops_domain, srx_ctx))
{
	return {sizeof(fi_ops_domain),
		av_open,
		wu::cq::domain_cq_open,
		endpoint,
		WU_NOSYS(fi_ops_domain, scalable_ep),
		wu::cntr::domain_cntr_open,
		wu::poll::domain_poll_open,
		WU_NOSYS(fi_ops_domain, stx_ctx),
		srx,
		query,
		WU_NOSYS(fi_ops_domain, query_collective),
		WU_NOSYS(fi_ops_domain, endpoint2)};
}

/* fi_ops of an endpoint: close, bind and control are its own. */
constexpr fi_ops ep_fi_ops(decltype(fi_ops::close) close, decltype(fi_ops::bind) bind,
			   decltype(fi_ops::control) control)
{
	return {sizeof(fi_ops),
		close,
		bind,
		control,
		WU_NOSYS(fi_ops, ops_open),
		WU_NOSYS(fi_ops, tostr),
		WU_NOSYS(fi_ops, ops_set)};
}

/* fi_ops_ep of an endpoint with no tx / rx sub-contexts. */
constexpr fi_ops_ep ep_core_ops(decltype(fi_ops_ep::cancel) cancel, decltype(fi_ops_ep::getopt) getopt,
			   decltype(fi_ops_ep::setopt) setopt, decltype(fi_ops_ep::rx_size_left) rx_left,
			   decltype(fi_ops_ep::tx_size_left) tx_left)
{
	return {sizeof(fi_ops_ep), cancel, getopt, setopt, WU_NOSYS(fi_ops_ep, tx_ctx), WU_NOSYS(fi_ops_ep, rx_ctx),
		rx_left,	   tx_left};
}

/* fi_ops_cm of a connectionless (RDM) endpoint: names only. */
constexpr fi_ops_cm rdm_cm_ops(decltype(fi_ops_cm::setname) setname, decltype(fi_ops_cm::getname) getname)
{
	return {sizeof(fi_ops_cm),
		setname,
		getname,
		WU_NOSYS(fi_ops_cm, getpeer),
		WU_NOSYS(fi_ops_cm, connect),
		WU_NOSYS(fi_ops_cm, listen),
		WU_NOSYS(fi_ops_cm, accept),
		WU_NOSYS(fi_ops_cm, reject),
		WU_NOSYS(fi_ops_cm, shutdown),
		WU_NOSYS(fi_ops_cm, join)};
}

} // namespace wu::prov

#endif
