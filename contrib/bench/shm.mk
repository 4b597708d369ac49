# SPDX-License-Identifier: BSD-3-Clause
# shm provider floors (issue 14): a two-process cache-line ping-pong and a
# process_vm_readv bandwidth floor (contrib/bench/shm_floor.c, no fabric
# library), and what each attached peer costs a process in memory
# (shm_peer_cost, on the transport alone).  The comparison script runs them.
noinst_PROGRAMS += contrib/bench/shm_floor contrib/bench/shm_copy_cost
if WU_PROV_SHM
noinst_PROGRAMS += contrib/bench/shm_peer_cost
endif
contrib_bench_shm_floor_SOURCES = contrib/bench/shm_floor.c contrib/bench/bench_time.h
# One copy's cost on one CPU, best of many (memcpy vs process_vm_*).
contrib_bench_shm_copy_cost_SOURCES = contrib/bench/shm_copy_cost.c contrib/bench/bench_time.h
contrib_bench_shm_peer_cost_SOURCES = contrib/bench/shm_peer_cost.cpp
contrib_bench_shm_peer_cost_LDADD = src/libwireup.la

bench-shm-floor: contrib/bench/shm_floor contrib/bench/shm_peer_cost
	contrib/bench/shm_floor all
	contrib/bench/shm_peer_cost 1024

# 8 B one-way latency in batches, median and best batch (robust under load):
# contrib/bench/shm_lat.c, A/B of variants with shm_lat.sh.
noinst_PROGRAMS += contrib/bench/shm_lat
contrib_bench_shm_lat_SOURCES = contrib/bench/shm_lat.c
contrib_bench_shm_lat_LDADD = src/libfabric.la
EXTRA_DIST += contrib/bench/shm_lat.sh
