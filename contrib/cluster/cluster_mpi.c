/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI program of the cluster runs (contrib/cluster/cluster.sh builds it
 * with mpicc): MPI_Init timed, MPI_Alltoall rounds with every byte checked,
 * then per rank one line
 *   cluster_mpi: rank R/N host H pid P init_ms T init_cpu_ms U rss_kb K tcp C dup D rounds X OK|FAILED
 * (init_cpu_ms: CPU time, user + system of every thread, MPI_Init took: with
 * more ranks than cores the wall time is mostly the others' CPU)
 * (tcp: established connections this rank holds, dup: those to an address
 * another one already goes to).  Rank 0 ends with "cluster_mpi: PASS N ranks".
 *   cluster_mpi [SECONDS]   repeat the all-to-all for SECONDS (the fault
 *                           mode kills a node meanwhile); default 3 rounds.
 * Errors return (MPI_ERRORS_RETURN): a failed call is printed as
 * "cluster_mpi: rank R error ..." and the rank exits 3, so a peer's death
 * shows as an error on every survivor unless the launcher aborts it first. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "proc_stats.h"

static int me = -1;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void check(int rc, const char *what)
{
	if (rc == MPI_SUCCESS)
		return;
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, s, &len);
	printf("cluster_mpi: rank %d error in %s: %s\n", me, what, s);
	fflush(stdout);
	_exit(3);
}

static unsigned char pat(int from, int to, int round, size_t k)
{
	return (unsigned char)(k * 131 + from * 29 + to * 17 + round * 53 + 1);
}

int main(int argc, char **argv)
{
	double t0 = now_s(), c0 = cpu_s();
	MPI_Init(&argc, &argv);
	double init_ms = (now_s() - t0) * 1e3, init_cpu_ms = (cpu_s() - c0) * 1e3;
	int np;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	char host[64] = "?";
	gethostname(host, sizeof host);
	printf("cluster_mpi: rank %d/%d started on %s pid %d\n", me, np, host, (int)getpid());
	fflush(stdout);

	const size_t n = 256; /* bytes per peer and round */
	unsigned char *sb = malloc(n * np), *rb = malloc(n * np);
	long bad = 0;
	int rounds = 0;
	double end = now_s() + seconds;
	do {
		for (int p = 0; p < np; p++)
			for (size_t k = 0; k < n; k++)
				sb[p * n + k] = pat(me, p, rounds, k);
		memset(rb, 0, n * np);
		check(MPI_Alltoall(sb, (int)n, MPI_BYTE, rb, (int)n, MPI_BYTE, MPI_COMM_WORLD),
		      "MPI_Alltoall");
		for (int p = 0; p < np; p++)
			for (size_t k = 0; k < n; k++)
				if (rb[p * n + k] != pat(p, me, rounds, k)) {
					if (!bad)
						printf("cluster_mpi: rank %d: byte %zu from rank %d round %d wrong\n",
						       me, k, p, rounds);
					bad++;
				}
		rounds++;
		/* Every rank must take the same decision to go on: rank 0's. */
		int more = seconds > 0 ? now_s() < end : rounds < 3;
		check(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
		if (!more)
			break;
	} while (1);
	long all = 0;
	check(MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
	unsigned conns, dups;
	wu_tcp_conns(&conns, &dups);
	printf("cluster_mpi: rank %d/%d host %s pid %d init_ms %.1f init_cpu_ms %.1f rss_kb %ld tcp %u dup %u rounds %d %s\n",
	       me, np, host, (int)getpid(), init_ms, init_cpu_ms, wu_peak_rss_kb(), conns, dups, rounds,
	       bad ? "FAILED" : "OK");
	fflush(stdout);
	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	if (me == 0 && all == 0)
		printf("cluster_mpi: PASS %d ranks\n", np);
	free(sb);
	free(rb);
	MPI_Finalize();
	return all ? 1 : 0;
}
