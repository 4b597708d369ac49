/* SPDX-License-Identifier: BSD-3-Clause */
/* The mixed test of issue 15, a client of test_wireup_nodes (variants wx
 * and wxdirect; test/pmix/netns.sh): every rank of a job spread over
 * network namespaces opens one endpoint of the wireup provider, is wired
 * up through PMIx (modex, or direct), and exchanges a tagged message with
 * every other rank, received with wildcard receives (FI_ADDR_UNSPEC, any
 * tag).  It checks that
 *   - the wire-up fetched nothing for its node's ranks (local_gets and
 *     local_bytes 0) and computed their addresses (this host's id, no tcp
 *     part, the shm rank name), while remote ranks' entries carry their
 *     node's address;
 *   - peers on its node were routed through shm and the others through tcp
 *     (the endpoint's route counts, wireup::stats_of);
 *   - the wildcard receives took messages from both transports, each with
 *     its sender's fi_addr (FI_SOURCE) and its content. */
#include "nodes_wx.h"

#include <pmix.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>
#include <rdma/fi_tagged.h>

#include "prov/shm/shm_addr.h"
#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_addr.h"
#include "rank_report.h"

namespace wu::test {

namespace {

wu::test::rank_report rep{"test_wireup_nodes"};

} // namespace

int wx_client(const std::string &variant, uint32_t ppn, bool cyclic,
	      const std::vector<std::string> &addrs)
{
	const uint32_t nn = uint32_t(addrs.size()), n = nn * ppn;
	auto node_of = [&](uint32_t r) { return cyclic ? r % nn : r / ppn; };
	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_nodes: PMIx_Init failed\n");
		return 2;
	}
	rep.rank = me.rank;
	const uint32_t my_node = node_of(rep.rank);

