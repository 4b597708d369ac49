#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: a job on several "nodes" of this machine.  Each node is a
# network namespace made here, with one address 10.77.0.{11,12,14}/24 on a veth
# link to a bridge in a further namespace (the "switch"); nothing is
# configured or sent outside these namespaces.  test/pmix/test_wireup_nodes
# runs one PMIx server per node inside it (own host name wu-nodeK, this
# node's local peers, the whole job's map), relays fences and direct modex
# between the servers, and forks each node's ranks there.  Every rank checks
# its job data (node id, local peers, is_local), that fi_addr == rank holds
# each rank's address on its own node, and sends a tagged message over tcp
# RDM to every other rank.  Cases (mode, mapping, nodes x ranks per node):
#   modex block 3x2, modex cyclic 3x2, direct block 3x2,
#   symmetric (node leaders' records) block 3x2 and cyclic 3x2,
#   symmetric by host names block 2x3 and cyclic 3x2,
#   launcher-published per node (lpn) cyclic 3x2, per rank (lp) block 3x2;
#   the wireup provider (issue 15's mixed test) in modex block 2x2 and direct
#   cyclic 2x2: every rank sends to the three others, local ones through shm
#   and remote ones through tcp, takes them with wildcard receives, and the
#   wire-up fetched nothing for its local peer (test/pmix/nodes_wx.cpp).
# Bounded: a case stops itself after 15 s (timeout kills it at 20 s), no case
# starts after 40 s; the namespaces go on any exit (trap).  A case takes ~1 s.
# SKIP (77) when network namespaces cannot be made (no root, no ip, a
# container without CAP_SYS_ADMIN or without veth/bridge).
set -u
top_builddir=${top_builddir:-.}
prog=$top_builddir/test/pmix/test_wireup_nodes
[ -x "$prog" ] || { echo "SKIP: $prog not built (configured without PMIx?)"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip command (Debian package iproute2)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }

# Namespaces left by a run that was killed outright (its pid is gone).
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(wu-\(sw\|n[0-9]\)-\([0-9]*\)\)\( .*\)\{0,1\}$/\1/p'); do
	kill -0 "${ns##*-}" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done
tag=$$
sw=wu-sw-$tag
made=""
cleanup() {
	for ns in $made; do ip netns del "$ns" 2>/dev/null; done
	made=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

mkns() { # name
	ip netns add "$1" 2>/dev/null || return 1
	made="$made $1"
	ip -n "$1" link set lo up
}
if ! mkns "$sw"; then
	echo "SKIP: ip netns add is not permitted here (needs CAP_SYS_ADMIN)"; exit 77
fi
if ! ip -n "$sw" link add wubr type bridge 2>/dev/null; then
	echo "SKIP: no bridge device in a network namespace (kernel module bridge)"; exit 77
fi
ip -n "$sw" link set wubr up
nodes=""
for k in 0 1 2; do
	ns=wu-n$k-$tag
	# .11, .12, .14: nodes 0-1 share one symmetric generator, node 2 needs
	# another (a gap in the addresses).
	addr=10.77.0.$((11 + k + k / 2))
	mkns "$ns" || { echo "FAIL: ip netns add $ns"; exit 1; }
	# The veth pair is made in the switch namespace with its peer placed
	# straight into the node's: neither end ever exists outside.
	if ! ip -n "$sw" link add wup$k type veth peer name wu$k netns "$ns" 2>/dev/null; then
		echo "SKIP: no veth links in a network namespace (kernel module veth)"; exit 77
	fi
	ip -n "$sw" link set wup$k master wubr
	ip -n "$sw" link set wup$k up
	ip -n "$ns" addr add "$addr/24" dev wu$k
	ip -n "$ns" link set wu$k up
	nodes="$nodes $ns=$addr"
done

pass=0; fail=0
start=$(date +%s)
port=31000
run() { # variant map ppn nnodes
	port=$((port + 100)) # a case of its own: no TIME_WAIT of the previous one
	list=$(echo $nodes | cut -d' ' -f1-"$4")
	want=$(($3 * $4))
	t0=$(date +%s)
	if [ $((t0 - start)) -ge 40 ]; then
		echo "FAIL: $1 $2 $4x$3: not run, the test's 40 s are used up"
		fail=$((fail + 1)); return
	fi
	out=$(timeout -k 2 20 "$prog" "$1" "$2" "$3" $port $list 2>&1)
	rc=$?
	ok=$(printf '%s\n' "$out" | grep -c "^test_wireup_nodes rank .* $1 mode=.* OK$")
	remote=$(printf '%s\n' "$out" | sed -n 's/.* remote_msgs=\([0-9]*\) OK$/\1/p' | awk '{s += $1} END {print s + 0}')
	# Every rank heard from every rank of the other nodes.
	want_remote=$((want * ($want - $3)))
	if [ $rc -eq 0 ] && [ "$ok" -eq $want ] && [ "$remote" -eq $want_remote ]; then
		echo "PASS: $1 $2 $4x$3 ($(( $(date +%s) - t0 )) s, $remote messages across nodes)"
		pass=$((pass + 1))
		printf '%s\n' "$out" | grep "^test_wireup_nodes rank 0 " | sed 's/^/  /'
	else
		echo "FAIL: $1 $2 $4x$3: status $rc, $ok of $want ranks OK, $remote of $want_remote messages across nodes; output:"
		printf '%s\n' "$out" | sed 's/^/  | /'
		fail=$((fail + 1))
	fi
}
run modex block 2 3
run modex cyclic 2 3
run direct block 2 3
run symmetric block 2 3
run symmetric cyclic 2 3
run hostname block 3 2
run hostname cyclic 2 3
run lpn cyclic 2 3
run lp block 2 3
run wx block 2 2
run wxdirect cyclic 2 2
echo "netns nodes: $pass passed, $fail failed"
[ $fail -eq 0 ]
