#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NIC lookup: a warm lookup (thread binding + order + one fid_nic per NIC)
# must stay far below a millisecond.  Not a test (timing has no place in
# make check): run it by hand on a quiet machine.
#
#   sh contrib/bench/nic_bench.sh [BUILD_DIR]      (ITERS, REPS, TARGET_US)
# Exit status 0 when the median meets TARGET_US (default 500), 1 otherwise,
# 2 on setup errors.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
bin=$build/contrib/bench/nic_bench
[ -x "$bin" ] || { echo "nic_bench: build it first (make -C $build contrib/bench/nic_bench)" >&2; exit 2; }
target=${TARGET_US:-500}
out=$("$bin" -n "${ITERS:-2000}" -r "${REPS:-15}") || exit 2
nics=$(echo "$out" | sed -n 's/^nics //p')
set -- $(echo "$out" | sed -n 's/^warm //p')
echo "warm order_for_thread + to_fid_nic x$nics: median $1 us (min $2, max $3) per lookup;" \
	"target < $target us; load average $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v m="$1" -v t="$target" 'BEGIN { exit !(m < t) }' && echo PASS || { echo FAIL; exit 1; }
