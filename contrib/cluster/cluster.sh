#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cluster.sh [-n NODES] [-m RANKS] [-l mpirun|slurm] [-t SECONDS]
#            [-e VAR=VALUE]... [-k NODE -a SECONDS] PROGRAM [ARGS...]
# A cluster on this machine (issue 30): NODES simulated nodes (default 16),
# each a network + UTS namespace wuc<pid>n<i> with host name wuc-n<i> and
# address 10.79.0.<i>/24 on a veth to a Linux bridge in a further namespace
# wuc<pid>s (the "switch", 10.79.0.254, where mpirun / slurmctld / srun run);
# /etc/netns/<ns>/hosts names every node.  PROGRAM runs as one job of
# NODES x RANKS ranks (default 16 x 16), RANKS per node, in rank order:
#   mpirun  Open MPI's mpirun with a hostfile of the nodes; its rsh agent
#           starts each node's orted inside that node's namespace.
#   slurm   munged + slurmctld in the switch, one slurmd per node namespace
#           (its NodeName is the node's host name, its TmpFS a private bind
#           mount), srun --mpi=pmix -N NODES --ntasks-per-node=RANKS.
# -e passes VAR=VALUE to every rank; WU_CLUSTER_MPIRUN_OPTS / WU_CLUSTER_SRUN_OPTS
# add launcher options.  The job runs under a hard timeout (-t, default 300 s):
# a job still there then is a hang ("cluster: HANG", status 124).
# Fault mode: -k NODE -a SECONDS kill -9's every rank of node NODE (1-based)
# SECONDS after the ranks started; the job must then end within the timeout.
# It passes (status 0) when the job then ends by itself, whatever its status.
# The whole run has a /dev/shm of its own (a mount namespace with a fresh
# tmpfs), so everything in it is the job's and nothing of other jobs or
# tests on the machine is touched.  Afterwards the script reports
# "cluster: LEFTOVER ..." for a rank still running (status 1) and for every
# wu<uid>.* object still in that /dev/shm once the job is gone and, when
# WU_CLUSTER_SHM_REAP names a program that opens one shm endpoint
# (contrib/cluster/shm_reap), after it ran with FI_SHM_REAP_AGE=0: the
# regions of ranks killed by a signal go with the next endpoint on the node
# (status 3 when that is the only fault), and its own lines:
#   cluster: ranks P (pids seen), killed K at T s, job ended after E s, status S
# Everything it made goes on every exit (trap): the namespaces with every
# process in them (by `ip netns pids`), the bridge (in the switch namespace),
# the /etc/netns entries, the Slurm directory, the cpu cgroup wuc<pid> that
# every process of the run is in (one scheduling group for all nodes, not
# one per node's session).  Namespaces and cgroups of a run killed with
# SIGKILL (its pid gone) are removed by the next run.
# Needs root, ip, unshare: status 77 and "SKIP: why" otherwise.
set -u
# A private /dev/shm for the whole run (see above): the script again under
# unshare --mount; mounts made inside do not reach the host.
if [ "${WU_CLUSTER_IN_NS:-}" != 1 ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
	unshare --mount --propagation slave true 2>/dev/null; then
	WU_CLUSTER_IN_NS=1 exec unshare --mount --propagation slave sh "$0" "$@"
fi
nodes=16 ppn=16 launcher=mpirun limit=300 kill_node="" kill_after="" envs=""
usage() { echo "usage: $0 [-n NODES] [-m RANKS] [-l mpirun|slurm] [-t S] [-e VAR=VAL] [-k NODE -a S] PROGRAM [ARGS...]" >&2; exit 2; }
while getopts n:m:l:t:e:k:a: o; do
	case $o in
	n) nodes=$OPTARG ;; m) ppn=$OPTARG ;; l) launcher=$OPTARG ;; t) limit=$OPTARG ;;
	e) envs="$envs $OPTARG" ;; k) kill_node=$OPTARG ;; a) kill_after=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
