/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_launch: the PMIx wire-up under a real launcher (mpirun, srun).
 *
 * Every rank publishes a synthetic endpoint name (tcp endpoints are not
 * there yet): 127.0.0.1, port 30000 + its local rank, the layout the
 * symmetric mode expects; the rank named as DEVIANT takes 40000 + rank
 * instead (a port that was busy).  Then, in one run:
 *   1. named  fi_av_open("pmix:"), zero code: a direct AV, resolved on use;
 *   2. modex  publish + one collecting fence + one insert;
 *   3. direct a second AV, direct mode, entries resolved on use;
 *   4. symmetric  one record per node, fi_av_insertsym into FI_SYMMETRIC.
 * After each, the rank checks that fi_addr r holds rank r's name for every
 * r, and prints one line; exit status non-zero on any failure.
 *
 * usage: test_wireup_launch EXPECTED_SIZE [DEVIANT_RANK]
 */
#include <pmix.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>

#include "pmix_glue/session.h"

namespace {

pmix_proc_t me;
int failures;
std::string problems;

void fail(const std::string &m)
{
	failures++;
	fprintf(stderr, "test_wireup_launch rank %u: FAIL %s\n", me.rank, m.c_str());
	if (problems.size() < 400)
		problems += (problems.empty() ? "" : "; ") + m;
}

double now_ms()
{
	return std::chrono::duration<double, std::milli>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

uint32_t local_rank_of(uint32_t r)
{
	pmix_proc_t p;
	pmix_value_t *v = nullptr;
	PMIX_LOAD_PROCID(&p, me.nspace, r);
	if (PMIx_Get(&p, PMIX_LOCAL_RANK, nullptr, 0, &v) != PMIX_SUCCESS || !v) {
		fail("no PMIX_LOCAL_RANK for rank " + std::to_string(r));
		return 0;
	}
	uint32_t out = v->type == PMIX_UINT16 ? v->data.uint16 : v->type == PMIX_UINT32 ? v->data.uint32 : uint32_t(v->data.integer);
	PMIX_VALUE_RELEASE(v);
	return out;
}

sockaddr_in name_of(uint32_t r, uint32_t local_rank, long deviant)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(uint16_t(long(r) == deviant ? 40000 + r : 30000 + local_rank));
	return a;
}

std::string text(const sockaddr_in &a)
{
	char b[32];
	inet_ntop(AF_INET, &a.sin_addr, b, sizeof b);
	return std::string(b) + ":" + std::to_string(ntohs(a.sin_port));
}

int check_av(fid_av *av, fi_addr_t base, uint32_t n, const std::vector<sockaddr_in> &want,
	     const char *mode)
{
	int ok = 0;
	for (uint32_t r = 0; r < n; r++) {
		sockaddr_in got{};
		size_t len = sizeof got;
		int ret = fi_av_lookup(av, base + r, &got, &len);
		if (ret || len != sizeof got || memcmp(&got, &want[r], sizeof got) != 0) {
			fail(std::string(mode) + ": fi_addr " + std::to_string(base + r) + " holds " +
			     (ret ? std::string(fi_strerror(-ret)) : text(got)) + ", rank " +
			     std::to_string(r) + " published " + text(want[r]));
			continue;
		}
		ok++;
	}
	return ok;
}

void barrier()
{
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		fail("barrier fence");
}

} // namespace

