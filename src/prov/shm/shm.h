/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm provider: node-local FI_EP_RDM endpoints over shared-memory
 * regions (region.h), FI_ADDR_STR addresses (shm_addr.h). */
#ifndef WU_PROV_SHM_SHM_H
#define WU_PROV_SHM_SHM_H

#include <cstddef>

#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

namespace wu::prov {
struct sub_ops;
}

namespace wu::shm {

const fi_provider *provider() noexcept;
/* The provider descriptor (log lines and params). */
fi_provider *prov_desc() noexcept;

/* fi_ops_domain::endpoint for the shm domain (ep.cpp). */
int ep_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept;

/* Its endpoints as sub-endpoints of the wireup provider (prov/common/sub_ep.h). */
const prov::sub_ops *sub_ops() noexcept;

} // namespace wu::shm

#endif
