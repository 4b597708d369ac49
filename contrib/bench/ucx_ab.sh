#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A/B (or more) of ucx provider variants at one size: Debian's fi_pingpong
# -p ucx -e rdm on our library, variants taken in turn run by run (A B C A
# B C ...) on the pinned CPUs of pin.sh, so that the machine's slow and
# fast periods hit every variant alike.  A variant is a list of environment
# assignments (FI_UCX_*=..., UCX_*=..., LD_LIBRARY_PATH=another build's
# src/.libs; "" is the defaults), or "perf" / "perf -e" for ucx_perftest
# -t tag_lat (raw UCP, without or with peer failure handling) beside them.
# fi_pingpong prints usec/xfer with two decimals; below 1 usec the one-way
# time is taken from its Mxfers/sec (three digits) instead.
# Prints each variant's median one-way usec, its best run and the ratio of
# its median to the first variant's.  A benchmark, not a test: exits 0
# whatever the numbers.
#   contrib/bench/ucx_ab.sh [-n ROUNDS] [-S SIZE] [-I ITERS] [-t tcp|shm] VARIANT...
#   (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$(cd "$here/../.." && pwd)/build}
rounds=7 size=8 iters= group=shm
usage="usage: $0 [-n ROUNDS] [-S SIZE] [-I ITERS] [-t tcp|shm] VARIANT..."
while [ $# -ge 2 ]; do # options, each with its value
	case $1 in
	-n) rounds=$2 ;; -S) size=$2 ;; -I) iters=$2 ;; -t) group=$2 ;;
	-*) echo "$usage"; exit 2 ;;
	*) break ;;
	esac
	shift 2
done
[ $# -ge 1 ] || { echo "$usage"; exit 2; }
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong missing"; exit 77; }
command -v ucx_perftest >/dev/null || { echo "SKIP: ucx_perftest missing"; exit 77; }
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\|UCX_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
case $group in
tcp) tls="UCX_TLS=tcp UCX_NET_DEVICES=lo" ;;
shm) tls="UCX_TLS=posix,sysv,cma,self" ;;
*) echo "-t tcp or -t shm"; exit 2 ;;
esac
[ -n "$iters" ] || iters=$([ "$size" -ge 65536 ] && echo 5000 || echo 20000)
port=$(( 32000 + ($$ % 500) * 20 ))
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$here/pin.sh"
wait_port() {
	t=0
	while [ $t -lt 100 ] && ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; do sleep 0.1; t=$((t + 1)); done
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $tls; pinned: ${pin_a:-no} / ${pin_b:-no}; size $size, $iters iterations, $rounds rounds"

one() { # one VARIANT -> one-way usec
	port=$((port + 1))
	case $1 in
	perf*)
		e=${1#perf}
		w=$((iters / 10))
		env $tls timeout 120 $pin_a ucx_perftest -p $port $e >/dev/null 2>&1 &
		s=$!
		wait_port $port
		env $tls timeout 120 $pin_b ucx_perftest 127.0.0.1 -p $port $e -t tag_lat -s "$size" -n "$iters" -w "$w" \
			2>/dev/null | awk '$1 == "Final:" { print $5 }' ;;
	*)
		env LD_LIBRARY_PATH="$build/src/.libs" $tls $1 timeout 120 $pin_a fi_pingpong -p ucx -e rdm -B $port \
			-S "$size" -I "$iters" >/dev/null 2>&1 &
		s=$!
		wait_port $port
		env LD_LIBRARY_PATH="$build/src/.libs" $tls $1 timeout 120 $pin_b fi_pingpong -p ucx -e rdm -P $port \
			-S "$size" -I "$iters" 127.0.0.1 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]/ { l = $8 >= 1 ? sprintf("%.4f", 1 / $8) : $7 }
			END { print l }' ;;
	esac
	wait $s 2>/dev/null
}
for r in $(seq "$rounds"); do
	i=0
	for v in "$@"; do
		i=$((i + 1))
		one "$v" >>"$tmp/$i"
	done
done
. "$here/median.sh"
# Runs that failed print 0: not samples.
positive_median() { awk '$1 + 0 > 0' | median; }
i=0
for v in "$@"; do
	i=$((i + 1))
	m=$(positive_median <"$tmp/$i")
	[ $i = 1 ] && m1=$m
	b=$(sort -n "$tmp/$i" | awk '$1 + 0 > 0 { print; exit }')
	printf '%-40s median %8s  best %8s  /first %s\n' "${v:-(defaults)}" "$m" "${b:--}" \
		"$(awk -v a="$m" -v b="$m1" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
