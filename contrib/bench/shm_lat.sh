#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A/B (or A/B/C...) of shm variants with shm_lat: runs alternate variant by
# variant, each one prints its median and best batch; per variant the
# median of the runs' medians and of their bests, and how many runs each
# variant won against the first.  Variants are environment lists as in
# shm_ab.sh ("" = defaults).  A benchmark: exits 0 whatever the numbers.
#   contrib/bench/shm_lat.sh [-n RUNS] [-b BATCHES] 'A VARS' 'B VARS' ...
#   (env: BUILD=build dir, BENCH_CPUS=a,b)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$(cd "$here/../.." && pwd)/build}
runs=15 batches=300
while getopts n:b: o; do
	case $o in
	n) runs=$OPTARG ;;
	b) batches=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: $0 [-n RUNS] [-b BATCHES] 'A VARS' 'B VARS' ..."; exit 2; }
prog=$build/contrib/bench/shm_lat
[ -x "$build/contrib/bench/.libs/shm_lat" ] && prog=$build/contrib/bench/.libs/shm_lat
cpus=${BENCH_CPUS:-0,1}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); cpus $cpus; $runs runs of $batches batches"
for i in $(seq "$runs"); do
	k=0
	for v in "$@"; do
		k=$((k + 1))
		env LD_LIBRARY_PATH="$build/src/.libs" $v "$prog" "$batches" "${cpus%%,*}" "${cpus#*,}" |
			awk '{print $4, $6}' >>"$tmp/$k"
	done
done
. "$here/median.sh"
k=0
for v in "$@"; do
	k=$((k + 1))
	m=$(awk '{print $1}' "$tmp/$k" | median) b=$(awk '{print $2}' "$tmp/$k" | median)
	w=$(paste -d' ' "$tmp/1" "$tmp/$k" | awk '$3 < $1 {w++} END {print w + 0}')
	echo "[$v]: median of medians $m usec, median of bests $b usec, beats A in $w of $runs runs"
done
[ -n "${LAT_RAW:-}" ] && for f in "$tmp"/[0-9]*; do echo "runs $(basename "$f"): $(awk "{printf \"%s \", \$1}" "$f")"; done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
