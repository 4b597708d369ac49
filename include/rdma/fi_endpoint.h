/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup public API: endpoints, their options, and plain message transfer. */
#ifndef FI_ENDPOINT_H
#define FI_ENDPOINT_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fi_msg {
	const struct iovec	*msg_iov;
	void			**desc;
	size_t			iov_count;
	fi_addr_t		addr;
	void			*context;
	uint64_t		data;
};

/* ---- fi_setopt / fi_getopt ---- */
enum {
	FI_OPT_ENDPOINT		/* the only common option level */
};

/* option names at FI_OPT_ENDPOINT level (value type in comment) */
enum {
	FI_OPT_MIN_MULTI_RECV,	/* size_t */
	FI_OPT_CM_DATA_SIZE,	/* size_t */
	FI_OPT_BUFFERED_MIN,	/* size_t */
	FI_OPT_BUFFERED_LIMIT,	/* size_t */
	FI_OPT_SEND_BUF_SIZE,	/* size_t */
	FI_OPT_RECV_BUF_SIZE,	/* size_t */
	FI_OPT_TX_SIZE,		/* size_t */
	FI_OPT_RX_SIZE,		/* size_t */
	FI_OPT_FI_HMEM_P2P,	/* int, one of FI_HMEM_P2P_* */
	FI_OPT_XPU_TRIGGER,	/* struct fi_trigger_xpu */
	/* 1.18+ */
	FI_OPT_CUDA_API_PERMITTED,	/* bool: may the library call CUDA */
	FI_OPT_SHARED_MEMORY_PERMITTED,	/* bool: may it use shared memory */
	/* 2.x: per-endpoint limits; getopt reads them, setopt may lower them */
	FI_OPT_MAX_MSG_SIZE,		/* size_t */
	FI_OPT_MAX_TAGGED_SIZE,		/* size_t */
	FI_OPT_MAX_RMA_SIZE,		/* size_t */
	FI_OPT_MAX_ATOMIC_SIZE,		/* size_t */
	FI_OPT_INJECT_MSG_SIZE,		/* size_t */
	FI_OPT_INJECT_TAGGED_SIZE,	/* size_t */
	FI_OPT_INJECT_RMA_SIZE,		/* size_t */
	FI_OPT_INJECT_ATOMIC_SIZE,	/* size_t */
	FI_OPT_FIREWALL_ADDR,		/* bool */
};

/* FI_OPT_FI_HMEM_P2P values: how hard to push peer-to-peer device copies */
enum {
	FI_HMEM_P2P_ENABLED,	/* provider's choice (default) */
	FI_HMEM_P2P_REQUIRED,
	FI_HMEM_P2P_PREFERRED,
	FI_HMEM_P2P_DISABLED
};

/* ---- ops tables ---- */
struct fi_ops_ep {
	size_t	size;
	ssize_t	(*cancel)(fid_t fid, void *context);
	int	(*getopt)(fid_t fid, int level, int optname,
			void *optval, size_t *optlen);
	int	(*setopt)(fid_t fid, int level, int optname,
			const void *optval, size_t optlen);
	int	(*tx_ctx)(struct fid_ep *sep, int index,
			struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			void *context);
	int	(*rx_ctx)(struct fid_ep *sep, int index,
			struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			void *context);
	ssize_t	(*rx_size_left)(struct fid_ep *ep);
	ssize_t	(*tx_size_left)(struct fid_ep *ep);
};

struct fi_ops_msg {
	size_t	size;
	ssize_t	(*recv)(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context);
	ssize_t	(*recvv)(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src_addr,
			void *context);
	ssize_t	(*recvmsg)(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
	ssize_t	(*send)(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, void *context);
	ssize_t	(*sendv)(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest_addr,
			void *context);
	ssize_t	(*sendmsg)(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
	ssize_t	(*inject)(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest_addr);
	ssize_t	(*senddata)(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, uint64_t data, fi_addr_t dest_addr,
			void *context);
	ssize_t	(*injectdata)(struct fid_ep *ep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest_addr);
};

struct fi_ops_cm;
struct fi_ops_rma;
struct fi_ops_tagged;
struct fi_ops_atomic;
struct fi_ops_collective;

/* An endpoint exposes one table per interface; a provider may leave a
 * table it does not support pointing at stubs, and may swap tables when
 * the endpoint is configured (so configuration calls are not concurrent
 * with data transfer). */
struct fid_ep {
	struct fid			fid;
	struct fi_ops_ep		*ops;
	struct fi_ops_cm		*cm;
	struct fi_ops_msg		*msg;
	struct fi_ops_rma		*rma;
	struct fi_ops_tagged		*tagged;
	struct fi_ops_atomic		*atomic;
	struct fi_ops_collective	*collective;
};

struct fid_pep {
	struct fid		fid;
	struct fi_ops_ep	*ops;
	struct fi_ops_cm	*cm;
};

struct fid_stx {
	struct fid		fid;
	struct fi_ops_ep	*ops;
};

/* ---- creation and setup ---- */
static inline int fi_passive_ep(struct fid_fabric *fabric,
				struct fi_info *info, struct fid_pep **pep,
				void *context)
{
	return fabric->ops->passive_ep(fabric, info, pep, context);
}

static inline int fi_endpoint(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **ep, void *context)
{
	return domain->ops->endpoint(domain, info, ep, context);
}

static inline int fi_endpoint2(struct fid_domain *domain,
			       struct fi_info *info, struct fid_ep **ep,
			       uint64_t flags, void *context)
{
	if (flags == 0)
		return fi_endpoint(domain, info, ep, context);
	if (!FI_CHECK_OP(domain->ops, struct fi_ops_domain, endpoint2))
		return -FI_ENOSYS;
	return domain->ops->endpoint2(domain, info, ep, flags, context);
}

static inline int fi_scalable_ep(struct fid_domain *domain,
				 struct fi_info *info, struct fid_ep **sep,
				 void *context)
{
	return domain->ops->scalable_ep(domain, info, sep, context);
}

static inline int fi_ep_bind(struct fid_ep *ep, struct fid *bfid,
			     uint64_t flags)
{
	return ep->fid.ops->bind(&ep->fid, bfid, flags);
}

static inline int fi_pep_bind(struct fid_pep *pep, struct fid *bfid,
			      uint64_t flags)
{
	return pep->fid.ops->bind(&pep->fid, bfid, flags);
}

static inline int fi_scalable_ep_bind(struct fid_ep *sep, struct fid *bfid,
				      uint64_t flags)
{
	return sep->fid.ops->bind(&sep->fid, bfid, flags);
}

static inline int fi_enable(struct fid_ep *ep)
{
	return ep->fid.ops->control(&ep->fid, FI_ENABLE, NULL);
}

/* These take a bare fid; every endpoint-like object keeps its fi_ops_ep
 * right after the fid, so we can reach it through struct fid_ep. */
static inline ssize_t fi_cancel(fid_t fid, void *context)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->cancel(fid, context);
}

static inline int fi_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->setopt(fid, level, optname, optval, optlen);
}

