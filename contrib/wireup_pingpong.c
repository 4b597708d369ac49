/* SPDX-License-Identifier: BSD-3-Clause */
/* The main job: a PMIx-launched wire-up and ping-pong.  Every rank opens a
 * RDM endpoint of the provider WU_PINGPONG_PROV names (default wireup: shm
 * to ranks on this node, tcp beyond; or tcp), publishes its name and fills
 * its AV with every rank of the job through Wireup's PMIx extension (fi_addr
 * == base + rank), sends a tagged message to every peer and checks what it
 * receives, then ranks 0 and 1 ping-pong 8-byte messages and print the
 * latency and what the wire-up fetched for ranks on their node.
 *
 *   contrib/launch/run-pmix.sh mpirun 4 build/contrib/wireup_pingpong
 *
 * WU_PINGPONG_STATS=1 adds one line per rank with what its wire-up cost
 * (contrib/cluster/bench.sh sums them):
 *   wireup_pingpong stats rank R node I local L/S: gets G bytes_got B
 *   local_gets LG local_bytes LB bytes_put P fences F fill_us T tcp C dup D
 *   rss_kb K pid P gets_again A
 *
 * Exit status 0 only when every message arrived intact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>
#include <rdma/fi_tagged.h>

#include "cluster/proc_stats.h"

#define CHECK(call)                                                                  \
	do {                                                                         \
		int rc_ = (int)(call);                                               \
		if (rc_ < 0) {                                                       \
			fprintf(stderr, "rank %u: %s: %d (%s)\n", rank, #call, rc_,  \
				fi_strerror(-rc_));                                  \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

static unsigned rank = ~0u;
static struct fid_cq *cq;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads one completion, driving progress; fails after 30 s. */
static void wait_one(void)
{
	struct fi_cq_tagged_entry e;
	double limit = now_s() + 30;
	for (;;) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "rank %u: completion error %d (%s)\n", rank, err.err,
				fi_strerror(err.err));
			exit(1);
		}
		if (n != -FI_EAGAIN) {
			fprintf(stderr, "rank %u: fi_cq_read: %zd\n", rank, n);
			exit(1);
		}
		if (now_s() > limit) {
			fprintf(stderr, "rank %u: no completion within 30 s\n", rank);
			exit(1);
		}
	}
}

