# SPDX-License-Identifier: BSD-3-Clause
# shm provider benchmark: contrib/bench/shm_bench.sh compares Debian's
# fi_pingpong -p shm on our library with Debian's own shm, ucx_perftest
# over UCX's shared-memory transports, and the floors of shm_floor.
EXTRA_DIST += contrib/bench/shm_bench.sh contrib/bench/pin.sh

bench-shm:
	BUILD=$(abs_top_builddir) $(SHELL) $(top_srcdir)/contrib/bench/shm_bench.sh
