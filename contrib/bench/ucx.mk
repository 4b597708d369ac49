# SPDX-License-Identifier: BSD-3-Clause
# ucx provider benchmark (issue 16): contrib/bench/ucx_bench.sh runs Debian's
# fi_pingpong -p ucx on our library against ucx_perftest tag_lat/tag_bw, for
# UCX_TLS=tcp and UCX_TLS=posix,sysv,cma,self, beside our tcp, shm and
# wireup providers.  test/bench/ucx_bench_parse.sh checks its parsers and
# one tiny run.  contrib/bench/ucx_cost.sh counts, with callgrind, the
# instructions our provider adds to UCP per message; contrib/bench/ucx_ab.sh
# times variants against each other in alternating pinned rounds.
EXTRA_DIST += contrib/bench/ucx_bench.sh contrib/bench/ucx_cost.sh contrib/bench/ucx_ab.sh test/bench/ucx_bench_parse.sh
TESTS += test/bench/ucx_bench_parse.sh

bench-ucx:
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/bench/ucx_bench.sh