static void tsend(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t to, uint64_t tag)
{
	ssize_t r;
	while ((r = fi_tsend(ep, buf, len, NULL, to, tag, NULL)) == -FI_EAGAIN)
		fi_cq_read(cq, NULL, 0);
	CHECK(r);
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	const char *prov = getenv("WU_PINGPONG_PROV");
	prov = prov && *prov ? prov : "wireup";
	hints->fabric_attr->prov_name = strdup(prov);
	if (strcmp(prov, "tcp") == 0) {
		hints->addr_format = FI_SOCKADDR_IN;
		CHECK(fi_getinfo(FI_VERSION(2, 0), "127.0.0.1", NULL, FI_SOURCE, hints, &info));
	} else {
		CHECK(fi_getinfo(FI_VERSION(2, 0), NULL, NULL, 0, hints, &info));
	}

	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	char name[64];
	size_t len = sizeof(name);
	CHECK(fi_getname(&ep->fid, name, &len));

	struct fi_ops_wireup_pmix *w;
	CHECK(fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, NULL));
	CHECK(w->publish(domain, name, len, info->addr_format, 0));
	struct fi_wireup_info wi;
	memset(&wi, 0, sizeof(wi));
	wi.size = sizeof(wi);
	double t0 = now_s();
	CHECK(w->av_fill(domain, av, NULL, 0, &wi));
	double t_fill = now_s() - t0;
	rank = wi.rank;
	unsigned n = wi.job_size;
	if (getenv("WU_PINGPONG_DEBUG")) {
		for (unsigned p = 0; p < n; p++) {
			char a[64], s[128];
			size_t al = sizeof(a), sl = sizeof(s);
			fi_av_lookup(av, wi.base + p, a, &al);
			fi_av_straddr(av, a, s, &sl);
			fprintf(stderr, "rank %u: fi_addr %llu -> %s\n", rank,
				(unsigned long long)(wi.base + p), s);
		}
		char s[128];
		size_t sl = sizeof(s);
		fi_av_straddr(av, name, s, &sl);
		fprintf(stderr, "rank %u: my name %s\n", rank, s);
	}

	/* Every rank sends "from R to P" to every peer P, tag R. */
	char *in = calloc(n, 32);
	for (unsigned p = 0; p < n; p++)
		if (p != rank)
			CHECK(fi_trecv(ep, in + 32 * p, 32, NULL, FI_ADDR_UNSPEC, p, 0, NULL));
	/* One buffer per send: it belongs to the provider until completion. */
	char *out = calloc(n, 32);
	for (unsigned p = 0; p < n; p++) {
		if (p == rank)
			continue;
		snprintf(out + 32 * p, 32, "from %u to %u", rank, p);
		tsend(ep, out + 32 * p, 32, wi.base + p, rank);
	}
	for (unsigned k = 0; k < 2 * (n - 1); k++)
		wait_one();
	/* Connections now, before peers that are done exit and close theirs. */
	unsigned conns = 0, dups = 0;
	if (getenv("WU_PINGPONG_STATS"))
		wu_tcp_conns(&conns, &dups);
	int bad = 0;
	for (unsigned p = 0; p < n; p++) {
		char want[32];
		if (p == rank)
			continue;
		snprintf(want, sizeof(want), "from %u to %u", p, rank);
		if (strcmp(in + 32 * p, want) != 0) {
			fprintf(stderr, "rank %u: from rank %u got \"%.32s\", want \"%s\"\n", rank, p,
				in + 32 * p, want);
			bad++;
		}
	}

	/* 8-byte ping-pong between ranks 0 and 1. */
	double lat_us = 0;
	if (n >= 2 && rank < 2) {
		const int iters = 2000;
		char b[8] = "pingpong";
		fi_addr_t peer = wi.base + (rank ^ 1);
		double s = 0;
		for (int i = 0; i < iters; i++) {
			if (i == 100)
				s = now_s(); /* after warm-up */
			if (rank == 0) {
				tsend(ep, b, 8, peer, 1000);
				wait_one();
				CHECK(fi_trecv(ep, b, 8, NULL, peer, 1001, 0, NULL));
				wait_one();
			} else {
				CHECK(fi_trecv(ep, b, 8, NULL, peer, 1000, 0, NULL));
				wait_one();
				tsend(ep, b, 8, peer, 1001);
				wait_one();
			}
		}
		lat_us = (now_s() - s) / (iters - 100) / 2 * 1e6;
	}
	const char *modes[] = {"auto", "modex", "direct", "symmetric", "launcher"};
	printf("wireup_pingpong rank %u/%u: %s, mode %s, AV filled in %.2f ms (%llu bytes fetched for "
	       "peers on this node), %u peers checked%s",
	       rank, n, info->fabric_attr->prov_name, modes[wi.mode <= 4 ? wi.mode : 0], t_fill * 1e3,
	       (unsigned long long)wi.local_bytes, n - 1, bad ? " FAILED" : " OK");
	if (lat_us > 0)
		printf(", 8 B latency %.2f us", lat_us);
	printf("\n");
	if (getenv("WU_PINGPONG_STATS")) {
		/* The counters now: the direct mode fetches on first send. */
		struct fi_wireup_info now;
		memset(&now, 0, sizeof(now));
		now.size = sizeof(now);
		CHECK(w->job_info(domain, NULL, &now));
		printf("wireup_pingpong stats rank %u node %u local %u/%u: gets %llu bytes_got %llu "
		       "local_gets %llu local_bytes %llu bytes_put %llu fences %llu fill_us %.0f "
		       "tcp %u dup %u rss_kb %ld pid %d gets_again %llu\n",
		       rank, now.node_id, now.local_rank, now.local_size, (unsigned long long)now.gets,
		       (unsigned long long)now.bytes_got, (unsigned long long)now.local_gets,
		       (unsigned long long)now.local_bytes, (unsigned long long)now.bytes_put,
		       (unsigned long long)now.fences, t_fill * 1e6, conns, dups, wu_peak_rss_kb(),
		       (int)getpid(), (unsigned long long)now.gets_again);
	}
	fflush(stdout);

	w->close(domain);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(in);
	free(out);
	return bad ? 1 : 0;
}
