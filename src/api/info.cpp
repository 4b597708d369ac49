/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo / fi_dupinfo / fi_freeinfo entry points and their versioned
 * aliases.  Older binaries (FABRIC_1.3: every libfabric 1.x up to 1.17)
 * pass and receive the shorter fi_domain_attr; we widen their hints into
 * zeroed current-size structs and hand back current-size results, whose
 * prefix they read. */
#include <cstddef>
#include <cstring>

#include "core/export.h"
#include "core/info.h"
#include "core/log.h"
#include "core/shim.h"
#include "getinfo/getinfo.h"
#include "prov/registry.h"

namespace wu {
namespace {

int getinfo_common(uint32_t version, const char *node, const char *service, uint64_t flags,
		   const fi_info *hints, fi_info **info, size_t hints_domain_attr_size) noexcept
{
	return guard("fi_getinfo", [&]() -> int {
		if (!info) {
			WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: info (the result pointer) is NULL\n");
			return -FI_EINVAL;
		}
		*info = nullptr;
		if (hints && hints_domain_attr_size < sizeof(fi_domain_attr) && hints->domain_attr) {
			/* Widen an old-layout hints entry before anything reads it:
			 * a shallow copy whose domain_attr is the old prefix plus
			 * zeroed appended members (the engine only reads hints). */
			fi_info wide = *hints;
			fi_domain_attr dom{};
			memcpy(&dom, hints->domain_attr, hints_domain_attr_size);
			wide.domain_attr = &dom;
			return getinfo::run(prov::providers(), version, node, service, flags, &wide, info);
		}
		return getinfo::run(prov::providers(), version, node, service, flags, hints, info);
	});
}

} // namespace
} // namespace wu

using namespace wu;

/* Current layout: FABRIC_1.8 (default), and FABRIC_1.7. */
extern "C" WU_EXPORT int fi_getinfo_1_8(uint32_t version, const char *node, const char *service,
					 uint64_t flags, const struct fi_info *hints,
					 struct fi_info **info)
{
	return getinfo_common(version, node, service, flags, hints, info, sizeof(fi_domain_attr));
}

/* FABRIC_1.3 and 1.7 callers were built with the 192-byte fi_domain_attr. */
extern "C" WU_EXPORT int fi_getinfo_1_3(uint32_t version, const char *node, const char *service,
					 uint64_t flags, const struct fi_info *hints,
					 struct fi_info **info)
{
	return getinfo_common(version, node, service, flags, hints, info, domain_attr_size_v1_3);
}

extern "C" WU_EXPORT void fi_freeinfo_1_8(struct fi_info *info)
{
	info_free(info);
}

extern "C" WU_EXPORT void fi_freeinfo_1_3(struct fi_info *info)
{
	info_free(info);
}

extern "C" WU_EXPORT struct fi_info *fi_dupinfo_1_8(const struct fi_info *info)
{
	return info ? info_dup(info) : info_alloc();
}

extern "C" WU_EXPORT struct fi_info *fi_dupinfo_1_3(const struct fi_info *info)
{
	return info ? info_dup(info, domain_attr_size_v1_3) : info_alloc();
}

WU_SYMVER(fi_getinfo_1_3, "fi_getinfo@FABRIC_1.3");
WU_SYMVER(fi_getinfo_1_3, "fi_getinfo@FABRIC_1.7");
WU_SYMVER(fi_getinfo_1_8, "fi_getinfo@@FABRIC_1.8");
WU_SYMVER(fi_freeinfo_1_3, "fi_freeinfo@FABRIC_1.3");
WU_SYMVER(fi_freeinfo_1_3, "fi_freeinfo@FABRIC_1.7");
WU_SYMVER(fi_freeinfo_1_8, "fi_freeinfo@@FABRIC_1.8");
WU_SYMVER(fi_dupinfo_1_3, "fi_dupinfo@FABRIC_1.3");
WU_SYMVER(fi_dupinfo_1_3, "fi_dupinfo@FABRIC_1.7");
WU_SYMVER(fi_dupinfo_1_8, "fi_dupinfo@@FABRIC_1.8");

#ifdef WU_EMBEDDED
/* Embedded: plain, hidden names for the parent library to call. */
extern "C" int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
			  const struct fi_info *hints, struct fi_info **info)
{
	return fi_getinfo_1_8(version, node, service, flags, hints, info);
}
extern "C" void fi_freeinfo(struct fi_info *info) { info_free(info); }
extern "C" struct fi_info *fi_dupinfo(const struct fi_info *info) { return fi_dupinfo_1_8(info); }
#endif
