#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make bench-init-icount (issue 30): instructions of MPI_Init per rank under
# callgrind, which the machine's load cannot disturb, for the same
# cluster_mpi binary under Open MPI's
#   ob1         pml ob1, btl self,vader,tcp
#   mtl-wireup  pml cm, mtl ofi on this build's libfabric (no provider named)
#   mtl-debian  pml cm, mtl ofi on Debian's libfabric (its default choice)
# and, for each libfabric, the instructions spent inside it (its code and what
# it called, every thread, from its load to exit) plus what loading it costs
# a process that already has what the ob1 ranks load (dlopen_cost).  "floor" is
# MPI_Init minus both: Open MPI's cm path with a provider that cost nothing,
# so "floor / ob1" above 1 is what no provider can remove.
#   contrib/cluster/init_icount.sh [RANKS]   (env: BUILD=build dir; RANKS
#   default 2, one node, mpirun).  A benchmark, not a test: exits 0 whatever
#   the numbers.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../bench/median.sh"
build=$(cd "${BUILD:-build}" && pwd) || exit 1
np=${1:-2}
for t in valgrind mpirun mpicc python3 cc; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (contrib/install-deps.sh installs it)"; exit 77; }
done
ours=$build/src/.libs/libfabric.so.1
[ -e "$ours" ] || { echo "init_icount: $ours not built" >&2; exit 1; }
deb=$(ldconfig -p | awk '$1 == "libfabric.so.1" && $NF ~ /x86_64|\/lib/ { print $NF; exit }')
tmp=$(mktemp -d /tmp/wu-icount.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/cluster_mpi" "$here/cluster_mpi.c" || exit 1
cc -O2 -o "$tmp/dlopen_cost" "$here/dlopen_cost.c" -ldl || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --bind-to none as the cluster runs (more ranks than cores): Open MPI then
# loads the hwloc topology in every rank of both stacks.
# Under valgrind hwloc's x86 backend is off (it says so on stderr); the
# topology is the same for all three.
run() { # name, then mpirun arguments
	name=$1; shift
	mpirun -np "$np" --oversubscribe --bind-to none "$@" valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/$name.%p.cg" "$tmp/cluster_mpi" >"$tmp/$name.log" 2>&1 ||
		{ echo "init_icount: $name failed:" >&2; tail -5 "$tmp/$name.log" >&2; return 1; }
	grep -q "cluster_mpi: PASS $np ranks" "$tmp/$name.log" ||
		{ echo "init_icount: $name: no PASS line" >&2; return 1; }
}
run ob1 --mca pml ob1 --mca btl self,vader,tcp || exit 1
run mtl-wireup -x LD_LIBRARY_PATH="$build/src/.libs" --mca pml cm --mca mtl ofi || exit 1
have_deb=no
if [ -n "$deb" ]; then
	(unset LD_LIBRARY_PATH; run mtl-debian --mca pml cm --mca mtl ofi) && have_deb=yes
fi
# Loading cost: what dlopen of the library adds to a process that already
# has every library the ob1 ranks had (hwloc's plugins and what they bring,
# libstdc++ among them, come with Open MPI's topology either way).
# hwloc's plugin modules stay out: they need libhwloc's symbols global first.
set -- "$tmp"/ob1.*.cg
[ -e "$1" ] || exit 1
sed -n 's/^c\{0,1\}ob=([0-9]*) \(\/.*\.so[.0-9]*\)$/\1/p' "$1" |
	grep -v -e /openmpi3/ -e /hwloc/ -e vgpreload -e /ld-linux | sort -u >"$tmp/preload"
load() { # library path -> instructions of its dlopen
	# shellcheck disable=SC2046
	valgrind --tool=callgrind --callgrind-out-file="$tmp/load.cg" --toggle-collect=load_target \
		"$tmp/dlopen_cost" "$1" $(cat "$tmp/preload") >"$tmp/load.log" 2>&1 ||
		{ echo "init_icount: loading $1 failed:" >&2; tail -3 "$tmp/load.log" >&2; return 1; }
	awk '/^summary:/ { print $2 }' "$tmp/load.cg"
}
echo "# init_icount $(date -u '+%Y-%m-%d %H:%M UTC'), $np ranks on one node, Open MPI $(mpirun --version 2>/dev/null | awk 'NR == 1 { print $NF }'), libfabric: $ours${deb:+ and $deb}"
echo
echo "| stack | MPI_Init Ir/rank | inside libfabric Ir/rank | loading libfabric Ir | floor (MPI_Init - both) | MPI_Init / ob1 | floor / ob1 |"
echo "|---|---|---|---|---|---|---|"
ob1=$(python3 "$here/callgrind_into.py" libfabric.so ompi_mpi_init "$tmp"/ob1.*.cg | awk '{ print $5 }' | median)
awk -v o="$ob1" 'BEGIN { exit !(o > 0) }' || { echo "init_icount: no ompi_mpi_init in the ob1 profiles" >&2; exit 1; }
printf '| ob1 | %d | - | - | - | 1.00 | - |\n' "$ob1"
for s in mtl-wireup mtl-debian; do
	case $s in mtl-wireup) lib=$ours ;; *) [ $have_deb = yes ] || continue; lib=$deb ;; esac
	python3 "$here/callgrind_into.py" libfabric.so ompi_mpi_init "$tmp"/$s.*.cg >"$tmp/$s.into"
	init=$(awk '{ print $5 }' "$tmp/$s.into" | median)
	into=$(awk '{ print $3 }' "$tmp/$s.into" | median)
	ld=$(load "$lib") || exit 1
	awk -v s=$s -v i="$init" -v n="$into" -v l="$ld" -v o="$ob1" 'BEGIN {
		f = i - n - l
		printf "| %s | %d | %d | %d | %d | %.2f | %.2f |\n", s, i, n, l, f, i / o, f / o }'
done
