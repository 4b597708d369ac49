/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues (fi_cq(3)), counters (fi_cntr(3)) and memory regions
 * (fi_mr(3)) shared by every provider.  A provider's domain forwards its
 * cq_open / cntr_open / mr slots here; its endpoints report through the
 * posting API below and register a progress function that CQ and counter
 * reads call (FI_PROGRESS_MANUAL).  Everything is noexcept and thread-safe.
 *
 *   domain:    .cq_open   -> wu::cq::open(domain, attr, cq, ctx)
 *              .cntr_open -> wu::cntr::open(domain, attr, cntr, ctx)
 *              mr ops     -> wu::mr::ops (reg / regv / regattr)
 *   endpoint:  bind        -> wu::cq::bind(cq_fid, progress) / cntr::bind
 *              close       -> wu::cq::unbind / cntr::unbind
 *              completion  -> wu::cq::post / post_error, wu::cntr::add / add_err
 */
#ifndef WU_PROV_COMMON_CQ_H
#define WU_PROV_COMMON_CQ_H

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "prov/common/objects.h"

namespace wu {

/* A progress callback an endpoint registers with the CQs and counters it is
 * bound to: reads and sreads call every registered one (manual progress);
 * an auto-progress provider drives it from its own thread instead. */
struct progress_fn {
	void (*fn)(void *arg) noexcept = nullptr;
	void *arg = nullptr;
	/* fi_trywait on the CQ / counter is about to let the application block
	 * on its native wait object, where no read drives manual progress: make
	 * data move without calls from now on.  0, or -FI_EAGAIN when that
	 * cannot be arranged at this moment (trywait then says so).  Optional;
	 * called with no provider lock held. */
	int (*block)(void *arg) noexcept = nullptr;
};

namespace cq {

/* One completion, in the richest format; the CQ copies what its
 * fi_cq_format needs (CONTEXT / MSG / DATA / TAGGED). */
struct completion {
	void *op_context = nullptr;
	uint64_t flags = 0; /* FI_SEND, FI_RECV, FI_TAGGED, FI_MSG, FI_RMA, FI_REMOTE_CQ_DATA, FI_MULTI_RECV ... */
	size_t len = 0;
	void *buf = nullptr;
	uint64_t data = 0;
	uint64_t tag = 0;
	fi_addr_t src_addr = FI_ADDR_NOTAVAIL; /* for fi_cq_readfrom (FI_SOURCE) */
};

/* fi_ops_domain::cq_open for any wu::prov::domain; takes a child reference
 * on the domain until the CQ closes. */
int open(prov::domain *dom, fi_cq_attr *attr, fid_cq **cq, void *context) noexcept;

/* True for a live CQ opened here. */
bool is_cq(const fid *fid) noexcept;

/* Endpoint binding: while bound, fi_close(cq) is -FI_EBUSY; the progress
 * function (may be empty) is called by reads.  -FI_EINVAL if not a CQ. */
int bind(fid *cq, progress_fn progress) noexcept;
int unbind(fid *cq, progress_fn progress) noexcept;

/* Queues a completion; -FI_EOVERRUN when the CQ is full (the provider keeps
 * the operation and retries: completions are never dropped). */
int post(fid_cq *cq, const completion &c) noexcept;

/* Whether post() on this CQ takes no lock but the CQ's own (no wait set,
 * no mutex/cond wait object): a provider may then post while holding its
 * endpoint lock, as nothing that holds the CQ's lock calls progress. */
bool post_is_leaf(fid_cq *cq) noexcept;
/* post() when post_is_leaf(), in one look-up; 1 (nothing done) when not. */
int post_if_leaf(fid_cq *cq, const completion &c) noexcept;

/* Queues an error completion: err positive FI_E* (FI_ETRUNC, FI_ECANCELED,
 * FI_EIO ...), olen the overflow length for FI_ETRUNC; err_data copied. */
int post_error(fid_cq *cq, const completion &c, int err, int prov_errno, size_t olen,
	       const void *err_data = nullptr, size_t err_data_size = 0) noexcept;

/* Wakes sread waiters of this CQ so that they call the progress functions
 * again and re-check: for a provider that learns of activity (a socket
 * became readable) without having a completion to post yet.  Unlike
 * fi_cq_signal a woken sread keeps waiting when nothing arrived. */
void wake(fid_cq *cq) noexcept;

/* fi_trywait for a CQ fid (a provider's fabric trywait forwards CQs and
 * counters here): -FI_EAGAIN when something is queued, 0 when blocking on
 * the native wait object is safe (the bound endpoints' block hooks agreed,
 * see progress_fn), -FI_EINVAL when not a CQ. */
int trywait(fid *cq) noexcept;

/* For poll sets: runs the bound endpoints' progress, then 1 when entries
 * or errors are queued, 0 when empty, -FI_EINVAL when not a CQ. */
int pending(fid *cq) noexcept;

/* fi_ops_domain::cq_open as is, for domains built on prov::domain. */
int domain_cq_open(fid_domain *domain, fi_cq_attr *attr, fid_cq **cq, void *context) noexcept;

/* Smallest / default / largest fi_cq_attr::size.  Memory grows with the
 * completions actually queued (ring doubling), up to the size asked. */
inline constexpr size_t min_size = 1;
inline constexpr size_t default_size = 1024;
inline constexpr size_t max_size = size_t{1} << 24;

} // namespace cq

namespace cntr {

int open(prov::domain *dom, fi_cntr_attr *attr, fid_cntr **cntr, void *context) noexcept;
bool is_cntr(const fid *fid) noexcept;
int bind(fid *cntr, progress_fn progress) noexcept;
int unbind(fid *cntr, progress_fn progress) noexcept;
/* Success / error increments from the data path; wake fi_cntr_wait. */
void add(fid_cntr *cntr, uint64_t n = 1) noexcept;
void add_err(fid_cntr *cntr, uint64_t n = 1) noexcept;
/* Like cq::wake: waiters in fi_cntr_wait run progress again. */
void wake(fid_cntr *cntr) noexcept;
/* fi_trywait for a counter: -FI_EAGAIN while its wait object is signaled
 * (a change not yet seen by fi_cntr_read / fi_cntr_wait), else 0 once the
 * bound endpoints' block hooks agreed (see progress_fn). */
int trywait(fid *cntr) noexcept;
/* fi_ops_domain::cntr_open as is, for domains built on prov::domain. */
int domain_cntr_open(fid_domain *domain, fi_cntr_attr *attr, fid_cntr **cntr,
		     void *context) noexcept;

} // namespace cntr

namespace mr {

/* fi_ops_mr for any wu::prov::domain (FI_MR_LOCAL / FI_MR_VIRT_ADDR /
 * FI_MR_PROV_KEY semantics from the domain's info->domain_attr->mr_mode). */
extern fi_ops_mr ops;

/* Data-path check for RMA targets: finds the region for key and checks
 * [addr, addr+len) against it and the access bits (FI_REMOTE_READ /
 * FI_REMOTE_WRITE).  Returns the local address to read/write, or nullptr
 * (-FI_EACCES semantics for the caller) when the key or range is invalid. */
void *check(prov::domain *dom, uint64_t key, uint64_t addr, size_t len, uint64_t access) noexcept;

/* Names one registration: a region closed (or its key reused by a new
 * region) no longer matches. */
struct ref {
	prov::domain *dom = nullptr;
	uint64_t key = 0;
	uint64_t serial = 0; /* 0: none */
};
/* check() that also names the region it found (out untouched on failure). */
void *check(prov::domain *dom, uint64_t key, uint64_t addr, size_t len, uint64_t access, ref &out) noexcept;

/* fi_close(mr) waits for every live guard on the region, and no guard
 * taken after it returns is live: a provider touches region memory found
 * through check() only while holding a live guard (one socket call or one
 * copy at a time, never across progress), so that once close returns no
 * remote operation reads or writes that memory.  Do not take another
 * guard or call check() while holding one. */
class guard {
public:
	explicit guard(const ref &r) noexcept;
	~guard();
	guard(const guard &) = delete;
	guard &operator=(const guard &) = delete;
	explicit operator bool() const noexcept { return live_; }

private:
	bool live_ = false;
};

/* Completion side effects of a region bound to a counter (FI_REMOTE_WRITE
 * events with FI_RMA_EVENT): called by the provider after a remote access. */
void remote_access(prov::domain *dom, uint64_t key, uint64_t access) noexcept;

/* The region behind a desc from fi_mr_desc (FI_MR_LOCAL checks): true when
 * desc is a live region of dom covering [buf, buf+len) with the access
 * bits (FI_SEND, FI_RECV, FI_READ, FI_WRITE). */
bool check_desc(prov::domain *dom, void *desc, const void *buf, size_t len,
		uint64_t access) noexcept;

/* True for a live MR opened here. */
bool is_mr(const fid *fid) noexcept;

/* fi_ops_mr::reg and ::regv of a table whose regattr is Regattr: the same
 * registration, of system memory, described as an fi_mr_attr. */
template <int (*Regattr)(fid *, const fi_mr_attr *, uint64_t, fid_mr **)>
struct reg_as_attr {
	static int regv(fid *fid_dom, const iovec *iov, size_t count, uint64_t access, uint64_t offset,
			uint64_t requested_key, uint64_t flags, fid_mr **mr, void *context) noexcept
	{
		fi_mr_attr attr{};
		attr.mr_iov = iov;
		attr.iov_count = count;
		attr.access = access;
		attr.offset = offset;
		attr.requested_key = requested_key;
		attr.context = context;
		attr.iface = FI_HMEM_SYSTEM;
		return Regattr(fid_dom, &attr, flags, mr);
	}
	static int reg(fid *fid_dom, const void *buf, size_t len, uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags, fid_mr **mr, void *context) noexcept
	{
		iovec v{const_cast<void *>(buf), len};
		return regv(fid_dom, &v, 1, access, offset, requested_key, flags, mr, context);
	}
};

} // namespace mr
} // namespace wu

#endif
