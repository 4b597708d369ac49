/* SPDX-License-Identifier: BSD-3-Clause */
/* Poll sets (fi_poll(3)) for any provider built on prov::domain: a group
 * of CQs and counters checked with one fi_poll call.  A provider's domain
 * puts wu::poll::domain_poll_open in its poll_open slot. */
#ifndef WU_PROV_COMMON_POLL_H
#define WU_PROV_COMMON_POLL_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

namespace wu::poll {

/* fi_ops_domain::poll_open; the poll set holds a reference on the domain
 * until it is closed. */
int domain_poll_open(fid_domain *domain, fi_poll_attr *attr, fid_poll **pollset) noexcept;

} // namespace wu::poll

#endif
