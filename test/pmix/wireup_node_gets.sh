#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check (issue 30): the wire-up's PMIx gets grow with the nodes, not
# the ranks.  contrib/wireup_pingpong runs as 2 simulated nodes x 3 ranks
# under Open MPI's mpirun (contrib/cluster/cluster.sh: network + UTS
# namespaces) in the modex, direct and symmetric (host names) modes; every
# rank prints its struct fi_wireup_info counters after its all-to-all.
# Passes when all 6 ranks checked their peers, every rank's gets are at most
# the remote nodes (1; 0 in symmetric; in direct mode asks repeated while a
# blob is not yet put are not counted: gets - gets_again), no rank fetched anything of a
# rank on its own node (local_gets 0), and the job ended with status 0.
# Before node blobs a rank made one get per remote rank (3 here).
# Then modex and direct again at 2 x 6: a node blob holds a template and the
# node's port rule, not each rank's address, so the bytes a rank fetched
# (max over ranks) must not grow with the ranks per node: at most
# $slack bytes more than at 2 x 3.  With version 1 blobs (one ~55-byte
# address per rank) they grew by about 165 (197 -> 361).
# 77 (skip) when cluster.sh skips (no root, no ip/unshare, no mpirun).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$(cd "$top_builddir" && pwd)/contrib/wireup_pingpong
lib=$(cd "$top_builddir" && pwd)/src/.libs
[ -x "$prog" ] || { echo "SKIP: $prog not built (configured without PMIx?)"; exit 77; }
nodes=2 ppn=3 big=6 slack=16
tmo=${WU_NODE_GETS_TIMEOUT:-30} # seconds per job (a loaded machine needs more)
out=$(mktemp /tmp/wu-node-gets.XXXXXX) || exit 1
trap 'rm -f "$out"' EXIT
pass=0 fail=0 skip=0
for run in modex direct symmetric modex:$big direct:$big; do
	mode=${run%%:*}
	ppn=3
	case $run in *:*) ppn=${run#*:} ;; esac
	extra=""
	max=$((nodes - 1))
	# direct: a get that reaches a node before its first rank has put the
	# blob is asked again 20 ms later; those repeats (gets_again, up to 6 on
	# a loaded CI machine) depend on timing, not on the job's size.
	if [ $mode = symmetric ]; then
		extra="-e FI_PMIX_PORT_BASE=$((10000 + $$ % 900 * 10)) -e FI_PMIX_SYM_NODE_ADDR=hostname"
		max=0
	fi
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout -k 5 $((2 * tmo)) \
		sh "$top_srcdir/contrib/cluster/cluster.sh" -n $nodes -m $ppn -t $tmo \
		-e WU_PINGPONG_STATS=1 -e FI_PMIX_MODE=$mode $extra "$prog" >"$out" 2>&1
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "SKIP: $mode: $(grep -m1 SKIP "$out")"
		skip=$((skip + 1))
		continue
	fi
	# Bytes bound: only for the 2 x 6 runs, against the same mode's 2 x 3.
	bmax=-1 b3=""
	[ $ppn = $big ] && eval "b3=\${bytes_$mode:-}"
	[ -n "$b3" ] && bmax=$((b3 + slack))
	verdict=$(awk -v max=$max -v bmax=$bmax -v np=$((nodes * ppn)) -v rc=$rc '
		/^wireup_pingpong rank .* peers checked OK/ { ok++ }
		/^wireup_pingpong stats/ {
			for (i = 1; i < NF; i++) v[$i] = $(i + 1)
			n++
			if (v["gets"] - v["gets_again"] > g) g = v["gets"] - v["gets_again"]
			if (v["bytes_got"] > b) b = v["bytes_got"]
			lg += v["local_gets"]
		}
		END {
			bad = rc != 0 || ok != np || n != np || g > max || lg != 0 || (bmax >= 0 && b > bmax)
			printf "%s %d of %d ranks OK, gets/rank at most %d (bound %d), bytes/rank at most %d (bound %s), local gets %d, status %d\n",
				bad ? "FAIL" : "PASS", ok, np, g, max, b, (bmax >= 0 ? bmax : "none"), lg, rc
		}' "$out")
	echo "$verdict ($mode ${nodes}x$ppn)"
	b=$(echo "$verdict" | sed -n 's/.*bytes\/rank at most \([0-9]*\).*/\1/p')
	case $verdict in
	PASS*)
		pass=$((pass + 1))
		[ $ppn = 3 ] && eval "bytes_$mode=\${b:-0}" ;;
	*) fail=$((fail + 1)); sed 's/^/  | /' "$out" | tail -40 ;;
	esac
done
echo "wireup node gets: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || exit 1
[ $pass -gt 0 ] || exit 77
exit 0
