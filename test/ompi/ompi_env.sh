# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the Open MPI scripts in test/ompi: finds Debian's mpicc and
# mpirun (exit 77 when one is missing), our library, builds mpi_check into
# $tmp and clears the environment of everything that would choose a
# provider or a component for Open MPI, so that what it picks is its own
# default.  Sets here, libdir, tmp, prog; defines run_check and expect_n.
set -u
here=$(cd "$(dirname "$0")" && pwd)
for t in mpicc mpirun; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
		exit 77
	fi
done
lib=${WU_LIB:-${top_builddir:-$(cd "$here/../.." && pwd)/build}/src/.libs/libfabric.so.1}
if [ ! -e "$lib" ]; then
	echo "FAIL: our library $lib is not built"
	exit 1
fi
libdir=$(cd "$(dirname "$lib")" && pwd)
tmp=$(mktemp -d /tmp/wu-ompi.XXXXXX)
prog=$tmp/mpi_check
if ! mpicc -O2 -o "$prog" "$here/mpi_check.c" >"$tmp/cc.log" 2>&1; then
	echo "FAIL: mpicc $here/mpi_check.c"
	cat "$tmp/cc.log"
	rm -rf "$tmp"
	exit 1
fi
# No FI_* (ours or libfabric's) and no OMPI_MCA_* from the caller.
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0

# expect_n WHAT N PATTERN LOG: PATTERN (grep -E) is on exactly N lines.
expect_n()
{
	got=$(grep -Ec -- "$3" "$4")
	if [ "$got" -eq "$2" ]; then
		echo "  ok: $1 ($got)"
		return 0
	fi
	echo "  FAIL: $1: $got lines match '$3', expected $2"
	failed=1
	return 1
}

# run_mpi NAME NP ARGS...: mpirun of mpi_check (with "rma") on NP ranks of
# this node with ARGS before the program; output in $tmp/NAME.log.  A
# loaded 2-core machine runs this in seconds; the bound is for hangs.
run_mpi()
{
	name=$1 np=$2
	shift 2
	timeout -k 10 900 mpirun --oversubscribe --bind-to none -np "$np" "$@" \
		-x LD_LIBRARY_PATH="$libdir" "$prog" rma >"$tmp/$name.log" 2>&1
	rc=$?
	failed=0
}

# check_run NAME NP: the run passed on NP ranks and every rank loaded our
# library; then the script's own expect_n lines for it, then end_run.
check_run()
{
	log=$tmp/$1.log
	if [ $rc -eq 0 ] && grep -q "^mpi_check: PASS $2 ranks" "$log"; then
		echo "PASS: $1: mpi_check on $2 ranks"
	else
		echo "FAIL: $1: mpi_check on $2 ranks (exit $rc)"
		failed=1
	fi
	grep '^mpi_check: ' "$log" | grep -v '^mpi_check: rank ' | sed 's/^/  /'
	expect_n "every rank loaded $libdir/libfabric.so.1" "$2" \
		"^mpi_check: rank [0-9]+ libfabric $libdir/libfabric\.so\.1\$" "$log"
}

# end_run NAME: shows a failed run's output.
end_run()
{
	[ $failed -eq 0 ] && return 0
	status=1
	echo "  --- $tmp/$1.log, last 80 lines:"
	tail -80 "$tmp/$1.log" | sed 's/^/  | /'
}
