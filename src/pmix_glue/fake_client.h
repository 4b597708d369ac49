/* SPDX-License-Identifier: BSD-3-Clause */
/* An in-memory PMIx for unit tests and the benchmark's simulated jobs (not
 * built into the library: test/pmix and contrib/bench link it): the
 * job data a launcher would give (sizes, node map, local peers), this
 * process's own puts, and what every peer would have published,
 * synthesised on demand so that a job of a million ranks costs no memory
 * per rank.  Faults: silent ranks, ranks off the symmetric layout, and
 * arbitrary stored values (corrupt blobs) that win over synthesis. */
#ifndef WU_PMIX_GLUE_FAKE_CLIENT_H
#define WU_PMIX_GLUE_FAKE_CLIENT_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <rdma/fabric.h>

#include "pmix_glue/client.h"

namespace wu::pmix {

struct fake_job {
	std::string nspace = "wu-fake-job";
	uint32_t nodes = 1, ppn = 1;
	bool cyclic = false;	     /* round-robin mapping instead of blocks */
	uint32_t me = 0;	     /* this process's rank */
	uint32_t ip0 = 0x0a000001;   /* 10.0.0.1: position k has ip0 + k*ip_step */
	uint32_t ip_step = 1;
	uint16_t port_base = 30000;  /* slot s listens on port_base + s */
	uint32_t addr_format = FI_SOCKADDR_IN;
};

class fake_client final : public client {
public:
	explicit fake_client(fake_job j) : job(std::move(j)) {}

	fake_job job;
	/* Values that win over synthesis: (rank or wildcard_rank, key). */
	std::map<std::pair<uint32_t, std::string>, std::vector<uint8_t>> store;
	std::set<uint32_t> silent;   /* publish nothing */
	std::set<uint32_t> deviants; /* listen on 40000 + rank % 20000 */
	bool launcher_nodes = false; /* the launcher published wireup.lpn */
	bool launcher_ranks = false; /* the launcher published wireup.lp */
	bool guest_session = false;  /* as under an MPI library that owns PMIx */
	uint64_t fence_calls = 0, put_calls = 0, get_calls = 0, commit_calls = 0;
	/* Names of job.addr_format other than sockaddr_in (issue 15's local
	 * formats): when set, what every rank publishes instead of addr_of. */
	std::function<std::vector<uint8_t>(uint32_t rank)> name_of;
	/* Ranks whose data was asked for (get_calls by rank). */
	std::map<uint32_t, uint64_t> gets_of;

	uint32_t size() const { return job.nodes * job.ppn; }
	uint32_t pos_of(uint32_t r) const { return job.cyclic ? r % job.nodes : r / job.ppn; }
	uint32_t slot_of(uint32_t r) const { return job.cyclic ? r / job.nodes : r % job.ppn; }
	uint32_t rank_at(uint32_t pos, uint32_t slot) const
	{
		return job.cyclic ? slot * job.nodes + pos : pos * job.ppn + slot;
	}
	/* The sockaddr_in rank r listens on. */
	std::vector<uint8_t> addr_of(uint32_t r) const;

	int init(std::string &nspace, uint32_t &rank) override;
	int finalize() override { return 0; }
	bool guest() const override { return guest_session; }
	int job_u32(const std::string &nspace, const char *key, uint32_t &out) override;
	int proc_u32(const std::string &nspace, uint32_t rank, const char *key,
		     uint32_t &out) override;
	int job_string(const std::string &nspace, const char *key, std::string &out) override;
	int nodes(const std::string &nspace, node_map &out) override;
	int put(const char *key, const void *data, size_t len, bool local_only) override;
	int commit() override
	{
		commit_calls++;
		return 0;
	}
	int fence(bool, const std::vector<uint32_t> &) override
	{
		fence_calls++;
		return 0;
	}
	int get(const std::string &nspace, uint32_t rank, const char *key, get_kind kind,
		std::vector<uint8_t> &out) override;

private:
	std::vector<uint8_t> node_record(uint32_t pos) const;
};

} // namespace wu::pmix

#endif
