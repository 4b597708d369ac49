#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs contrib/bench/av_bench on Debian's libfabric (tcp;ofi_rxm and
# sockets AVs) and on Wireup (tcp), RUNS times each, and prints medians and
# ratios.  Usage: sh contrib/bench/av_bench.sh [BUILD_DIR] [RUNS]
set -e
B=${1:-$(dirname "$0")/../../build}
RUNS=${2:-3}
BIN="$B/contrib/bench/av_bench"
OURS="$(cd "$B/src/.libs" && pwd)"
[ -x "$BIN" ] || { echo "build $BIN first (make -C $B contrib/bench/av_bench)"; exit 1; }
LD_LIBRARY_PATH="$OURS" ldd "$BIN" | grep -q "$OURS/libfabric.so.1" || { echo "av_bench does not load $OURS"; exit 1; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

run() { # tag libpath prov n [sym]
	for r in $(seq "$RUNS"); do
		if [ -n "$2" ]; then LD_LIBRARY_PATH="$2" "$BIN" "$3" "$4" $5; else "$BIN" "$3" "$4" $5; fi
	done > "$TMP/$1.$4$5"
}
for n in 1000 10000 100000 1000000; do
	run deb_tcp "" "tcp;ofi_rxm" $n
	run deb_sock "" sockets $n
	run ours "$OURS" tcp $n
done
run ours "$OURS" tcp 0 sym
run deb_sock "" sockets 0 sym 2>/dev/null || true

# median of key over a file's lines
med() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$TMP/$1" | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "na"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "na" || b == "na" || b == 0) print "na"; else printf "%.1fx", a / b }'; }

printf '%-8s %-7s | %9s %9s %9s | %9s %9s %9s | %8s %8s %8s | %7s %7s %7s | %s\n' N "" \
	"ins tcp" "ins sock" "ins ours" "rm tcp" "rm sock" "rm ours" "lk tcp" "lk sock" "lk ours" \
	"B tcp" "B sock" "B ours" "reverse/s ours"
for n in 1000 10000 100000 1000000; do
	set -- $(for k in insert_ns remove_ns lookup_ns bytes; do for t in deb_tcp deb_sock ours; do med $t.$n $k; done; done)
	printf '%-8s %-7s | %9s %9s %9s | %9s %9s %9s | %8s %8s %8s | %7s %7s %7s | %s\n' $n ns \
		"$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "${12}" "$(med ours.$n reverse_ps)"
	echo "         ratios: insert tcp/ours $(ratio $1 $3) sock/ours $(ratio $2 $3); remove tcp/ours $(ratio $4 $6) sock/ours $(ratio $5 $6); lookup tcp/ours $(ratio $7 $9) sock/ours $(ratio $8 $9)"
done
echo "symmetric 1024x1024: ours $(med ours.0sym sym_bytes) B in all; sockets $(med deb_sock.0sym sym_bytes) B"
echo "targets: insert <= 40 ns/addr, remove <= sockets, lookup <= both, <= 24 B/entry, symmetric <= 4096 B"
