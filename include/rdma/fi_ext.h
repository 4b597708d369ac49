/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup public API: extensions — fid export/import, the peer provider
 * interfaces, memory monitor and logging import, provider-specific codes. */
#ifndef FI_EXT_H
#define FI_EXT_H

#include <stdbool.h>
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_endpoint.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Provider-specific values: each provider owns a 12-bit code placed in
 * bits 16..27; the low 16 bits are its own, bits 28..31 stay zero.
 * Provider options are the negated values. */
#define FI_PROV_SPECIFIC_EFA	(0xefa << 16)
#define FI_PROV_SPECIFIC_TCP	(0x7cb << 16)

enum {
	FI_OPT_EFA_RNR_RETRY = -FI_PROV_SPECIFIC_EFA,
	/* 2.x; all bool */
	FI_OPT_EFA_EMULATED_READ,
	FI_OPT_EFA_EMULATED_WRITE,
	FI_OPT_EFA_EMULATED_ATOMICS,
	FI_OPT_EFA_USE_DEVICE_RDMA,
	FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES,
	FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES,
	FI_OPT_EFA_HOMOGENEOUS_PEERS,
	FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV,
};

/* ---- export a fid so another library can import (bind) it ---- */
struct fi_fid_export {
	struct fid	**fid;
	uint64_t	flags;
	void		*context;
};

static inline int fi_export_fid(struct fid *fid, uint64_t flags,
				struct fid **expfid, void *context)
{
	struct fi_fid_export req;

	req.fid = expfid;
	req.flags = flags;
	req.context = context;
	return fi_control(fid, FI_EXPORT_FID, &req);
}

static inline int fi_import_fid(struct fid *fid, struct fid *expfid,
				uint64_t flags)
{
	return fid->ops->bind(fid, expfid, flags);
}

/* ---- memory monitor import ---- */
struct fid_mem_monitor;

/* implemented by the importer; called by the library */
struct fi_ops_mem_monitor {
	size_t	size;
	int	(*start)(struct fid_mem_monitor *monitor);
	void	(*stop)(struct fid_mem_monitor *monitor);
	int	(*subscribe)(struct fid_mem_monitor *monitor,
			const void *addr, size_t len);
	void	(*unsubscribe)(struct fid_mem_monitor *monitor,
			const void *addr, size_t len);
	bool	(*valid)(struct fid_mem_monitor *monitor,
			const void *addr, size_t len);
};

/* implemented by the library; called by the importer */
struct fi_ops_mem_notify {
	size_t	size;
	void	(*notify)(struct fid_mem_monitor *monitor, const void *addr,
			size_t len);
};

struct fid_mem_monitor {
	struct fid			fid;
	struct fi_ops_mem_monitor	*export_ops;
	struct fi_ops_mem_notify	*import_ops;
};

/* ---- peer providers: an owner shares its objects with a peer ---- */

/* AV */
struct fid_peer_av;

struct fi_ops_av_owner {
	size_t		size;
	int		(*query)(struct fid_peer_av *av,
				struct fi_av_attr *attr);
	fi_addr_t	(*ep_addr)(struct fid_peer_av *av, struct fid_ep *ep);
};

struct fid_peer_av {
	struct fid		fid;
	struct fi_ops_av_owner	*owner_ops;
};

/* historical pointee names, kept for source compatibility */
struct fi_peer_av;
struct fi_peer_av_set;

struct fi_peer_av_context {
	size_t			size;
	struct fi_peer_av	*av;
};

/* AV set */
struct fid_peer_av_set;

struct fi_ops_av_set_owner {
	size_t	size;
	int	(*members)(struct fid_peer_av_set *av, fi_addr_t *addr,
			size_t *count);
};

struct fid_peer_av_set {
	struct fid			fid;
	struct fi_ops_av_set_owner	*owner_ops;
};

struct fi_peer_av_set_context {
	size_t			size;
	struct fi_peer_av_set	*av_set;
};

/* CQ: the peer writes its completions into the owner's CQ */
struct fid_peer_cq;

struct fi_ops_cq_owner {
	size_t	size;
	ssize_t	(*write)(struct fid_peer_cq *cq, void *context,
			uint64_t flags, size_t len, void *buf, uint64_t data,
			uint64_t tag, fi_addr_t src);
	ssize_t	(*writeerr)(struct fid_peer_cq *cq,
			const struct fi_cq_err_entry *err_entry);
};

