# SPDX-License-Identifier: BSD-3-Clause
# Matching benchmark (issue 13): match_bench through the public API (the
# script runs one binary on our library and on Debian's), match_micro on
# the engine alone.  contrib/bench/match_bench.sh compares them.
noinst_PROGRAMS += contrib/bench/match_bench contrib/bench/match_micro
contrib_bench_match_bench_SOURCES = contrib/bench/match_bench.c contrib/bench/bench_time.h
contrib_bench_match_bench_LDADD = src/libfabric.la
contrib_bench_match_micro_SOURCES = contrib/bench/match_micro.cpp
contrib_bench_match_micro_LDADD = src/libwireup.la
EXTRA_DIST += contrib/bench/match_bench.sh

bench-match: contrib/bench/match_micro
	WU_LIBDIR=$(abs_top_builddir)/src/.libs WU_BUILDDIR=$(abs_top_builddir) \
		$(SHELL) $(top_srcdir)/contrib/bench/match_bench.sh
