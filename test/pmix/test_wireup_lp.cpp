/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_lp: a client of test_wireup_server (launcher-published data).
 *
 *   test_wireup_lp VARIANT N      (arguments appended by the server)
 *
 * nodes, ranks: av_fill in automatic mode must pick the launcher mode, put
 *   nothing and fence nothing, and give fi_addr r the name the server
 *   published for rank r; the zero-code fi_av_open("pmix:") must too.
 * corrupt: av_fill fails with -FI_EINVAL (rank 1's 7-byte record) and the
 *   AV stays empty.
 * silent: av_fill fails with -FI_ENODATA (rank N-1 published nothing), AV
 *   empty.
 * Prints "test_wireup_lp rank R OK" or the rep.failures. */
#include <pmix.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>

#include "pmix_glue/session.h"
#include "rank_report.h"

namespace {
wu::test::rank_report rep{"test_wireup_lp"};
} // namespace

int main(int argc, char **argv)
{
	std::string variant = argc > 1 ? argv[1] : "ranks";
	uint32_t n = argc > 2 ? uint32_t(atoi(argv[2])) : 0;
	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_lp: PMIx_Init failed\n");
		return 2;
	}
	rep.rank = me.rank;
	fi_info *hints = fi_allocinfo(), *info = nullptr;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->addr_format = FI_SOCKADDR_IN;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	if (fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, nullptr) || fi_domain(fabric, info, &domain, nullptr)) {
		fprintf(stderr, "test_wireup_lp: no tcp domain\n");
		return 2;
	}
	fi_freeinfo(hints);
	fi_ops_wireup_pmix *w = nullptr;
	if (fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr))
		wu::pmix::domain_ops_open(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr);

	auto want = [&](uint32_t r) {
		sockaddr_in a{};
		a.sin_family = AF_INET;
		if (variant == "nodes") {
			fi_wireup_info ji{};
			ji.size = sizeof ji;
			w->job_info(domain, nullptr, &ji);
			uint32_t ppn = n / (ji.num_nodes ? ji.num_nodes : 1);
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + r / ppn);
			a.sin_port = htons(uint16_t(30000 + r % ppn));
		} else {
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			a.sin_port = htons(uint16_t(30000 + r));
		}
		return a;
	};
	auto check = [&](fid_av *av, fi_addr_t base, const char *what) {
		for (uint32_t r = 0; r < n; r++) {
			sockaddr_in got{}, w8 = want(r);
			size_t len = sizeof got;
			int ret = fi_av_lookup(av, base + r, &got, &len);
			if (ret || memcmp(&got, &w8, sizeof got))
				rep.fail(std::string(what) + ": rank " + std::to_string(r) + " wrong or missing");
		}
	};
	fi_av_attr attr{};
	attr.type = FI_AV_TABLE;
	attr.flags = FI_SYMMETRIC;
	fid_av *av = nullptr;
	fi_av_open(domain, &attr, &av, nullptr);
	fi_wireup_info i{};
	i.size = sizeof i;
	int r = w->av_fill(domain, av, nullptr, 0, &i);
	if (variant == "nodes" || variant == "ranks") {
		if (r)
			rep.fail(std::string("av_fill: ") + fi_strerror(-r));
		else {
			if (i.mode != FI_WIREUP_LAUNCHER)
				rep.fail("mode " + std::to_string(i.mode) + ", not launcher");
			if (i.bytes_put || i.fences)
				rep.fail("the launcher mode put or fenced");
			check(av, i.base, "av_fill");
		}
		fi_av_attr na{};
		na.type = FI_AV_TABLE;
		na.name = (char *)FI_WIREUP_AV_PREFIX;
		fid_av *nav = nullptr;
		if ((r = fi_av_open(domain, &na, &nav, nullptr)))
			rep.fail(std::string("fi_av_open(pmix:): ") + fi_strerror(-r));
		else {
			check(nav, 0, "named");
			fi_close(&nav->fid);
		}
	} else {
		int expect = variant == "corrupt" ? -FI_EINVAL : -FI_ENODATA;
		if (r != expect)
			rep.fail("av_fill gave " + std::to_string(r) + ", expected " + std::to_string(expect));
		sockaddr_in got{};
		size_t len = sizeof got;
		if (fi_av_lookup(av, 0, &got, &len) == 0)
			rep.fail("the AV is not empty after a failed fill");
	}
	fi_close(&av->fid);
	printf("test_wireup_lp rank %u %s mode=%d put=%llu fences=%llu %s\n", me.rank, variant.c_str(),
	       int(i.mode), (unsigned long long)i.bytes_put, (unsigned long long)i.fences,
	       rep.failures ? "FAIL" : "OK");
	fflush(stdout);
	w->close(domain);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	PMIx_Finalize(nullptr, 0);
	return rep.failures ? 1 : 0;
}
