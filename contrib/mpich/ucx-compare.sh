#!/bin/sh
# MPICH over Wireup's tcp provider against MPICH over UCX's tcp transport,
# 2 ranks, no shared memory on either side: one ping-pong program
# (test/prov/mpi_pingpong.c) compiled once with the ch4:ofi MPICH that
# contrib/mpich/check.sh builds, then run on that MPICH with our
# libfabric.so.1, and on Debian's libmpich12 (MPICH 4.0.2 built ch4:ucx,
# the same version and ABI) with UCX_TLS=tcp,self.  Prints the median
# one-way latency of 8 B and bandwidth of 1 MiB over RUNS runs each.
# For a person to run on an idle machine: on shared cores the numbers
# measure the scheduler.
#
# usage: sh contrib/mpich/ucx-compare.sh [WORKDIR]   (default: build-mpich-ucx)
#   MPICH_PREFIX=dir  the ch4:ofi MPICH (default: build-mpich/install)
#   WIREUP_LIB=dir    Wireup's libfabric.so.1 (default: build/src/.libs)
#   RUNS=5
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "${1:-$top/build-mpich-ucx}" && cd "${1:-$top/build-mpich-ucx}" && pwd)
prefix=${MPICH_PREFIX:-$top/build-mpich/install}
lib=${WIREUP_LIB:-$top/build/src/.libs}
runs=${RUNS:-5}

say() { printf '%s\n' "ucx-compare.sh: $*" >&2; }

if [ ! -x "$prefix/bin/mpicc" ] || [ ! -e "$lib/libfabric.so.1" ]; then
	say "need $prefix/bin/mpicc (contrib/mpich/check.sh) and $lib/libfabric.so.1"
	exit 1
fi
# Debian's MPICH library alone: mpich and libmpich-dev would take over
# the mpicc and mpiexec alternatives from Open MPI.
if ! dpkg -s libmpich12 >/dev/null 2>&1; then
	say "installing libmpich12"
	apt-get install -y -q libmpich12 >/dev/null
fi
ucx=$(ls /usr/lib/*/libmpich.so.12 | head -n 1)
# Our MPICH names its library libmpi.so.12, Debian's libmpich.so.12.
mkdir -p "$work/ucx"
ln -sf "$ucx" "$work/ucx/libmpi.so.12"
"$prefix/bin/mpicc" -O2 -o "$work/mpi_pingpong" "$top/test/prov/mpi_pingpong.c"

# run LABEL BYTES ITERS FIELD env... -> median of field FIELD (us or MB/s)
run() {
	label=$1 bytes=$2 iters=$3 field=$4
	shift 4
	i=0
	while [ "$i" -lt "$runs" ]; do
		env "$@" MPIR_CVAR_NOLOCAL=1 timeout 120 "$prefix/bin/mpiexec" -n 2 \
			"$work/mpi_pingpong" "$bytes" "$iters" 2>"$work/err.txt" |
			sed -n "s/.*: \([0-9.]*\) us one-way, \([0-9.]*\) MB\/s.*/\\$field/p"
		i=$((i + 1))
	done | sort -n | awk -v l="$label" '{ v[NR] = $1 } END {
		if (NR == 0) { print l ": no result"; exit }
		printf "%s: median %s of %d runs (min %s, max %s)\n", l, v[int((NR + 1) / 2)], NR, v[1], v[NR] }'
}
wireup="LD_LIBRARY_PATH=$lib FI_PROVIDER=tcp"
ucxenv="LD_LIBRARY_PATH=$work/ucx UCX_TLS=tcp,self"
say "load: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
run "Wireup tcp 8 B one-way us" 8 10000 1 $wireup
# shellcheck disable=SC2086
run "UCX tcp    8 B one-way us" 8 10000 1 $ucxenv
# shellcheck disable=SC2086
run "Wireup tcp 1 MiB MB/s    " 1048576 200 2 $wireup
# shellcheck disable=SC2086
run "UCX tcp    1 MiB MB/s    " 1048576 200 2 $ucxenv
say "load: $(cut -d' ' -f1-3 /proc/loadavg)"
