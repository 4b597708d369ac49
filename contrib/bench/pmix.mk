# SPDX-License-Identifier: BSD-3-Clause
# PMIx wire-up benchmark (issue 7): contrib/bench/pmix_bench.sh runs it under
# mpirun for every mode and N, and once as a simulated 1M-rank job.
if WU_HAVE_PMIX
noinst_PROGRAMS += contrib/bench/pmix_bench
contrib_bench_pmix_bench_SOURCES = contrib/bench/pmix_bench.cpp src/pmix_glue/fake_client.cpp src/pmix_glue/fake_client.h
contrib_bench_pmix_bench_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS) $(UCX_CPPFLAGS)
contrib_bench_pmix_bench_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS) $(UCX_LDFLAGS) $(UCX_LIBS)
endif
EXTRA_DIST += contrib/bench/pmix_bench.sh
