/* SPDX-License-Identifier: BSD-3-Clause */
/* The generic fi_getinfo matcher built-in providers use: a provider lists
 * what it offers as complete fi_info templates; hints filter and narrow them.
 * Why a template failed is kept so -FI_ENODATA can be explained. */
#ifndef WU_GETINFO_FILTER_H
#define WU_GETINFO_FILTER_H

#include <span>
#include <string>

#include <rdma/fabric.h>

namespace wu::getinfo {

/* Capability classes of fi_getinfo(3). */
inline constexpr uint64_t primary_caps =
	FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | FI_NAMED_RX_CTX |
	FI_DIRECTED_RECV | FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |
	FI_REMOTE_WRITE | FI_COLLECTIVE | FI_HMEM | FI_VARIABLE_MSG;
inline constexpr uint64_t secondary_caps = FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT |
					   FI_SHARED_AV | FI_TRIGGER | FI_FENCE |
					   FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SOURCE_ERR |
					   FI_RMA_PMEM;

/* What a provider's templates can do beyond the defaults their fi_info
 * reports (an fi_info has no field for "also"). */
struct template_opts {
	/* Progress modes also served when a hint asks for FI_PROGRESS_AUTO;
	 * unspecified hints keep the template's (usually faster) mode. */
	bool auto_control_progress = false;
	bool auto_data_progress = false;
	/* Secondary caps the provider pays for: reported only when asked for
	 * (fi_getinfo(3): unasked, only those that cost nothing). */
	uint64_t costly_caps = 0;
};

/* Does template t meet hints?  On failure, *why names the first unmet hint,
 * what was asked and what t offers, and *stage says how far it got (the
 * best explanation is the one that got furthest). */
bool meets(const fi_info &t, const fi_info *hints, uint32_t version, std::string *why, int *stage,
	   const template_opts &opts = {});

/* Narrows a copy of template t to hints (caps, mode, orders, sizes, types). */
void narrow(fi_info &out, const fi_info *hints, uint32_t version, const template_opts &opts = {});

/* Thread-local sink for the reason the current provider found nothing. */
void set_reason(std::string why);
std::string take_reason();

} // namespace wu::getinfo

#endif

namespace wu::getinfo {

/* fi_getinfo for a built-in provider: every template (a list, owned by the
 * provider) that meets the hints is copied, narrowed, and given its source
 * and destination addresses from node/service/flags/hints. */
int from_templates(std::span<const fi_info *const> templates, uint32_t version, const char *node,
		   const char *service, uint64_t flags, const fi_info *hints, fi_info **info,
		   const template_opts &opts = {});

} // namespace wu::getinfo
