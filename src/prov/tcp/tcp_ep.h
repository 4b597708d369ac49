/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider internals shared by tcp_prov.cpp (domain, fabric) and
 * the files tcp_impl.h joins (endpoints, passive endpoints, connection
 * manager, data path). */
#ifndef WU_PROV_TCP_TCP_EP_H
#define WU_PROV_TCP_TCP_EP_H

#include <cstdint>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "prov/common/cq.h"
#include "prov/common/objects.h"

namespace wu::tcp {

/* The provider descriptor (for log lines and params). */
fi_provider *prov_desc() noexcept;

/* fi_ops_domain::endpoint for the tcp domain. */
int ep_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept;
/* fi_ops_domain::srx_ctx for the tcp domain (srx.cpp). */
int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **rx_ep, void *context) noexcept;
/* fabric_hooks::passive_ep. */
int pep_open(prov::fabric *fab, fi_info *info, fid_pep **pep, void *context);
/* A tcp passive endpoint's info (fi_getinfo with hints->handle narrows to
 * its fabric and domain), nullptr when f is not one. */
const fi_info *pep_info(const fid *f) noexcept;

/* Counters for tests: handshakes refused (on either side), malformed frames seen. */
struct stats {
	uint64_t refused_handshakes;
	uint64_t bad_frames;
	uint64_t connects;
	uint64_t rndv_sends;   /* messages sent by rendezvous (RTS written) */
	uint64_t staged_bytes; /* bytes of unexpected eager messages buffered */
	uint64_t timeouts;     /* connection attempts that timed out */
	uint64_t silent_drops; /* incoming connections dropped for want of a handshake */
};
stats get_stats() noexcept;

} // namespace wu::tcp

#endif