struct fid_peer_cq {
	struct fid		fid;
	struct fi_ops_cq_owner	*owner_ops;
};

struct fi_peer_cq_context {
	size_t			size;
	struct fid_peer_cq	*cq;
};

/* domain and EQ are shared as-is */
struct fi_peer_domain_context {
	size_t			size;
	struct fid_domain	*domain;
};

struct fi_peer_eq_context {
	size_t		size;
	struct fid_eq	*eq;
};

/* shared receive context: the owner matches, the peer moves data */
struct fid_peer_srx;

/* first two members line up with a doubly linked list node */
struct fi_peer_rx_entry {
	struct fi_peer_rx_entry	*next;
	struct fi_peer_rx_entry	*prev;
	struct fid_peer_srx	*srx;
	fi_addr_t		addr;
	size_t			size;
	uint64_t		tag;
	uint64_t		flags;
	void			*context;
	size_t			count;
	void			**desc;
	void			*peer_context;
	void			*owner_context;
	struct iovec		*iov;
};

struct fi_ops_srx_owner {
	size_t	size;
	int	(*get_msg)(struct fid_peer_srx *srx, fi_addr_t addr,
			size_t size, struct fi_peer_rx_entry **entry);
	int	(*get_tag)(struct fid_peer_srx *srx, fi_addr_t addr,
			uint64_t tag, struct fi_peer_rx_entry **entry);
	int	(*queue_msg)(struct fi_peer_rx_entry *entry);
	int	(*queue_tag)(struct fi_peer_rx_entry *entry);
	void	(*free_entry)(struct fi_peer_rx_entry *entry);
};

struct fi_ops_srx_peer {
	size_t	size;
	int	(*start_msg)(struct fi_peer_rx_entry *entry);
	int	(*start_tag)(struct fi_peer_rx_entry *entry);
	int	(*discard_msg)(struct fi_peer_rx_entry *entry);
	int	(*discard_tag)(struct fi_peer_rx_entry *entry);
};

struct fid_peer_srx {
	struct fid_ep		ep_fid;
	struct fi_ops_srx_owner	*owner_ops;
	struct fi_ops_srx_peer	*peer_ops;
};

struct fi_peer_srx_context {
	size_t			size;
	struct fid_peer_srx	*srx;
};

/* peer transfers (FI_PEER_TRANSFER) */
struct fi_ops_transfer_peer {
	size_t	size;
	ssize_t	(*complete)(struct fid_ep *ep, struct fi_cq_tagged_entry *buf,
			fi_addr_t *src_addr);
	ssize_t	(*comperr)(struct fid_ep *ep, struct fi_cq_err_entry *buf);
};

struct fi_peer_transfer_context {
	size_t				size;
	struct fi_info			*info;
	struct fid_ep			*ep;
	struct fi_ops_transfer_peer	*peer_ops;
};

/* ---- logging import: route library logs to the application ---- */
#define FI_LOG_PROV_FILTERED	(1ULL << 0)

struct fi_ops_log {
	size_t	size;
	int	(*enabled)(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			uint64_t flags);
	int	(*ready)(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			uint64_t flags, uint64_t *showtime);
	void	(*log)(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			const char *func, int line, const char *msg);
};

struct fid_logging {
	struct fid		fid;
	struct fi_ops_log	*ops;
};

/* open the named library object, bind our fid to it, drop the handle */
static inline int fi_import(uint32_t version, const char *name, void *attr,
			    size_t attr_len, uint64_t flags, struct fid *fid,
			    void *context)
{
	struct fid *lib_fid;
	int ret;

	ret = fi_open(version, name, attr, attr_len, flags, &lib_fid, context);
	if (ret != FI_SUCCESS)
		return ret;
	ret = fi_import_fid(lib_fid, fid, flags);
	fi_close(lib_fid);
	return ret;
}

static inline int fi_import_log(uint32_t version, uint64_t flags,
				struct fid_logging *log_fid)
{
	log_fid->fid.fclass = FI_CLASS_LOG;
	log_fid->ops->size = sizeof(struct fi_ops_log);
	return fi_import(version, "logging", NULL, 0, flags, &log_fid->fid,
			 log_fid);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_H */
