/* SPDX-License-Identifier: BSD-3-Clause */
/* The ucx provider: FI_EP_RDM over UCX's UCP layer (tag matching, RMA,
 * worker progress).  Built only when configure finds UCX and --enable-ucx is not no (WU_PROV_UCX),
 * and last in the registry: selected only by FI_PROVIDER=ucx or
 * hints->fabric_attr->prov_name, never ahead of wireup, tcp or shm. */
#ifndef WU_PROV_UCX_UCX_H
#define WU_PROV_UCX_UCX_H

#include <cstdint>

#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

namespace wu::ucx {

const fi_provider *provider() noexcept;
/* The provider descriptor (log lines and params). */
fi_provider *prov_desc() noexcept;

} // namespace wu::ucx

#endif
