#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Tag-matching benchmark (issue 13): one match_bench binary, run on
# Debian's libfabric (provider tcp;ofi_rxm, its only tcp RDM) and on
# Wireup (provider tcp) by swapping LD_LIBRARY_PATH; then match_micro, the
# matching engine alone; then the medians and the ratios the issue asks
# for.  Not a test: it only reports.
#
#   sh contrib/bench/match_bench.sh [-r RUNS] [-n N,N,...]
#
# WU_LIBDIR (default build/src/.libs), WU_BUILDDIR (default build, for
# match_micro) and DEB_LIBDIR (default the system library directory)
# choose what runs.  Both libraries are asked for receive and transmit
# queues of 131072 entries so N = 65,536 receives can be posted at once.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
WU_LIBDIR=${WU_LIBDIR:-$top/build/src/.libs}
WU_BUILDDIR=${WU_BUILDDIR:-$top/build}
DEB_LIBDIR=${DEB_LIBDIR:-$(dirname "$(${CC:-cc} -print-file-name=libfabric.so.1)")}
case "$DEB_LIBDIR" in /*) ;; *) DEB_LIBDIR=/usr/lib/x86_64-linux-gnu ;; esac
runs=5 sizes=16,1024,65536
while getopts r:n: o; do
	case $o in r) runs=$OPTARG ;; n) sizes=$OPTARG ;; *) exit 2 ;; esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/match_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# Built the way an application is: our public headers (ABI-identical),
# linked against the system libfabric.so.1.
${CC:-cc} -O2 -Wall -I"$top/include" "$top/contrib/bench/match_bench.c" -o "$work/match_bench" \
	-L"$DEB_LIBDIR" -l:libfabric.so.1

: >"$work/results"
# label libdir provider [env...]
runx() { label=$1 dir=$2 prov=$3; shift 3; echo "== $label" >&2
	env LD_LIBRARY_PATH="$dir" "$@" nice "$work/match_bench" -p "$prov" -q 131072 -r "$runs" -n "$sizes" \
		2>/dev/null | sed -n "s/^RESULT /$label /p; s/^SKIP /$label SKIP /p; s/^LIB /$label LIB /p" \
		>>"$work/results" || true
}
runx deb-rxm "$DEB_LIBDIR" "tcp;ofi_rxm" FI_OFI_RXM_RX_SIZE=131072 FI_OFI_RXM_TX_SIZE=131072
runx wireup "$WU_LIBDIR" tcp
if [ -x "$WU_BUILDDIR/contrib/bench/match_micro" ]; then
	echo "== engine alone" >&2
	nice "$WU_BUILDDIR/contrib/bench/match_micro" -r "$runs" -n "$sizes" |
		sed -n 's/^RESULT \([a-z]*\)-\([a-z]*\) /\1 \2 /p' >>"$work/results"
else
	echo "match_micro not built in $WU_BUILDDIR: engine alone skipped" >&2
fi

echo
echo "medians (ns per message; posted: receives first, unexpected: messages first):"
awk '$2 == "LIB" { printf "  %-8s library %s (provider %s)\n", $1, $3, $5; next }
     $2 == "SKIP" { print "  " $0; next }
     { printf "  %-8s %-11s N=%-6s %12s\n", $1, $2, $3, $4 }' "$work/results"

echo
lo=${sizes%%,*} hi=${sizes##*,}
awk -v lo="$lo" -v hi="$hi" '
function ratio(name, num, den, goal, sense) {
	if (num == "" || den == "" || den + 0 == 0) { printf "  %-52s n/a\n", name; return }
	r = num / den
	ok = sense == ">=" ? r >= goal : r <= goal
	printf "  %-52s %8.2fx  (goal %s %.0fx) %s\n", name, r, sense, goal, ok ? "met" : "NOT met"
}
$2 != "LIB" && $2 != "SKIP" { v[$1, $2, $3] = $4 }
END {
	print "ratios:"
	split("posted unexpected", t, " ")
	for (i = 1; i <= 2; i++) {
		ratio("wireup " t[i] ": N=" hi " / N=" lo " (flat)", v["wireup", t[i], hi], v["wireup", t[i], lo], 2, "<=")
		ratio("wireup " t[i] ": Debian / ours at N=" hi, v["deb-rxm", t[i], hi], v["wireup", t[i], hi], 10, ">=")
		ratio("engine alone " t[i] ": N=" hi " / N=" lo " (flat)", v["engine", t[i], hi], v["engine", t[i], lo], 2, "<=")
		ratio("deque scan " t[i] ": N=" hi " / N=" lo, v["scan", t[i], hi], v["scan", t[i], lo], 2, "<=")
	}
}' "$work/results"
