#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per 8-byte message (send + receive + completion) on shm and
# wireup, msg, tagged and MPICH's calls (mpi), counted by callgrind in
# contrib/bench/shm_icount's loop() (issue 14's latency work: counts are
# what the load cannot disturb).  A benchmark, not a test: exits 0 whatever the numbers.
#   contrib/bench/shm_icount.sh [N]     (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$(cd "$here/../.." && pwd)/build}
n=${1:-20000}
command -v valgrind >/dev/null || { echo "SKIP: valgrind missing (apt-get install valgrind)"; exit 77; }
prog=$build/contrib/bench/shm_icount
[ -x "$prog" ] || { echo "no $prog: make contrib/bench/shm_icount first"; exit 1; }
# libtool's wrapper is a script: callgrind must run the program itself.
[ -x "$build/contrib/bench/.libs/shm_icount" ] && prog=$build/contrib/bench/.libs/shm_icount
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for prov in shm wireup; do
	for mode in msg tag mpi; do
		out=$tmp/cg.$prov.$mode
		LD_LIBRARY_PATH=$build/src/.libs valgrind --tool=callgrind --callgrind-out-file="$out" \
			--toggle-collect=loop "$prog" "$prov" "$mode" "$n" >/dev/null 2>&1 ||
			{ echo "$prov $mode: run failed"; continue; }
		tot=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
		echo "$prov $mode instructions_per_msg $(awk -v t="$tot" -v n="$n" 'BEGIN {printf "%.0f", t / n}')"
	done
done
