#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_info (libfabric-bin) on our library lists the shm
# provider (issue 14): `fi_info -p shm` answers with RDM endpoints only,
# FI_ADDR_STR addresses of the form fi_shm://<name>, node-local only (no
# FI_REMOTE_COMM), and the provider list has both tcp and shm.
# Exit 77 (skip) when fi_info is not installed or our library has no
# provider "shm" yet.
set -u
. "$(dirname "$0")/../common/fi_info_lib.sh"
list=$(run -l)
if ! printf '%s\n' "$list" | grep -q '^shm:'; then
	echo "SKIP: the shm provider is missing (fi_info -l on our library lists: $(printf '%s\n' "$list" | grep ':$' | tr -d '\n'))"
	exit 77
fi
printf '%s\n' "$list" | grep -q '^tcp:' && pass "fi_info -l lists tcp and shm" ||
	fail "fi_info -l lists shm but not tcp: $list"

listing shm

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
has_caps shm FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_SOURCE FI_DIRECTED_RECV FI_MULTI_RECV
# Debian's own hint syntax for the same listing.
out=$(run -p shm -t FI_EP_RDM)
[ $? -eq 0 ] && pass "fi_info -p shm -t FI_EP_RDM" || fail "fi_info -p shm -t FI_EP_RDM"
out=$(run -p shm -t FI_EP_MSG)
[ $? -ne 0 ] && pass "fi_info -p shm -t FI_EP_MSG finds nothing" || fail "shm answers FI_EP_MSG"
exit $status
