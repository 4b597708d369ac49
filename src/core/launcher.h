/* SPDX-License-Identifier: BSD-3-Clause */
/* What the job launcher's glue (src/pmix_glue, when built with PMIx) offers
 * the providers: a job secret, the publishing of endpoint names and the
 * domain extension fi_open_ops(domain, "wireup_pmix").  The glue registers
 * its hooks at init (src/api joins the parts), so providers call down into
 * core and include nothing of it; without hooks every call answers "not
 * in a launched job".
 *
 * The other way round, a provider whose address of a node-local rank
 * follows from the job's namespace and the rank alone (the wireup
 * provider) registers a local_format here, and the glue looks it up. */
#ifndef WU_CORE_LAUNCHER_H
#define WU_CORE_LAUNCHER_H

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>

namespace wu::launcher {

struct hooks {
	/* The job's shared secret (len random bytes, the same in every rank
	 * of the namespace); -FI_ENODATA outside a launched job. */
	int (*job_secret)(unsigned char *out, size_t len) noexcept;
	/* An endpoint of this process got its name (fi_enable). */
	void (*endpoint_named)(const void *name, size_t len, uint32_t addr_format) noexcept;
	/* fi_ops::ops_open of every built-in provider's domain. */
	int (*domain_ops_open)(struct fid *fid, const char *name, uint64_t flags, void **ops,
			       void *context) noexcept;
	/* The port the first endpoint of a launched process listens on: in
	 * the symmetric layout FI_PMIX_PORT_BASE + its slot on its node, in
	 * the modex and direct modes its node's port rule (FI_PMIX_NODE_PORTS:
	 * a base derived from the job + its slot); once per process.  0 and
	 * *port, or -FI_ENODATA.  A port that is taken is not used. */
	int (*symmetric_port)(uint16_t *port) noexcept;
};

/* h lives as long as the process; registering again replaces it. */
void set_hooks(const hooks *h) noexcept;

/* The hooks, or their "no launcher" answers. */
int job_secret(unsigned char *out, size_t len) noexcept;
void endpoint_named(const void *name, size_t len, uint32_t addr_format) noexcept;
int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context) noexcept;
int symmetric_port(uint16_t *port) noexcept;

/* ---- node-local peers whose addresses need no exchange (issue 15) ----
 *
 * A provider whose address of a rank's endpoint follows from the job's
 * namespace and the rank alone, for peers on the same node, registers a
 * local_format for its address format.  The PMIx wire-up then fetches
 * nothing for ranks PMIx reports on this node (PMIX_LOCAL_PEERS) in every
 * mode and in the "pmix:" AV: it asks local_addr instead.
 *
 * A rank whose endpoint could not take its computed name (another endpoint
 * of the process holds it) is told by computable() when it publishes: it
 * then leaves a note on this node (pmix_glue/local.cpp), and its local
 * peers read that note instead of computing its address.  Remote ranks
 * still get every rank's full record through PMIx. */
struct local_format {
	uint32_t addr_format;
	/* How fi_av_insert reads several addresses of this format: at this
	 * stride (the AV format's max_addrlen; each is padded to it), or, 0,
	 * back to back, each as long as it says (composite formats). */
	size_t stride;
	/* The address rank `rank` of nspace has for a peer on its node when
	 * its endpoint took the computed name: written to buf (buflen bytes);
	 * returns its length or a negative FI_E*. */
	long (*local_addr)(const char *nspace, uint32_t rank, void *buf, size_t buflen) noexcept;
	/* Whether name (len bytes, this process's endpoint, rank `rank` of
	 * nspace) is reached through the address local_addr gives its local
	 * peers; false: the rank must leave a note. */
	bool (*computable)(const char *nspace, uint32_t rank, const void *name, size_t len) noexcept;
	/* Optional (nullptr: the symmetric mode declines the format): the
	 * sockaddr (sockaddr_in or sockaddr_in6) at which ranks of other nodes
	 * reach name, written to sa (salen bytes); its length or a negative
	 * FI_E*.  With it the symmetric mode lays the format's ranks out by
	 * port like sockaddrs, fills other nodes with fi_av_insertsym and this
	 * node with local_addr. */
	long (*net_part)(const void *name, size_t len, void *sa, size_t salen) noexcept;
	/* Optional (nullptr: the name itself): what ranks of other nodes need
	 * of name, written to out (outlen bytes); its length or a negative
	 * FI_E*.  The node blobs of the modex and direct modes carry this, so
	 * that parts only node-local peers use (a per-rank shm name) cost
	 * other nodes nothing. */
	long (*remote_view)(const void *name, size_t len, void *out, size_t outlen) noexcept;
};

/* The provider registers its format once (before its first AV is filled;
 * f must live as long as the process).  Registering another format with
 * the same addr_format replaces it.  0, -FI_EINVAL or -FI_ENOSPC. */
int register_local_format(const local_format *f) noexcept;

/* The format registered for addr_format, or nullptr. */
const local_format *local_format_for(uint32_t addr_format) noexcept;

} // namespace wu::launcher

#endif