int main(int argc, char **argv)
{
	long expected = argc > 1 ? strtol(argv[1], nullptr, 10) : -1;
	long deviant = argc > 2 ? strtol(argv[2], nullptr, 10) : -1;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_launch: PMIx_Init failed (not under a PMIx launcher?)\n");
		return 2;
	}
	fi_info *hints = fi_allocinfo(), *info = nullptr;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->addr_format = FI_SOCKADDR_IN;
	int r = fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &info);
	fi_freeinfo(hints);
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	if (r || fi_fabric(info->fabric_attr, &fabric, nullptr) ||
	    fi_domain(fabric, info, &domain, nullptr)) {
		fprintf(stderr, "test_wireup_launch: no tcp domain: %s\n", fi_strerror(-r));
		return 2;
	}
	/* The tcp domain's ops_open is not wired yet: then call ours directly. */
	fi_ops_wireup_pmix *w = nullptr;
	if (fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr))
		wu::pmix::domain_ops_open(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr);

	fi_wireup_info ji{};
	ji.size = sizeof ji;
	if ((r = w->job_info(domain, nullptr, &ji)))
		fail(std::string("job_info: ") + fi_strerror(-r));
	uint32_t n = ji.job_size;
	if (expected > 0 && n != uint32_t(expected))
		fail("job size " + std::to_string(n) + ", expected " + std::to_string(expected));
	if (ji.rank != me.rank)
		fail("job_info rank " + std::to_string(ji.rank));
	bool self_local = false;
	for (uint32_t i = 0; i < ji.local_size; i++)
		self_local |= ji.local_peers[i] == me.rank;
	if (!self_local || w->is_local(domain, me.rank) != 1)
		fail("own rank is not among the local peers");

	std::vector<sockaddr_in> want(n);
	for (uint32_t q = 0; q < n; q++)
		want[q] = name_of(q, local_rank_of(q), deviant);
	const sockaddr_in mine = want[me.rank];
	std::string line;
	auto report = [&](const char *mode, int ok, double ms, const fi_wireup_info &i) {
		char b[200];
		snprintf(b, sizeof b, " %s=%d/%u(%.2f ms, %llu B put, %llu gets%s)", mode, ok, n, ms,
			 (unsigned long long)i.bytes_put, (unsigned long long)i.gets,
			 i.deviants ? (", " + std::to_string(i.deviants) + " off layout").c_str() : "");
		line += b;
	};

	/* 1. zero code: fi_av_open("pmix:"), then the endpoint gets its name. */
	{
		barrier();
		double t0 = now_ms();
		fi_av_attr attr{};
		attr.type = FI_AV_TABLE;
		attr.name = (char *)FI_WIREUP_AV_PREFIX;
		fid_av *av = nullptr;
		int ok = 0;
		if ((r = fi_av_open(domain, &attr, &av, nullptr))) {
			fail(std::string("fi_av_open(pmix:): ") + fi_strerror(-r));
		} else {
			wu::pmix::endpoint_named(&mine, sizeof mine, FI_SOCKADDR_IN);
			ok = check_av(av, 0, n, want, "named");
		}
		fi_wireup_info i{};
		i.size = sizeof i;
		w->job_info(domain, nullptr, &i);
		report("named", ok, now_ms() - t0, i);
		if (av)
			fi_close(&av->fid);
	}
	/* 2-4: explicit modes. */
	struct {
		const char *name;
		fi_wireup_mode mode;
		bool sym;
	} modes[] = {
		{"modex", FI_WIREUP_MODEX, false},
		{"direct", FI_WIREUP_DIRECT, false},
		{"symmetric", FI_WIREUP_SYMMETRIC, true},
	};
	for (auto &m : modes) {
		barrier();
		double t0 = now_ms();
		fi_av_attr attr{};
		attr.type = FI_AV_TABLE;
		attr.flags = m.sym ? FI_SYMMETRIC : 0;
		fid_av *av = nullptr;
		int ok = 0;
		fi_wireup_info i{};
		i.size = sizeof i;
		if ((r = fi_av_open(domain, &attr, &av, nullptr))) {
			fail(std::string("fi_av_open: ") + fi_strerror(-r));
		} else if ((r = w->publish(domain, &mine, sizeof mine, FI_SOCKADDR_IN,
					   FI_WIREUP_FLAGS(m.mode)))) {
			fail(std::string(m.name) + ": publish: " + fi_strerror(-r));
		} else if ((r = w->av_fill(domain, av, nullptr, FI_WIREUP_FLAGS(m.mode), &i))) {
			fail(std::string(m.name) + ": av_fill: " + fi_strerror(-r));
		} else {
			if (i.mode != m.mode)
				fail(std::string(m.name) + ": mode used " + std::to_string(i.mode));
			ok = check_av(av, i.base, n, want, m.name);
			if (m.sym && deviant >= 0 && deviant < long(n) && i.deviants != 1)
				fail("symmetric: " + std::to_string(i.deviants) + " ranks off the layout, expected 1");
		}
		report(m.name, ok, now_ms() - t0, i);
		if (av)
			fi_close(&av->fid);
	}

	/* Nobody leaves while a peer may still resolve from it. */
	barrier();
	printf("test_wireup_launch rank %u/%u local %u/%u nodes %u%s %s%s\n", me.rank, n,
	       ji.local_rank, ji.local_size, ji.num_nodes, line.c_str(), failures ? "FAIL: " : "OK",
	       problems.c_str());
	fflush(stdout);
	if ((r = w->close(domain)))
		fail(std::string("close: ") + fi_strerror(-r));
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	if (PMIx_Finalize(nullptr, 0) != PMIX_SUCCESS)
		failures++;
	return failures ? 1 : 0;
}
