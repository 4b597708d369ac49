#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A/B of two shm variants on our library: Debian's fi_pingpong -p shm -e rdm
# at one size, variants alternated run by run (A B A B ...) on the pinned
# CPUs of pin.sh, so that the machine's slow and fast periods hit both.
# A variant is a list of environment assignments (FI_SHM_*=..., or
# LD_LIBRARY_PATH=another build's src/.libs); "" is the defaults.  Prints
# each variant's median one-way usec and MB/s, its best run (the one load
# disturbed least), B/A of the medians and how many pairs B won.  A
# benchmark, not a test: exits 0 whatever the numbers.
#   contrib/bench/shm_ab.sh [-n PAIRS] [-S SIZE] [-I ITERS] 'A VARS' 'B VARS'
#   (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$(cd "$here/../.." && pwd)/build}
pairs=10 size=65536 iters=
while getopts n:S:I: o; do
	case $o in
	n) pairs=$OPTARG ;;
	S) size=$OPTARG ;;
	I) iters=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-n PAIRS] [-S SIZE] [-I ITERS] 'A VARS' 'B VARS'"; exit 2; }
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong missing"; exit 77; }
[ -n "$iters" ] || iters=$([ "$size" -ge 65536 ] && echo 5000 || echo 100000)
port=$(( 30000 + ($$ % 500) * 20 ))
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$here/pin.sh"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); pinned: ${pin_a:-no} / ${pin_b:-no}; size $size, $iters iterations, $pairs pairs"

one() { # one VARS -> "usec MBps"
	port=$((port + 1))
	env LD_LIBRARY_PATH="$build/src/.libs" $1 timeout 120 $pin_a fi_pingpong -p shm -e rdm -B $port -S "$size" -I "$iters" >/dev/null 2>&1 &
	s=$!
	sleep 0.3
	env LD_LIBRARY_PATH="$build/src/.libs" $1 timeout 120 $pin_b fi_pingpong -p shm -e rdm -P $port -S "$size" -I "$iters" 127.0.0.1 2>/dev/null |
		awk 'NR>1 && $1 ~ /^[0-9]/ {print $7, $6}' | tail -1
	wait $s 2>/dev/null
}
for i in $(seq "$pairs"); do
	a=$(one "$1"); b=$(one "$2")
	echo "$a" >>"$tmp/a"; echo "$b" >>"$tmp/b"
	echo "pair $i: A $a  B $b"
done
. "$here/median.sh"
ua=$(awk '{print $1}' "$tmp/a" | median) ub=$(awk '{print $1}' "$tmp/b" | median)
ba=$(awk '{print $2}' "$tmp/a" | median) bb=$(awk '{print $2}' "$tmp/b" | median)
# Under load the best run is the one the scheduler disturbed least.
la=$(awk '{print $1}' "$tmp/a" | sort -n | head -1) lb=$(awk '{print $1}' "$tmp/b" | sort -n | head -1)
wins=$(paste -d' ' "$tmp/a" "$tmp/b" | awk '$3 > 0 && $3 < $1 {w++} END {print w + 0}')
echo "A [$1]: median $ua usec, $ba MB/s, best $la usec"
echo "B [$2]: median $ub usec, $bb MB/s, best $lb usec"
awk -v a="$ua" -v b="$ub" -v w="$wins" -v n="$pairs" 'BEGIN { if (a > 0 && b > 0) printf "B/A usec %.3f; B faster in %d of %d pairs\n", b / a, w, n }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
