# SPDX-License-Identifier: BSD-3-Clause
# fi_getinfo benchmark (issue 3): one plain-C binary run on our library and
# on Debian's by contrib/bench/getinfo_bench.sh (LD_LIBRARY_PATH decides).
noinst_PROGRAMS += contrib/bench/getinfo_bench
contrib_bench_getinfo_bench_SOURCES = contrib/bench/getinfo_bench.c
contrib_bench_getinfo_bench_LDADD = src/libfabric.la
EXTRA_DIST += contrib/bench/getinfo_bench.sh
