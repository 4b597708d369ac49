/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup public API (2.x): profiling.  An endpoint or domain may hand out
 * a profile object (fi_open_ops name "fi_profile_ops") through which its
 * counters are listed and read.  Wireup's providers offer none: opening
 * one answers -FI_ENOSYS, which callers treat as "no profiling". */
#ifndef FI_PROFILE_H
#define FI_PROFILE_H

#include <stdbool.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

/* predefined variables (datatype in comment) */
enum {
	FI_VAR_UNEXP_MSG_CNT,		/* FI_UINT64 */
	FI_VAR_UNEXP_MSG_QUEUE,		/* FI_TYPE_CQ_ERR_ENTRY */
	FI_VAR_MSG_QUEUE_CNT,		/* FI_UINT64 */
	FI_VAR_CONNECTION_CNT,		/* FI_UINT64 */
	FI_VAR_CONN_REQUEST,		/* FI_UINT64 */
	FI_VAR_CONN_ACCEPT,		/* FI_UINT64 */
	FI_VAR_CONN_REJECT,		/* FI_UINT64 */
	FI_VAR_OFI_MEM,			/* FI_UINT64 */
};

/* predefined events; each changes FI_VAR_UNEXP_MSG_CNT */
enum {
	FI_EVENT_UNEXP_MSG_RECVD,
	FI_EVENT_UNEXP_MSG_MATCHED,
};

/* which member of fi_profile_desc.datatype is meant */
enum fi_profile_type {
	fi_primitive_type,
	fi_defined_type,
};

struct fi_profile_desc {
	uint32_t		id;
	enum fi_profile_type	datatype_sel;
	union {
		enum fi_datatype	primitive;
		enum fi_type		defined;
	} datatype;
	uint64_t		flags;
	size_t			size;
	const char		*name;
	const char		*desc;
};

struct fid_profile;

typedef int (*fi_profile_callback_t)(struct fid_profile *prof_fid,
		struct fi_profile_desc *event, void *param, size_t size,
		void *context);

struct fi_profile_ops {
	size_t	size;
	void	(*reset)(struct fid_profile *prof_fid, uint64_t flags);
	ssize_t	(*query_vars)(struct fid_profile *prof_fid,
			struct fi_profile_desc *varlist, size_t *count);
	ssize_t	(*query_events)(struct fid_profile *prof_fid,
			struct fi_profile_desc *eventlist, size_t *count);
	ssize_t	(*read_var)(struct fid_profile *prof_fid, uint32_t var_id,
			void *data, size_t *size);
	int	(*reg_callback)(struct fid_profile *prof_fid, uint32_t event_id,
			fi_profile_callback_t callback, void *context);
	void	(*start_reads)(struct fid_profile *prof_fid, uint64_t flags);
	void	(*end_reads)(struct fid_profile *prof_fid, uint64_t flags);
};

struct fid_profile {
	struct fid		fid;
	struct fi_profile_ops	*ops;
};

/* The provider answers fi_open_ops("fi_profile_ops") with the address of
 * its fid_profile's ops member. */
static inline int fi_profile_open(struct fid *fid, uint64_t flags,
				  struct fid_profile **prof_fid, void *context)
{
	void *ops_member;
	int ret;

	ret = fi_open_ops(fid, "fi_profile_ops", flags, &ops_member, context);
	if (ret == 0)
		*prof_fid = container_of((struct fi_profile_ops **) ops_member,
					 struct fid_profile, ops);
	return ret;
}

static inline int fi_profile_close(struct fid_profile *prof_fid)
{
	return fi_close(&prof_fid->fid);
}

static inline void fi_profile_reset(struct fid_profile *prof_fid,
				    uint64_t flags)
{
	prof_fid->ops->reset(prof_fid, flags);
}

static inline ssize_t fi_profile_query_vars(struct fid_profile *prof_fid,
					    struct fi_profile_desc *varlist,
					    size_t *count)
{
	return prof_fid->ops->query_vars(prof_fid, varlist, count);
}

static inline ssize_t fi_profile_query_events(struct fid_profile *prof_fid,
					      struct fi_profile_desc *eventlist,
					      size_t *count)
{
	return prof_fid->ops->query_events(prof_fid, eventlist, count);
}

/* 0 once a whole uint64_t was read, else what read_var said */
static inline ssize_t fi_profile_read_u64(struct fid_profile *prof_fid,
					  uint32_t var_id, uint64_t *data)
{
	size_t size = sizeof(*data);
	ssize_t ret;

	ret = prof_fid->ops->read_var(prof_fid, var_id, data, &size);
	return ret > 0 ? 0 : ret;
}

static inline int fi_profile_register_callback(struct fid_profile *prof_fid,
		uint32_t event_id, fi_profile_callback_t callback,
		void *context)
{
	return prof_fid->ops->reg_callback(prof_fid, event_id, callback,
					   context);
}

static inline void fi_profile_start_reads(struct fid_profile *prof_fid,
					  uint64_t flags)
{
	prof_fid->ops->start_reads(prof_fid, flags);
}

static inline void fi_profile_end_reads(struct fid_profile *prof_fid,
					uint64_t flags)
{
	prof_fid->ops->end_reads(prof_fid, flags);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_PROFILE_H */
