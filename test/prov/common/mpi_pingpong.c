/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI ping-pong between ranks 0 and 1 (others idle), then an
 * allreduce over all ranks: the client test/prov/tcp/ompi_mtl.sh runs under
 * Open MPI's OFI MTL on our library.
 *   mpi_pingpong [BYTES [ITERS]] -> "mpi_pingpong N bytes: U us one-way, B MB/s, allreduce S"
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t n = argc > 1 ? strtoul(argv[1], 0, 0) : 8;
	int iters = argc > 2 ? atoi(argv[2]) : 1000;
	char *buf = malloc(n ? n : 1);
	memset(buf, rank, n);
	int peer = rank ^ 1;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(buf, (int)n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, (int)n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
		}
	}
	double t = MPI_Wtime() - t0;
	long sum = 0, all = 0;
	sum = rank + 1;
	MPI_Allreduce(&sum, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_pingpong %zu bytes: %.2f us one-way, %.1f MB/s, allreduce %ld\n", n, t / iters / 2 * 1e6,
		       n / (t / iters / 2) / 1e6, all);
	MPI_Finalize();
	return 0;
}
