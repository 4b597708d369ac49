#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check (issue 30): contrib/cluster/cluster.sh with 4 nodes x 4 ranks
# under mpirun and under Slurm (one slurmd per node namespace): the main job
# (contrib/wireup_pingpong, direct mode: every rank reaches all 15 others,
# and fetches nothing from PMIx for the 3 on its node), then Open MPI's OFI
# MTL on wireup (cluster_mpi's checked all-to-all), then node 2's ranks
# kill -9'd during the all-to-all: the job must end by itself, no rank left
# running, nothing left in the run's private /dev/shm once the job is gone
# and a new shm endpoint opened there (contrib/cluster/shm_reap: regions of
# ranks killed by a signal go with the next endpoint).  Slurm is tried only
# when its programs are installed.  SKIP (77) without root, ip, mpirun,
# namespaces or a mount namespace.  About 40 s on a quiet machine.
set -u
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
build=$(cd "$top_builddir" && pwd)
cluster=$top_srcdir/contrib/cluster/cluster.sh
pp=$build/contrib/wireup_pingpong
[ -x "$pp" ] || { echo "SKIP: $pp not built (configured without PMIx?)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
export WU_CLUSTER_SHM_REAP=$build/contrib/cluster/shm_reap
[ -x "$WU_CLUSTER_SHM_REAP" ] || { echo "FAIL: $WU_CLUSTER_SHM_REAP not built"; exit 1; }
command -v mpicc >/dev/null 2>&1 || { echo "SKIP: mpicc not found (Debian: libopenmpi-dev)"; exit 77; }
tmp=$(mktemp -d /tmp/wuc-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/cluster_mpi" "$top_srcdir/contrib/cluster/cluster_mpi.c" >"$tmp/cc.log" 2>&1 ||
	{ echo "FAIL: mpicc cluster_mpi.c"; cat "$tmp/cc.log"; exit 1; }
export LD_LIBRARY_PATH=$build/src/.libs
status=0
# run NAME EXPECT ARGS...: cluster.sh ARGS; pass when it exits 0 and the log
# has EXPECT (grep -E) lines as counted by the caller's check.
run()
{
	name=$1
	shift
	sh "$cluster" "$@" >"$tmp/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "SKIP: $name: $(grep SKIP "$tmp/$name.log")"
		exit 77
	fi
}
verdict()
{
	if [ "$1" = ok ]; then
		echo "PASS: $name: $(grep -E '^cluster: (mpirun|slurm|fault:) ' "$tmp/$name.log" | tail -1)"
	else
		echo "FAIL: $name (status $rc)"
		tail -40 "$tmp/$name.log" | sed 's/^/  | /'
		status=1
	fi
}
launchers=mpirun
PATH=$PATH:/usr/sbin:/sbin
if command -v slurmd >/dev/null 2>&1 && command -v slurmctld >/dev/null 2>&1 &&
	command -v srun >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
	launchers="mpirun slurm"
else
	echo "SKIP part: Slurm (Debian: slurmctld slurmd slurm-client munge) not installed"
fi
for l in $launchers; do
	run $l-wireup -l $l -n 4 -m 4 -t 120 -e FI_PMIX_MODE=direct -e WU_PINGPONG_STATS=1 "$pp"
	ok=$(grep -c 'peers checked OK' "$tmp/$name.log")
	stats=$(grep -c '^wireup_pingpong stats' "$tmp/$name.log")
	nonlocal=$(grep '^wireup_pingpong stats' "$tmp/$name.log" | grep -vc 'local_gets 0 local_bytes 0 ')
	[ $rc -eq 0 ] && [ "$ok" -eq 16 ] && [ "$stats" -eq 16 ] && [ "$nonlocal" -eq 0 ] && v=ok || v=no
	[ "$nonlocal" -ne 0 ] && echo "  $nonlocal ranks fetched addresses of ranks on their node"
	verdict $v
	run $l-mpi -l $l -n 4 -m 4 -t 120 -e OMPI_MCA_pml=cm -e OMPI_MCA_mtl=ofi "$tmp/cluster_mpi"
	[ $rc -eq 0 ] && grep -q '^cluster_mpi: PASS 16 ranks' "$tmp/$name.log" && v=ok || v=no
	verdict $v
	run $l-fault -l $l -n 4 -m 4 -t 60 -k 2 -a 1 -e OMPI_MCA_pml=cm -e OMPI_MCA_mtl=ofi \
		"$tmp/cluster_mpi" 30
	# Ranks killed by a signal (the node's SIGKILL, the launcher's abort of
	# the others) leave their regions; the next endpoint removes them
	# (cluster.sh: status 3 when it did not).
	grep '^cluster: shm: ' "$tmp/$name.log" | sed 's/^/  /'
	[ $rc -eq 0 ] && grep -q '^cluster: fault: the job ended' "$tmp/$name.log" && v=ok || v=no
	verdict $v
done
exit $status
