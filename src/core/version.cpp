/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_version and fi_open: the library-level entry points that are not
 * attached to an object. */
#include <cstring>

#include <rdma/fabric.h>

#include "core/export.h"
#include "core/log.h"
#include "core/shim.h"

extern "C" WU_EXPORT uint32_t fi_version(void)
{
	return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

/* Named library-level objects.  We have none yet: every name, including
 * libfabric's "mr_cache", answers -FI_ENOSYS, which Open MPI handles. */
extern "C" WU_EXPORT int fi_open(uint32_t version, const char *name, void *attr, size_t attr_len,
				  uint64_t flags, struct fid **fid, void *context)
{
	(void)attr;
	(void)attr_len;
	(void)flags;
	(void)context;
	return WU_GUARD({
		if (!name || !fid) {
			WU_WARN(&wu::core_prov, FI_LOG_CORE, "fi_open: %s is NULL\n", name ? "fid" : "name");
			return -FI_EINVAL;
		}
		*fid = nullptr;
		if (version > FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)) {
			WU_WARN(&wu::core_prov, FI_LOG_CORE, "fi_open(%s): API version %u.%u is newer than ours\n",
				name, FI_MAJOR(version), FI_MINOR(version));
			return -FI_ENOSYS;
		}
		WU_INFO(&wu::core_prov, FI_LOG_CORE, "fi_open: no library object named \"%s\"\n", name);
		return -FI_ENOSYS;
	});
}
