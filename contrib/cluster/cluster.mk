# SPDX-License-Identifier: BSD-3-Clause
# A cluster on one machine (issue 30): contrib/cluster/bench.sh runs
# contrib/cluster/cluster.sh at every size and prints the tables of
# docs/cluster.md (WU_CLUSTER_SIZES, WU_CLUSTER_LAUNCHERS choose).
# shm_reap: one shm endpoint, which sweeps the regions killed ranks left
# (cluster.sh runs it after a job, WU_CLUSTER_SHM_REAP).
noinst_PROGRAMS += contrib/cluster/shm_reap
contrib_cluster_shm_reap_SOURCES = contrib/cluster/shm_reap.c
contrib_cluster_shm_reap_LDADD = src/libfabric.la
EXTRA_DIST += contrib/cluster/cluster.sh contrib/cluster/bench.sh contrib/cluster/cluster_mpi.c \
	contrib/cluster/proc_stats.h docs/cluster.md
bench-cluster: contrib/wireup_pingpong contrib/cluster/shm_reap
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/cluster/bench.sh
# Instructions of MPI_Init per rank, OFI MTL on this library and on
# Debian's against ob1, and the part inside libfabric (init_icount.sh).
EXTRA_DIST += contrib/cluster/init_icount.sh contrib/cluster/callgrind_into.py \
	contrib/cluster/dlopen_cost.c
bench-init-icount: src/libfabric.la
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/cluster/init_icount.sh
