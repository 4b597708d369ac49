/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_sym_launch: fi_av_insertsym fills a wireup AV with a
 * symmetric job's addresses from launcher data only (issue 28).
 *
 * Each rank reads what the launcher gives (its host name, local rank,
 * local size, job size; no PMIx put, no fence before the traffic), binds
 * its wireup endpoint to node/service = host + base port + local rank, and
 * fills its AV with one fi_av_insertsym(host, 1, base, local size).  Its
 * own entry must be byte for byte its fi_getname.  Then each rank sends a
 * message to the next and takes one from the previous (a send to a peer
 * not enabled yet is retried on -FI_EAGAIN); routes must be shm.  Prints
 * one line per rank ending in OK.  All ranks on one node (as run here).
 *
 * usage: test_wireup_sym_launch EXPECTED_SIZE */
#include <pmix.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "prov/wireup/wireup.h"
#include "rank_report.h"

namespace {

wu::test::rank_report rep{"test_wireup_sym_launch"};

/* A job-level or own value the launcher publishes, as uint32. */
bool get_u32(const pmix_proc_t &who, const char *key, uint32_t *out)
{
	pmix_value_t *v = nullptr;
	if (PMIx_Get(&who, key, nullptr, 0, &v) != PMIX_SUCCESS || !v)
		return false;
	bool ok = true;
	switch (v->type) {
	case PMIX_UINT32: *out = v->data.uint32; break;
	case PMIX_UINT16: *out = v->data.uint16; break;
	case PMIX_INT: *out = uint32_t(v->data.integer); break;
	default: ok = false;
	}
	PMIX_VALUE_RELEASE(v);
	return ok;
}

std::string hostname(const pmix_proc_t &me)
{
	pmix_value_t *v = nullptr;
	std::string h;
	if (PMIx_Get(&me, PMIX_HOSTNAME, nullptr, 0, &v) == PMIX_SUCCESS && v && v->type == PMIX_STRING)
		h = v->data.string;
	if (v)
		PMIX_VALUE_RELEASE(v);
	if (h.empty()) {
		char b[256] = "";
		gethostname(b, sizeof b - 1);
		h = b;
	}
	return h;
}

} // namespace

int main(int argc, char **argv)
{
	const uint32_t want_size = argc > 1 ? uint32_t(atoi(argv[1])) : 0;
	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_sym_launch: PMIx_Init failed\n");
		return 2;
	}
	rep.rank = me.rank;
	pmix_proc_t job = me;
	job.rank = PMIX_RANK_WILDCARD;
	uint32_t n = 0, local_size = 0, local_rank = 0;
	if (!get_u32(job, PMIX_JOB_SIZE, &n) || !get_u32(job, PMIX_LOCAL_SIZE, &local_size) ||
	    !get_u32(me, PMIX_LOCAL_RANK, &local_rank)) {
		fprintf(stderr, "test_wireup_sym_launch rank %u: the launcher gives no job size, local size or local rank\n",
			me.rank);
		return 2;
	}
	if (n != want_size || local_size != n)
		rep.fail("job of " + std::to_string(n) + " ranks, " + std::to_string(local_size) +
			 " on this node; expected " + std::to_string(want_size) + " on one node");
	const std::string host = hostname(me);
	/* The base port: WU_SYM_PORT_BASE (the script picks a free range). */
	const char *pb = getenv("WU_SYM_PORT_BASE");
	const uint32_t base = pb && *pb ? uint32_t(atoi(pb)) : 5000;
	const std::string mine = std::to_string(base + local_rank), first = std::to_string(base);

	fi_info *hints = fi_allocinfo(), *info = nullptr;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->fabric_attr->prov_name = strdup("wireup");
	WU_RANK_CHECK(rep, fi_getinfo(FI_VERSION(1, 17), host.c_str(), mine.c_str(), FI_SOURCE, hints, &info));
	fi_freeinfo(hints);
	fid_fabric *fabric;
	fid_domain *domain;
	fid_cq *cq;
	fid_av *av;
	fid_ep *ep;
	WU_RANK_CHECK(rep, fi_fabric(info->fabric_attr, &fabric, nullptr));
	WU_RANK_CHECK(rep, fi_domain(fabric, info, &domain, nullptr));
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	WU_RANK_CHECK(rep, fi_cq_open(domain, &cq_attr, &cq, nullptr));
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	WU_RANK_CHECK(rep, fi_av_open(domain, &aa, &av, nullptr));
	WU_RANK_CHECK(rep, fi_endpoint(domain, info, &ep, nullptr));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &av->fid, 0));
	WU_RANK_CHECK(rep, fi_enable(ep));

	std::vector<fi_addr_t> peer(local_size, FI_ADDR_NOTAVAIL);
	int got = fi_av_insertsym(av, host.c_str(), 1, first.c_str(), local_size, peer.data(), 0, nullptr);
	if (got != int(local_size))
		rep.fail("fi_av_insertsym inserted " + std::to_string(got) + " of " + std::to_string(local_size));
	unsigned char name[64], entry[64];
	size_t nl = sizeof name, el = sizeof entry;
	WU_RANK_CHECK(rep, fi_getname(&ep->fid, name, &nl));
	if (fi_av_lookup(av, peer[local_rank], entry, &el) || el != nl || memcmp(name, entry, nl))
		rep.fail("its own insertsym entry is not its fi_getname");

	/* Ring: local ranks in order (one node: local rank = rank order). */
	const uint32_t next = (local_rank + 1) % local_size;
	char in[32] = {}, out[32];
	snprintf(out, sizeof out, "from %u", local_rank);
	WU_RANK_CHECK(rep, fi_trecv(ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, in));
	const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(15);
	ssize_t s;
	while ((s = fi_tsend(ep, out, sizeof out, nullptr, peer[next], 7, out)) == -FI_EAGAIN &&
	       std::chrono::steady_clock::now() < limit)
		fi_cq_read(cq, nullptr, 0);
	WU_RANK_CHECK(rep, s);
	int done = 0;
	bool received = false;
	while (done < 2) {
		fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(cq, &e, 1);
		if (r == 1) {
			done++;
			if (e.flags & FI_RECV) {
				unsigned from = ~0u;
				received = sscanf(in, "from %u", &from) == 1 &&
					   from == (local_rank + local_size - 1) % local_size;
				if (!received)
					rep.fail("received \"" + std::string(in, 0, 31) + "\"");
			}
			continue;
		}
		if (r != -FI_EAGAIN || std::chrono::steady_clock::now() > limit) {
			fi_cq_err_entry err{};
			if (r == -FI_EAVAIL)
				fi_cq_readerr(cq, &err, 0);
			rep.fail(r == -FI_EAGAIN ? "no completion within 15 s"
						 : fi_strerror(r == -FI_EAVAIL ? err.err : int(-r)));
			break;
		}
	}
	wu::wireup::route_stats st;
	if (wu::wireup::stats_of(ep, &st) || st.shm != 1 || st.tcp)
		rep.fail("routes: " + std::to_string(st.shm) + " shm, " + std::to_string(st.tcp) + " tcp");
	/* Only now a barrier: nobody closes while its peer still sends. */
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		rep.fail("closing barrier");
	printf("test_wireup_sym_launch rank %u/%u local %u/%u port %s inserted=%d shm_routes=%llu %s\n", rep.rank, n,
	       local_rank, local_size, mine.c_str(), got, (unsigned long long)st.shm, rep.failures ? "FAIL" : "OK");
	fflush(stdout);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	PMIx_Finalize(nullptr, 0);
	return rep.failures ? 1 : 0;
}
