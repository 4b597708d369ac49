/* SPDX-License-Identifier: BSD-3-Clause */
/* pmix_bench: cost of filling an AV with every rank of a PMIx job.
 *
 *   pmix_bench MODE          under mpirun/srun; MODE is one of
 *       modex direct symmetric   the Wireup modes (fi_ops_wireup_pmix)
 *       baseline                 what MPI stacks do today: Put of the raw
 *                                name, Fence with data, N Gets, one
 *                                N-address fi_av_insert
 *       ucx                      the same exchange for UCX: worker address
 *                                through the same modex, ucp_ep_create for
 *                                every peer
 *     Rank 0 prints one line: mode, N, time from PMIx_Init to a filled AV
 *     (max over ranks), bytes put per rank, PMIx gets per rank, AV bytes per
 *     peer; for direct also the time from the barrier to every peer
 *     resolved (max).
 *   pmix_bench --sim NODES PPN  a simulated job from synthetic job data (the
 *     in-memory PMIx): AV memory and fill time per mode, for rank 0.
 *
 * Synthetic endpoint names (127.0.0.1, port 30000 + local rank) stand in for
 * tcp endpoints until those exist. */
#include "config.h"

#include <pmix.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>

#include "av/av.h"
#include "pmix_glue/fake_client.h"
#include "pmix_glue/session.h"

#ifdef WU_HAVE_UCX
#include <ucp/api/ucp.h>
#endif

namespace {

double now_us()
{
	return std::chrono::duration<double, std::micro>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

struct tcp_dom {
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	bool open()
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup("tcp");
		hints->ep_attr->type = FI_EP_RDM;
		hints->addr_format = FI_SOCKADDR_IN;
		int r = fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &info);
		fi_freeinfo(hints);
		return r == 0 && fi_fabric(info->fabric_attr, &fabric, nullptr) == 0 &&
		       fi_domain(fabric, info, &domain, nullptr) == 0;
	}
	~tcp_dom()
	{
		if (domain)
			fi_close(&domain->fid);
		if (fabric)
			fi_close(&fabric->fid);
		fi_freeinfo(info);
	}
	fid_av *av(bool sym)
	{
		fi_av_attr a{};
		a.type = FI_AV_TABLE;
		a.flags = sym ? FI_SYMMETRIC : 0;
		fid_av *out = nullptr;
		return fi_av_open(domain, &a, &out, nullptr) ? nullptr : out;
	}
};

sockaddr_in synth(uint32_t local_rank)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(uint16_t(30000 + local_rank));
	return a;
}

uint32_t u32(const pmix_proc_t &me, pmix_rank_t r, const char *key)
{
	pmix_proc_t p;
	pmix_value_t *v = nullptr;
	PMIX_LOAD_PROCID(&p, me.nspace, r);
	if (PMIx_Get(&p, key, nullptr, 0, &v) != PMIX_SUCCESS || !v)
		return 0;
	uint32_t out = v->type == PMIX_UINT16 ? v->data.uint16
		       : v->type == PMIX_UINT32 ? v->data.uint32
						: uint32_t(v->data.integer);
	PMIX_VALUE_RELEASE(v);
	return out;
}

int put_bytes(const char *key, const void *p, size_t n)
{
	pmix_value_t v;
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = (char *)p;
	v.data.bo.size = n;
	return PMIx_Put(PMIX_GLOBAL, key, &v);
}

int fence(bool collect)
{
	pmix_info_t info;
	bool flag = true;
	PMIX_INFO_CONSTRUCT(&info);
	if (collect)
		PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
	int rc = PMIx_Fence(nullptr, 0, collect ? &info : nullptr, collect ? 1 : 0);
	PMIX_INFO_DESTRUCT(&info);
	return rc;
}

