/* SPDX-License-Identifier: BSD-3-Clause */
/* The wireup provider: one FI_EP_RDM endpoint that reaches every peer,
 * through a shm sub-endpoint for peers on this host and a tcp one for the
 * rest (issue 15).  Addresses: wx_addr.h. */
#ifndef WU_PROV_WIREUP_WIREUP_H
#define WU_PROV_WIREUP_WIREUP_H

#include <cstdint>

#include <rdma/fi_endpoint.h>
#include <rdma/providers/fi_prov.h>

namespace wu::wireup {

const fi_provider *provider() noexcept;
/* The provider descriptor (log lines and params). */
fi_provider *prov_desc() noexcept;

/* For tests only (not in the C ABI): how an endpoint routed its peers so
 * far (one count per fi_addr decided, again after fi_av_remove), and its
 * sub-endpoints (nullptr where it has none). */
struct route_stats {
	uint64_t shm = 0, tcp = 0, unreachable = 0;
	fid_ep *shm_ep = nullptr, *tcp_ep = nullptr;
};
int stats_of(fid_ep *ep, route_stats *out) noexcept;

/* Registers the provider's addresses as computable for node-local ranks
 * (core/launcher.h's local_format; local_peers.cpp), so the launcher's
 * glue fetches only remote ranks' addresses.  0 or a negative FI_E*. */
int register_local_format() noexcept;

} // namespace wu::wireup

#endif
