# SPDX-License-Identifier: BSD-3-Clause
# wireup provider (issue 15): what the multiplexer adds to shm per 8-byte
# message and per empty CQ read, both providers in one process
# (contrib/bench/wireup_cost.c, public API only).
noinst_PROGRAMS += contrib/bench/wireup_cost
contrib_bench_wireup_cost_SOURCES = contrib/bench/wireup_cost.c contrib/bench/bench_time.h
contrib_bench_wireup_cost_LDADD = src/libfabric.la

bench-wireup: contrib/bench/wireup_cost
	contrib/bench/wireup_cost

# Open MPI on wireup vs Debian's tcp;ofi_rxm vs ob1+vader, and fi_pingpong
# through shm and through wireup (contrib/bench/wireup_bench.sh).
EXTRA_DIST += contrib/bench/wireup_bench.sh
bench-wireup-mpi:
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/bench/wireup_bench.sh
