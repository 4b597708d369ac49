/* SPDX-License-Identifier: BSD-3-Clause */
/* Node-local peers whose addresses need no exchange (issue 15).
 *
 * A provider whose address of a rank's endpoint follows from the job's
 * namespace and the rank alone, for peers on the same node (the wireup
 * provider: this host's id plus the shm name shm::rank_addr computes),
 * registers a local_format for its address format.  The PMIx wire-up then
 * fetches nothing for ranks PMIx reports on this node (PMIX_LOCAL_PEERS)
 * in every mode and in the "pmix:" AV: it asks local_addr instead.
 *
 * A rank whose endpoint could not take its computed name (another endpoint
 * of the process holds it) is told by computable() when it publishes: it
 * then leaves a note on this node (a small file in /dev/shm, named from the
 * job and the rank, holding its Wireup endpoint record), and its local
 * peers read that note, one open() each, instead of computing its address.
 * Remote ranks still get every rank's full record through PMIx.
 *
 * The wire-up knows nothing else of the format: records, checks and
 * counters are the same as for any other. */
#ifndef WU_PMIX_GLUE_LOCAL_ADDR_H
#define WU_PMIX_GLUE_LOCAL_ADDR_H

#include <cstddef>
#include <cstdint>

namespace wu::pmix {

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
};

/* The provider registers its format once (before its first AV is filled;
 * f must live as long as the process).  Registering another format with
 * the same addr_format replaces it.  0, -FI_EINVAL or -FI_ENOSPC. */
int register_local_format(const local_format *f) noexcept;

/* The format registered for addr_format, or nullptr. */
const local_format *local_format_for(uint32_t addr_format) noexcept;

} // namespace wu::pmix

#endif
