#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shm benchmark table (issue 14, Speed): one node, medians of RUNS runs
# (default 5), every column in each run, of
#   ours    Debian's fi_pingpong -p shm -e rdm on our library ("n/a" while
#           our library has no shm provider)
#   deb     the same binary on Debian's library (its shm provider)
#   ucx     ucx_perftest tag_lat / tag_bw, UCX_TLS=posix,sysv,cma,self
#   floor   contrib/bench/shm_floor: a two-process cache-line ping-pong
#           (the 8 B latency), process_vm_readv of SIZE bytes (bandwidth,
#           and its time per copy as the latency floor of larger sizes),
#           built here if the build tree has none ("n/a" when its source
#           is missing too)
# at 8 B, 4 KiB, 64 KiB and 1 MiB.  Each side of every column runs on a CPU
# of its own, the same two for all (pin.sh).  Latency is one-way usec (fi_pingpong's
# usec/xfer, ucx's half round trip); bandwidth is MB/s of 10^6 bytes
# (fi_pingpong's is ping-pong bandwidth, ucx's tag_bw a stream: the issue
# compares them as they are).  Prints the table, ratios ours/deb,
# ours/ucx, ours/floor, and each of the issue's targets as met, MISSED or
# n/a.  A benchmark, not a test: it exits 0 whatever the numbers.
#   contrib/bench/shm_bench.sh [RUNS]     (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
runs=${1:-5}
libdir=$build/src/.libs
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong missing (apt-get install libfabric-bin)"; exit 77; }
sizes="8 4096 65536 1048576"
port=$(( 20000 + ($$ % 500) * 20 ))  # below the ephemeral range
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$here/pin.sh"
[ -n "$pin_a" ] && echo "pinned: server $pin_a, client $pin_b" || echo "note: unpinned (BENCH_PIN=0, one CPU, or no taskset)"

# Our column exists only when our library lists a provider shm.
ours_ok=0
if [ -e "$libdir/libfabric.so.1" ] && command -v fi_info >/dev/null &&
	LD_LIBRARY_PATH=$libdir timeout 30 fi_info -l 2>/dev/null | grep -q '^shm:'; then
	ours_ok=1
else
	echo "note: $libdir/libfabric.so.1 has no shm provider: column ours is n/a"
fi

# The floor program: the build tree's, or built from its source here.
floor=$build/contrib/bench/shm_floor
if [ ! -x "$floor" ]; then
	floor=
	if [ -f "$here/shm_floor.c" ] &&
		cc -O2 -I"$here" -o "$tmp/shm_floor" "$here/shm_floor.c" 2>"$tmp/floor.cc"; then
		floor=$tmp/shm_floor
	else
		echo "note: no shm_floor (neither $build/contrib/bench/shm_floor nor a buildable $here/shm_floor.c): column floor is n/a"
	fi
fi

. "$here/median.sh"
iters() { # enough that a start-up stall stays out of the number
	if [ "$1" -ge 1048576 ]; then echo 1000; elif [ "$1" -ge 65536 ]; then echo 5000; else echo 100000; fi
}

# pp LIBDIR SIZE -> "usec MBps" (one run of Debian's fi_pingpong)
pp() {
	port=$((port + 1))
	n=$(iters "$2")
	env ${1:+LD_LIBRARY_PATH=$1} timeout 120 $pin_a fi_pingpong -p shm -e rdm -B $port -S "$2" -I "$n" >/dev/null 2>&1 &
	s=$!
	sleep 0.3
	env ${1:+LD_LIBRARY_PATH=$1} timeout 120 $pin_b fi_pingpong -p shm -e rdm -P $port -S "$2" -I "$n" 127.0.0.1 2>/dev/null |
		awk 'NR>1 && $1 ~ /^[0-9]/ {print $7, $6}' | tail -1
	wait $s 2>/dev/null
}
ours() { [ $ours_ok = 1 ] && pp "$libdir" "$1"; }
deb() { pp "" "$1"; }

# ucx SIZE -> "usec MBps"; ucx's MB is 2^20 bytes, converted to 10^6.
ucx_one() { # ucx_one TEST SIZE FIELD
	port=$((port + 1))
	UCX_TLS=posix,sysv,cma,self timeout 120 $pin_a ucx_perftest -p $port >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	UCX_TLS=posix,sysv,cma,self timeout 120 $pin_b ucx_perftest 127.0.0.1 -p $port -t "$1" -s "$2" -n "$(iters "$2")" 2>/dev/null |
		awk -v f="$3" '/Final:/ {print $f}'
	wait $s 2>/dev/null
}
ucx() {
	command -v ucx_perftest >/dev/null || return
	lat=$(ucx_one tag_lat "$1" 5)
	bw=$(ucx_one tag_bw "$1" 7)
	bw=$(awk -v b="$bw" 'BEGIN { if (b + 0 > 0) printf "%.2f", b * 1.048576 }')
	echo "${lat:--} ${bw:--}"
}

