/* SPDX-License-Identifier: BSD-3-Clause */
/* NIC lookup benchmark: what fi_getinfo pays per call for the NIC order of
 * the calling thread (thread binding + locality order + one fid_nic per
 * NIC), on the real machine's table (built once, not timed).
 *
 *   nic_bench [-n ITERS] [-r REPS]
 *
 * Prints "nics <count>" and "warm <median_us> <min_us> <max_us>": the
 * per-lookup mean of ITERS lookups, median/min/max over REPS repetitions. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <rdma/fabric.h>

#include "getinfo/nic.h"

using namespace wu::nics;

int main(int argc, char **argv)
{
	int iters = 2000, reps = 15;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-r"))
			reps = atoi(argv[i + 1]);
	}
	if (iters < 1 || reps < 1) {
		fprintf(stderr, "usage: nic_bench [-n ITERS] [-r REPS]\n");
		return 2;
	}
	const nic_table &t = system_table();
	std::vector<double> us;
	for (int r = 0; r < reps; r++) {
		auto start = std::chrono::steady_clock::now();
		for (int i = 0; i < iters; i++) {
			for (const ranked &n : t.order_for_thread()) {
				fid_nic *nic = to_fid_nic(*n.nic);
				if (!nic) {
					fprintf(stderr, "to_fid_nic failed\n");
					return 2;
				}
				fi_close(&nic->fid);
			}
		}
		std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - start;
		us.push_back(d.count() / iters);
	}
	std::sort(us.begin(), us.end());
	printf("nics %zu\n", t.all().size());
	printf("warm %.3f %.3f %.3f\n", us[us.size() / 2], us.front(), us.back());
	return 0;
}
