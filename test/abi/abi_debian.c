/* SPDX-License-Identifier: BSD-3-Clause */
/* ABI table from Debian's libfabric 1.17 headers (/usr/include/rdma).
 * Must be compiled WITHOUT -I for our include/ directory. */
#include "abi_table.h"

#if defined(__has_include)
#if !__has_include(<rdma/fabric.h>)
#define ABI_DEBIAN_MISSING 1
#endif
#endif

#ifndef ABI_DEBIAN_MISSING
#include <rdma/fabric.h>
#if FI_MAJOR_VERSION >= 2
#error "abi_debian.c sees our (2.x) headers; compile it without -I<top>/include"
#endif
#if FI_MAJOR_VERSION != 1 || FI_MINOR_VERSION != 17
#define ABI_DEBIAN_MISSING 2
#endif
#endif

#ifdef ABI_DEBIAN_MISSING
const struct abi_table *abi_debian_table(void)
{
	static const struct abi_table table = {
#if ABI_DEBIAN_MISSING == 1
		"Debian's libfabric headers (/usr/include/rdma/fabric.h) are not "
		"installed; install libfabric-dev (1.17) to run this test",
#else
		"<rdma/fabric.h> on the system include path is not libfabric 1.17; "
		"install Debian 12's libfabric-dev (1.17) to run this test",
#endif
		NULL, 0, NULL,
	};
	return &table;
}
#else
#include "abi_headers.h"
#define ABI_TABLE_FUNC abi_debian_table
#include "abi_tu.h"
#endif
