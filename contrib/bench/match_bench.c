/* SPDX-License-Identifier: BSD-3-Clause */
/* Tag-matching benchmark, public API only, so the same binary runs on
 * Wireup and on Debian's libfabric (swap LD_LIBRARY_PATH).  One process,
 * two tcp RDM endpoints on 127.0.0.1, 8-byte tagged messages with distinct
 * tags:
 *   posted      the receiver posts N receives (tags 0..N-1), then the
 *               sender sends tags N-1..0: each arrival looks for its
 *               receive among those still posted;
 *   unexpected  the sender sends tags 0..N-1 and the receiver's progress
 *               queues them, then it posts receives for N-1..0: each post
 *               looks for its message among those still queued; timed
 *               from the first post to the last completion (messages the
 *               sender's window held back are sent in that time too).
 *
 *   match_bench -p PROV [-n N,N,...] [-r RUNS] [-t posted,unexpected] [-q QUEUE_SIZE]
 *
 * Prints, per test and N, the median over RUNS of the time per message
 *   RESULT <test> <N> <ns per message>
 * or SKIP <test> <N> <why> when the provider cannot hold N posted receives
 * or the exchange stalls.  Speed only; it checks no data. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "bench_time.h"

#define MSG 8
#define STALL_NS 5e9 /* no completion for this long: give up on this run */

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct side tx, rx;
static char *rbuf, sbuf[MSG];
static long sends_done, recvs_done;

static void die(const char *what, long r)
{
	fprintf(stderr, "match_bench: %s failed: %ld (%s)\n", what, r, fi_strerror((int)-r));
	exit(1);
}

static void open_side(struct side *s)
{
	struct fi_cq_attr ca;
	struct fi_av_attr aa;
	int r;

	memset(&ca, 0, sizeof ca);
	ca.format = FI_CQ_FORMAT_TAGGED;
	ca.size = 1 << 17;
	memset(&aa, 0, sizeof aa);
	aa.type = FI_AV_TABLE;
	if ((r = fi_endpoint(domain, info, &s->ep, NULL)))
		die("fi_endpoint", r);
	if ((r = fi_cq_open(domain, &ca, &s->cq, NULL)))
		die("fi_cq_open", r);
	if ((r = fi_av_open(domain, &aa, &s->av, NULL)))
		die("fi_av_open", r);
	if ((r = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV)))
		die("fi_ep_bind(cq)", r);
	if ((r = fi_ep_bind(s->ep, &s->av->fid, 0)))
		die("fi_ep_bind(av)", r);
	if ((r = fi_enable(s->ep)))
		die("fi_enable", r);
}

static void connect_sides(struct side *a, struct side *b)
{
	char name[256];
	size_t len = sizeof name;
	int r;

	if ((r = fi_getname(&b->ep->fid, name, &len)))
		die("fi_getname", r);
	if ((r = fi_av_insert(a->av, name, 1, &a->peer, 0, NULL)) != 1)
		die("fi_av_insert", r);
}

static void close_side(struct side *s)
{
	fi_close(&s->ep->fid);
	fi_close(&s->av->fid);
	fi_close(&s->cq->fid);
}

/* Drives both endpoints; counts completions.  Returns how many arrived. */
static long progress(void)
{
	struct fi_cq_tagged_entry e[64];
	struct fi_cq_err_entry err;
	long got = 0;
	ssize_t n;

	while ((n = fi_cq_read(tx.cq, e, 64)) > 0) {
		sends_done += n;
		got += n;
	}
	if (n == -FI_EAVAIL && fi_cq_readerr(tx.cq, &err, 0) > 0)
		die("send completion", -err.err);
	while ((n = fi_cq_read(rx.cq, e, 64)) > 0) {
		recvs_done += n;
		got += n;
	}
	if (n == -FI_EAVAIL && fi_cq_readerr(rx.cq, &err, 0) > 0)
		die("receive completion", -err.err);
	return got;
}

static int post_recv(long tag)
{
	ssize_t r;
	double last = now_ns();

	while ((r = fi_trecv(rx.ep, rbuf + (size_t)tag * MSG, MSG, NULL, rx.peer, (uint64_t)tag, 0, NULL)) ==
	       -FI_EAGAIN) {
		if (progress())
			last = now_ns();
		else if (now_ns() - last > STALL_NS)
			return -1;
	}
	if (r)
		die("fi_trecv", r);
	return 0;
}

static int send_one(long tag)
{
	ssize_t r;
	double last = now_ns();

	while ((r = fi_tsend(tx.ep, sbuf, MSG, NULL, tx.peer, (uint64_t)tag, NULL)) == -FI_EAGAIN) {
		if (progress())
			last = now_ns();
		else if (now_ns() - last > STALL_NS)
			return -1;
	}
	if (r)
		die("fi_tsend", r);
	return 0;
}

/* Waits for n sends and n receives; -1 on a stall. */
static int wait_all(long n)
{
	double last = now_ns();

	while (sends_done < n || recvs_done < n) {
		if (progress())
			last = now_ns();
		else if (now_ns() - last > STALL_NS)
			return -1;
	}
	return 0;
}

