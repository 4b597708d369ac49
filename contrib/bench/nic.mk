# SPDX-License-Identifier: BSD-3-Clause
# NIC lookup benchmark (contrib/bench/nic_bench.sh runs it): the warm-lookup
# bound that used to be a timed unit test.
noinst_PROGRAMS += contrib/bench/nic_bench
contrib_bench_nic_bench_SOURCES = contrib/bench/nic_bench.cpp
contrib_bench_nic_bench_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CPPFLAGS)
contrib_bench_nic_bench_LDADD = src/libwireup.la
EXTRA_DIST += contrib/bench/nic_bench.sh
