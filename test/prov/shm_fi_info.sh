#!/bin/sh
# Debian's unmodified fi_info (libfabric-bin) on our library lists the shm
# provider (issue 14): `fi_info -p shm` answers with RDM endpoints only,
# FI_ADDR_STR addresses of the form fi_shm://<name>, node-local only (no
# FI_REMOTE_COMM), and the provider list has both tcp and shm.
# Exit 77 (skip) when fi_info is not installed or our library has no
# provider "shm" yet.
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
list=$(run -l)
if ! printf '%s\n' "$list" | grep -q '^shm:'; then
	echo "SKIP: the shm provider is missing (fi_info -l on our library lists: $(printf '%s\n' "$list" | grep ':$' | tr -d '\n'))"
	exit 77
fi
status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; status=1; }

printf '%s\n' "$list" | grep -q '^tcp:' && pass "fi_info -l lists tcp and shm" ||
	fail "fi_info -l lists shm but not tcp: $list"

out=$(run -p shm)
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q 'provider: shm'; then
	pass "fi_info -p shm lists shm"
else
	fail "fi_info -p shm (exit $rc)"
	printf '%s\n' "$out" | sed 's/^/  /'
fi
other=$(printf '%s\n' "$out" | grep 'provider:' | grep -v 'provider: shm$' || true)
[ -z "$other" ] && pass "fi_info -p shm lists only shm" || fail "fi_info -p shm also lists: $other"
types=$(printf '%s\n' "$out" | grep 'type:' | sort -u | sed 's/^ *//')
[ "$types" = "type: FI_EP_RDM" ] && pass "shm offers FI_EP_RDM only" || fail "shm offers: $types"

verbose=$(run -p shm -v)
printf '%s\n' "$verbose" | grep -q 'addr_format: FI_ADDR_STR' && pass "addresses are FI_ADDR_STR" ||
	fail "addr_format is $(printf '%s\n' "$verbose" | grep -m1 addr_format)"
src=$(printf '%s\n' "$verbose" | grep -m1 'src_addr:' | sed 's/^ *src_addr: *//')
case $src in
fi_shm://?*) pass "source address $src" ;;
'' | '(null)') pass "no source address before an endpoint exists (generated at fi_enable)" ;;
*) fail "source address $src is not fi_shm://<name>" ;;
esac
if printf '%s\n' "$verbose" | grep 'caps:' | grep -q 'FI_REMOTE_COMM'; then
	fail "shm claims FI_REMOTE_COMM"
else
	pass "shm does not claim FI_REMOTE_COMM"
fi
for cap in FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_SOURCE FI_DIRECTED_RECV FI_MULTI_RECV; do
	printf '%s\n' "$verbose" | grep -m1 '^    caps:' | grep -q "$cap" || fail "shm lacks $cap"
done
# Debian's own hint syntax for the same listing.
out=$(run -p shm -t FI_EP_RDM)
[ $? -eq 0 ] && pass "fi_info -p shm -t FI_EP_RDM" || fail "fi_info -p shm -t FI_EP_RDM"
out=$(run -p shm -t FI_EP_MSG)
[ $? -ne 0 ] && pass "fi_info -p shm -t FI_EP_MSG finds nothing" || fail "shm answers FI_EP_MSG"
exit $status
