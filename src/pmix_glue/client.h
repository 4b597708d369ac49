/* SPDX-License-Identifier: BSD-3-Clause */
/* The seam between the wire-up and PMIx: the few PMIx services it uses,
 * behind a small interface with two implementations, the real PMIx client
 * (real_client.cpp) and an in-memory fake (test/pmix/fake_client.h, built
 * into the tests only, never into libfabric.so) that unit tests
 * and the benchmark's million-rank simulation drive.
 *
 * Every call returns 0 or a negative FI_E*: PMIX_ERR_NOT_FOUND is
 * -FI_ENODATA, a timeout -FI_ETIMEDOUT, anything else -FI_EOTHER (logged by
 * the real client with PMIx's own error string). */
#ifndef WU_PMIX_GLUE_CLIENT_H
#define WU_PMIX_GLUE_CLIENT_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wu::pmix {

/* How a peer's value is fetched. */
enum class get_kind {
	cached,	  /* after a collecting fence: the local copy */
	direct,	  /* no fence before it: ask the peer's server, PMIX_GLOBAL scope */
	optional, /* only what the launcher gave the local server (PMIX_OPTIONAL) */
	local,	  /* a node-local peer's PMIX_LOCAL data, no fence before it */
};

/* PMIX_RANK_WILDCARD: job-level keys. */
inline constexpr uint32_t wildcard_rank = 0xfffffffeU;

/* Where the job's processes run, in the launcher's node order. */
struct node_map {
	std::vector<std::string> nodes;		 /* host names */
	std::vector<std::vector<uint32_t>> ranks; /* ranks on each node, ascending */
};

class client {
public:
	virtual ~client() = default;
	/* PMIx_Init: own namespace and rank. */
	virtual int init(std::string &nspace, uint32_t &rank) = 0;
	virtual int finalize() = 0;
	/* Whether another part of the process (an MPI library) had initialised
	 * PMIx before init(): our init then only added a reference to its
	 * session. */
	virtual bool guest() const { return false; }
	/* Job-level integer key (rank PMIX_RANK_WILDCARD), any integer type. */
	virtual int job_u32(const std::string &nspace, const char *key, uint32_t &out) = 0;
	/* Per-process integer key of rank. */
	virtual int proc_u32(const std::string &nspace, uint32_t rank, const char *key,
			     uint32_t &out) = 0;
	/* Job-level string key (PMIX_LOCAL_PEERS). */
	virtual int job_string(const std::string &nspace, const char *key, std::string &out) = 0;
	virtual int nodes(const std::string &nspace, node_map &out) = 0;
	/* Put of a byte object (PMIX_GLOBAL scope, or PMIX_LOCAL: seen only
	 * by processes of this node), Commit, Fence. */
	virtual int put(const char *key, const void *data, size_t len, bool local_only) = 0;
	virtual int commit() = 0;
	/* Over the whole own namespace (procs empty) or the given ranks of it. */
	virtual int fence(bool collect, const std::vector<uint32_t> &procs) = 0;
	/* Byte object key of rank; a key of another type is -FI_EINVAL. */
	virtual int get(const std::string &nspace, uint32_t rank, const char *key, get_kind kind,
			std::vector<uint8_t> &out) = 0;
};

/* The real PMIx client (PMIx is initialised by init, not here). */
std::unique_ptr<client> make_real_client();

} // namespace wu::pmix

#endif
