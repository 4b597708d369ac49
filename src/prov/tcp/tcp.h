/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp provider: sockets; FI_SOCKADDR_IN/IN6 and FI_ADDR_STR addresses;
 * RDM and MSG endpoint types. */
#ifndef WU_PROV_TCP_TCP_H
#define WU_PROV_TCP_TCP_H

#include <rdma/providers/fi_prov.h>

namespace wu::prov {
struct sub_ops;
}

namespace wu::tcp {

const fi_provider *provider() noexcept;
/* Its RDM endpoints as sub-endpoints of the wireup provider (prov/common/sub_ep.h). */
const prov::sub_ops *sub_ops() noexcept;

} // namespace wu::tcp

#endif
