#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI on Wireup across two "nodes", issue 15: two network namespaces
# joined by a veth pair (10.77.0.1 and 10.77.0.2), each with its own
# hostname (a UTS namespace), 2 ranks in each.  mpirun runs in the first as
# wu-node-a; its rsh agent (written below) starts the orted of wu-node-b
# inside the second.  Names resolve through /etc/netns/<ns>/hosts, which
# `ip netns exec` mounts over /etc/hosts.  Debian's mpirun with
# `--mca pml cm --mca mtl ofi` and no provider selection or FI_* variable;
# the OFI MTL selects wireup, and mpi_check passes (its wildcard receives
# on rank 0 take messages from rank 1 through shm and from ranks 2 and 3
# through tcp); ranks on one node reach each other through shm, the others
# through tcp (the wireup provider's routing lines at FI_LOG_LEVEL=info, in
# a second run with the OFI BTL for one-sided).
# Needs root for the namespaces: exit 77 when they cannot be made (CI runs
# as root), or when mpicc/mpirun/ip/unshare are missing.  The namespaces,
# their /etc/netns entries and every process in them go on every exit.
. "$(dirname "$0")/ompi_env.sh"
for t in ip unshare; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not found (Debian: apt-get install iproute2 util-linux)"
		rm -rf "$tmp"
		exit 77
	fi
done
nsa=wuompiA$$ nsb=wuompiB$$
cleanup()
{
	for ns in $nsa $nsb; do
		# Whatever a failed run left in the namespace (mpirun, orted,
		# ranks) was started by this script.
		for p in $(ip netns pids $ns 2>/dev/null); do
			kill -9 "$p" 2>/dev/null
		done
		ip netns del $ns 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	# A veth pair made before it moved into the namespaces.
	ip link del wuoa$$ 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
if ! ip netns add $nsa 2>"$tmp/ns.log"; then
	echo "SKIP: cannot create a network namespace (root needed): $(cat "$tmp/ns.log")"
	exit 77
fi
# The veth ends are called eth0 inside: fi_getinfo lists a virtual
# interface after the others, by name, so a "wuoa.." would come after lo
# and the first fi_info (which Open MPI takes) would name 127.0.0.1.
if ! ip netns add $nsb || ! ip link add wuoa$$ type veth peer name wuob$$ ||
	! ip link set wuoa$$ netns $nsa || ! ip link set wuob$$ netns $nsb ||
	! ip -n $nsa link set wuoa$$ name eth0 || ! ip -n $nsb link set wuob$$ name eth0 ||
	! ip -n $nsa addr add 10.77.0.1/24 dev eth0 || ! ip -n $nsb addr add 10.77.0.2/24 dev eth0 ||
	! ip -n $nsa link set eth0 up || ! ip -n $nsb link set eth0 up ||
	! ip -n $nsa link set lo up || ! ip -n $nsb link set lo up; then
	echo "FAIL: setting up the namespaces $nsa and $nsb"
	exit 1
fi
for ns in $nsa $nsb; do
	mkdir -p "/etc/netns/$ns"
	printf '127.0.0.1 localhost\n10.77.0.1 wu-node-a\n10.77.0.2 wu-node-b\n' >"/etc/netns/$ns/hosts"
done
printf 'wu-node-a slots=2\nwu-node-b slots=2\n' >"$tmp/hostfile"
# mpirun's rsh agent: "AGENT HOST COMMAND..." runs COMMAND (a shell command
# line, as ssh takes it) inside HOST's namespace under HOST's name.
cat >"$tmp/wu-rsh" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
case \$host in
wu-node-a|10.77.0.1) ns=$nsa ;;
wu-node-b|10.77.0.2) ns=$nsb ;;
*) echo "wu-rsh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns unshare --uts sh -c "hostname \$host && exec \$*"
EOF
chmod +x "$tmp/wu-rsh"

