#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run-pmix.sh LAUNCHER N PROGRAM [ARGS...] -- run PROGRAM as N PMIx clients
# on this machine and return its exit status.
#
#   LAUNCHER = mpirun   Open MPI's mpirun (Debian openmpi-bin), as root and
#                       oversubscribed, no binding.
#   LAUNCHER = srun     srun --mpi=pmix -n N -O on the private cluster of
#                       contrib/launch/slurm-up.sh: SLURM_CONF must point at
#                       it, or WU_SLURM_DIR at the directory given to slurm-up.
#
# The launcher runs under a hard timeout (WU_LAUNCH_TIMEOUT seconds, default
# 120; exit status 124 when it expires), with stdin from /dev/null so it
# behaves the same with or without a terminal.  If one rank fails the others
# are killed rather than left waiting in a fence.  The status is 0 when every
# rank exits 0; otherwise mpirun gives the first failing rank's status and
# srun the highest over all ranks (peers it killed count as 128+signal, e.g.
# 143).  Extra launcher options can be given in WU_LAUNCH_OPTS (word-split).
set -u

usage() { echo "usage: $0 mpirun|srun N PROGRAM [ARGS...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
launcher=$1; n=$2; shift 2
case "$n" in ''|*[!0-9]*|0) usage ;; esac
limit=${WU_LAUNCH_TIMEOUT:-120}

# The identity of an enclosing PMIx job must not leak into this one (tuning
# through PMIX_MCA_* / OMPI_MCA_* is kept).
for v in $(env | sed -n 's/^\(PMIX_[A-Za-z0-9_]*\|PMI_[A-Za-z0-9_]*\|OMPI_COMM_WORLD_[A-Za-z0-9_]*\)=.*/\1/p'); do
	case "$v" in PMIX_MCA_*) ;; *) unset "$v" ;; esac
done

case "$launcher" in
mpirun)
	command -v mpirun >/dev/null 2>&1 || {
		echo "run-pmix: mpirun not found: install the Debian package openmpi-bin" >&2; exit 127; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_rmaps_base_oversubscribe=1
	# shellcheck disable=SC2086
	exec timeout -k 10 "$limit" mpirun --allow-run-as-root --oversubscribe --bind-to none \
		-np "$n" ${WU_LAUNCH_OPTS:-} "$@" </dev/null
	;;
srun)
	command -v srun >/dev/null 2>&1 || {
		echo "run-pmix: srun not found: install the Debian package slurm-client" >&2; exit 127; }
	conf=${SLURM_CONF:-}
	if [ -n "${WU_SLURM_DIR:-}" ]; then
		conf=$WU_SLURM_DIR/etc/slurm.conf
	fi
	if [ -z "$conf" ] || [ ! -f "$conf" ]; then
		echo "run-pmix: no cluster: set WU_SLURM_DIR (from slurm-up.sh) or SLURM_CONF" >&2; exit 2
	fi
	# An enclosing allocation (SLURM_JOB_ID, ...) belongs to another cluster.
	for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
	export SLURM_CONF="$conf"
	# shellcheck disable=SC2086
	exec timeout -k 10 "$limit" srun --mpi=pmix -n "$n" -O --kill-on-bad-exit=1 --input=none \
		--job-name=wu-pmix -t $((limit / 60 + 2)) ${WU_LAUNCH_OPTS:-} "$@" </dev/null
	;;
*)
	usage
	;;
esac
