/* SPDX-License-Identifier: BSD-3-Clause */
/* 8-byte one-way latency of the shm provider, made robust to a loaded
 * machine: two processes (a fork, pinned to two CPUs) ping-pong as
 * fi_pingpong does (fi_recv, fi_inject, fi_cq_read of FI_CQ_FORMAT_CONTEXT),
 * timed in batches of 1,000 round trips.  A batch the scheduler preempts
 * is an outlier, so the median and the best batch say what the code costs
 * where fi_pingpong's mean says how busy the machine was.
 *   shm_lat [BATCHES [CPU_A CPU_B]]  -> "shm_lat 8 median USEC best USEC"
 * Variants are compared by running it with their environments in turn
 * (contrib/bench/shm_lat.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define CHECK(x) do { int r_ = (int)(x); if (r_) { fprintf(stderr, "%d: %s: %s\n", __LINE__, #x, fi_strerror(-r_)); exit(1); } } while (0)
#define ROUNDS 1000

static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t peer;
static char buf[8], rbuf[8];

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	(void)sched_setaffinity(0, sizeof s, &s);
}

static void wait_one(void)
{
	struct fi_cq_entry e;
	ssize_t r;
	while ((r = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN) {
	}
	if (r != 1) {
		fprintf(stderr, "fi_cq_read: %zd\n", r);
		exit(1);
	}
}

static void send_one(void)
{
	ssize_t r;
	while ((r = fi_inject(ep, buf, sizeof buf, peer)) == -FI_EAGAIN)
		(void)fi_cq_read(cq, NULL, 0);
	CHECK(r);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* side 0 starts each round trip; names travel through the pipes. */
static void run(int side, int batches, int rd, int wr)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("shm");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK(fi_domain(fab, info, &dom, NULL));
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	CHECK(fi_cq_open(dom, &ca, &cq, NULL));
	CHECK(fi_av_open(dom, &aa, &av, NULL));
	CHECK(fi_endpoint(dom, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
	char name[128] = {0}, other[128] = {0};
	size_t len = sizeof name;
	CHECK(fi_getname(&ep->fid, name, &len));
	if (write(wr, name, sizeof name) != sizeof name || read(rd, other, sizeof other) != sizeof other) {
		perror("pipe");
		exit(1);
	}
	if (fi_av_insert(av, other, 1, &peer, 0, NULL) != 1) {
		fprintf(stderr, "fi_av_insert failed\n");
		exit(1);
	}
	double *one_way = calloc((size_t)batches, sizeof *one_way);
	for (int b = -2; b < batches; b++) { /* two warm-up batches */
		double t0 = now();
		for (int i = 0; i < ROUNDS; i++) {
			CHECK(fi_recv(ep, rbuf, sizeof rbuf, NULL, FI_ADDR_UNSPEC, NULL));
			if (side == 0) {
				send_one();
				wait_one();
			} else {
				wait_one();
				send_one();
			}
		}
		if (b >= 0)
			one_way[b] = (now() - t0) / ROUNDS / 2 * 1e6;
	}
	if (side == 0) {
		qsort(one_way, (size_t)batches, sizeof *one_way, cmp);
		printf("shm_lat 8 median %.4f best %.4f\n", one_way[batches / 2], one_way[0]);
	}
	/* Let the peer finish before the endpoint goes away. */
	char c = 0;
	if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)
		perror("pipe");
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(one_way);
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 200;
	int ca = argc > 3 ? atoi(argv[2]) : 0, cb = argc > 3 ? atoi(argv[3]) : 1;
	if (batches < 1)
		batches = 1;
	int p2c[2], c2p[2];
	if (pipe(p2c) || pipe(c2p)) {
		perror("pipe");
		return 1;
	}
	pid_t kid = fork();
	if (kid < 0) {
		perror("fork");
		return 1;
	}
	if (kid == 0) {
		pin(cb);
		run(1, batches, p2c[0], c2p[1]);
		_exit(0);
	}
	pin(ca);
	run(0, batches, c2p[0], p2c[1]);
	int st = 0;
	waitpid(kid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
