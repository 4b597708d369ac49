/* SPDX-License-Identifier: BSD-3-Clause */
/* Fabric and domain objects every built-in provider shares.  A provider
 * supplies its ops for what differs (endpoints, AV address format, ...);
 * reference counts make fi_close return -FI_EBUSY while children live. */
#ifndef WU_PROV_COMMON_OBJECTS_H
#define WU_PROV_COMMON_OBJECTS_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

#include "core/domain.h"

namespace wu::prov {

/* Opens a fabric object for a provider's fi_provider.fabric entry:
 * -FI_ENODATA (logged) for a name hooks->known does not know. */
int fabric_open(const fabric_hooks *hooks, fi_fabric_attr *attr, fid_fabric **out, void *context) noexcept;

/* fi_provider::fabric of the provider that H describes. */
template <const fabric_hooks &H>
int fabric_entry(fi_fabric_attr *attr, fid_fabric **out, void *context) noexcept
{
	return fabric_open(&H, attr, out, context);
}

/* The prov_version every built-in provider reports: the API level, as
 * FI_VERSION(major*100+minor, rev*10). */
inline constexpr uint32_t prov_version = FI_VERSION(206, 0);

/* Fills a built-in provider's descriptor (version prov_version) unless
 * done before (p.name set): true when it did, so the caller defines its
 * knobs once. */
bool describe(fi_provider &p, const char *name, decltype(fi_provider::getinfo) getinfo,
	      decltype(fi_provider::fabric) fabric, decltype(fi_provider::cleanup) cleanup) noexcept;

/* Common part of a provider's domain open: validates info against the
 * fabric (a domain name hooks->known does not know: -FI_ENODEV) and fills a domain whose ops the provider supplies. */
int domain_init(domain *d, fabric *fab, const fi_info *info, fi_ops_domain *ops, fi_ops_mr *mr,
		fi_ops *fi_ops_tbl, void *context);
/* Releases what domain_init took; -FI_EBUSY while children live. */
int domain_fini(domain *d);

/* A domain with nothing of the provider's own: allocates and inits one
 * (fi_ops_tbl's close must be domain_close, which frees it). */
int domain_open(fabric *fab, const fi_info *info, fi_ops_domain *ops, fi_ops_mr *mr, fi_ops *fi_ops_tbl,
		void *context, fid_domain **out);
int domain_close(struct fid *f) noexcept;

} // namespace wu::prov

#endif
