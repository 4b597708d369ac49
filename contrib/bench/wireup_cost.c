/* SPDX-License-Identifier: BSD-3-Clause */
/* What the wireup provider adds to shm on the data path (issue 15: at most
 * 30 ns for 8 B), in one process so that the two are compared on the same
 * CPU with no scheduling between them: two RDM endpoints of provider P on
 * this host; per message the receiver posts fi_trecv, the sender
 * fi_tinject's 8 bytes, and the receive CQ is read until the completion
 * arrives.  Also the cost of an fi_cq_read that finds nothing (the idle
 * progress a polling application pays on every call).
 *
 *   wireup_cost [N] -> for shm and wireup:
 *     "P msg_ns <per message> idle_read_ns <per empty fi_cq_read>"
 * then "wireup_minus_shm msg_ns D idle_read_ns D" (best of 7 interleaved rounds each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "bench_time.h"

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
};

struct env {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct side a, b;
	fi_addr_t to_b;
};

#define CHECK(x)                                                                             \
	do {                                                                                 \
		int r_ = (int)(x);                                                           \
		if (r_) {                                                                    \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, fi_strerror(-r_)); \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

/* Both endpoints on one CQ: each read progresses both (a's side answers
 * b's first handshake). */
static void open_side(struct env *e, struct side *s, struct fid_cq *cq)
{
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	s->cq = cq;
	CHECK(fi_av_open(e->dom, &aa, &s->av, NULL));
	CHECK(fi_endpoint(e->dom, e->info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
}

static void open_env(struct env *e, const char *prov)
{
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(prov);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &e->info));
	fi_freeinfo(h);
	CHECK(fi_fabric(e->info->fabric_attr, &e->fab, NULL));
	CHECK(fi_domain(e->fab, e->info, &e->dom, NULL));
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
	struct fid_cq *cq;
	CHECK(fi_cq_open(e->dom, &ca, &cq, NULL));
	open_side(e, &e->a, cq);
	open_side(e, &e->b, cq);
	char name[64];
	size_t len = sizeof name;
	CHECK(fi_getname(&e->b.ep->fid, name, &len));
	if (fi_av_insert(e->a.av, name, 1, &e->to_b, 0, NULL) != 1) {
		fprintf(stderr, "fi_av_insert failed\n");
		exit(1);
	}
}

static void close_env(struct env *e)
{
	struct side *s[2] = {&e->a, &e->b};
	for (int k = 0; k < 2; k++) {
		fi_close(&s[k]->ep->fid);
		fi_close(&s[k]->av->fid);
	}
	fi_close(&e->a.cq->fid);
	fi_close(&e->dom->fid);
	fi_close(&e->fab->fid);
	fi_freeinfo(e->info);
}

/* ns per message over n messages. */
static double msg_round(struct env *e, long n)
{
	unsigned long long x = 1, y = 0;
	struct fi_cq_tagged_entry c;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		CHECK(fi_trecv(e->b.ep, &y, sizeof y, NULL, FI_ADDR_UNSPEC, 1, 0, &y));
		ssize_t r;
		while ((r = fi_tinject(e->a.ep, &x, sizeof x, e->to_b, 1)) == -FI_EAGAIN)
			fi_cq_read(e->a.cq, &c, 0);
		CHECK(r);
		while ((r = fi_cq_read(e->b.cq, &c, 1)) == -FI_EAGAIN)
			;
		if (r != 1) {
			fprintf(stderr, "fi_cq_read: %zd\n", r);
			exit(1);
		}
	}
	return (now_ns() - t0) / (double)n;
}

static double idle_round(struct env *e, long n)
{
	struct fi_cq_tagged_entry c;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (fi_cq_read(e->b.cq, &c, 1) != -FI_EAGAIN)
			exit(1);
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	const char *provs[2] = {"shm", "wireup"};
	double msg[2], idle[2];
	struct env e[2];
	/* Both open at once and their rounds interleaved, so that a change in
	 * the machine's load hits both alike. */
	for (int p = 0; p < 2; p++) {
		memset(&e[p], 0, sizeof e[p]);
		open_env(&e[p], provs[p]);
		msg_round(&e[p], n / 10); /* warm up: peers attached, caches hot */
		msg[p] = idle[p] = 1e18;
	}
	for (int k = 0; k < 7; k++)
		for (int p = 0; p < 2; p++) {
			double m = msg_round(&e[p], n), i = idle_round(&e[p], n);
			msg[p] = m < msg[p] ? m : msg[p];
			idle[p] = i < idle[p] ? i : idle[p];
		}
	for (int p = 0; p < 2; p++) {
		printf("%s msg_ns %.1f idle_read_ns %.1f\n", provs[p], msg[p], idle[p]);
		close_env(&e[p]);
	}
	printf("wireup_minus_shm msg_ns %.1f idle_read_ns %.1f\n", msg[1] - msg[0], idle[1] - idle[0]);
	return 0;
}