int get_bytes(const pmix_proc_t &me, pmix_rank_t r, const char *key, std::vector<char> &out)
{
	pmix_proc_t p;
	pmix_value_t *v = nullptr;
	PMIX_LOAD_PROCID(&p, me.nspace, r);
	int rc = PMIx_Get(&p, key, nullptr, 0, &v);
	if (rc != PMIX_SUCCESS || !v)
		return rc ? rc : -1;
	out.assign(v->data.bo.bytes, v->data.bo.bytes + v->data.bo.size);
	PMIX_VALUE_RELEASE(v);
	return 0;
}

struct result {
	double fill_us = 0, use_us = 0;
	uint64_t bytes_put = 0, gets = 0;
	double av_bytes_per_peer = 0;
	bool ok = true;
};

int run_launched(const char *mode)
{
	/* The domain is not part of the exchange: opened before the clock. */
	tcp_dom d;
	if (!d.open()) {
		fprintf(stderr, "pmix_bench: no tcp domain\n");
		return 2;
	}
	double t0 = now_us(); /* just before PMIx_Init */
	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "pmix_bench: not under a PMIx launcher\n");
		return 2;
	}
	uint32_t n = u32(me, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE);
	uint32_t lr = u32(me, me.rank, PMIX_LOCAL_RANK);
	sockaddr_in mine = synth(lr);
	result res;
	/* Start-up skew (the last rank launched) dominates the time from
	 * PMIx_Init; the exchange alone is timed from a barrier (xchg). */
	double t_init = now_us() - t0;
	fence(false);
	t0 = now_us() - t_init;
	double t_bar = now_us();
	std::string m = mode;
	if (m == "modex" || m == "direct" || m == "symmetric") {
		fi_ops_wireup_pmix *w = nullptr;
		if (fi_open_ops(&d.domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr))
			wu::pmix::domain_ops_open(&d.domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr);
		fi_wireup_mode wm = m == "modex" ? FI_WIREUP_MODEX
				    : m == "direct" ? FI_WIREUP_DIRECT
						    : FI_WIREUP_SYMMETRIC;
		fid_av *av = d.av(wm == FI_WIREUP_SYMMETRIC);
		fi_wireup_info i{};
		i.size = sizeof i;
		res.ok = av && w->publish(d.domain, &mine, sizeof mine, FI_SOCKADDR_IN, FI_WIREUP_FLAGS(wm)) == 0 &&
			 w->av_fill(d.domain, av, nullptr, FI_WIREUP_FLAGS(wm), &i) == 0;
		res.fill_us = now_us() - t0;
		if (res.ok && wm == FI_WIREUP_DIRECT) {
			/* Touch every peer: what a fully connected job pays. */
			for (uint32_t r = 0; r < n; r++) {
				sockaddr_in a;
				size_t len = sizeof a;
				res.ok &= fi_av_lookup(av, i.base + r, &a, &len) == 0;
			}
			res.use_us = now_us() - t_bar;
			w->job_info(d.domain, nullptr, &i);
		}
		res.bytes_put = i.bytes_put;
		res.gets = i.gets;
		res.av_bytes_per_peer = av ? double(wu::av::resident_bytes(av)) / n : 0;
		fence(false); /* peers may still resolve from us */
		if (av)
			fi_close(&av->fid);
		w->close(d.domain);
	} else if (m == "baseline") {
		put_bytes("bench.ep", &mine, sizeof mine);
		PMIx_Commit();
		fence(true);
		std::vector<char> all(size_t(n) * sizeof mine), one;
		for (uint32_t r = 0; r < n; r++) {
			res.ok &= get_bytes(me, r, "bench.ep", one) == 0 && one.size() == sizeof mine;
			if (res.ok)
				memcpy(&all[size_t(r) * sizeof mine], one.data(), sizeof mine);
		}
		res.gets = n;
		res.bytes_put = sizeof mine;
		fid_av *av = d.av(false);
		res.ok &= av && fi_av_insert(av, all.data(), n, nullptr, 0, nullptr) == int(n);
		res.fill_us = now_us() - t0;
		res.av_bytes_per_peer = av ? double(wu::av::resident_bytes(av)) / n : 0;
		if (av)
			fi_close(&av->fid);
	} else if (m == "ucx") {
#ifdef WU_HAVE_UCX
		ucp_params_t p{};
		p.field_mask = UCP_PARAM_FIELD_FEATURES;
		p.features = UCP_FEATURE_TAG;
		ucp_context_h ctx;
		ucp_worker_h wk;
		ucp_worker_params_t wp{};
		wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
		wp.thread_mode = UCS_THREAD_MODE_SINGLE;
		ucp_address_t *addr;
		size_t alen;
		if (ucp_init(&p, nullptr, &ctx) != UCS_OK || ucp_worker_create(ctx, &wp, &wk) != UCS_OK ||
		    ucp_worker_get_address(wk, &addr, &alen) != UCS_OK) {
			fprintf(stderr, "pmix_bench: UCX did not start\n");
			return 2;
		}
		put_bytes("bench.ucx", addr, alen);
		PMIx_Commit();
		fence(true);
		std::vector<ucp_ep_h> eps(n);
		std::vector<char> one;
		for (uint32_t r = 0; r < n; r++) {
			if (get_bytes(me, r, "bench.ucx", one)) {
				res.ok = false;
				break;
			}
			ucp_ep_params_t ep{};
			ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
			ep.address = reinterpret_cast<ucp_address_t *>(one.data());
			res.ok &= ucp_ep_create(wk, &ep, &eps[r]) == UCS_OK;
		}
		res.fill_us = now_us() - t0;
		res.gets = n;
		res.bytes_put = alen;
		res.av_bytes_per_peer = -1; /* UCX endpoints: not measured */
		fence(false);
		for (ucp_ep_h e : eps)
			if (e) {
				ucs_status_ptr_t s = ucp_ep_close_nb(e, UCP_EP_CLOSE_MODE_FORCE);
				while (UCS_PTR_IS_PTR(s) && ucp_request_check_status(s) == UCS_INPROGRESS)
					ucp_worker_progress(wk);
				if (UCS_PTR_IS_PTR(s))
					ucp_request_free(s);
			}
		ucp_worker_release_address(wk, addr);
		ucp_worker_destroy(wk);
		ucp_cleanup(ctx);
#else
		if (me.rank == 0)
			printf("pmix_bench ucx n/a (built without UCX: install libucx-dev)\n");
		PMIx_Finalize(nullptr, 0);
		return 0;
#endif
	} else {
		fprintf(stderr, "pmix_bench: unknown mode %s\n", mode);
		return 2;
	}
	/* Max over ranks: every rank puts its numbers, rank 0 reads them. */
	double mine_t[4] = {res.fill_us, res.use_us, res.ok ? 1.0 : 0.0,
			    res.fill_us - (t_bar - t0)};
	put_bytes("bench.t", mine_t, sizeof mine_t);
	PMIx_Commit();
	fence(true);
	if (me.rank == 0) {
		double fill = 0, use = 0, xchg = 0;
		bool ok = true;
		std::vector<char> one;
		for (uint32_t r = 0; r < n; r++)
			if (get_bytes(me, r, "bench.t", one) == 0 && one.size() == sizeof mine_t) {
				double t[4];
				memcpy(t, one.data(), sizeof t);
				fill = std::max(fill, t[0]);
				xchg = std::max(xchg, t[3]);
				use = std::max(use, t[1]);
				ok &= t[2] == 1.0;
			} else {
				ok = false;
			}
		char avb[32] = "n/a", usem[32] = "-";
		if (res.av_bytes_per_peer >= 0)
			snprintf(avb, sizeof avb, "%.1f", res.av_bytes_per_peer);
		if (use > 0)
			snprintf(usem, sizeof usem, "%.2f", use / 1e3);
		printf("pmix_bench %s N=%u fill_ms=%.2f xchg_ms=%.2f use_ms=%s put_B=%llu gets=%llu av_B_per_peer=%s %s\n",
		       mode, n, fill / 1e3, xchg / 1e3, usem, (unsigned long long)res.bytes_put,
		       (unsigned long long)res.gets, avb, ok ? "OK" : "FAIL");
	}
	fence(false);
	PMIx_Finalize(nullptr, 0);
	return res.ok ? 0 : 1;
}

