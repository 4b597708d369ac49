# SPDX-License-Identifier: BSD-3-Clause
# EQ benchmark (issue 4): same binary on our library and on Debian's.
noinst_PROGRAMS += contrib/bench/eq_bench
contrib_bench_eq_bench_SOURCES = contrib/bench/eq_bench.c contrib/bench/bench_time.h
contrib_bench_eq_bench_LDADD = src/libfabric.la -lpthread
EXTRA_DIST += contrib/bench/eq_bench.sh
