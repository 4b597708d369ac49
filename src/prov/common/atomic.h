/* SPDX-License-Identifier: BSD-3-Clause */
/* Provider-independent remote-atomic engine (fi_atomic(3)): which
 * (datatype, op) pairs each family of calls supports, element sizes, and
 * the element-wise application of an operation to target memory.  It knows
 * nothing of any wire; a provider validates requests with check(), moves
 * operands its own way and calls apply() where the target memory lives.
 *
 * Datatypes: FI_INT8..FI_LONG_DOUBLE_COMPLEX and FI_INT128/FI_UINT128.
 * Ops and the datatypes they take (the rules libfabric's providers follow):
 *   MIN MAX CSWAP_LE CSWAP_LT CSWAP_GE CSWAP_GT   integers, real floats
 *   SUM PROD LOR LAND LXOR ATOMIC_READ ATOMIC_WRITE CSWAP CSWAP_NE   all
 *   BOR BAND BXOR MSWAP                            integers
 * Families: write (fi_atomic): MIN..BXOR, ATOMIC_WRITE; fetch
 * (fi_fetch_atomic): the same plus ATOMIC_READ; compare
 * (fi_compare_atomic): CSWAP..MSWAP. */
#ifndef WU_PROV_COMMON_ATOMIC_H
#define WU_PROV_COMMON_ATOMIC_H

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>

namespace wu::prov {
struct atomic_xfer;
}

namespace wu::atomic {

enum class kind : uint8_t { write, fetch, compare };

/* Most operand bytes one operation carries (per buffer: operand, compare
 * and result each hold count * size bytes). */
inline constexpr size_t max_bytes = 65536;

/* Bytes of one element; 0 for a value that is no point-to-point datatype. */
size_t size_of(int datatype) noexcept;

/* Whether op on datatype belongs to family k (false for values out of range). */
bool valid(int datatype, int op, kind k) noexcept;

/* The atomic-valid contract: 0 and *count = most elements per operation,
 * or -FI_EINVAL (datatype or op out of range) / -FI_EOPNOTSUPP (not
 * supported in this family); *why (if given) then says which, for the
 * caller's log line. */
int check(int datatype, int op, kind k, size_t *count, const char **why) noexcept;

/* fi_query_atomic: flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC (both:
 * -FI_EINVAL); FI_TAGGED (atomics on tagged receive buffers) is not
 * supported: -FI_EOPNOTSUPP. */
int query(int datatype, int op, fi_atomic_attr *attr, uint64_t flags, const char **why) noexcept;

/* check() and query() as a provider's fi_atomicvalid family and
 * fi_query_atomic answer them, with the log line that says why (p's,
 * where names the call): an unsupported pair is info, not warn, since
 * MPICH probes every pair at MPI_Init; other refusals warn. */
int valid_for(const fi_provider *p, const char *where, kind k, int datatype, int op, size_t *count) noexcept;
int query_for(const fi_provider *p, int datatype, int op, fi_atomic_attr *attr, uint64_t flags) noexcept;

/* Operands each element takes from the initiator: 0 (ATOMIC_READ), 1, or
 * 2 (compare family: operand then compare). */
unsigned operands(int op) noexcept;

/* Applies op to count elements at dst (any alignment): result (if not
 * null) gets the old values, dst the new ones.  operand / compare are read
 * as the op needs them (either may be null when unused).  Each element is
 * updated atomically with respect to every other apply() in the process.
 * False, touching nothing, when valid() holds for no family. */
bool apply(int op, int datatype, void *dst, const void *operand, const void *compare, void *result,
	   size_t count) noexcept;

/* Most iocs in each list of one call (the providers' iov_limit). */
inline constexpr size_t max_iocs = 4;

/* An fi_atomic call (prov::atomic_xfer) as check_xfer found it. */
struct call {
	size_t size = 0;  /* bytes of one element */
	size_t count = 0; /* elements */
	size_t bytes = 0; /* count * size: of each of operands, compare values, results */
	unsigned nops = 0; /* operands(op) */
	bool fetch = false; /* old values come back, into res */
	size_t k = 0;	    /* v[0..k): the operands, then the compare values, as bytes */
	iovec v[2 * max_iocs];
	size_t res_cnt = 0; /* res[0..res_cnt): where the old values go */
	iovec res[max_iocs];
};

/* The argument checks of an fi_atomic call every provider makes alike:
 * the family, datatype and op (check()), flags no provider carries
 * (FI_TAGGED, FI_REMOTE_CQ_DATA), the ioc lists (present, at most
 * max_iocs, non-NULL, as many elements each), the one remote ioc, and
 * inject_size for FI_INJECT.  0 and *out, or a negative errno and *why
 * for the caller's log line. */
int check_call(const prov::atomic_xfer &a, size_t inject_size, call *out, const char **why) noexcept;

} // namespace wu::atomic

#endif
