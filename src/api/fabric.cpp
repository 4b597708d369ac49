/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_fabric / fi_fabric2: route to the provider named in the attributes. */
#include <cstddef>
#include <cstring>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include "api/init.h"
#include "core/export.h"
#include "core/log.h"
#include "core/shim.h"
#include "prov/registry.h"

namespace {

int open_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr || !fabric) {
		WU_WARN(&wu::core_prov, FI_LOG_FABRIC, "fi_fabric: %s is NULL\n", attr ? "fabric" : "attr");
		return -FI_EINVAL;
	}
	*fabric = nullptr;
	wu::api::init_once();
	if (!attr->prov_name) {
		WU_WARN(&wu::core_prov, FI_LOG_FABRIC,
			"fi_fabric: attr->prov_name is NULL; pass the fabric_attr fi_getinfo returned\n");
		return -FI_EINVAL;
	}
	if (!attr->name) {
		WU_WARN(&wu::core_prov, FI_LOG_FABRIC,
			"fi_fabric: attr->name is NULL; pass the fabric_attr fi_getinfo returned\n");
		return -FI_EINVAL;
	}
	/* A layered name "core;util" opens through its top (last) layer, as in
	 * libfabric, unless a provider carries the whole name. */
	const fi_provider *p = wu::prov::find(attr->prov_name);
	if (!p) {
		const char *semi = strrchr(attr->prov_name, ';');
		if (semi)
			p = wu::prov::find(semi + 1);
	}
	if (!p || !p->fabric) {
		WU_WARN(&wu::core_prov, FI_LOG_FABRIC, "fi_fabric: no provider named \"%s\"\n",
			attr->prov_name);
		return -FI_ENODEV;
	}
	return p->fabric(attr, fabric, context);
}

} // namespace

extern "C" WU_EXPORT int fi_fabric_1_1(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
					void *context)
{
	return WU_GUARD(return open_fabric(attr, fabric, context););
}

/* FABRIC_1.0 (libfabric 1.0-1.4): fi_fabric_attr had no api_version; the
 * caller's padding sits where it is now.  Such callers asked for 1.0-1.4, so
 * they get 1.0 behaviour. */
extern "C" WU_EXPORT int fi_fabric_1_0(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
					void *context)
{
	return WU_GUARD({
		if (!attr)
			return open_fabric(attr, fabric, context);
		fi_fabric_attr wide{};
		memcpy(&wide, attr, offsetof(fi_fabric_attr, api_version));
		wide.api_version = FI_VERSION(1, 0);
		return open_fabric(&wide, fabric, context);
	});
}

extern "C" WU_EXPORT int fi_fabric2(struct fi_info *info, struct fid_fabric **fabric,
				     uint64_t flags, void *context)
{
	return WU_GUARD({
		if (flags) {
			WU_WARN(&wu::core_prov, FI_LOG_FABRIC, "fi_fabric2: flags 0x%llx are not defined\n",
				(unsigned long long)flags);
			return -FI_EBADFLAGS;
		}
		if (!info || !info->fabric_attr) {
			WU_WARN(&wu::core_prov, FI_LOG_FABRIC, "fi_fabric2: info or info->fabric_attr is NULL\n");
			return -FI_EINVAL;
		}
		return open_fabric(info->fabric_attr, fabric, context);
	});
}

WU_SYMVER(fi_fabric_1_0, "fi_fabric@FABRIC_1.0");
WU_SYMVER(fi_fabric_1_1, "fi_fabric@@FABRIC_1.1");

#ifdef WU_EMBEDDED
extern "C" int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	return fi_fabric_1_1(attr, fabric, context);
}
#endif
