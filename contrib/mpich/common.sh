# SPDX-License-Identifier: BSD-3-Clause
# Sourced by contrib/mpich/ucx-compare.sh and icount.sh, which set me (their
# name, for messages) and work_default (their work directory under the
# tree's top) first; $1 is their WORKDIR argument.  Sets top, work, prefix
# (MPICH_PREFIX: the ch4:ofi MPICH of contrib/mpich/check.sh), lib
# (WIREUP_LIB: our libfabric.so.1) and mpiexec, and exits when either is
# missing.
# shellcheck shell=sh disable=SC2034,SC2154 # set here for, and by, the caller
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "${1:-$top/$work_default}" && cd "${1:-$top/$work_default}" && pwd)
prefix=${MPICH_PREFIX:-$top/build-mpich/install}
lib=${WIREUP_LIB:-$top/build/src/.libs}
mpiexec=$prefix/bin/mpiexec

say() { printf '%s\n' "$me: $*" >&2; }

if [ ! -x "$prefix/bin/mpicc" ] || [ ! -e "$lib/libfabric.so.1" ]; then
	say "need $prefix/bin/mpicc (contrib/mpich/check.sh) and $lib/libfabric.so.1"
	exit 1
fi

# debian_mpich DIR -> DIR/libmpi.so.12 is Debian's libmpich.so.12 (MPICH
# 4.0.2 ch4:ucx, the same ABI: our MPICH names its library libmpi.so.12),
# installed if missing; prints the library's path.  Debian's MPICH library
# alone: mpich and libmpich-dev would take over the mpicc and mpiexec
# alternatives from Open MPI.
debian_mpich() {
	if ! dpkg -s libmpich12 >/dev/null 2>&1; then
		say "installing libmpich12"
		apt-get install -y -q libmpich12 >/dev/null
	fi
	set -- "$1" "$(find /usr/lib -maxdepth 2 -name libmpich.so.12 | head -n 1)"
	mkdir -p "$1"
	ln -sf "$2" "$1/libmpi.so.12"
	printf '%s\n' "$2"
}