static inline int fi_getopt(fid_t fid, int level, int optname,
			    void *optval, size_t *optlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->getopt(fid, level, optname, optval, optlen);
}

static inline int fi_ep_alias(struct fid_ep *ep, struct fid_ep **alias_ep,
			      uint64_t flags)
{
	struct fid *out;
	int ret;

	ret = fi_alias(&ep->fid, &out, flags);
	if (ret == 0)
		*alias_ep = container_of(out, struct fid_ep, fid);
	return ret;
}

static inline int fi_tx_context(struct fid_ep *ep, int idx,
				struct fi_tx_attr *attr,
				struct fid_ep **tx_ep, void *context)
{
	return ep->ops->tx_ctx(ep, idx, attr, tx_ep, context);
}

static inline int fi_rx_context(struct fid_ep *ep, int idx,
				struct fi_rx_attr *attr,
				struct fid_ep **rx_ep, void *context)
{
	return ep->ops->rx_ctx(ep, idx, attr, rx_ep, context);
}

static inline FI_DEPRECATED_FUNC ssize_t fi_rx_size_left(struct fid_ep *ep)
{
	return ep->ops->rx_size_left(ep);
}

static inline FI_DEPRECATED_FUNC ssize_t fi_tx_size_left(struct fid_ep *ep)
{
	return ep->ops->tx_size_left(ep);
}

static inline int fi_stx_context(struct fid_domain *domain,
				 struct fi_tx_attr *attr,
				 struct fid_stx **stx, void *context)
{
	return domain->ops->stx_ctx(domain, attr, stx, context);
}

static inline int fi_srx_context(struct fid_domain *domain,
				 struct fi_rx_attr *attr,
				 struct fid_ep **rx_ep, void *context)
{
	return domain->ops->srx_ctx(domain, attr, rx_ep, context);
}

/* ---- message transfer ---- */
static inline ssize_t fi_recv(struct fid_ep *ep, void *buf, size_t len,
			      void *desc, fi_addr_t src_addr, void *context)
{
	return ep->msg->recv(ep, buf, len, desc, src_addr, context);
}

static inline ssize_t fi_recvv(struct fid_ep *ep, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src_addr,
			       void *context)
{
	return ep->msg->recvv(ep, iov, desc, count, src_addr, context);
}

static inline ssize_t fi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
				 uint64_t flags)
{
	return ep->msg->recvmsg(ep, msg, flags);
}

static inline ssize_t fi_send(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, fi_addr_t dest_addr, void *context)
{
	return ep->msg->send(ep, buf, len, desc, dest_addr, context);
}

static inline ssize_t fi_sendv(struct fid_ep *ep, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest_addr,
			       void *context)
{
	return ep->msg->sendv(ep, iov, desc, count, dest_addr, context);
}

static inline ssize_t fi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
				 uint64_t flags)
{
	return ep->msg->sendmsg(ep, msg, flags);
}

static inline ssize_t fi_inject(struct fid_ep *ep, const void *buf,
				size_t len, fi_addr_t dest_addr)
{
	return ep->msg->inject(ep, buf, len, dest_addr);
}

static inline ssize_t fi_senddata(struct fid_ep *ep, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest_addr, void *context)
{
	return ep->msg->senddata(ep, buf, len, desc, data, dest_addr, context);
}

static inline ssize_t fi_injectdata(struct fid_ep *ep, const void *buf,
				    size_t len, uint64_t data,
				    fi_addr_t dest_addr)
{
	return ep->msg->injectdata(ep, buf, len, data, dest_addr);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_ENDPOINT_H */
