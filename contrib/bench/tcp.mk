# SPDX-License-Identifier: BSD-3-Clause
# tcp provider benchmark: contrib/bench/tcp_bench.sh compares Debian's
# fi_pingpong on our library with Debian's own (tcp;ofi_rxm and net RDM,
# tcp MSG), ucx_perftest over UCX_TLS=tcp, and raw_tcp (the socket floor).
noinst_PROGRAMS += contrib/bench/raw_tcp
contrib_bench_raw_tcp_SOURCES = contrib/bench/raw_tcp.c
EXTRA_DIST += contrib/bench/tcp_bench.sh

bench-tcp: contrib/bench/raw_tcp
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/bench/tcp_bench.sh