case "$nodes$ppn" in *[!0-9]*) usage ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 250 ] && [ "$ppn" -ge 1 ] || usage
case $launcher in mpirun|slurm) ;; *) usage ;; esac
prog=$(command -v "$1") || { echo "cluster: $1 not found" >&2; exit 2; }
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
shift
np=$((nodes * ppn))
here=$(cd "$(dirname "$0")" && pwd)

[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
for t in ip unshare timeout; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not found (Debian: iproute2, util-linux, coreutils)"; exit 77; }
done
if [ $launcher = mpirun ]; then
	command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
else
	PATH=$PATH:/usr/sbin:/sbin
	for t in munged mungekey slurmctld slurmd srun; do
		command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not found (Debian: slurmctld slurmd slurm-client munge)"; exit 77; }
	done
fi

[ "${WU_CLUSTER_IN_NS:-}" = 1 ] || { echo "SKIP: cannot make a mount namespace (unshare --mount) for a private /dev/shm"; exit 77; }
if ! mount -t tmpfs -o mode=1777,nosuid,nodev wuc-shm /dev/shm 2>/dev/null; then
	echo "SKIP: cannot mount a private tmpfs on /dev/shm"
	exit 77
fi

# Runs of this script killed outright (their pid is gone) left namespaces.
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(wuc[0-9][0-9]*[sn][0-9]*\)\( .*\)\{0,1\}$/\1/p'); do
	p=${ns#wuc}
	p=${p%%[sn]*}
	kill -0 "$p" 2>/dev/null && continue
	for q in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$q" 2>/dev/null; done
	ip netns del "$ns" 2>/dev/null
	rm -rf "/etc/netns/$ns"
done

tag=wuc$$
sw=${tag}s
tmp=$(mktemp -d /tmp/wuc.XXXXXX)
made=""
# One CPU group for the whole run.  mpirun's orted and Slurm's slurmstepd
# make each node's ranks a session of their own, and with
# kernel.sched_autogroup_enabled the scheduler shares the CPUs between
# sessions, not tasks: a node whose ranks all wait in Open MPI's lazy loop
# (100 us sleeps) keeps a whole node's share while other nodes' ranks
# starve in MPI_Init (16 x 16: single nodes burning 7 s of CPU per rank,
# MPI_Init 25-140 s from run to run for either stack).  Tasks in a cpu
# cgroup other than the root are not autogrouped: in one, every rank of
# every node competes as one task, as on one machine.  Without a cpu
# controller (or not allowed) the run goes on as before.
cg=""
for base in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
	[ -f "$base/cgroup.procs" ] || continue
	if [ "$base" = /sys/fs/cgroup ]; then
		grep -qw cpu "$base/cgroup.subtree_control" 2>/dev/null || break
	fi
	for d in "$base"/wuc[0-9]*; do # groups of runs killed outright
		[ -d "$d" ] && ! kill -0 "${d##*/wuc}" 2>/dev/null && rmdir "$d" 2>/dev/null
	done
	if mkdir "$base/$tag" 2>/dev/null; then
		cg=$base/$tag
		echo $$ >"$cg/cgroup.procs" 2>/dev/null || { rmdir "$cg"; cg=""; }
	fi
	break
done
cleanup()
{
	trap - EXIT INT TERM HUP
	[ -n "${job:-}" ] && kill -9 "$job" 2>/dev/null
	rm -f "$tmp/sampling"
	[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
	for ns in $made; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
	for ns in $made; do
		ip netns del "$ns" 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	rm -rf "$tmp"
	if [ -n "$cg" ]; then
		echo $$ >"${cg%/*}/cgroup.procs" 2>/dev/null
		i=0
		while ! rmdir "$cg" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

fail() { echo "cluster: FAIL: $*"; exit 1; }
node_ns() { echo "${tag}n$1"; }
node_host() { printf 'wuc-n%02d' "$1"; }

if ! ip netns add "$sw" 2>"$tmp/ns.log"; then
	echo "SKIP: cannot create a network namespace: $(cat "$tmp/ns.log")"
	exit 77
fi
made=$sw
if ! ip -n "$sw" link add br0 type bridge 2>"$tmp/ns.log"; then
	echo "SKIP: cannot create a bridge: $(cat "$tmp/ns.log")"
	exit 77
fi
ip -n "$sw" addr add 10.79.0.254/24 dev br0 && ip -n "$sw" link set br0 up &&
	ip -n "$sw" link set lo up || fail "setting up the switch $sw"
hosts="127.0.0.1 localhost
10.79.0.254 wuc-sw"
i=1
while [ $i -le "$nodes" ]; do
	ns=$(node_ns $i)
	ip netns add "$ns" || fail "ip netns add $ns"
	made="$made $ns"
	# The node's end is eth0: fi_getinfo orders interfaces by name, and an
	# odd name would come after lo.
	ip -n "$sw" link add "v$i" type veth peer name eth0 netns "$ns" &&
		ip -n "$sw" link set "v$i" master br0 && ip -n "$sw" link set "v$i" up &&
		ip -n "$ns" addr add "10.79.0.$i/24" dev eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up || fail "wiring node $i ($ns)"
	hosts="$hosts
10.79.0.$i $(node_host $i)"
	i=$((i + 1))
done
for ns in $made; do
	mkdir -p "/etc/netns/$ns"
	echo "$hosts" >"/etc/netns/$ns/hosts"
done

# in_node I CMD...: CMD inside node I's namespace under its host name
# (I = 0: the switch).
in_node()
{
	if [ "$1" = 0 ]; then n=$sw h=wuc-sw; else n=$(node_ns "$1") h=$(node_host "$1"); fi
	shift
	ip netns exec "$n" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

# The ranks' environment: no FI_* / OMPI_MCA_* / PMIX_* of the caller.
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\|OMPI_MCA_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\|SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
for kv in $envs; do export "${kv?}"; done

if [ $launcher = mpirun ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	i=1
	while [ $i -le "$nodes" ]; do echo "$(node_host $i) slots=$ppn"; i=$((i + 1)); done >"$tmp/hostfile"
	# mpirun's rsh agent ("AGENT [OPTS] HOST COMMAND..."): COMMAND (one
	# shell line, as ssh takes it) inside HOST's namespace.
	cat >"$tmp/rsh" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
h=\$1
shift
case \$h in
wuc-n[0-9]*) i=\${h#wuc-n} ;;
10.79.0.*) i=\${h#10.79.0.} ;;
*) echo "wuc-rsh: unknown host \$h" >&2; exit 1 ;;
esac
i=\${i#0}
exec ip netns exec $tag"n"\$i unshare --uts sh -c "hostname \$h && exec \$*"
EOF
	chmod +x "$tmp/rsh"
	xs=""
	for kv in $envs LD_LIBRARY_PATH=; do xs="$xs -x ${kv%%=*}"; done
	export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
	# shellcheck disable=SC2086
	set -- mpirun --hostfile "$tmp/hostfile" -np $np --map-by ppr:$ppn:node --bind-to none \
		--mca plm_rsh_agent "$tmp/rsh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include 10.79.0.0/24 --mca btl_tcp_if_include 10.79.0.0/24 \
		$xs ${WU_CLUSTER_MPIRUN_OPTS:-} "$prog" "$@"
else
	sdir=$tmp/slurm
	mkdir -p "$sdir/etc" "$sdir/state" "$sdir/log" "$sdir/run" "$sdir/munge" "$sdir/tmp"
	chmod 700 "$sdir/etc" "$sdir/munge"
	mungekey -c -k "$sdir/etc/munge.key" >/dev/null 2>&1 || fail "mungekey"
	chmod 600 "$sdir/etc/munge.key"
	{
		cat <<EOF
# Written by contrib/cluster/cluster.sh: one slurmd per node namespace.
ClusterName=$tag
# Job ids differ between runs: Wireup names a rank's shm region by job and
# rank, and one left by a killed run must not meet the next run's job 1.
FirstJobId=$$
SlurmctldHost=wuc-sw(10.79.0.254)
SlurmctldPort=6817
SlurmdPort=6818
Include $here/../launch/slurm-private.conf
AuthInfo=socket=$sdir/munge/munge.socket
StateSaveLocation=$sdir/state
SlurmdSpoolDir=$sdir/spool/%n
TmpFS=$sdir/tmp
SlurmctldPidFile=$sdir/run/slurmctld.pid
SlurmdPidFile=$sdir/run/slurmd.%n.pid
SlurmctldLogFile=$sdir/log/slurmctld.log
SlurmdLogFile=$sdir/log/slurmd.%n.log
MessageTimeout=30
SlurmdTimeout=300
EOF
		i=1
		while [ $i -le "$nodes" ]; do
			echo "NodeName=$(node_host $i) NodeAddr=10.79.0.$i CPUs=$ppn RealMemory=1024 State=UNKNOWN"
			i=$((i + 1))
		done
		echo "PartitionName=wuc Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
	} >"$sdir/etc/slurm.conf"
	export SLURM_CONF=$sdir/etc/slurm.conf
	in_node 0 munged -F --force -S "$sdir/munge/munge.socket" --key-file="$sdir/etc/munge.key" \
		--pid-file="$sdir/run/munged.pid" --log-file="$sdir/log/munged.log" \
		--seed-file="$sdir/state/munge.seed" --num-threads=2 </dev/null >/dev/null 2>&1 &
	t=0
	while ! [ -S "$sdir/munge/munge.socket" ]; do
		t=$((t + 1)); [ $t -gt 100 ] && fail "no munge socket after 10 s"
		sleep 0.1
	done
	in_node 0 slurmctld -D -i </dev/null >"$sdir/log/slurmctld.out" 2>&1 &
	i=1
	while [ $i -le "$nodes" ]; do
		# Each slurmd's steps get their own TmpFS (Slurm's PMIx plugin
		# names its directory there by job and step, alike on every node).
		# Not ip netns exec: it mounts a sysfs of the namespace without the
		# cgroup tree that slurmd 22.05 insists on reading.
		h=$(node_host $i)
		mkdir -p "$sdir/tmp.$h" "$sdir/spool/$h"
		ns=$(node_ns $i)
		nsenter --net=/run/netns/"$ns" unshare --uts --mount sh -c \
			'hostname "$0" && mount --bind "/etc/netns/$2/hosts" /etc/hosts &&
			mount --bind "$1.$0" "$1" && exec slurmd -D -N "$0"' \
			"$h" "$sdir/tmp" "$ns" </dev/null >"$sdir/log/slurmd.$h.out" 2>&1 &
		i=$((i + 1))
	done
	# Up when every node is idle.
	t=0
	while :; do
		grep -l "initialization failed" "$sdir"/log/slurmd.*.out >/dev/null 2>&1 && t=999
		idle=$(in_node 0 timeout 5 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | grep -c .)
		[ "$idle" -ge "$nodes" ] && break
		t=$((t + 1))
		if [ $t -gt 120 ]; then
			echo "cluster: FAIL: Slurm: $idle of $nodes nodes idle after 60 s"
			tail -n 5 "$sdir"/log/*.log "$sdir"/log/*.out 2>/dev/null | sed 's/^/  | /'
			exit 1
		fi
		sleep 0.5
	done
	# shellcheck disable=SC2086
	set -- srun --mpi=pmix -N "$nodes" --ntasks-per-node="$ppn" -n $np -O --kill-on-bad-exit=1 \
		--input=none -t $((limit / 60 + 2)) ${WU_CLUSTER_SRUN_OPTS:-} "$prog" "$@"
fi

# The job, from the switch, bounded.  Its ranks (the processes in the node
# namespaces named like PROGRAM) are sampled twice a second: the fault mode
# kills one node's, and their shm regions are checked at the end.
base=$(basename "$prog" | cut -c1-15)
: >"$tmp/started"
start=$(date +%s)
in_node 0 timeout -k 10 "$limit" "$@" </dev/null &
job=$!
: >"$tmp/pids.raw"
: >"$tmp/sampling"
while [ -f "$tmp/sampling" ]; do
	i=1
	while [ $i -le "$nodes" ]; do
		for p in $(ip netns pids "$(node_ns $i)" 2>/dev/null); do
			[ "$(cat /proc/$p/comm 2>/dev/null)" = "$base" ] && echo "$i $p"
		done
		i=$((i + 1))
	done >>"$tmp/pids.raw" 2>/dev/null
	sleep 0.5
done &
sampler=$!
killed=0 killed_at=""
if [ -n "$kill_node" ]; then
	# Wait for every rank to exist, then SECONDS more, then the node goes.
	t=0
	while [ "$(sort -u "$tmp/pids.raw" | wc -l)" -lt $np ] && kill -0 $job 2>/dev/null && [ $t -lt $((limit * 10)) ]; do
		sleep 0.1
		t=$((t + 1))
	done
	sleep "${kill_after:-1}"
	for p in $(awk -v n="$kill_node" '$1 == n { print $2 }' "$tmp/pids.raw" | sort -u); do
		kill -9 "$p" 2>/dev/null && killed=$((killed + 1))
	done
	killed_at=$(($(date +%s) - start))
fi
wait $job
rc=$?
job=""
ended=$(($(date +%s) - start))
sleep 1
rm -f "$tmp/sampling"
wait "$sampler"
sampler=""
nranks=$(awk '{ print $2 }' "$tmp/pids.raw" | sort -u | grep -c .)
echo "cluster: $launcher $nodes x $ppn: ranks $nranks (pids seen), killed $killed${killed_at:+ at $killed_at s}, job ended after $ended s, status $rc"
# timeout's own statuses (mpirun returns 137 too when a rank died by SIGKILL).
hang=0
if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$ended" -ge "$limit" ]; }; then
	echo "cluster: HANG: the job was still there after $limit s"
	hang=1
fi
if [ -n "$kill_node" ]; then
	# The fault mode passes when the job ended by itself (any status) after
	# the kill; survivors still running are reported below.
	if [ $killed -eq 0 ]; then
		echo "cluster: FAIL: no rank of node $kill_node was there to kill"
		rc=1
	elif [ $hang = 0 ]; then
		echo "cluster: fault: the job ended $((ended - killed_at)) s after node $kill_node's $killed ranks were killed (status $rc)"
		rc=0
	fi
fi
# Ranks of a finished job: none may still run, none may leave anything in
# the run's /dev/shm once a new endpoint opened there (WU_CLUSTER_SHM_REAP).
left=0
# A launcher may return while its daemons still reap the ranks it killed
# (mpirun after a node's fault): they get 5 s to be gone.
i=0
while [ $i -lt 50 ]; do
	alive=0
	for p in $(awk '{ print $2 }' "$tmp/pids.raw" | sort -u); do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = "$base" ] && alive=1 && break
	done
	[ $alive = 0 ] && break
	sleep 0.1
	i=$((i + 1))
done
for p in $(awk '{ print $2 }' "$tmp/pids.raw" | sort -u); do
	if [ "$(cat /proc/$p/comm 2>/dev/null)" = "$base" ]; then
		echo "cluster: LEFTOVER: rank pid $p still runs"
		left=1
	fi
done
uid=$(id -u)
nleft=$(find /dev/shm -maxdepth 1 -name "wu$uid.*" | grep -c .)
if [ "$nleft" -gt 0 ] && [ -n "${WU_CLUSTER_SHM_REAP:-}" ]; then
	FI_SHM_REAP_AGE=0 "$WU_CLUSTER_SHM_REAP" >"$tmp/reap.log" 2>&1 ||
		{ echo "cluster: FAIL: $WU_CLUSTER_SHM_REAP:"; sed 's/^/  | /' "$tmp/reap.log"; left=1; }
	echo "cluster: shm: $nleft objects left by the job's ranks, $(find /dev/shm -maxdepth 1 -name "wu$uid.*" | grep -c .) after a new endpoint opened"
fi
for f in $(find /dev/shm -maxdepth 1 -name "wu$uid.*" | sort); do
	echo "cluster: LEFTOVER: $f"
	rm -f "$f"
	[ $left = 0 ] && left=3
done
[ $rc -ne 0 ] && exit $rc
exit $left
