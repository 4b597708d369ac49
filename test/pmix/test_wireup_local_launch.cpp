/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_local_launch: the wireup provider wired up through PMIx under
 * a real launcher with every rank on this node (issue 15): nothing may be
 * fetched from PMIx for a local peer.
 *
 * Each rank opens a wireup endpoint bound to the zero-code "pmix:" AV
 * (direct mode, resolved on use; the endpoint publishes itself at
 * fi_enable), fills a second AV in modex mode through fi_wireup's av_fill,
 * and checks that both hold, for every peer, the computed local address
 * (this host's id, no tcp part, the shm rank name).  Then it sends a tagged
 * message to every peer and takes them with wildcard receives; every route
 * must be shm.  Last, fi_wireup_info must show zero gets and zero bytes
 * fetched for local peers.  Prints one line per rank ending in OK.
 *
 * With DEVIANT_RANK, that rank first opens a plain shm endpoint, which
 * takes the rank's shm name: its wireup endpoint's shm side gets another
 * one, so it leaves a note, and its peers must find it there (noted=1),
 * still fetching nothing from PMIx, and reach it through shm.
 *
 * usage: test_wireup_local_launch EXPECTED_SIZE [DEVIANT_RANK] */
#include <pmix.h>

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
#include <rdma/fi_ext_wireup.h>
#include <rdma/fi_tagged.h>

#include "prov/shm/shm_addr.h"
#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_addr.h"
#include "rank_report.h"

namespace {

wu::test::rank_report rep{"test_wireup_local_launch"};

std::vector<uint8_t> entry(fid_av *av, fi_addr_t f)
{
	uint8_t b[wu::wireup::addr_max];
	size_t l = sizeof b;
	if (fi_av_lookup(av, f, b, &l) || l > sizeof b)
		return {};
	return {b, b + l};
}

} // namespace

int main(int argc, char **argv)
{
	const uint32_t want_size = argc > 1 ? uint32_t(atoi(argv[1])) : 0;
	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_local_launch: PMIx_Init failed\n");
		return 2;
	}
	rep.rank = me.rank;
	const long deviant = argc > 2 ? atol(argv[2]) : -1;

	/* The deviant: another shm endpoint of this process came first. */
	fi_info *shm_info = nullptr;
	fid_fabric *shm_fabric = nullptr;
	fid_domain *shm_domain = nullptr;
	fid_ep *shm_ep = nullptr;
	if (long(rep.rank) == deviant) {
		fi_info *h = fi_allocinfo();
		h->ep_attr->type = FI_EP_RDM;
		h->fabric_attr->prov_name = strdup("shm");
		WU_RANK_CHECK(rep, fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, h, &shm_info));
		fi_freeinfo(h);
		WU_RANK_CHECK(rep, fi_fabric(shm_info->fabric_attr, &shm_fabric, nullptr));
		WU_RANK_CHECK(rep, fi_domain(shm_fabric, shm_info, &shm_domain, nullptr));
		WU_RANK_CHECK(rep, fi_endpoint(shm_domain, shm_info, &shm_ep, nullptr));
	}

	fi_info *hints = fi_allocinfo(), *info = nullptr;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup("wireup");
	WU_RANK_CHECK(rep, fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &info));
	fid_fabric *fabric;
	fid_domain *domain;
	fid_cq *cq;
	fid_av *av, *mav;
	fid_ep *ep;
	WU_RANK_CHECK(rep, fi_fabric(info->fabric_attr, &fabric, nullptr));
	WU_RANK_CHECK(rep, fi_domain(fabric, info, &domain, nullptr));
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	WU_RANK_CHECK(rep, fi_cq_open(domain, &cq_attr, &cq, nullptr));
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	aa.name = const_cast<char *>(FI_WIREUP_AV_PREFIX);
	WU_RANK_CHECK(rep, fi_av_open(domain, &aa, &av, nullptr));
	WU_RANK_CHECK(rep, fi_endpoint(domain, info, &ep, nullptr));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	WU_RANK_CHECK(rep, fi_ep_bind(ep, &av->fid, 0));
	WU_RANK_CHECK(rep, fi_enable(ep));

	fi_ops_wireup_pmix *w;
	WU_RANK_CHECK(rep, fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr));
	fi_wireup_info ji{};
	ji.size = sizeof ji;
	WU_RANK_CHECK(rep, w->job_info(domain, nullptr, &ji));
	const uint32_t n = ji.job_size;
	if (n != want_size || ji.local_size != n)
		rep.fail("job of " + std::to_string(n) + " ranks, " + std::to_string(ji.local_size) +
		     " on this node; expected " + std::to_string(want_size) + " on one node");
	aa.name = nullptr;
	WU_RANK_CHECK(rep, fi_av_open(domain, &aa, &mav, nullptr));
	fi_wireup_info mi{};
	mi.size = sizeof mi;
	WU_RANK_CHECK(rep, w->av_fill(domain, mav, nullptr, FI_WIREUP_FLAGS(FI_WIREUP_MODEX), &mi));

	/* Both AVs: every peer at its computed address. */
	const char *sj = getenv("FI_SHM_JOB");
	const char *job = sj && *sj ? sj : me.nspace;
	for (uint32_t p = 0; p < n; p++) {
		auto a = entry(av, p), m = entry(mav, mi.base + p);
		if (a.empty() || a != m) {
			rep.fail("rank " + std::to_string(p) + ": the pmix: AV and the modex AV differ");
			continue;
		}
		wu::wireup::parts pp;
		char want[wu::shm::addr_max];
		long wl = wu::shm::rank_addr(job, p, want, sizeof want);
		bool ok = wu::wireup::decode(a.data(), a.size(), &pp) > 0 &&
			  pp.host == wu::wireup::host_id() && wl > 0 && pp.shm;
		bool named = ok && std::string(pp.shm, pp.shm_len) == std::string(want + wu::shm::scheme_len);
		if (long(p) == deviant) {
			/* Its full name, from its note (or, itself, what it published). */
			if (!ok || named || !pp.tcp)
				rep.fail("deviant rank " + std::to_string(p) + ": not its own full address");
		} else if (p != rep.rank && (!ok || !named || pp.tcp)) {
			rep.fail("rank " + std::to_string(p) + ": not the computed local address");
		}
	}

	/* Traffic: shm only, wildcard receives. */
	std::vector<char> in(size_t(n) * 32), out(size_t(n) * 32);
	for (uint32_t k = 0; k + 1 < n; k++)
		WU_RANK_CHECK(rep, fi_trecv(ep, &in[32 * k], 32, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, &in[32 * k]));
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		rep.fail("start-up barrier");
	for (uint32_t p = 0; p < n; p++) {
		if (p == rep.rank)
			continue;
		snprintf(&out[32 * p], 32, "from %u to %u", rep.rank, p);
		ssize_t s;
		while ((s = fi_tsend(ep, &out[32 * p], 32, nullptr, p, rep.rank, nullptr)) == -FI_EAGAIN)
			fi_cq_read(cq, nullptr, 0);
		WU_RANK_CHECK(rep, s);
	}
	uint32_t done = 0, msgs = 0;
	const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(15);
	while (done < 2 * (n - 1)) {
		fi_cq_tagged_entry e;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		ssize_t got = fi_cq_readfrom(cq, &e, 1, &from);
		if (got == 1) {
			done++;
			if (!(e.flags & FI_RECV))
				continue;
			unsigned a = ~0u, b = ~0u;
			const char *msg = static_cast<const char *>(e.op_context);
			if (sscanf(msg, "from %u to %u", &a, &b) != 2 || b != rep.rank || from != a ||
			    e.tag != a)
				rep.fail("received \"" + std::string(msg, 0, 31) + "\" from fi_addr " +
				     std::to_string(from));
			else
				msgs++;
			continue;
		}
		if (got != -FI_EAGAIN || std::chrono::steady_clock::now() > limit) {
			fi_cq_err_entry err{};
			if (got == -FI_EAVAIL)
				fi_cq_readerr(cq, &err, 0);
			rep.fail(got == -FI_EAGAIN ? "no completion within 15 s"
					       : fi_strerror(got == -FI_EAVAIL ? err.err : int(-got)));
			break;
		}
	}
	wu::wireup::route_stats st;
	if (wu::wireup::stats_of(ep, &st) || st.shm != n - 1 || st.tcp || st.unreachable)
		rep.fail("routes: " + std::to_string(st.shm) + " shm, " + std::to_string(st.tcp) + " tcp");

	fi_wireup_info fin{};
	fin.size = sizeof fin;
	WU_RANK_CHECK(rep, w->job_info(domain, nullptr, &fin));
	if (fin.local_gets || fin.local_bytes)
		rep.fail("fetched " + std::to_string(fin.local_gets) + " gets, " +
		     std::to_string(fin.local_bytes) + " bytes of local peers");
	/* Each AV read the deviant's note once. */
	const uint32_t want_noted = deviant >= 0 && long(rep.rank) != deviant ? 2 : 0;
	if (fin.local_noted != want_noted)
		rep.fail(std::to_string(fin.local_noted) + " addresses from notes, expected " +
		     std::to_string(want_noted));
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		rep.fail("closing barrier");
	printf("test_wireup_local_launch rank %u/%u put=%llu fences=%llu gets=%llu bytes_got=%llu "
	       "local_gets=%llu local_bytes=%llu computed=%u noted=%u shm_routes=%llu msgs=%u %s\n",
	       rep.rank, n, (unsigned long long)fin.bytes_put, (unsigned long long)fin.fences,
	       (unsigned long long)fin.gets, (unsigned long long)fin.bytes_got,
	       (unsigned long long)fin.local_gets, (unsigned long long)fin.local_bytes,
	       fin.local_computed, fin.local_noted, (unsigned long long)st.shm, msgs,
	       rep.failures ? "FAIL" : "OK");
	fflush(stdout);
	w->close(domain);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&mav->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	if (shm_ep) {
		fi_close(&shm_ep->fid);
		fi_close(&shm_domain->fid);
		fi_close(&shm_fabric->fid);
		fi_freeinfo(shm_info);
	}
	PMIx_Finalize(nullptr, 0);
	return rep.failures ? 1 : 0;
}
