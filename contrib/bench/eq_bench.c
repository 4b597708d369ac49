/* SPDX-License-Identifier: BSD-3-Clause */
/* Event queue benchmark, public API only, so the same binary runs on
 * Wireup and on Debian's libfabric (swap LD_LIBRARY_PATH).
 *
 *   eq_bench -p PROV [-n ITERS] [-r RUNS] [-t TESTS]
 *
 * TESTS is a comma list of: write_read (fi_eq_write + fi_eq_read pairs of
 * struct fi_eq_entry, FI_WAIT_NONE and FI_WAIT_UNSPEC), pingpong (two
 * threads, two EQs, fi_eq_sread; FI_WAIT_UNSPEC and FI_WAIT_FD, the latter
 * once more after FI_GETWAIT handed the fd out), floor (the same ping-pong
 * over a bare futex and over a mutex+condvar), memory (heap bytes per queued
 * event).  Every result is the median of RUNS runs and is printed as
 *   RESULT <metric> <value> <unit>
 * for contrib/bench/eq_bench.sh to compare. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "bench_time.h"

static struct fid_fabric *fabric;
static long iters = 500000;
static int runs = 9;

static void die(const char *what, long r)
{
	fprintf(stderr, "eq_bench: %s failed: %ld (%s)\n", what, r, fi_strerror((int)-r));
	exit(1);
}

static struct fid_eq *open_eq(enum fi_wait_obj w, size_t size)
{
	struct fi_eq_attr a;
	struct fid_eq *eq;
	int r;

	memset(&a, 0, sizeof a);
	a.size = size;
	a.flags = FI_WRITE;
	a.wait_obj = w;
	r = fi_eq_open(fabric, &a, &eq, NULL);
	if (r)
		die("fi_eq_open", r);
	return eq;
}

/* ---- single thread: write + read ---- */

/* Timed in slices of write_slice pairs, and the median slice kept: this
 * 2-vCPU machine loses whole 4 ms scheduler ticks to its neighbours now
 * and then, which would otherwise land in a few runs as +8 ns per pair. */
enum { write_slice = 10000, max_slices = 4096 };

static double write_read_once(enum fi_wait_obj w, long n)
{
	struct fid_eq *eq = open_eq(w, 1024);
	struct fi_eq_entry in = {NULL, NULL, 0}, out;
	static double slice_ns[max_slices];
	int nslices = 0;
	uint32_t ev;
	long i, done = 0;

	for (i = 0; i < n / 10 + 1000; i++) { /* warm up */
		if (fi_eq_write(eq, FI_NOTIFY, &in, sizeof in, 0) != sizeof in)
			die("fi_eq_write", -1);
		if (fi_eq_read(eq, &ev, &out, sizeof out, 0) != sizeof out)
			die("fi_eq_read", -1);
	}
	while (done < n && nslices < max_slices) {
		long m = n - done < write_slice ? n - done : write_slice;
		double t0 = now_ns();
		for (i = done; i < done + m; i++) {
			in.data = (uint64_t)i;
			fi_eq_write(eq, FI_NOTIFY, &in, sizeof in, 0);
			fi_eq_read(eq, &ev, &out, sizeof out, 0);
		}
		slice_ns[nslices++] = (now_ns() - t0) / m;
		done += m;
	}
	if (out.data != (uint64_t)(done - 1))
		die("write/read order check", -1);
	fi_close(&eq->fid);
	return median(slice_ns, nslices);
}

static void bench_write_read(void)
{
	double v[64];
	int r;

	for (r = 0; r < runs; r++)
		v[r] = write_read_once(FI_WAIT_NONE, iters);
	printf("RESULT write_read_none %.1f ns\n", median(v, runs));
	for (r = 0; r < runs; r++)
		v[r] = write_read_once(FI_WAIT_UNSPEC, iters);
	printf("RESULT write_read_unspec %.1f ns\n", median(v, runs));
}

/* ---- two threads ping-ponging ---- */

struct pp {
	struct fid_eq *to_peer, *from_peer;
	long n;
	void (*ping)(struct pp *);
	void (*pong)(struct pp *);
	/* floor variants */
	_Atomic uint32_t fa, fb;
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;
};