	fi_info *hints = fi_allocinfo(), *infos = nullptr;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup("wireup");
	WU_RANK_CHECK(rep, fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &infos));
	/* The entry of this node's link, not loopback: tcp peers are on
	 * other nodes. */
	fi_info *info = infos;
	for (fi_info *i = infos; i; i = i->next)
		if (i->domain_attr && i->domain_attr->name && strcmp(i->domain_attr->name, "lo") != 0) {
			info = i;
			break;
		}
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
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	WU_RANK_CHECK(rep, fi_av_open(domain, &av_attr, &av, nullptr));
	WU_RANK_CHECK(rep, fi_endpoint(domain, info, &ep, nullptr));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &av->fid, 0));
	WU_RANK_CHECK(rep, fi_enable(ep));
	uint8_t mine[wireup::addr_max];
	size_t len = sizeof mine;
	WU_RANK_CHECK(rep, fi_getname(&ep->fid, mine, &len));
	wireup::parts own;
	if (wireup::decode(mine, len, &own) <= 0 || !own.tcp || !own.shm)
		rep.fail("own address lacks a tcp or a shm part");

	fi_ops_wireup_pmix *w;
	WU_RANK_CHECK(rep, fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr));
	WU_RANK_CHECK(rep, w->publish(domain, mine, len, info->addr_format, 0));
	fi_wireup_info wi{};
	wi.size = sizeof wi;
	int r = w->av_fill(domain, av, nullptr, 0, &wi);
	if (r) {
		rep.fail(std::string("av_fill: ") + fi_strerror(-r));
		printf("test_wireup_nodes rank %u %s FAIL\n", rep.rank, variant.c_str());
		return 1;
	}
	const fi_wireup_mode want_mode = variant == "wxdirect" ? FI_WIREUP_DIRECT : FI_WIREUP_MODEX;
	if (wi.mode != want_mode)
		rep.fail("mode " + std::to_string(wi.mode) + ", expected " + std::to_string(want_mode));

	/* Entries: local peers computed (rank names), remote ones fetched. */
	char job[256];
	const char *sj = getenv("FI_SHM_JOB");
	snprintf(job, sizeof job, "%s", sj && *sj ? sj : me.nspace);
	for (uint32_t p = 0; p < n; p++) {
		uint8_t got[wireup::addr_max];
		size_t gl = sizeof got;
		wireup::parts pp;
		if (fi_av_lookup(av, wi.base + p, got, &gl) || wireup::decode(got, gl, &pp) <= 0) {
			rep.fail("rank " + std::to_string(p) + ": no wireup address in the AV");
			continue;
		}
		const bool local = node_of(p) == my_node;
		if ((pp.host == own.host) != local)
			rep.fail("rank " + std::to_string(p) + ": host id says " +
			     (local ? "another host" : "this host"));
		if (local && p != rep.rank) {
			char want[shm::addr_max];
			long wl = shm::rank_addr(job, p, want, sizeof want);
			if (pp.tcp || wl <= 0 || !pp.shm || pp.shm_len != size_t(wl) - 1 - shm::scheme_len ||
			    memcmp(pp.shm, want + shm::scheme_len, pp.shm_len) != 0)
				rep.fail("local rank " + std::to_string(p) +
				     ": not the computed address (rank name, no tcp part)");
		} else if (!local) {
			char ip[INET_ADDRSTRLEN] = "?";
			if (pp.tcp && pp.tcp_len == sizeof(sockaddr_in))
				inet_ntop(AF_INET, &static_cast<const sockaddr_in *>(pp.tcp)->sin_addr, ip,
					  sizeof ip);
			if (addrs[node_of(p)] != ip)
				rep.fail("remote rank " + std::to_string(p) + ": tcp part " + ip + ", expected " +
				     addrs[node_of(p)]);
		}
	}

	/* Every rank listens before anyone sends (as MPI_Init's barrier). */
	std::vector<char> in(size_t(n) * 32), out(size_t(n) * 32);
	std::vector<fi_addr_t> src(n, FI_ADDR_NOTAVAIL);
	for (uint32_t k = 0; k + 1 < n; k++)
		WU_RANK_CHECK(rep, fi_trecv(ep, &in[32 * k], 32, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, &in[32 * k]));
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		rep.fail("start-up barrier");
	for (uint32_t p = 0; p < n; p++) {
		if (p == rep.rank)
			continue;
		snprintf(&out[32 * p], 32, "from %u to %u", rep.rank, p);
		ssize_t s;
		while ((s = fi_tsend(ep, &out[32 * p], 32, nullptr, wi.base + p, 1000 + rep.rank,
				     nullptr)) == -FI_EAGAIN)
			fi_cq_read(cq, nullptr, 0);
		WU_RANK_CHECK(rep, s);
	}
	uint32_t sends = 0, recvs = 0, remote = 0, local_in = 0;
	const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (sends + recvs < 2 * (n - 1)) {
		fi_cq_tagged_entry e;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		ssize_t got = fi_cq_readfrom(cq, &e, 1, &from);
		if (got == 1) {
			if (!(e.flags & FI_RECV)) {
				sends++;
				continue;
			}
			recvs++;
			const char *msg = static_cast<const char *>(e.op_context);
			unsigned a = ~0u, b = ~0u;
			if (sscanf(msg, "from %u to %u", &a, &b) != 2 || b != rep.rank || a >= n ||
			    e.tag != 1000 + a) {
				rep.fail("wildcard receive got \"" + std::string(msg, 0, 31) + "\"");
				continue;
			}
			if (from != wi.base + a)
				rep.fail("message of rank " + std::to_string(a) + " reported from fi_addr " +
				     std::to_string(from));
			if (node_of(a) == my_node)
				local_in++;
			else
				remote++;
			continue;
		}
		if (got == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			fi_cq_readerr(cq, &err, 0);
			rep.fail(std::string("completion error ") + fi_strerror(err.err));
			break;
		}
		if (got != -FI_EAGAIN || std::chrono::steady_clock::now() > limit) {
			rep.fail(got == -FI_EAGAIN ? "no completion within 10 s" : fi_strerror(int(-got)));
			break;
		}
	}
	if (local_in != ppn - 1 || remote != n - ppn)
		rep.fail("wildcard receives took " + std::to_string(local_in) + " local and " +
		     std::to_string(remote) + " remote messages, expected " + std::to_string(ppn - 1) +
		     " and " + std::to_string(n - ppn));
	wireup::route_stats st;
	if (wireup::stats_of(ep, &st))
		rep.fail("no route counts");
	else if (st.shm != ppn - 1 || st.tcp != n - ppn || st.unreachable)
		rep.fail("routes: " + std::to_string(st.shm) + " shm, " + std::to_string(st.tcp) + " tcp, " +
		     std::to_string(st.unreachable) + " unreachable; expected " +
		     std::to_string(ppn - 1) + " shm and " + std::to_string(n - ppn) + " tcp");

	fi_wireup_info fin{};
	fin.size = sizeof fin;
	WU_RANK_CHECK(rep, w->job_info(domain, nullptr, &fin));
	if (fin.local_gets || fin.local_bytes)
		rep.fail("the wire-up fetched " + std::to_string(fin.local_gets) + " gets, " +
		     std::to_string(fin.local_bytes) + " bytes of local peers");
	if (fin.local_computed + fin.local_noted < ppn)
		rep.fail(std::to_string(fin.local_computed) + " local addresses computed, " +
		     std::to_string(fin.local_noted) + " noted, for " + std::to_string(ppn) + " ranks");
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		rep.fail("closing barrier");
	printf("test_wireup_nodes rank %u node %u (%s) %s mode=%d put=%llu fences=%llu gets=%llu "
	       "bytes_got=%llu local_gets=%llu local_bytes=%llu shm_routes=%llu tcp_routes=%llu "
	       "local_msgs=%u remote_msgs=%u %s\n",
	       rep.rank, my_node, addrs[my_node].c_str(), variant.c_str(), int(wi.mode),
	       (unsigned long long)fin.bytes_put, (unsigned long long)fin.fences,
	       (unsigned long long)fin.gets, (unsigned long long)fin.bytes_got,
	       (unsigned long long)fin.local_gets, (unsigned long long)fin.local_bytes,
	       (unsigned long long)st.shm, (unsigned long long)st.tcp, local_in, remote,
	       rep.failures ? "FAIL" : "OK");
	fflush(stdout);
	w->close(domain);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(infos);
	fi_freeinfo(hints);
	PMIx_Finalize(nullptr, 0);
	return rep.failures ? 1 : 0;
}

} // namespace wu::test