# floor_all -> "SIZE usec MBps" lines from one run of `shm_floor all 1`:
#   shm_floor pingpong 8 USEC_ONE_WAY
#   shm_floor cma_read SIZE USEC_PER_COPY MB/s
# the 8 B latency is the ping-pong's, larger ones the copy's time.
floor_all() {
	[ -n "$floor" ] || return 0
	timeout 300 "$floor" all 1 2>/dev/null | awk '
		$1 == "shm_floor" && $2 == "pingpong" { pp = $4 }
		$1 == "shm_floor" && $2 == "cma_read" { lat[$3] = $4; bw[$3] = $5; n[++k] = $3 }
		END { for (i = 1; i <= k; i++) { s = n[i]; print s, (s == 8 && pp != "" ? pp : lat[s]), bw[s] } }'
}

cols="ours deb ucx floor"
# Runs outermost: the machine drifts between fast and slow periods over
# minutes, so every column gets a sample from each period.
for r in $(seq "$runs"); do
	for sz in $sizes; do
		ours "$sz" >>"$tmp/ours.$sz"
		deb "$sz" >>"$tmp/deb.$sz"
		ucx "$sz" >>"$tmp/ucx.$sz"
	done
	floor_all >"$tmp/floor.run"
	for sz in $sizes; do
		awk -v s="$sz" '$1 == s {print $2, $3}' "$tmp/floor.run" >>"$tmp/floor.$sz"
	done
done

get() { [ -f "$tmp/$1.$2" ] && awk -v f="$3" '$f != "" && $f != "-" {print $f}' "$tmp/$1.$2" | median || echo "-"; }
na() { v=$1; [ "$v" = "-" ] || [ -z "$v" ] && v=n/a; echo "$v"; }
printf '%-9s %-6s' size metric
for c in $cols; do printf ' %10s' "$c"; done
printf ' %10s %10s %10s\n' ours/deb ours/ucx ours/floor
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
for sz in $sizes; do
	for f in 1 2; do
		printf '%-9s %-6s' "$sz" "$( [ $f = 1 ] && echo usec || echo MB/s )"
		for c in $cols; do printf ' %10s' "$(na "$(get $c "$sz" $f)")"; done
		o=$(get ours "$sz" $f)
		printf ' %10s %10s %10s\n' "$(ratio "$o" "$(get deb "$sz" $f)")" "$(ratio "$o" "$(get ucx "$sz" $f)")" \
			"$(ratio "$o" "$(get floor "$sz" $f)")"
	done
done

# target TEXT VALUE OP LIMIT: met / MISSED / n/a
target() {
	awk -v t="$1" -v v="$2" -v op="$3" -v l="$4" 'BEGIN {
		if (v + 0 <= 0 || l + 0 <= 0) { printf "n/a     %s\n", t; exit }
		ok = (op == "<=" && v <= l) || (op == "<" && v < l) || (op == ">=" && v >= l)
		printf "%-7s %s: %s %s %s\n", ok ? "met" : "MISSED", t, v, op, l }'
}
mul() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0) printf "%.3f", a * b; else print "-" }'; }
echo
echo "Targets (issue 14), medians of $runs runs:"
o8=$(get ours 8 1)
target "8 B one-way latency at most 0.25 usec" "$o8" "<=" 0.25
target "8 B latency at most 0.7x Debian shm's (usec)" "$o8" "<=" "$(mul "$(get deb 8 1)" 0.7)"
target "8 B latency below UCX's (usec)" "$o8" "<" "$(get ucx 8 1)"
for sz in 65536 1048576; do
	o=$(get ours $sz 2)
	target "$sz B bandwidth at least 1.3x Debian shm's (MB/s)" "$o" ">=" "$(mul "$(get deb $sz 2)" 1.3)"
	target "$sz B bandwidth at least 1.3x UCX's (MB/s)" "$o" ">=" "$(mul "$(get ucx $sz 2)" 1.3)"
done
target "1048576 B bandwidth at least 0.8x the process_vm_readv floor (MB/s)" "$(get ours 1048576 2)" ">=" \
	"$(mul "$(get floor 1048576 2)" 0.8)"
exit 0