# run_nodes NAME PROGARG ARGS...: mpi_check PROGARG on 4 ranks, 2 per
# node, from wu-node-a; ARGS go to mpirun.
run_nodes()
{
	name=$1 progarg=$2
	shift 2
	timeout -k 10 900 ip netns exec $nsa unshare --uts sh -c 'hostname wu-node-a && exec "$@"' sh \
		mpirun --hostfile "$tmp/hostfile" -np 4 --bind-to none \
		--mca plm_rsh_agent "$tmp/wu-rsh" --mca oob_tcp_if_include 10.77.0.0/24 \
		--mca btl_tcp_if_include 10.77.0.0/24 --mca pml cm --mca mtl ofi "$@" \
		-x LD_LIBRARY_PATH="$libdir" "$prog" $progarg >"$tmp/$name.log" 2>&1
	rc=$?
	failed=0
}

placement()
{
	expect_n "ranks 0 and 1 ran on wu-node-a" 2 "^mpi_check: rank [01] of 4 on wu-node-a$" "$log"
	expect_n "ranks 2 and 3 ran on wu-node-b" 2 "^mpi_check: rank [23] of 4 on wu-node-b$" "$log"
}

# Open MPI's defaults for everything but the MTL.  No one-sided: between
# nodes Debian's configuration leaves no osc component that can serve a
# window (pt2pt is off, rdma needs a BTL with RDMA, which vader is only on
# one node), and MPI_Win_allocate fails whatever the fabric.
run_nodes nodes "" --mca mtl_base_verbose 100 --mca mtl_ofi_verbose 100
check_run nodes 4
placement
expect_n "the OFI MTL took the wireup provider on every rank" 4 "mtl:ofi:prov: wireup$" "$log"
end_run nodes

# One-sided through the OFI BTL, and the routing at FI_LOG_LEVEL=info: the
# wireup provider logs once per endpoint and peer "fi_addr N (fi_wx://IP:
# PORT/HOSTID/SHMNAME) goes through shm|tcp".  The peer's node is the IP
# of its tcp part; the logging process's node comes from mpi_check's pid
# and host lines.  Every route must be shm within a node and tcp between
# them, and each rank's MTL and BTL endpoints (the BTL's for the
# MPI_Win_create windows) route at least its node neighbour (8 shm lines
# in all) and the two ranks of the other node (16 tcp lines).
run_nodes nodes_btl rma --mca btl ofi,self --mca osc rdma --mca btl_ofi_verbose 100 -x FI_LOG_LEVEL=info
check_run nodes_btl 4
placement
expect_n "the OFI MTL took the wireup provider on every rank" 4 "mtl:ofi:prov: wireup$" "$log"
set -- $(awk '
	$1 == "mpi_check:" && $2 == "rank" && $4 == "of" { host[$3] = $7 }
	$1 == "mpi_check:" && $2 == "rank" && $4 == "pid" { pid[$3] = $5 }
	/<info> fi_addr [0-9]+ \(fi_wx:\/\/.* goes through (shm|tcp)$/ { line[++n] = $0 }
	END {
		for (r in pid)
			node[pid[r]] = host[r]
		shm = tcp = bad = 0
		for (i = 1; i <= n; i++) {
			split(line[i], f, ":")
			ip = line[i]
			sub(/.*\(fi_wx:\/\//, "", ip)
			sub(/:.*/, "", ip)
			peer = ip == "10.77.0.1" ? "wu-node-a" : ip == "10.77.0.2" ? "wu-node-b" : "unknown"
			via = line[i]
			sub(/.* goes through /, "", via)
			want = (f[2] in node) && node[f[2]] == peer ? "shm" : "tcp"
			if (!(f[2] in node) || peer == "unknown" || via != want) {
				bad++
				print "  FAIL: " line[i] " (from " node[f[2]] " to " peer ")" >"/dev/stderr"
			} else if (via == "shm")
				shm++
			else
				tcp++
		}
		print shm, tcp, bad
	}' "$log")
echo "  routes: $1 through shm within a node, $2 through tcp between nodes, $3 wrong"
if [ "$1" -lt 8 ] || [ "$2" -lt 16 ] || [ "$3" -ne 0 ]; then
	echo "  FAIL: expected at least 8 shm and 16 tcp routes, none wrong"
	failed=1
fi
end_run nodes_btl
exit $status
