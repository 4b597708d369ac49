/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup extension: job-wide address exchange through PMIx.
 *
 * A PMIx client (an MPI stack, a SHMEM library, a tool) fills an address
 * vector with every rank of its job so that fi_addr == rank, in one call or
 * with no code at all.  Plain C99; nothing here is an exported symbol: the
 * calls are reached the libfabric way, through fi_open_ops on a domain.
 *
 *   Zero code:  attr.name = FI_WIREUP_AV_PREFIX;        (or "pmix:<nspace>")
 *               fi_av_open(domain, &attr, &av, NULL);   // every rank, in order
 *
 *   Explicit:   struct fi_ops_wireup_pmix *w;
 *               fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, NULL);
 *               fi_getname(&ep->fid, name, &len);
 *               w->publish(domain, name, len, info->addr_format, 0);
 *               w->av_fill(domain, av, NULL, 0, &out);  // fi_addr == out.base + rank
 *
 * Modes (FI_WIREUP_MODE_* in flags, or FI_PMIX_MODE, else chosen):
 *   MODEX      Put + Commit of each rank's name, one Fence collecting data,
 *              one insert of all ranks.  av_fill is collective.
 *   DIRECT     no fence: the AV reserves every rank and resolves an entry on
 *              first use through PMIx_Get (PMIX_DATA_SCOPE=PMIX_GLOBAL,
 *              bounded retries).  av_fill is local.
 *   SYMMETRIC  endpoints follow one layout (node address + port base + slot
 *              on the node, FI_PMIX_PORT_BASE): one record per node (or none
 *              when FI_PMIX_SYM_NODE_ADDR=hostname), the AV is filled with
 *              fi_av_insertsym into an FI_SYMMETRIC AV (O(nodes) memory);
 *              ranks off the layout publish their own name.  Collective
 *              unless no record is exchanged.
 *   LAUNCHER   the launcher's PMIx server published the names (per rank or
 *              per node) before start: no Put, Commit or Fence.
 *   AUTO       launcher data if present, else symmetric when a port base is
 *              set, else direct for jobs of FI_PMIX_DIRECT_MIN ranks or more,
 *              else modex.  Every rank decides alike from job data.
 *
 * All functions return 0 or a negative FI_E* value and log the reason. */
#ifndef FI_EXT_WIREUP_H
#define FI_EXT_WIREUP_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Name for fi_open_ops(&domain->fid, ...) returning fi_ops_wireup_pmix. */
#define FI_WIREUP_PMIX_OPS "wireup_pmix"
/* attr->name of fi_av_open: "pmix:" (own namespace) or "pmix:<nspace>". */
#define FI_WIREUP_AV_PREFIX "pmix:"

enum fi_wireup_mode {
	FI_WIREUP_AUTO = 0,
	FI_WIREUP_MODEX = 1,
	FI_WIREUP_DIRECT = 2,
	FI_WIREUP_SYMMETRIC = 3,
	FI_WIREUP_LAUNCHER = 4,
};

/* flags of publish and av_fill: bits 0-7 force a mode (0: automatic). */
#define FI_WIREUP_MODE_MASK 0xffULL
#define FI_WIREUP_FLAGS(mode) ((uint64_t)(mode) & FI_WIREUP_MODE_MASK)

/* What the wire-up found and did.  Set size before the call. */
struct fi_wireup_info {
	size_t size;               /* in: sizeof(struct fi_wireup_info) */
	enum fi_wireup_mode mode;  /* mode used (never AUTO) */
	uint32_t rank;             /* own rank */
	uint32_t job_size;         /* ranks in the namespace filled */
	uint32_t local_rank;       /* own rank among those on this node */
	uint32_t local_size;       /* ranks on this node (endpoints per node) */
	uint32_t num_nodes;
	uint32_t node_id;
	fi_addr_t base;            /* fi_addr of rank 0: rank r is base + r */
	/* Ranks sharing this node, ascending (PMIX_LOCAL_PEERS): local_size
	 * entries, owned by the library, valid until close. */
	const uint32_t *local_peers;
	uint64_t bytes_put;        /* bytes this process put into PMIx */
	uint64_t gets;             /* PMIx_Get calls of peers' data so far */
	uint64_t fences;           /* fences this process took part in */
	uint32_t deviants;         /* ranks off the symmetric layout */
	uint32_t reserved;
	char nspace[256];          /* namespace filled */
	/* Since issue 15 (callers with a smaller size get the fields above). */
	uint64_t bytes_got;        /* bytes those gets returned */
	uint64_t local_gets;       /* of the gets, those of ranks on this node */
	uint64_t local_bytes;      /* bytes they returned: 0 with the wireup
	                            * provider, whose local peers' addresses are
	                            * computed (local_computed) or read from a
	                            * node-local note (local_noted) */
	uint32_t local_computed;
	uint32_t local_noted;
	/* Since issue 30: of the gets, those that found nothing yet (DIRECT
	 * asks a node again while its blob is not put) and were asked again. */
	uint64_t gets_again;
};

struct fi_ops_wireup_pmix {
	size_t size;
	/* Publishes this process's endpoint name (what fi_getname returned)
	 * for its own namespace.  Initialises PMIx on first use. */
	int (*publish)(struct fid_domain *domain, const void *name, size_t len,
		       uint32_t addr_format, uint64_t flags);
	/* Fills av (opened on domain, FI_SYMMETRIC for the symmetric mode to
	 * cost O(nodes)) with every rank of nspace (NULL: own) in rank order.
	 * Nothing is inserted when any rank's data is bad.  info may be NULL. */
	int (*av_fill)(struct fid_domain *domain, struct fid_av *av, const char *nspace,
		       uint64_t flags, struct fi_wireup_info *info);
	/* Job data only (sizes, locality): no exchange. */
	int (*job_info)(struct fid_domain *domain, const char *nspace,
			struct fi_wireup_info *info);
	/* True when rank of the own namespace runs on this node (shm reaches it). */
	int (*is_local)(struct fid_domain *domain, uint32_t rank);
	/* Ends this process's use of PMIx (PMIx_Finalize of the reference
	 * taken by the first call); AVs already filled stay valid, entries
	 * not yet resolved (DIRECT) fail from then on. */
	int (*close)(struct fid_domain *domain);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_WIREUP_H */
