#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: the launcher-published mode and its fault cases, with
# test/pmix/test_wireup_server as the launcher (PMIx server API):
#   nodes   4 ranks on 1 node, one node record: symmetric AV, no exchange
#           (2 nodes need one server per node: PMIx answers a client's own
#           node from the server's local peers; the multi-node fill is
#           covered by test_wireup_unit on the in-memory PMIx)
#   ranks   4 ranks, one record per rank
#   corrupt rank 1's record is 7 bytes: av_fill fails, nothing inserted
#   silent  rank 3 published nothing: av_fill fails, nothing inserted
set -u
top_builddir=${top_builddir:-.}
srv=$top_builddir/test/pmix/test_wireup_server
cli=$top_builddir/test/pmix/test_wireup_lp
[ -x "$srv" ] && [ -x "$cli" ] || { echo "SKIP: not built (configured without PMIx?)"; exit 77; }
pass=0; fail=0
for v in nodes ranks corrupt silent; do
	nodes=2; [ "$v" = nodes ] && nodes=1
	out=$(timeout -k 5 30 "$srv" 4 $nodes "$v" "$cli" 2>&1)
	rc=$?
	ok=$(printf '%s\n' "$out" | grep -c "^test_wireup_lp rank .* $v .* OK$")
	if [ $rc -eq 0 ] && [ "$ok" -eq 4 ]; then
		echo "PASS: $v"; pass=$((pass + 1))
		printf '%s\n' "$out" | grep -E "^test_wireup_lp rank 0 |wire-up" | head -3 | sed 's/^/  /'
	else
		echo "FAIL: $v: status $rc, $ok of 4 ranks OK; output:"
		printf '%s\n' "$out" | sed 's/^/  | /'
		fail=$((fail + 1))
	fi
done
echo "wireup server: $pass passed, $fail failed"
[ $fail -eq 0 ]