static void eq_send(struct fid_eq *eq)
{
	struct fi_eq_entry e = {NULL, NULL, 1};
	ssize_t r = fi_eq_write(eq, FI_NOTIFY, &e, sizeof e, 0);
	if (r != sizeof e)
		die("fi_eq_write", r);
}

static void eq_recv(struct fid_eq *eq)
{
	struct fi_eq_entry e;
	uint32_t ev;
	ssize_t r;

	do
		r = fi_eq_sread(eq, &ev, &e, sizeof e, -1, 0);
	while (r == -FI_EAGAIN);
	if (r != sizeof e)
		die("fi_eq_sread", r);
}

static void eq_ping(struct pp *p)
{
	eq_send(p->to_peer);
	eq_recv(p->from_peer);
}

static void eq_pong(struct pp *p)
{
	eq_recv(p->to_peer);
	eq_send(p->from_peer);
}

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void fx_ping(struct pp *p)
{
	atomic_store(&p->fa, 1);
	futex_wake(&p->fa);
	while (atomic_load(&p->fb) == 0)
		futex_wait(&p->fb, 0);
	atomic_store(&p->fb, 0);
}

static void fx_pong(struct pp *p)
{
	while (atomic_load(&p->fa) == 0)
		futex_wait(&p->fa, 0);
	atomic_store(&p->fa, 0);
	atomic_store(&p->fb, 1);
	futex_wake(&p->fb);
}

static void cv_ping(struct pp *p)
{
	pthread_mutex_lock(&p->m);
	p->turn = 1;
	pthread_cond_broadcast(&p->c);
	while (p->turn != 0)
		pthread_cond_wait(&p->c, &p->m);
	pthread_mutex_unlock(&p->m);
}

static void cv_pong(struct pp *p)
{
	pthread_mutex_lock(&p->m);
	while (p->turn != 1)
		pthread_cond_wait(&p->c, &p->m);
	p->turn = 0;
	pthread_cond_broadcast(&p->c);
	pthread_mutex_unlock(&p->m);
}

static void *pong_thread(void *arg)
{
	struct pp *p = arg;
	long i;

	for (i = 0; i < p->n; i++)
		p->pong(p);
	return NULL;
}

/* Median round trip in microseconds of one run. */
static double pingpong_once(struct pp *p, long n)
{
	double *rt = malloc(sizeof(double) * n), med;
	pthread_t t;
	long i;

	p->n = n + n / 10;
	pthread_create(&t, NULL, pong_thread, p);
	for (i = 0; i < n / 10; i++)
		p->ping(p);
	for (i = 0; i < n; i++) {
		double t0 = now_ns();
		p->ping(p);
		rt[i] = now_ns() - t0;
	}
	pthread_join(t, NULL);
	med = median(rt, (int)n) / 1000.0;
	free(rt);
	return med;
}

static double eq_pingpong(enum fi_wait_obj w, int getwait, long n)
{
	double v[64];
	int r;

	for (r = 0; r < runs; r++) {
		struct pp p;
		memset(&p, 0, sizeof p);
		p.to_peer = open_eq(w, 64);
		p.from_peer = open_eq(w, 64);
		if (getwait) {
			int fd;
			fi_control(&p.to_peer->fid, FI_GETWAIT, &fd);
			fi_control(&p.from_peer->fid, FI_GETWAIT, &fd);
		}
		p.ping = eq_ping;
		p.pong = eq_pong;
		v[r] = pingpong_once(&p, n);
		fi_close(&p.to_peer->fid);
		fi_close(&p.from_peer->fid);
	}
	return median(v, runs);
}

static void bench_pingpong(long n)
{
	printf("RESULT pingpong_unspec %.2f us\n", eq_pingpong(FI_WAIT_UNSPEC, 0, n));
	printf("RESULT pingpong_fd %.2f us\n", eq_pingpong(FI_WAIT_FD, 0, n));
	printf("RESULT pingpong_fd_exposed %.2f us\n", eq_pingpong(FI_WAIT_FD, 1, n));
}

