#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI's OFI MTL (Debian's openmpi-bin, unmodified) on our library: two
# ranks under mpirun with pml cm / mtl ofi and FI_PROVIDER=tcp, an MPI
# ping-pong at 8 B and 1 MiB and an allreduce, each run bounded by a
# timeout.  Open MPI 4.1 excludes providers named "tcp" from the MTL by
# default (libfabric's was MSG-only then): the exclude list is given
# without it.  Exit 77 (skip) when mpicc or mpirun is missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=${WU_LIB:-${top_builddir:-$(cd "$here/../../.." && pwd)/build}/src/.libs/libfabric.so.1}
libdir=$(cd "$(dirname "$lib")" && pwd)
for t in mpicc mpirun; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
		exit 77
	fi
done
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "FAIL: our library not found in $libdir"
	exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! mpicc -O2 -o "$tmp/mpi_pingpong" "$here/../common/mpi_pingpong.c" 2>"$tmp/cc.log"; then
	echo "FAIL: mpicc"; cat "$tmp/cc.log"; exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
# Few 1 MiB iterations: on a loaded machine each round trip of two
# spinning ranks waits for the scheduler (a correctness test, not a timing).
for size in 8 1048576; do
	iters=1000
	[ $size -gt 65536 ] && iters=50
	timeout -k 5 180 mpirun --oversubscribe --bind-to none -np 2 --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_exclude shm,sockets,udp,rstream,usnic \
		-x LD_LIBRARY_PATH="$libdir" -x FI_PROVIDER=tcp \
		"$tmp/mpi_pingpong" $size $iters >"$tmp/out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -q "^mpi_pingpong $size bytes: .* allreduce 3$" "$tmp/out"; then
		echo "PASS: OFI MTL on our tcp, $size B: $(grep '^mpi_pingpong' "$tmp/out")"
	else
		echo "FAIL: OFI MTL on our tcp, $size B (exit $rc)"
		sed 's/^/  /' "$tmp/out" | tail -30
		status=1
	fi
done
exit $status
