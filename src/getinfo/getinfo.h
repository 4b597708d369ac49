/* fi_getinfo's matching engine, behind the exported entry points in
 * src/core/info.cpp (which already widened old-layout hints). */
#ifndef WU_GETINFO_GETINFO_H
#define WU_GETINFO_GETINFO_H

#include <rdma/fabric.h>

namespace wu::getinfo {

int run(uint32_t version, const char *node, const char *service, uint64_t flags,
	const fi_info *hints, fi_info **info);

} // namespace wu::getinfo

#endif
