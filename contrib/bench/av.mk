# SPDX-License-Identifier: BSD-3-Clause
# fi_av benchmark (contrib/bench/av_bench.sh runs it).  Built against the
# system's Debian libfabric headers and library on purpose: the binary then
# imports only 1.17 symbol versions and runs unchanged on either library
# (the script swaps them with LD_LIBRARY_PATH).
noinst_PROGRAMS += contrib/bench/av_bench
contrib_bench_av_bench_SOURCES = contrib/bench/av_bench.c
contrib_bench_av_bench_CPPFLAGS = -I/usr/include
contrib_bench_av_bench_CFLAGS = -O2 -Wall
contrib_bench_av_bench_LDADD = -lfabric
EXTRA_DIST += contrib/bench/av_bench.sh
