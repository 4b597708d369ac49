#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_info on our library (issue 15): the wireup provider
# is listed, answers `fi_info -p wireup` with RDM endpoints reaching local
# and remote peers, and is the first provider fi_info shows for RDM.
# Exit 77 (skip) when fi_info is not installed.
set -u
. "$(dirname "$0")/../common/fi_info_lib.sh"

list=$(run -l)
for p in wireup tcp shm; do
	printf '%s\n' "$list" | grep -q "^$p:" && pass "fi_info -l lists $p" || fail "fi_info -l lacks $p: $list"
done
listing wireup
has_caps wireup FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_SOURCE FI_DIRECTED_RECV FI_MULTI_RECV FI_LOCAL_COMM FI_REMOTE_COMM
first=$(run -t FI_EP_RDM | grep -m1 'provider:' | sed 's/^ *//')
[ "$first" = "provider: wireup" ] && pass "the first RDM provider is wireup" || fail "the first RDM provider is: $first"
exit $status