/* One run: ns per message, or a negative value on a stall. */
static double run_posted(long n)
{
	double t0, t1;

	sends_done = recvs_done = 0;
	for (long i = 0; i < n; i++)
		if (post_recv(i))
			return -1;
	t0 = now_ns();
	for (long i = n - 1; i >= 0; i--)
		if (send_one(i))
			return -1;
	if (wait_all(n))
		return -1;
	t1 = now_ns();
	return (t1 - t0) / n;
}

static double run_unexpected(long n)
{
	double quiet, t0;
	long i;

	sends_done = recvs_done = 0;
	for (i = 0; i < n; i++)
		if (send_one(i))
			break; /* the window is full: the rest follow the receives */
	/* Let the receiver read what it can: every message it reads now is
	 * unexpected.  Not timed. */
	quiet = now_ns();
	while (sends_done < i && now_ns() - quiet < STALL_NS)
		if (progress())
			quiet = now_ns();
	for (int k = 0; k < 1000; k++)
		progress();
	t0 = now_ns();
	for (long k = n - 1; k >= 0; k--)
		if (post_recv(k))
			return -1;
	for (; i < n; i++)
		if (send_one(i))
			return -1;
	if (wait_all(n))
		return -1;
	return (now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
	const char *prov = "tcp", *tests = "posted,unexpected", *sizes = "16,1024,65536";
	int runs = 5, c, r;
	struct fi_info *hints;
	size_t rx_limit, qsize = 0;

	while ((c = getopt(argc, argv, "p:n:r:t:q:")) != -1) {
		switch (c) {
		case 'p': prov = optarg; break;
		case 'n': sizes = optarg; break;
		case 'r': runs = atoi(optarg); break;
		case 't': tests = optarg; break;
		case 'q': qsize = strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: match_bench -p PROV [-n N,...] [-r RUNS] [-t posted,unexpected] [-q QUEUE_SIZE]\n");
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->fabric_attr->prov_name = strdup(prov);
	if ((r = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints, &info)))
		die("fi_getinfo", r);
	/* "tcp" also lists "tcp;ofi_rxm" first on Debian: take the exact name. */
	for (struct fi_info *i = info; i; i = i->next) {
		if (!strcmp(i->fabric_attr->prov_name, prov)) {
			struct fi_info *pick = fi_dupinfo(i);
			fi_freeinfo(info);
			info = pick;
			break;
		}
	}
	if (!info)
		die("fi_dupinfo", -FI_ENOMEM);
	printf("LIB %u.%u PROV %s\n", FI_MAJOR(fi_version()), FI_MINOR(fi_version()), info->fabric_attr->prov_name);
	/* Ask for room for the largest N; a provider that refuses keeps its own. */
	rx_limit = info->rx_attr->size;
	if ((r = fi_fabric(info->fabric_attr, &fabric, NULL)))
		die("fi_fabric", r);
	if ((r = fi_domain(fabric, info, &domain, NULL)))
		die("fi_domain", r);
	/* -q: queue sizes asked of fi_endpoint (Wireup honours larger ones;
	 * Debian's rxm takes FI_OFI_RXM_RX_SIZE / FI_OFI_RXM_TX_SIZE instead). */
	if (qsize) {
		info->rx_attr->size = qsize;
		info->tx_attr->size = qsize;
	}
	rx_limit = info->rx_attr->size;
	printf("RXSIZE %zu\n", rx_limit);
	open_side(&tx);
	open_side(&rx);
	connect_sides(&tx, &rx);
	connect_sides(&rx, &tx);
	memset(sbuf, 1, sizeof sbuf);
	rbuf = calloc(1 << 17, MSG);
	if (!rbuf)
		die("calloc", -FI_ENOMEM);

	/* Connect before timing anything. */
	if (post_recv(0) || send_one(0) || wait_all(1))
		die("warm-up", -FI_ETIMEDOUT);

	for (const char *t = tests; *t;) {
		size_t tl = strcspn(t, ",");
		int posted = !strncmp(t, "posted", tl) && tl == 6;
		for (const char *s = sizes; *s;) {
			long n = strtol(s, NULL, 10);
			double v[64];
			int k, ok = 1;
			if (n <= 0 || n > (1 << 17))
				break;
			if (posted && (size_t)n > rx_limit) {
				printf("SKIP %.*s %ld receive queue holds %zu\n", (int)tl, t, n, rx_limit);
				ok = 0;
			}
			for (k = 0; ok && k < runs && k < 64; k++) {
				v[k] = posted ? run_posted(n) : run_unexpected(n);
				if (v[k] < 0) {
					printf("SKIP %.*s %ld stalled\n", (int)tl, t, n);
					ok = 0;
				}
			}
			if (ok) {
				printf("RESULT %.*s %ld %.1f\n", (int)tl, t, n, median(v, k));
				fflush(stdout);
			} else {
				/* A stalled exchange leaves messages behind: stop here. */
				if (!posted || (size_t)n <= rx_limit)
					goto out;
			}
			s += strcspn(s, ",");
			if (*s)
				s++;
		}
		t += tl;
		if (*t)
			t++;
	}
out:
	close_side(&tx);
	close_side(&rx);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(rbuf);
	return 0;
}
