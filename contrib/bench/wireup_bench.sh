#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# wireup provider benchmark (issue 15, Speed), 2 ranks on one node, medians
# of RUNS runs (default 5), every column in each run:
#   wireup   Open MPI (pml cm, OFI MTL, no provider list: it picks wireup)
#            on our library
#   rxm      the same on Debian's libfabric, tcp;ofi_rxm
#   vader    Open MPI's own ob1 + vader (no libfabric)
# running test/prov/common/mpi_pingpong.c (built here with mpicc) at 8 B (one-way
# usec) and 1 MiB (MB/s of 10^6 bytes); then Debian's fi_pingpong -e rdm on
# our library through -p shm and through -p wireup at 8 B, for the cost
# the multiplexer adds.  Prints ratios and the issue's targets as met or
# MISSED.  MPICH against ch4:ucx: contrib/mpich/ucx-compare.sh.  A benchmark,
# not a test: it exits 0 whatever the numbers.
#   contrib/bench/wireup_bench.sh [RUNS]     (env: BUILD=build dir)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
runs=${1:-5}
libdir=$build/src/.libs
for t in mpicc mpirun fi_pingpong; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (apt-get install libopenmpi-dev openmpi-bin libfabric-bin)"; exit 77; }
done
[ -e "$libdir/libfabric.so.1" ] || { echo "SKIP: $libdir/libfabric.so.1 is not built"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Both sides of each two-process run on CPUs of their own (pin.sh).
. "$here/pin.sh"
mpicc -O2 -o "$tmp/pp" "$top/test/prov/common/mpi_pingpong.c" || exit 1
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\|OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$here/median.sh"
port=$(( 21000 + ($$ % 500) * 20 ))

# mpi CONFIG SIZE ITERS -> "usec MBps"
mpi() {
	case $1 in
	wireup) set -- "$2" "$3" env LD_LIBRARY_PATH="$libdir" mpirun -np 2 --bind-to core --mca pml cm --mca mtl ofi ;;
	rxm) set -- "$2" "$3" mpirun -np 2 --bind-to core --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" ;;
	vader) set -- "$2" "$3" mpirun -np 2 --bind-to core --mca pml ob1 --mca btl self,vader ;;
	esac
	sz=$1 it=$2
	shift 2
	timeout 300 "$@" "$tmp/pp" "$sz" "$it" 2>/dev/null | awk '/^mpi_pingpong/ {print $4, $7}'
}
# fp PROV -> usec (Debian's fi_pingpong at 8 B on our library)
fp() {
	port=$((port + 1))
	LD_LIBRARY_PATH=$libdir timeout 120 $pin_a fi_pingpong -p "$1" -e rdm -B $port -S 8 -I 50000 >/dev/null 2>&1 &
	s=$!
	sleep 0.3
	LD_LIBRARY_PATH=$libdir timeout 120 $pin_b fi_pingpong -p "$1" -e rdm -P $port -S 8 -I 50000 127.0.0.1 2>/dev/null |
		awk 'NR>1 && $1 ~ /^[0-9]/ {print $7}' | tail -1
	wait $s 2>/dev/null
}
for r in $(seq "$runs"); do
	for c in wireup rxm vader; do
		mpi $c 8 20000 | awk '{print $1}' >>"$tmp/$c.lat"
		mpi $c 1048576 300 | awk '{print $2}' >>"$tmp/$c.bw"
	done
	fp shm >>"$tmp/fp.shm"
	fp wireup >>"$tmp/fp.wireup"
done
get() { median <"$tmp/$1"; }
printf '%-8s %12s %14s\n' "" "8 B usec" "1 MiB MB/s"
for c in wireup rxm vader; do printf '%-8s %12s %14s\n' $c "$(get $c.lat)" "$(get $c.bw)"; done
s=$(get fp.shm) w=$(get fp.wireup)
echo "fi_pingpong 8 B one-way on our library: shm $s us, wireup $w us"
awk -v wl="$(get wireup.lat)" -v vl="$(get vader.lat)" -v wb="$(get wireup.bw)" -v vb="$(get vader.bw)" \
	-v rl="$(get rxm.lat)" -v s="$s" -v w="$w" 'function ok(c) { return c ? "met" : "MISSED" }
BEGIN {
	if (vl > 0 && wl > 0) printf "8 B: wireup %.2fx vader (target <= 3x: %s), %.2fx rxm\n", wl / vl, ok(wl <= 3 * vl), wl / rl
	if (vb > 0 && wb > 0) printf "1 MiB: wireup %.2fx vader (target >= 1x: %s)\n", wb / vb, ok(wb >= vb)
	if (s > 0 && w > 0) printf "multiplexer cost at 8 B: %+.0f ns (target <= 30 ns: %s)\n", (w - s) * 1000, ok((w - s) * 1000 <= 30)
}'
exit 0
