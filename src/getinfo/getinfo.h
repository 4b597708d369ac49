/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo's matching engine, behind the exported entry points in
 * src/api/info.cpp (which already widened old-layout hints and passes the
 * registry's providers, so getinfo needs no provider). */
#ifndef WU_GETINFO_GETINFO_H
#define WU_GETINFO_GETINFO_H

#include <vector>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

namespace wu::getinfo {

/* Asks providers, best first. */
int run(const std::vector<const fi_provider *> &providers, uint32_t version, const char *node,
	const char *service, uint64_t flags, const fi_info *hints, fi_info **info);

} // namespace wu::getinfo

#endif
