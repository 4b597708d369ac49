#!/bin/sh
# Debian's unmodified fi_info on our library (issue 15): the wireup provider
# is listed, answers `fi_info -p wireup` with RDM endpoints reaching local
# and remote peers, and is the first provider fi_info shows for RDM.
# Exit 77 (skip) when fi_info is not installed.
set -u
fi=$(command -v fi_info 2>/dev/null || true)
if [ -z "$fi" ]; then
	echo "SKIP: fi_info not found (Debian: apt-get install libfabric-bin)"
	exit 77
fi
lib=${WU_LIB:-${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)/build}/src/.libs/libfabric.so.1}
libdir=$(dirname "$lib")
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "FAIL: our library not found in $libdir"
	exit 1
fi
run() { LD_LIBRARY_PATH=$libdir timeout 30 "$fi" "$@" 2>&1; }
status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; status=1; }

list=$(run -l)
for p in wireup tcp shm; do
	printf '%s\n' "$list" | grep -q "^$p:" && pass "fi_info -l lists $p" || fail "fi_info -l lacks $p: $list"
done
out=$(run -p wireup)
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q 'provider: wireup'; then
	pass "fi_info -p wireup lists wireup"
else
	fail "fi_info -p wireup (exit $rc)"
	printf '%s\n' "$out" | sed 's/^/  /'
fi
other=$(printf '%s\n' "$out" | grep 'provider:' | grep -v 'provider: wireup$' || true)
[ -z "$other" ] && pass "fi_info -p wireup lists only wireup" || fail "fi_info -p wireup also lists: $other"
types=$(printf '%s\n' "$out" | grep 'type:' | sort -u | sed 's/^ *//')
[ "$types" = "type: FI_EP_RDM" ] && pass "wireup offers FI_EP_RDM only" || fail "wireup offers: $types"
verbose=$(run -p wireup -v)
caps=$(printf '%s\n' "$verbose" | grep -m1 '^    caps:')
for cap in FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_SOURCE FI_DIRECTED_RECV FI_MULTI_RECV FI_LOCAL_COMM FI_REMOTE_COMM; do
	printf '%s\n' "$caps" | grep -q "$cap" || fail "wireup lacks $cap"
done
first=$(run -t FI_EP_RDM | grep -m1 'provider:' | sed 's/^ *//')
[ "$first" = "provider: wireup" ] && pass "the first RDM provider is wireup" || fail "the first RDM provider is: $first"
exit $status
