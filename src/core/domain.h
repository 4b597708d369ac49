/* SPDX-License-Identifier: BSD-3-Clause */
/* The fabric and domain objects every part sees: providers build them
 * (src/prov/common/objects.h opens and closes them), and the parts that
 * open children of a domain without being a provider (the AV engine, the
 * PMIx wire-up) read them here, below every provider.  The namespace stays
 * wu::prov: these are the provider objects, only their header is lower. */
#ifndef WU_CORE_DOMAIN_H
#define WU_CORE_DOMAIN_H

#include <atomic>
#include <cstdint>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

#include "core/child_ref.h"
#include "core/fid.h"

namespace wu::prov {

struct domain_hooks;

/* Provider-specific pieces of a fabric. */
struct fabric_hooks {
	const fi_provider *prov;
	/* Opens this provider's domain (validates info; fills *dom). */
	int (*domain_open)(struct fabric *fab, fi_info *info, fid_domain **dom, void *context);
	/* Passive endpoint (MSG listen), or nullptr: -FI_ENOSYS. */
	int (*passive_ep)(struct fabric *fab, fi_info *info, fid_pep **pep, void *context);
	/* Whether fi_getinfo reports a fabric (domain false) or domain (true)
	 * of this name: fi_fabric and fi_domain refuse any other. */
	bool (*known)(const char *name, bool domain) noexcept;
};

inline constexpr uint32_t fabric_magic = 0x57554642; /* "WUFB" */

struct fabric {
	fid_fabric fid; /* first: the C view */
	uint32_t magic;
	const fabric_hooks *hooks;
	std::string name;
	refs children;
};

/* The fabric behind a fid, or nullptr if the fid is not one of ours. */
inline fabric *fabric_of(fid_fabric *fid) noexcept
{
	if (!fid || fid->fid.fclass != FI_CLASS_FABRIC)
		return nullptr;
	fabric *f = container_of_fid<fabric>(fid);
	return f->magic == fabric_magic ? f : nullptr;
}

inline constexpr uint32_t domain_magic = 0x57554444; /* "WUDD" */

struct domain {
	fid_domain fid;
	uint32_t magic;
	fabric *fab;
	fi_info *info; /* our copy of the info it was opened with */
	uint32_t api_version;
	refs children;
	child_ref parent; /* on fab->children */
};

/* The domain behind a fid, or nullptr if the fid is not one of ours. */
inline domain *domain_of(fid_domain *fid) noexcept
{
	if (!fid || fid->fid.fclass != FI_CLASS_DOMAIN)
		return nullptr;
	domain *d = container_of_fid<domain>(fid);
	return d->magic == domain_magic ? d : nullptr;
}

} // namespace wu::prov

#endif