static void bench_floor(long n)
{
	double v[64];
	int r;

	for (r = 0; r < runs; r++) {
		struct pp p;
		memset(&p, 0, sizeof p);
		p.ping = fx_ping;
		p.pong = fx_pong;
		v[r] = pingpong_once(&p, n);
	}
	printf("RESULT floor_futex %.2f us\n", median(v, runs));
	for (r = 0; r < runs; r++) {
		struct pp p;
		memset(&p, 0, sizeof p);
		pthread_mutex_init(&p.m, NULL);
		pthread_cond_init(&p.c, NULL);
		p.ping = cv_ping;
		p.pong = cv_pong;
		v[r] = pingpong_once(&p, n);
		pthread_cond_destroy(&p.c);
		pthread_mutex_destroy(&p.m);
	}
	printf("RESULT floor_condvar %.2f us\n", median(v, runs));
}

/* ---- memory ---- */

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static void bench_memory(void)
{
	const long n = 100000;
	struct fi_eq_entry e = {NULL, NULL, 0};
	struct fid_eq *eq;
	size_t before, after;
	long i;

	before = heap_in_use();
	eq = open_eq(FI_WAIT_NONE, (size_t)n);
	for (i = 0; i < n; i++)
		if (fi_eq_write(eq, FI_NOTIFY, &e, sizeof e, 0) != sizeof e)
			die("fi_eq_write (memory)", -1);
	after = heap_in_use();
	printf("RESULT memory_per_event %.1f bytes\n", (double)(after - before) / n);
	fi_close(&eq->fid);
}

static int open_fabric(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info, *i;
	int r;

	hints->fabric_attr->prov_name = strdup(prov);
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (r)
		return r;
	for (i = info; i; i = i->next)
		if (i->fabric_attr->prov_name && !strcmp(i->fabric_attr->prov_name, prov))
			break;
	if (!i)
		i = info;
	r = fi_fabric(i->fabric_attr, &fabric, NULL);
	fi_freeinfo(info);
	return r;
}

static int wants(const char *tests, const char *t)
{
	const char *p = strstr(tests, t);
	size_t l = strlen(t);
	return p && (p == tests || p[-1] == ',') && (p[l] == 0 || p[l] == ',');
}

int main(int argc, char **argv)
{
	const char *prov = "tcp", *tests = "write_read,pingpong,floor,memory";
	long pp_iters = 20000;
	int opt, r;

	while ((opt = getopt(argc, argv, "p:n:r:t:P:")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'n': iters = atol(optarg); break;
		case 'P': pp_iters = atol(optarg); break;
		case 'r': runs = atoi(optarg); break;
		case 't': tests = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-p prov] [-n iters] [-P pingpong iters] [-r runs] [-t tests]\n",
				argv[0]);
			return 2;
		}
	}
	if (runs < 1 || runs > 64 || iters < 1 || pp_iters < 10) {
		fprintf(stderr, "eq_bench: runs must be 1..64, iters >= 1, pingpong iters >= 10\n");
		return 2;
	}
	printf("LIB %u.%u PROV %s\n", FI_MAJOR(fi_version()), FI_MINOR(fi_version()), prov);
	if (wants(tests, "floor"))
		bench_floor(pp_iters);
	if (wants(tests, "write_read") || wants(tests, "pingpong") || wants(tests, "memory")) {
		r = open_fabric(prov);
		if (r) {
			printf("SKIP no fabric for provider %s: %s\n", prov, fi_strerror(-r));
			return 0;
		}
		{
			struct fi_eq_attr a;
			struct fid_eq *eq;
			memset(&a, 0, sizeof a);
			r = fi_eq_open(fabric, &a, &eq, NULL);
			if (r) {
				printf("SKIP fi_eq_open on provider %s: %s\n", prov, fi_strerror(-r));
				fi_close(&fabric->fid);
				return 0;
			}
			fi_close(&eq->fid);
		}
	}
	if (wants(tests, "write_read"))
		bench_write_read();
	if (wants(tests, "pingpong"))
		bench_pingpong(pp_iters);
	if (wants(tests, "memory"))
		bench_memory();
	fflush(stdout);
	if (fabric)
		fi_close(&fabric->fid);
	return 0;
}
