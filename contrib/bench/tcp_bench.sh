#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tcp benchmark table: loopback, medians of RUNS runs (default 3) of
#   ours      Debian's fi_pingpong -p tcp on our library (RDM and MSG)
#   rxm       Debian's fi_pingpong -p 'tcp;ofi_rxm' -e rdm on Debian's library
#   net       Debian's fi_pingpong -p net -e rdm on Debian's library (if offered)
#   dmsg      Debian's fi_pingpong -p tcp -e msg on Debian's library
#   ucx       ucx_perftest tag_lat / tag_bw with UCX_TLS=tcp (if installed)
#   raw       contrib/bench/raw_tcp: socket ping-pong and stream (the floor),
#             with the socket options the provider uses (TCP_NODELAY,
#             FI_TCP_SOCKBUF, FI_TCP_LOCAL_CC: reno on loopback); rawst_sys
#             is the stream with the system's congestion control instead,
#             rawpp2 the ping-pong with separate send and receive buffers
#             (as fi_pingpong has: the floor for what fi_pingpong measures)
# at 8 B, 4 KiB, 64 KiB and 1 MiB; latency is fi_pingpong's usec/xfer
# (one way), bandwidth MB/s.  Prints the table and the issue's ratios.
#   contrib/bench/tcp_bench.sh [RUNS]      (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
runs=${1:-3}
libdir=$build/src/.libs
raw=$build/contrib/bench/raw_tcp
[ -x "$raw" ] || { cc -O2 -o "${TMPDIR:-/tmp}/raw_tcp.$$" "$here/raw_tcp.c" && raw=${TMPDIR:-/tmp}/raw_tcp.$$; }
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong missing (apt-get install libfabric-bin)"; exit 77; }
sizes="8 4096 65536 1048576"
port=$(( 10000 + ($$ % 1000) * 20 ))  # below the ephemeral range

. "$here/median.sh"

# pp LIBDIR PROV EP SIZE -> "usec MBps" (one run)
pp() {
	port=$((port + 1))
	# Enough iterations that a start-up stall (both processes briefly on
	# one CPU, the lazy RDM connect) stays out of the median.
	iters=$( [ "$4" -ge 1048576 ] && echo 1000 || { [ "$4" -ge 65536 ] && echo 2000 || echo 20000; } )
	env ${1:+LD_LIBRARY_PATH=$1} timeout 60 fi_pingpong -p "$2" -e "$3" -B $port -S "$4" -I $iters >/dev/null 2>&1 &
	s=$!
	sleep 0.3
	env ${1:+LD_LIBRARY_PATH=$1} timeout 60 fi_pingpong -p "$2" -e "$3" -P $port -S "$4" -I $iters 127.0.0.1 2>/dev/null |
		awk 'NR>1 && $1 ~ /^[0-9]/ {print $7, $6}' | tail -1
	wait $s 2>/dev/null
}

ucx() { # ucx SIZE -> "usec MBps"
	command -v ucx_perftest >/dev/null || return
	p=$((port + 500))
	UCX_TLS=tcp timeout 60 ucx_perftest -p $p >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	lat=$(UCX_TLS=tcp timeout 60 ucx_perftest 127.0.0.1 -p $p -t tag_lat -s "$1" -n 2000 2>/dev/null | awk '/Final:/ {print $5}')
	wait $s 2>/dev/null
	UCX_TLS=tcp timeout 60 ucx_perftest -p $p >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	bw=$(UCX_TLS=tcp timeout 60 ucx_perftest 127.0.0.1 -p $p -t tag_bw -s "$1" -n 2000 2>/dev/null | awk '/Final:/ {print $6}')
	wait $s 2>/dev/null
	echo "${lat:--} ${bw:--}"
}

rawpp() { "$raw" pingpong "$1" "$( [ "$1" -ge 1048576 ] && echo 500 || echo 5000 )" | awk '{print $4, $5}'; }
rawpp2() { "$raw" pingpong2 "$1" "$( [ "$1" -ge 1048576 ] && echo 500 || echo 5000 )" | awk '{print $4, $5}'; }
rawst() { "$raw" stream "$1" "$( [ "$1" -ge 1048576 ] && echo 500 || echo 5000 )" | awk '{print $4, $5}'; }
rawsys() { FI_TCP_LOCAL_CC= "$raw" stream "$1" "$( [ "$1" -ge 1048576 ] && echo 500 || echo 5000 )" | awk '{print $4, $5}'; }
ours_rdm() { pp "$libdir" tcp rdm "$1"; }
ours_msg() { pp "$libdir" tcp msg "$1"; }
rxm() { pp "" "tcp;ofi_rxm" rdm "$1"; }
net() { pp "" net rdm "$1"; }
dmsg() { pp "" tcp msg "$1"; }
cols="ours_rdm ours_msg rxm net dmsg ucx rawpp rawpp2 rawst rawst_sys"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Runs outermost: this VM drifts between fast and slow modes over minutes,
# so every column gets a sample from each period and the ratios stay fair.
for r in $(seq "$runs"); do
	for c in $cols; do
		f=$c; [ "$c" = rawst_sys ] && f=rawsys
		for sz in $sizes; do "$f" "$sz" >>"$tmp/$c.$sz"; done
	done
done

get() { awk -v f="$3" '$f != "" {print $f}' "$tmp/$1.$2" | median; } # get NAME SIZE FIELD(1 lat, 2 bw)
printf '%-9s %-10s' size metric
for c in ours_rdm ours_msg rxm net dmsg ucx rawpp rawpp2 rawst rawst_sys; do printf ' %10s' "$c"; done; echo
for sz in $sizes; do
	for f in 1 2; do
		printf '%-9s %-10s' "$sz" "$( [ $f = 1 ] && echo usec || echo MB/s )"
		for c in ours_rdm ours_msg rxm net dmsg ucx rawpp rawpp2 rawst rawst_sys; do printf ' %10s' "$(get $c $sz $f)"; done
		echo
	done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "-" }'; }
# runs A B SIZE FIELD: A/B within each run (the same period of the VM)
runs_ratio() { paste -d' ' "$tmp/$1.$3" "$tmp/$2.$3" | awk -v f="$4" -v n="$(head -1 "$tmp/$1.$3" | wc -w)" '{ a = $f; b = $(n + f); if (a > 0 && b > 0) printf "%.2f ", a / b }'; }
report() { # report TEXT A B SIZE FIELD TARGET
	per=$(runs_ratio "$2" "$3" "$4" "$5")
	med=$(echo "$per" | tr ' ' '\n' | grep . | median)
	echo "$1: $(ratio "$(get "$2" "$4" "$5")" "$(get "$3" "$4" "$5")") (ratio of medians); per run: $per-> median $med ($6)"
}
echo
report "8 B RDM latency, ours / raw socket" ours_rdm rawpp 8 1 "target <= 1.15"
report "8 B RDM latency, tcp;ofi_rxm / ours" rxm ours_rdm 8 1 "target >= 1.5"
report "1 MiB RDM bandwidth, ours / tcp;ofi_rxm" ours_rdm rxm 1048576 2 "target >= 1.5"
report "1 MiB RDM bandwidth, ours / raw stream" ours_rdm rawst 1048576 2 "target >= 0.9"
report "1 MiB RDM bandwidth, ours / raw ping-pong with fi_pingpong's buffers" ours_rdm rawpp2 1048576 2 "for reference"
report "8 B latency, tcp;ofi_rxm / raw socket" rxm rawpp 8 1 "the most any TCP provider could reach on the target above"
