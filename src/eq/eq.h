/* SPDX-License-Identifier: BSD-3-Clause */
/* Event queues (fi_eq(3)) and wait sets (fi_poll(3)): the entry points a
 * provider's fi_ops_fabric forwards to, and the reporting API that address
 * vectors, endpoints and the connection manager use to queue events.
 *
 *   provider fabric:  .eq_open   -> wu::eq_open(fabric, fabric->api_version, ...)
 *                     .wait_open -> wu::wait_open
 *                     .trywait   -> wu::trywait (EQs and wait sets; a provider
 *                                   with CQs/counters checks those itself)
 *   AV / EP / PEP:    bind  -> wu::eq_bind(bfid)   (fi_close on the EQ is then
 *                     -FI_EBUSY), close -> wu::eq_purge + wu::eq_unbind,
 *                     completions -> wu::eq_post / wu::eq_post_entry,
 *                     failures    -> wu::eq_post_error.
 * Every function is noexcept and thread-safe; posting is a short critical
 * section with no allocation for payloads up to eq_inline_bytes. */
#ifndef WU_EQ_EQ_H
#define WU_EQ_EQ_H

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "core/child_ref.h"

namespace wu {

/* Payload bytes stored inside a queue slot; larger events allocate. */
inline constexpr size_t eq_inline_bytes = 56;
/* Queue memory per queued event of at most eq_inline_bytes. */
inline constexpr size_t eq_slot_bytes = 64;
/* Largest fi_eq_attr::size accepted (larger is -FI_EINVAL); memory grows
 * with the events actually queued, not with size. */
inline constexpr size_t eq_max_size = size_t{1} << 30;
/* Entries allowed when fi_eq_attr::size is 0. */
inline constexpr size_t eq_default_size = 1024;
/* Largest single event (fi_eq_write len); larger is -FI_EMSGSIZE. */
inline constexpr size_t eq_max_event_bytes = 64 * 1024;

/* fi_ops_fabric::eq_open.  api_version is the fabric's; it decides the
 * err_data rules and how much of fi_eq_err_entry readerr writes.  The EQ
 * keeps parent (the provider's reference on its fabric) until it closes;
 * a failed open drops it. */
int eq_open(struct fid_fabric *fabric, uint32_t api_version, struct fi_eq_attr *attr,
	    struct fid_eq **eq, void *context, child_ref parent = {}) noexcept;

/* fi_ops_fabric::wait_open (parent: as for eq_open). */
int wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset,
	      child_ref parent = {}) noexcept;

/* fi_trywait over EQs and wait sets: 0 when blocking on their native wait
 * objects is safe, -FI_EAGAIN when something is queued, -FI_EINVAL for a
 * fid that is neither. */
int trywait(struct fid_fabric *fabric, struct fid **fids, int count) noexcept;

/* True for a live (not closed) EQ / wait set opened here. */
bool is_eq(const struct fid *fid) noexcept;
bool is_wait(const struct fid *fid) noexcept;

/* Queues one event; buf starts with the fid it concerns (struct fi_eq_entry
 * or struct fi_eq_cm_entry + data) and is copied.  Does not need FI_WRITE.
 * For FI_CONNREQ the EQ owns the entry's info until the application reads
 * it; events dropped unread (purge, close) have it freed.
 * Returns len, or -FI_EOVERRUN (queue full or overrun), -FI_EINVAL,
 * -FI_EMSGSIZE, -FI_ENOMEM, -FI_EBADF (closed EQ). */
ssize_t eq_post(struct fid_eq *eq, uint32_t event, const void *buf, size_t len) noexcept;

/* Free entries left before eq_post would overrun the EQ (0 once overrun
 * or closed); *size gets its size.  A producer that can hold its events
 * back (a passive endpoint's connection requests) asks first. */
size_t eq_room(struct fid_eq *eq, size_t *size) noexcept;

/* The common case: a struct fi_eq_entry event (FI_AV_COMPLETE, ...). */
inline ssize_t eq_post_entry(struct fid_eq *eq, uint32_t event, fid_t fid, void *context,
			     uint64_t data) noexcept
{
	struct fi_eq_entry e = {fid, context, data};
	return eq_post(eq, event, &e, sizeof e);
}

/* Queues an error entry (err->err must be a positive FI_E* value).  The
 * err_data bytes (err_data_size of them) are copied.  0 or negative. */
int eq_post_error(struct fid_eq *eq, const struct fi_eq_err_entry *err) noexcept;

/* Drops every queued event and error entry whose fid is `fid` (an object
 * being closed).  Returns how many were dropped. */
size_t eq_purge(struct fid_eq *eq, const struct fid *fid) noexcept;

/* Bind references: while any is held, fi_close(eq) is -FI_EBUSY.  bfid is
 * what a bind slot receives; -FI_EINVAL when it is not a live EQ. */
int eq_bind(struct fid *bfid) noexcept;
int eq_unbind(struct fid *bfid) noexcept;

} // namespace wu

#endif
