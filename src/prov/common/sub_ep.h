/* SPDX-License-Identifier: BSD-3-Clause */
/* What the wireup provider (src/prov/wireup) needs of a provider whose
 * endpoints it drives as sub-endpoints: shm for peers on the node, tcp for
 * the rest.  A sub-endpoint is opened on the wireup domain (a plain
 * prov::domain, as shm's and tcp's own are) and, before it is enabled,
 * shares the wireup endpoint's lock (ep_base::mtx.share), sees its part of
 * the wireup AV's addresses (ep_base::addr_part) and takes every receive
 * from the receive context the wireup endpoint lends it (lend_rx), so that
 * one matching engine serves both transports. */
#ifndef WU_PROV_COMMON_SUB_EP_H
#define WU_PROV_COMMON_SUB_EP_H

#include <atomic>
#include <cstddef>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

namespace wu::prov {

struct ep_base;
struct rx_ctx;

struct sub_ops {
	const char *name;
	/* fi_ops_domain::endpoint of the provider, on any prov::domain. */
	int (*ep_open)(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept;
	/* The endpoint base of one of its endpoints; nullptr if ep is not one. */
	ep_base *(*base_of)(fid_ep *ep) noexcept;
	/* Before fi_enable: every receive of ep goes to rx from now on (rx
	 * outlives ep; its lock is ep's, shared).  0 or -FI_EINVAL /
	 * -FI_EOPBADSTATE (enabled, or bound to an srx). */
	int (*lend_rx)(fid_ep *ep, rx_ctx *rx) noexcept;
	/* Optional (nullptr: always progress it at the usual rate): a count
	 * that lives as long as ep, read without its lock, of what needs its
	 * progress besides accepting new peers (tcp: its connections).  While
	 * it is 0 the multiplexer progresses ep much more rarely. */
	const std::atomic<size_t> *(*busy)(fid_ep *ep) noexcept = nullptr;
	/* Optional: under ep's (shared) lock, after the lent receive context
	 * may have gained room (a receive posted, a claim or discard): ep
	 * moves on whatever it set aside for want of room (shm's messages
	 * parked at FI_SHM_UNEXP_LIMIT), as its own receive calls do. */
	void (*rx_room)(fid_ep *ep) noexcept = nullptr;
	/* Optional: fi_inject / fi_tinject / fi_injectdata / fi_tinjectdata's
	 * short path (an ep_ops.h traits inject hook) on one of its endpoints,
	 * without the look-up and wrapping of its ops table: the multiplexer
	 * opened ep, so ep is the provider's.  Returns prov::general_path,
	 * having changed nothing, when the call must go through ep's ops. */
	ssize_t (*inject)(fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
			  uint64_t kind) noexcept = nullptr; /* kind: msg_kind (xfer.h) */
};

} // namespace wu::prov

#endif
