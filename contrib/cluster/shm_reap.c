/* SPDX-License-Identifier: BSD-3-Clause */
/* Opens one shm endpoint and closes it: the first endpoint of a process
 * removes the regions of this user's exited processes from /dev/shm (those
 * FI_SHM_REAP_AGE seconds old), so contrib/cluster/cluster.sh runs this
 * after a job to show that what killed ranks left goes with the next
 * endpoint on the node.  Exit status 0 when the endpoint opened. */
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define CHECK(call)                                                                        \
	do {                                                                               \
		int rc_ = (int)(call);                                                     \
		if (rc_) {                                                                 \
			fprintf(stderr, "shm_reap: %s: %s\n", #call, fi_strerror(-rc_));  \
			return 1;                                                          \
		}                                                                          \
	} while (0)

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
	if (!hints)
		return 1;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