int run_sim(uint32_t nodes, uint32_t ppn)
{
	tcp_dom d;
	if (!d.open()) {
		fprintf(stderr, "pmix_bench: no tcp domain\n");
		return 2;
	}
	unsetenv("FI_PMIX_MODE");
	const char *modes[] = {"modex", "direct", "symmetric", "launcher", "baseline"};
	int rc = 0;
	for (const char *m : modes) {
		wu::pmix::fake_job j;
		j.nodes = nodes;
		j.ppn = ppn;
		j.me = 0;
		auto c = std::make_unique<wu::pmix::fake_client>(j);
		wu::pmix::fake_client *f = c.get();
		std::string mode = m;
		f->launcher_nodes = mode == "launcher";
		wu::pmix::use_client_for_tests(std::move(c));
		uint32_t n = nodes * ppn;
		fid_av *av = d.av(mode == "symmetric" || mode == "launcher");
		auto mine = f->addr_of(0);
		double t0 = now_us();
		fi_wireup_info i{};
		i.size = sizeof i;
		bool ok = true;
		if (mode == "baseline") {
			/* N addresses in one insert, as MPI stacks do after their modex. */
			std::vector<uint8_t> all, one;
			all.reserve(size_t(n) * mine.size());
			for (uint32_t r = 1; r < n; r++) /* rank 0 is this process */
				f->get(j.nspace, r, "wireup.ep", wu::pmix::get_kind::cached, one);
			for (uint32_t r = 0; r < n; r++) {
				auto a = f->addr_of(r);
				all.insert(all.end(), a.begin(), a.end());
			}
			ok = fi_av_insert(av, all.data(), n, nullptr, 0, nullptr) == int(n);
			i.bytes_put = mine.size();
			i.gets = n;
		} else {
			fi_wireup_mode wm = mode == "modex" ? FI_WIREUP_MODEX
					    : mode == "direct" ? FI_WIREUP_DIRECT
					    : mode == "symmetric" ? FI_WIREUP_SYMMETRIC
								  : FI_WIREUP_LAUNCHER;
			ok = wu::pmix::publish(FI_SOCKADDR_IN, mine.data(), mine.size(), FI_WIREUP_FLAGS(wm)) == 0 &&
			     wu::pmix::av_fill(av, FI_SOCKADDR_IN, nullptr, FI_WIREUP_FLAGS(wm), &i) == 0;
		}
		double fill = now_us() - t0;
		size_t bytes = wu::av::resident_bytes(av);
		/* Spot-check: the last rank's address. */
		sockaddr_in a{};
		size_t len = sizeof a;
		ok &= fi_av_lookup(av, n - 1, &a, &len) == 0 && memcmp(&a, f->addr_of(n - 1).data(), sizeof a) == 0;
		printf("pmix_bench sim %s nodes=%u ppn=%u N=%u fill_ms=%.2f av_bytes=%zu put_B=%llu gets=%llu %s\n",
		       m, nodes, ppn, n, fill / 1e3, bytes, (unsigned long long)i.bytes_put,
		       (unsigned long long)i.gets, ok ? "OK" : "FAIL");
		rc |= !ok;
		fi_close(&av->fid);
		wu::pmix::close();
	}
	wu::pmix::use_client_for_tests(nullptr);
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--sim") == 0)
		return run_sim(argc > 2 ? uint32_t(atoi(argv[2])) : 16384,
			       argc > 3 ? uint32_t(atoi(argv[3])) : 64);
	if (argc < 2) {
		fprintf(stderr, "usage: pmix_bench modex|direct|symmetric|baseline|ucx  (under mpirun)\n"
				"       pmix_bench --sim [NODES PPN]\n");
		return 2;
	}
	return run_launched(argv[1]);
}
