/* SPDX-License-Identifier: BSD-3-Clause */
/* Transfer descriptors: one call of the fi_msg(3), fi_tagged(3), fi_rma(3)
 * or fi_atomic(3) families as the provider's engine gets it, whichever of
 * the ~40 entry points the application used (ep_ops.h fills them).  They
 * replace long positional argument lists; every pointer is the caller's
 * and valid only during the call. */
#ifndef WU_PROV_COMMON_XFER_H
#define WU_PROV_COMMON_XFER_H

#include <cstddef>
#include <cstdint>

#include <sys/uio.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "prov/common/atomic.h"

namespace wu::prov {

/* Flags: the *msg calls pass the caller's flags as they are; every other
 * call the endpoint's op_flags (FI_GETOPSFLAG), plus FI_REMOTE_CQ_DATA for
 * the *data calls.  The inject calls pass only FI_INJECT (plus
 * FI_REMOTE_CQ_DATA) and set inject_api: no completion, whatever the
 * endpoint's flags or FI_SELECTIVE_COMPLETION say (fi_msg(3)). */

/* A provider's short path declines a call (ep_ops.h: a traits class's
 * inject() or recv1()): the call goes through the general one. */
constexpr ssize_t general_path = 1;

/* What a message is, where an engine takes it without a descriptor (a
 * short path, a completion): a completion's FI_TAGGED and FI_REMOTE_CQ_DATA
 * bits (0: an untagged message without data). */
constexpr uint64_t msg_kind(bool tagged, bool has_data = false) noexcept
{
	return (tagged ? FI_TAGGED : 0) | (has_data ? FI_REMOTE_CQ_DATA : 0);
}

/* fi_msg / fi_tagged: send or receive. */
struct msg_xfer {
	const char *where = "";	  /* API name, for log lines */
	const iovec *iov = nullptr; /* count buffers (may be NULL if count is 0) */
	void **desc = nullptr;
	size_t count = 0;
	fi_addr_t addr = FI_ADDR_UNSPEC; /* destination, or source filter of a receive */
	uint64_t tag = 0;		 /* tagged only */
	uint64_t ignore = 0;		 /* tagged receive only */
	uint64_t data = 0;		 /* remote CQ data, when flags has FI_REMOTE_CQ_DATA */
	void *context = nullptr;
	uint64_t flags = 0;
	bool tagged = false;
	bool inject_api = false;
	bool msg_api = false; /* fi_*msg: flags are the caller's (FI_PEEK, FI_CLAIM, ...) */
};

/* fi_rma: a read or a write of local iov against remote rma_iov. */
struct rma_xfer {
	const char *where = "";
	bool write = false;
	const iovec *iov = nullptr;
	void **desc = nullptr;
	size_t count = 0;
	fi_addr_t addr = FI_ADDR_UNSPEC;
	const fi_rma_iov *rma = nullptr; /* the non-msg calls: one, over the whole local buffer */
	size_t rma_count = 0;
	uint64_t data = 0;
	void *context = nullptr;
	uint64_t flags = 0;
	bool inject_api = false;
};

/* fi_atomic: m as given to the *msg calls, or built from the arguments of
 * the others (one remote ioc over all operands; m may be NULL only from
 * the *msg calls, the provider refuses it).  ATOMIC_READ ignores the
 * operands; compare buffers for the compare family, results for fetch and
 * compare. */
struct atomic_xfer {
	const char *where = "";
	atomic::kind k = atomic::kind::write;
	const fi_msg_atomic *m = nullptr;
	uint64_t flags = 0;
	const fi_ioc *cmp = nullptr;
	size_t cmp_cnt = 0;
	fi_ioc *res = nullptr;
	size_t res_cnt = 0;
	bool inject_api = false;
};

} // namespace wu::prov

#endif
