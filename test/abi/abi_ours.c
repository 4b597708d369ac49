/* SPDX-License-Identifier: BSD-3-Clause */
/* ABI table from our headers (compiled with -I$(top_srcdir)/include).
 * Each header must exist in our tree: a missing one would otherwise be taken
 * silently from /usr/include/rdma. The odd path only resolves relative to
 * this file (plain "../../include" also matches /usr/include/<triplet>). */
#ifdef ABI_SELF_TEST
/* harness self-check: whatever <rdma/...> resolves to */
#include "abi_headers.h"
#else
#if __has_include("../../test/abi/../../include/rdma/fabric.h")
#include <rdma/fabric.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fabric.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_domain.h")
#include <rdma/fi_domain.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_domain.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_endpoint.h")
#include <rdma/fi_endpoint.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_endpoint.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_eq.h")
#include <rdma/fi_eq.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_eq.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_cm.h")
#include <rdma/fi_cm.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_cm.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_errno.h")
#include <rdma/fi_errno.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_errno.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_tagged.h")
#include <rdma/fi_tagged.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_tagged.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_rma.h")
#include <rdma/fi_rma.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_rma.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_atomic.h")
#include <rdma/fi_atomic.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_atomic.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_trigger.h")
#include <rdma/fi_trigger.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_trigger.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_collective.h")
#include <rdma/fi_collective.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_collective.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/fi_ext.h")
#include <rdma/fi_ext.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/fi_ext.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/providers/fi_prov.h")
#include <rdma/providers/fi_prov.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/providers/fi_prov.h is missing from our tree"
#endif
#if __has_include("../../test/abi/../../include/rdma/providers/fi_log.h")
#include <rdma/providers/fi_log.h>
#else
#define ABI_OURS_INCOMPLETE 1
#error "include/rdma/providers/fi_log.h is missing from our tree"
#endif

#if FI_MAJOR_VERSION < 2
#error "abi_ours.c sees the system's 1.x headers; compile it with -I<top>/include"
#endif
#endif

#ifndef ABI_OURS_INCOMPLETE
#define ABI_TABLE_FUNC abi_ours_table
#include "abi_tu.h"
#endif
