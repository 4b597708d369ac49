/* SPDX-License-Identifier: BSD-3-Clause */
/* The floors for the shm provider's benchmark (issue 14), no fabric
 * library: what two processes on this machine can do at best.
 *
 *   shm_floor pingpong [RUNS]   -> "shm_floor pingpong 8 USEC_ONE_WAY"
 *   shm_floor cma SIZE [RUNS]   -> "shm_floor cma_read SIZE USEC_PER_COPY MB/s"
 *   shm_floor all [RUNS]        -> the ping-pong, then cma at 8 B, 4 KiB,
 *                                  64 KiB and 1 MiB
 *
 * Ping-pong: one cache line in a MAP_SHARED mapping, two processes (this
 * one and a forked child) take turns writing a counter into it and
 * spinning until the other has answered; one-way latency is half the
 * round trip, and 8 bytes of payload fit in the line (so it is also the
 * floor of an 8-byte message).
 *
 * cma_read: the child holds SIZE bytes of its own memory; this process
 * copies them into its buffer with process_vm_readv, ITERS times back to
 * back.  That is the single copy the provider's large messages take.
 *
 * Each figure is the median of RUNS runs (default 5).  Spinning needs two
 * idle CPUs: on a busy machine the ping-pong measures the scheduler.  The
 * two processes run on two CPUs of their own, as pin.sh places the other
 * columns' two sides (BENCH_CPUS=a,b; BENCH_PIN=0: unpinned). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_time.h"

#define MAX_RUNS 99

/* The CPUs of the two sides (-1: unpinned), chosen once in main. */
static int cpu_side[2] = {-1, -1};

static void choose_cpus(void)
{
	const char *pin = getenv("BENCH_PIN"), *set = getenv("BENCH_CPUS");
	if (pin && !strcmp(pin, "0"))
		return;
	int a, b;
	if (set && sscanf(set, "%d,%d", &a, &b) == 2) {
		cpu_side[0] = a;
		cpu_side[1] = b;
		return;
	}
	cpu_set_t m;
	if (sched_getaffinity(0, sizeof m, &m))
		return;
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &m))
			cpu_side[k++] = c;
	if (k < 2)
		cpu_side[0] = cpu_side[1] = -1;
}

/* Puts this process on side's CPU; the measurement still runs if that
 * fails, as it would unpinned. */
static void pin(int side)
{
	if (cpu_side[side] < 0)
		return;
	cpu_set_t m;
	CPU_ZERO(&m);
	CPU_SET(cpu_side[side], &m);
	(void)sched_setaffinity(0, sizeof m, &m);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

struct line {
	_Alignas(64) _Atomic uint64_t turn;
	uint64_t payload;
};

/* One run: the one-way latency in microseconds. */
static double pingpong_run(long iters)
{
	struct line *l = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED)
		die("mmap");
	atomic_store(&l->turn, 0);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		alarm(60);
		pin(1);
		for (uint64_t i = 1; i <= (uint64_t)iters * 2; i += 2) {
			while (atomic_load_explicit(&l->turn, memory_order_acquire) != i)
				;
			l->payload = i;
			atomic_store_explicit(&l->turn, i + 1, memory_order_release);
		}
		_exit(0);
	}
	pin(0);
	/* Warm up both sides before the clock starts. */
	long warm = iters / 10;
	double t0 = 0;
	for (uint64_t i = 1; i <= (uint64_t)iters * 2; i += 2) {
		if ((long)(i / 2) == warm)
			t0 = now_ns();
		l->payload = i;
		atomic_store_explicit(&l->turn, i, memory_order_release);
		while (atomic_load_explicit(&l->turn, memory_order_acquire) != i + 1)
			;
	}
	double t = now_ns() - t0;
	waitpid(pid, NULL, 0);
	munmap(l, 4096);
	return t / 1e3 / (2.0 * (double)(iters - warm));
}

/* One run: microseconds per copy of size bytes. */
static double cma_run(size_t size, long iters)
{
	char *remote = malloc(size), *local = malloc(size);
	int ready[2];
	if (!remote || !local || pipe(ready))
		die("setup");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		alarm(60);
		pin(1);
		memset(remote, 0x5a, size); /* its own pages, not ours shared on write */
		char b = 1;
		if (write(ready[1], &b, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	pin(0);
	char b;
	if (read(ready[0], &b, 1) != 1)
		die("child");
	memset(local, 0, size);
	struct iovec lv = {local, size}, rv = {remote, size};
	double t0 = 0;
	long warm = iters / 10 + 1;
	for (long i = 0; i < iters + warm; i++) {
		if (i == warm)
			t0 = now_ns();
		ssize_t n = process_vm_readv(pid, &lv, 1, &rv, 1, 0);
		if (n != (ssize_t)size) {
			fprintf(stderr, "shm_floor: process_vm_readv: %s\n", n < 0 ? strerror(errno) : "short copy");
			kill(pid, SIGKILL);
			exit(77);
		}
	}
	double t = now_ns() - t0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (local[size - 1] != 0x5a)
		die("cma copied the wrong bytes");
	close(ready[0]);
	close(ready[1]);
	free(remote);
	free(local);
	return t / 1e3 / (double)iters;
}

static void pingpong(int runs)
{
	double v[MAX_RUNS];
	for (int r = 0; r < runs; r++)
		v[r] = pingpong_run(200000);
	printf("shm_floor pingpong 8 %.3f\n", median(v, runs));
}

static void cma(size_t size, int runs)
{
	/* About 256 MiB a run, between 300 and 200,000 calls. */
	long iters = (long)((256u << 20) / size);
	if (iters > 200000)
		iters = 200000;
	if (iters < 300)
		iters = 300;
	double v[MAX_RUNS];
	for (int r = 0; r < runs; r++)
		v[r] = cma_run(size, iters);
	double us = median(v, runs);
	printf("shm_floor cma_read %zu %.3f %.1f\n", size, us, (double)size / us);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: shm_floor pingpong|all [RUNS] | cma SIZE [RUNS]\n");
		return 2;
	}
	int cma_one = !strcmp(argv[1], "cma");
	int runs = argc > 2 + cma_one ? atoi(argv[2 + cma_one]) : 5;
	if (runs < 1 || runs > MAX_RUNS)
		runs = 5;
	choose_cpus();
	if (!strcmp(argv[1], "pingpong")) {
		pingpong(runs);
	} else if (cma_one) {
		if (argc < 3 || atol(argv[2]) <= 0)
			return 2;
		cma((size_t)atol(argv[2]), runs);
	} else if (!strcmp(argv[1], "all")) {
		pingpong(runs);
		size_t sizes[] = {8, 4096, 65536, 1048576};
		for (int i = 0; i < 4; i++)
			cma(sizes[i], runs);
	} else {
		return 2;
	}
	return 0;
}
