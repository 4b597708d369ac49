/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo / fi_dupinfo / fi_freeinfo and their versioned bindings.
 * Each symbol version stands for the struct layout binaries built against
 * it were compiled with (core/info.h).  Old callers' hints are copied into
 * zeroed current-size structs before anything reads them; results are
 * current-size (a caller reads its prefix), minus the owned pointers its
 * layout cannot see, so that its own fi_freeinfo frees everything. */
#include <cstddef>
#include <cstring>
#include <memory>

#include "core/export.h"
#include "core/info.h"
#include "core/log.h"
#include "core/shim.h"
#include "getinfo/getinfo.h"
#include "prov/registry.h"

namespace wu {
namespace {

template <info_layout L>
int getinfo_at(uint32_t version, const char *node, const char *service, uint64_t flags,
	       const fi_info *hints, fi_info **info) noexcept
{
	return guard("fi_getinfo", [&]() -> int {
		if (!info) {
			WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: info (the result pointer) is NULL\n");
			return -FI_EINVAL;
		}
		*info = nullptr;
		if constexpr (L == layout_current) {
			return getinfo::run(prov::providers(), version, node, service, flags, hints, info);
		} else {
			info_ptr wide(nullptr, info_free);
			if (hints) {
				wide.reset(info_dup(hints, L));
				if (!wide) {
					WU_WARN(&core_prov, FI_LOG_CORE,
						"fi_getinfo: no memory to widen old-layout hints\n");
					return -FI_ENOMEM;
				}
			}
			int ret = getinfo::run(prov::providers(), version, node, service, flags, wide.get(),
					       info);
			if (ret == 0)
				info_trim(*info, L);
			return ret;
		}
	});
}

template <info_layout L>
fi_info *dupinfo_at(const fi_info *info) noexcept
{
	return info ? info_dup(info, L) : info_alloc();
}

} // namespace
} // namespace wu

using namespace wu;

/* One getinfo/freeinfo/dupinfo triple per layout; the names stay hidden
 * behind the version script, only the .symver aliases are exported. */
#define WU_INFO_ENTRY_POINTS(suffix, layout)                                                     \
	extern "C" WU_EXPORT int fi_getinfo_##suffix(uint32_t version, const char *node,            \
						     const char *service, uint64_t flags,          \
						     const struct fi_info *hints,                  \
						     struct fi_info **info)                        \
	{                                                                                          \
		return getinfo_at<layout>(version, node, service, flags, hints, info);             \
	}                                                                                          \
	extern "C" WU_EXPORT void fi_freeinfo_##suffix(struct fi_info *info)                       \
	{                                                                                          \
		info_free(info, layout);                                                           \
	}                                                                                          \
	extern "C" WU_EXPORT struct fi_info *fi_dupinfo_##suffix(const struct fi_info *info)       \
	{                                                                                          \
		return dupinfo_at<layout>(info);                                                   \
	}

WU_INFO_ENTRY_POINTS(1_9, layout_current)
WU_INFO_ENTRY_POINTS(1_8, layout_1_8)
WU_INFO_ENTRY_POINTS(1_7, layout_1_7)
WU_INFO_ENTRY_POINTS(1_3, layout_1_3)
WU_INFO_ENTRY_POINTS(1_2, layout_1_2)
WU_INFO_ENTRY_POINTS(1_1, layout_1_1)
WU_INFO_ENTRY_POINTS(1_0, layout_1_0)

#define WU_INFO_SYMVER(suffix, node)                                    \
	WU_SYMVER(fi_getinfo_##suffix, "fi_getinfo" node);             \
	WU_SYMVER(fi_freeinfo_##suffix, "fi_freeinfo" node);           \
	WU_SYMVER(fi_dupinfo_##suffix, "fi_dupinfo" node)

WU_INFO_SYMVER(1_0, "@FABRIC_1.0");
WU_INFO_SYMVER(1_1, "@FABRIC_1.1");
WU_INFO_SYMVER(1_2, "@FABRIC_1.2");
WU_INFO_SYMVER(1_3, "@FABRIC_1.3");
WU_INFO_SYMVER(1_7, "@FABRIC_1.7");
WU_INFO_SYMVER(1_8, "@FABRIC_1.8");
WU_INFO_SYMVER(1_9, "@@FABRIC_1.9");

#ifdef WU_EMBEDDED
/* Embedded: plain, hidden names for the parent library to call. */
extern "C" int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
			  const struct fi_info *hints, struct fi_info **info)
{
	return fi_getinfo_1_9(version, node, service, flags, hints, info);
}
extern "C" void fi_freeinfo(struct fi_info *info) { info_free(info); }
extern "C" struct fi_info *fi_dupinfo(const struct fi_info *info) { return fi_dupinfo_1_9(info); }
#endif
