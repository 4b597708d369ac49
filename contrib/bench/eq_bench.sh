#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Event queue benchmark: one eq_bench binary, run on Debian's libfabric
# (providers shm, udp, tcp;ofi_rxm, tcp) and on Wireup (provider tcp) by
# swapping LD_LIBRARY_PATH, then the medians and the ratios the issue asks
# for.  Not a test: it only reports.
#
#   sh contrib/bench/eq_bench.sh [extra eq_bench options, e.g. -r 7 -n 2000000]
#
# WU_LIBDIR (default build/src/.libs) and DEB_LIBDIR (default the system
# library directory) choose the two libraries.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
WU_LIBDIR=${WU_LIBDIR:-$top/build/src/.libs}
DEB_LIBDIR=${DEB_LIBDIR:-$(dirname "$(${CC:-cc} -print-file-name=libfabric.so.1)")}
case "$DEB_LIBDIR" in /*) ;; *) DEB_LIBDIR=/usr/lib/x86_64-linux-gnu ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/eq_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# Built the way an application is: our public headers (ABI-identical),
# linked against the system libfabric.so.1, so the symbol versions it
# imports are Debian's.
${CC:-cc} -O2 -Wall -I"$top/include" "$top/contrib/bench/eq_bench.c" -o "$work/eq_bench" \
	-L"$DEB_LIBDIR" -l:libfabric.so.1 -lpthread

extra="$*"
# label libdir provider tests
# shellcheck disable=SC2086
runx() { label=$1 dir=$2 prov=$3 tests=$4; echo "== $label" >&2
	LD_LIBRARY_PATH=$dir "$work/eq_bench" -p "$prov" -t "$tests" $extra 2>/dev/null |
		sed -n "s/^RESULT /$label /p; s/^SKIP /$label SKIP /p; s/^LIB /$label LIB /p" >>"$work/results" || true
}

: >"$work/results"
runx floor "$DEB_LIBDIR" udp floor
runx deb-shm "$DEB_LIBDIR" shm write_read,pingpong,memory
runx deb-udp "$DEB_LIBDIR" udp write_read,pingpong,memory
runx deb-rxm "$DEB_LIBDIR" "tcp;ofi_rxm" write_read,pingpong,memory
runx deb-tcp "$DEB_LIBDIR" tcp write_read,pingpong,memory
runx wireup "$WU_LIBDIR" tcp write_read,pingpong,memory

echo
echo "medians (ns per write+read pair, us per round trip, bytes per queued event):"
awk '$2 != "LIB" && $2 != "SKIP" { printf "  %-8s %-22s %10s %s\n", $1, $2, $3, $4 }
     $2 == "SKIP" { print "  " $0 }
     $2 == "LIB" { printf "  %-8s library %s (provider %s)\n", $1, $3, $5 }' "$work/results"

echo
awk '
function get(l, m) { return ((l SUBSEP m) in v) ? v[l, m] : "" }
function lo(a, b) { return a == "" ? b : (b == "" ? a : (a + 0 < b + 0 ? a : b)) }
function ratio(name, num, den, goal, sense) {
	if (num == "" || den == "" || den + 0 == 0) { printf "  %-44s n/a\n", name; return }
	r = num / den
	ok = sense == ">=" ? r >= goal : r <= goal
	printf "  %-44s %6.2fx  (goal %s %.1fx) %s\n", name, r, sense, goal, ok ? "met" : "NOT met"
}
$2 != "LIB" && $2 != "SKIP" { v[$1, $2] = $3 }
$2 == "LIB" { lib[$1] = $3 }
END {
	if (lib["wireup"] == "" || get("wireup", "write_read_none") == "") {
		print "  Wireup results missing: is provider tcp built with EQ support in " WU_LIBDIR "?"
	} else if (lib["wireup"] !~ /^2\./) {
		print "  WARNING: the run labelled wireup loaded library " lib["wireup"] ", not Wireup"
	}
	best = lo(lo(get("deb-shm", "write_read_none"), get("deb-udp", "write_read_none")), get("deb-rxm", "write_read_none"))
	w = get("wireup", "write_read_none")
	print "ratios (higher is better for Wireup unless noted):"
	ratio("write+read vs fastest Debian (shm/udp/rxm)", best, w, 2, ">=")
	ratio("write+read vs Debian tcp", get("deb-tcp", "write_read_none"), w, 10, ">=")
	floor = lo(get("floor", "floor_futex"), get("floor", "floor_condvar"))
	ratio("UNSPEC ping-pong / futex-condvar floor (lower)", get("wireup", "pingpong_unspec"), floor, 1.5, "<=")
	dfd = lo(lo(lo(get("deb-shm", "pingpong_fd"), get("deb-udp", "pingpong_fd")), get("deb-rxm", "pingpong_fd")), get("deb-tcp", "pingpong_fd"))
	ratio("FD ping-pong vs fastest Debian FD", dfd, get("wireup", "pingpong_fd"), 1.5, ">=")
	ratio("FD ping-pong, fd handed out, vs Debian FD", dfd, get("wireup", "pingpong_fd_exposed"), 1.5, ">=")
}' WU_LIBDIR="$WU_LIBDIR" "$work/results"
