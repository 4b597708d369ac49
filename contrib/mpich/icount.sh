#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where MPICH's 8 B ping-pong goes, in instructions (issue 15): callgrind
# counts one rank of test/prov/common/mpi_pingpong.c (2 ranks, MPICH's shared
# memory off, MPIR_CVAR_NOLOCAL=1) inside MPI_Send and MPI_Recv only, so
# MPI_Init, the barrier and MPI_Finalize stay out, once on the ch4:ofi MPICH
# that contrib/mpich/check.sh builds with our libfabric.so.1 (the provider
# MPICH picks, wireup, or PROVIDER) and once on Debian's libmpich12
# (ch4:ucx, UCX's default transports), the same binary.  The other rank runs
# natively, so the counted rank mostly finds each reply already there; when
# the machine's load deschedules that rank, the counted one polls an empty
# queue meanwhile and every empty poll adds its instructions: the polls per
# iteration are printed (fi_cq_read calls on Wireup, ucp_worker_progress on
# UCX; 1.0 is the floor), and a run with more than 1.2 is repeated, up to
# TRIES times, keeping the one with the fewest.  Prints, per
# iteration (one MPI_Send and one MPI_Recv of rank 0: one message's send
# and one message's receive, as contrib/bench/shm_icount counts a message),
# the instructions of each library (self cost: MPICH's own, the fabric
# library's, UCX's, libc's) and our library's costliest functions.
# Counts are what the machine's load does not change; a benchmark for a
# person, not a test.
#
# usage: sh contrib/mpich/icount.sh [WORKDIR]   (default: build-mpich-icount)
#   MPICH_PREFIX=dir  the ch4:ofi MPICH (default: build-mpich/install)
#   WIREUP_LIB=dir    Wireup's libfabric.so.1 (default: build/src/.libs)
#   PROVIDER=name     export FI_PROVIDER=name (default: unset, wireup)
#   ITERS=20000       ping-pong iterations counted
#   UCX=0             skip the ch4:ucx run
#   TRIES=3           runs per column at most (see above)
set -eu

command -v valgrind >/dev/null || { echo "SKIP: valgrind missing (apt-get install valgrind)"; exit 77; }
# shellcheck disable=SC2034 # both read by common.sh
me=icount.sh work_default=build-mpich-icount
# shellcheck source=contrib/mpich/common.sh
. "$(dirname "$0")/common.sh"
iters=${ITERS:-20000}
"$prefix/bin/mpicc" -O2 -g -o "$work/mpi_pingpong" "$top/test/prov/common/mpi_pingpong.c"

# byobj FILE -> "instructions object" lines: self cost per ELF object of a
# callgrind output (a cost line after calls= is the callee's inclusive
# cost, counted in the callee's own object).
byobj() {
	awk '
	function obname(s,   id, rest) {
		if (!match(s, /^\([0-9]+\)/))
			return s
		id = substr(s, 2, RLENGTH - 2); rest = substr(s, RLENGTH + 1); sub(/^ /, "", rest)
		if (rest != "") name[id] = rest
		return name[id]
	}
	/^ob=/ { cur = obname(substr($0, 4)); next }
	/^cob=/ { obname(substr($0, 5)); next }
	/^calls=/ { skip = 1; next }
	/^[0-9+*-]/ { if (skip) { skip = 0; next }; tot[cur] += $2; next }
	END { for (o in tot) printf "%d %s\n", tot[o], o }' "$1" | sort -rn
}

# polls FILE FUNCTION -> calls of FUNCTION (a string in its name) per
# iteration in a callgrind output, to two decimals
polls() {
	# From / : run inside the source tree it names files relative to it and
	# leaves callers out of the tree.
	(cd / && callgrind_annotate --tree=caller --auto=no "$1" 2>/dev/null) | awk -v f="$2" -v n="$iters" '
		/^ *[0-9,]+ .*  < / { if (match($0, /\([0-9,]+x\)/)) { c = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", c); sum += c } ; next }
		/^ *[0-9,]+ .*  \*  / { if (index($0, f)) { printf "%.2f", sum / n; found = 1; exit } }
		/^ *$/ { sum = 0 }
		END { if (!found) printf "unknown" }'
}

# count LABEL POLLFN env... -> callgrind of rank 0 into $work/cg.LABEL (the
# try with the fewest polls per iteration), then the table
count() {
	label=$1 pollfn=$2
	shift 2
	best=
	try=1
	while [ "$try" -le "${TRIES:-3}" ]; do
		rm -f "$work/cg.$label.try"
		env "$@" MPIR_CVAR_NOLOCAL=1 timeout 900 "$mpiexec" \
			-n 1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.$label.try" \
			--toggle-collect='*MPI_Send' --toggle-collect='*MPI_Recv' "$work/mpi_pingpong" 8 "$iters" : \
			-n 1 "$work/mpi_pingpong" 8 "$iters" >"$work/$label.out" 2>&1 ||
			{ say "$label: run failed (see $work/$label.out)"; return 0; }
		[ -s "$work/cg.$label.try" ] || { say "$label: no callgrind output"; return 0; }
		p=$(polls "$work/cg.$label.try" "$pollfn")
		say "$label: try $try, $p polls per iteration"
		if [ -z "$best" ] || awk -v a="$p" -v b="$best" 'BEGIN { exit !(a + 0 < b + 0) }'; then
			best=$p
			mv "$work/cg.$label.try" "$work/cg.$label"
		fi
		awk -v a="$best" 'BEGIN { exit !(a != "unknown" && a + 0 <= 1.2) }' && break
		try=$((try + 1))
	done
	rm -f "$work/cg.$label.try"
	echo "== $label: instructions per iteration (rank 0: one 8 B MPI_Send + one MPI_Recv), $best polls per iteration"
	byobj "$work/cg.$label" | awk -v n="$iters" '
		{ t += $1; o = $2; for (i = 3; i <= NF; i++) o = o " " $i; v[NR] = $1; w[NR] = o }
		END { for (i = 1; i <= NR; i++) printf "%10.1f  %s\n", v[i] / n, w[i]
		      printf "%10.1f  total\n", t / n }'
}

unset FI_PROVIDER UCX_TLS
count wireup 'cq.cpp:wu::cq::(anonymous namespace)::cq_read(' LD_LIBRARY_PATH="$lib" ${PROVIDER:+FI_PROVIDER=$PROVIDER}
if [ -s "$work/cg.wireup" ]; then
	echo "-- libfabric.so.1's costliest functions (self instructions per iteration)"
	callgrind_annotate --auto=no --inclusive=no --threshold=100 "$work/cg.wireup" 2>/dev/null |
		grep 'libfabric\.so' | head -n 15 |
		awk -v n="$iters" '{ c = $1; gsub(",", "", c); sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, "")
			sub(/ \[.*\]$/, ""); sub(/^.*\/src\//, "src/"); printf "%10.1f  %s\n", c / n, substr($0, 1, 110) }'
fi
if [ "${UCX:-1}" != 0 ]; then
	debian_mpich "$work/ucx" >/dev/null
	count ucx ':ucp_worker_progress ' LD_LIBRARY_PATH="$work/ucx"
fi
