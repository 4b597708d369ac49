#include "getinfo/getinfo.h"

#include <cstring>

#include "core/info.h"
#include "core/log.h"
#include "prov/registry.h"

namespace wu::getinfo {

int run(uint32_t version, const char *node, const char *service, uint64_t flags,
	const fi_info *hints, fi_info **info)
{
	if (FI_MAJOR(version) < 1) {
		WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: API version %u.%u is not a valid version\n",
			FI_MAJOR(version), FI_MINOR(version));
		return -FI_EINVAL;
	}
	if (version > FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)) {
		WU_WARN(&core_prov, FI_LOG_CORE,
			"fi_getinfo: API version %u.%u is newer than this library's %d.%d\n",
			FI_MAJOR(version), FI_MINOR(version), FI_MAJOR_VERSION, FI_MINOR_VERSION);
		return -FI_ENOSYS;
	}
	const char *want = hints && hints->fabric_attr ? hints->fabric_attr->prov_name : nullptr;
	fi_info *head = nullptr, **tail = &head;
	int last_err = -FI_ENODATA;
	for (const fi_provider *p : prov::providers()) {
		if (want && (!p->name || strcmp(want, p->name) != 0))
			continue;
		if (!p->getinfo)
			continue;
		fi_info *got = nullptr;
		int ret = p->getinfo(version, node, service, flags, hints, &got);
		if (ret) {
			if (ret != -FI_ENODATA)
				last_err = ret;
			continue;
		}
		for (fi_info *i = got; i; i = i->next) {
			if (i->fabric_attr && !i->fabric_attr->prov_name && p->name)
				i->fabric_attr->prov_name = strdup(p->name);
			if (i->fabric_attr && !i->fabric_attr->prov_version)
				i->fabric_attr->prov_version = p->version;
			if (i->fabric_attr && !i->fabric_attr->api_version)
				i->fabric_attr->api_version = version;
		}
		*tail = got;
		while (*tail)
			tail = &(*tail)->next;
	}
	if (!head) {
		WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: no provider matched%s%s\n",
			want ? " the requested provider " : "", want ? want : "");
		return last_err;
	}
	*info = head;
	return 0;
}

} // namespace wu::getinfo
