/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_atomicvalid / fi_query_atomic answers with their log lines, apart from
 * the pure engine in atomic.cpp so that fuzz targets can link it alone. */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <cstdio>

#include "core/log.h"
#include "prov/common/atomic.h"

namespace wu::atomic {
namespace {

int logged(const fi_provider *p, enum fi_log_subsys sub, const char *where, int r, const char *why)
{
	if (r == -FI_EOPNOTSUPP)
		WU_INFO(p, sub, "%s: %s (%s)\n", where, why, fi_strerror(FI_EOPNOTSUPP));
	else if (r)
		WU_WARN_SPARSE(p, sub, "%s: %s (%s)\n", where, why, fi_strerror(-r));
	return r;
}

} // namespace

int valid_for(const fi_provider *p, const char *where, kind k, int datatype, int op, size_t *count) noexcept
{
	if (!count)
		return logged(p, FI_LOG_EP_DATA, where, -FI_EINVAL, "count is NULL");
	const char *why = nullptr;
	return logged(p, FI_LOG_EP_DATA, where, check(datatype, op, k, count, &why), why);
}

int query_for(const fi_provider *p, int datatype, int op, fi_atomic_attr *attr, uint64_t flags) noexcept
{
	const char *why = nullptr;
	int r = query(datatype, op, attr, flags, &why);
	if (r) {
		char where[96];
		snprintf(where, sizeof where, "fi_query_atomic(datatype %d, op %d, flags 0x%llx)", datatype, op,
			 (unsigned long long)flags);
		logged(p, FI_LOG_DOMAIN, where, r, why);
	}
	return r;
}

} // namespace wu::atomic
