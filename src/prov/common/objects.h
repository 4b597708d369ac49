/* Fabric and domain objects every built-in provider shares.  A provider
 * supplies its ops for what differs (endpoints, AV address format, ...);
 * reference counts make fi_close return -FI_EBUSY while children live. */
#ifndef WU_PROV_COMMON_OBJECTS_H
#define WU_PROV_COMMON_OBJECTS_H

#include <atomic>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

namespace wu::prov {

/* Children (domains, EQs, passive endpoints ...) hold a reference on their
 * parent; close refuses while any is held. */
struct refs {
	std::atomic<int> n{0};
	void get() noexcept { n.fetch_add(1, std::memory_order_relaxed); }
	void put() noexcept { n.fetch_sub(1, std::memory_order_acq_rel); }
	bool busy() const noexcept { return n.load(std::memory_order_acquire) != 0; }
};

struct domain_hooks;

/* Provider-specific pieces of a fabric. */
struct fabric_hooks {
	const fi_provider *prov;
	/* Opens this provider's domain (validates info; fills *dom). */
	int (*domain_open)(struct fabric *fab, fi_info *info, fid_domain **dom, void *context);
	/* Passive endpoint (MSG listen), or nullptr: -FI_ENOSYS. */
	int (*passive_ep)(struct fabric *fab, fi_info *info, fid_pep **pep, void *context);
};

inline constexpr uint32_t fabric_magic = 0x57554642; /* "WUFB" */

struct fabric {
	fid_fabric fid; /* first: the C view */
	uint32_t magic;
	const fabric_hooks *hooks;
	std::string name;
	refs children;
};

/* Opens a fabric object for a provider's fi_provider.fabric entry. */
int fabric_open(const fabric_hooks *hooks, fi_fabric_attr *attr, fid_fabric **out, void *context);
/* The fabric behind a fid, or nullptr if the fid is not one of ours. */
fabric *fabric_of(fid_fabric *fid) noexcept;

inline constexpr uint32_t domain_magic = 0x57554444; /* "WUDD" */

struct domain {
	fid_domain fid;
	uint32_t magic;
	fabric *fab;
	fi_info *info; /* our copy of the info it was opened with */
	uint32_t api_version;
	refs children;
};

/* Common part of a provider's domain open: validates info against the
 * fabric and fills a domain whose ops the provider supplies. */
int domain_init(domain *d, fabric *fab, const fi_info *info, fi_ops_domain *ops, fi_ops_mr *mr,
		fi_ops *fi_ops_tbl, void *context);
/* Releases what domain_init took; -FI_EBUSY while children live. */
int domain_fini(domain *d);
domain *domain_of(fid_domain *fid) noexcept;

} // namespace wu::prov

#endif
