/* SPDX-License-Identifier: BSD-3-Clause */
/* What one copy of the shm provider's medium and large paths costs on one
 * CPU, best of many tries (a preempted try only loses, so the best holds
 * under load where ping-pong timings do not):
 *   memcpy into a shared mapping (a sender filling a bounce slot),
 *   memcpy out of it (a receiver emptying one),
 *   process_vm_readv / process_vm_writev of the same bytes (single copy;
 *   on this process itself: the kernel's page pinning and copy, without a
 *   second CPU).
 *   shm_copy_cost [SIZE...]   (default 16384 32768 65536 1048576)
 * Prints "shm_copy_cost SIZE memcpy_in memcpy_out cma_read cma_write" in
 * usec.  Both processes of a real transfer run on other CPUs: what moves
 * between caches is not in these figures. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_time.h"

enum { tries = 2000 };

static double best_of(int what, char *dst, char *src, size_t n)
{
	double best = 1e18;
	pid_t me = getpid();
	for (int i = 0; i < tries; i++) {
		struct iovec l = {dst, n}, r = {src, n};
		double t = now_ns();
		if (what == 0)
			memcpy(dst, src, n);
		else if (what == 1)
			process_vm_readv(me, &l, 1, &r, 1, 0);
		else
			process_vm_writev(me, &r, 1, &l, 1, 0);
		t = now_ns() - t;
		if (t < best)
			best = t;
	}
	return best / 1e3;
}

int main(int argc, char **argv)
{
	static const size_t def[] = {16384, 32768, 65536, 1048576};
	int n = argc > 1 ? argc - 1 : 4;
	for (int k = 0; k < n; k++) {
		size_t sz = argc > 1 ? strtoull(argv[k + 1], NULL, 0) : def[k];
		if (!sz || sz > (1u << 30))
			continue;
		char *user = malloc(sz), *other = malloc(sz);
		char *shm = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (!user || !other || shm == MAP_FAILED) {
			fprintf(stderr, "shm_copy_cost: no memory for %zu bytes\n", sz);
			return 1;
		}
		memset(user, 1, sz);
		memset(other, 2, sz);
		memset(shm, 3, sz);
		double in = best_of(0, shm, user, sz), out = best_of(0, user, shm, sz);
		double rd = best_of(1, user, other, sz), wr = best_of(2, other, user, sz);
		printf("shm_copy_cost %zu %.3f %.3f %.3f %.3f\n", sz, in, out, rd, wr);
		munmap(shm, sz);
		free(user);
		free(other);
	}
	return 0;
}
