# SPDX-License-Identifier: BSD-3-Clause
# Instructions per 8-byte message on shm and wireup under callgrind
# (issue 14): contrib/bench/shm_icount.c, counted by shm_icount.sh.
noinst_PROGRAMS += contrib/bench/shm_icount
contrib_bench_shm_icount_SOURCES = contrib/bench/shm_icount.c
contrib_bench_shm_icount_LDADD = src/libfabric.la
EXTRA_DIST += contrib/bench/shm_icount.sh

bench-shm-icount: contrib/bench/shm_icount
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/bench/shm_icount.sh
