# wireup provider (issue 15): what the multiplexer adds to shm per 8-byte
# message and per empty CQ read, both providers in one process
# (contrib/bench/wireup_cost.c, public API only).
noinst_PROGRAMS += contrib/bench/wireup_cost
contrib_bench_wireup_cost_SOURCES = contrib/bench/wireup_cost.c contrib/bench/bench_time.h
contrib_bench_wireup_cost_LDADD = src/libfabric.la

bench-wireup: contrib/bench/wireup_cost
	contrib/bench/wireup_cost
