#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# MPICH, unmodified, on Wireup: Debian's MPICH source (apt-get source mpich)
# built with --with-device=ch4:ofi, then run so that every libfabric call is
# ours: cpi, then the pt2pt, comm, coll, rma and datatype directories of
# MPICH's test suite, each with at most 2 and at most 4 ranks, on the
# provider MPICH picks by itself (no FI_PROVIDER: the wireup provider,
# asserted from MPICH's own MPIR_CVAR_DEBUG_SUMMARY line), every message
# through Wireup (MPICH has no shared memory module, and
# MPIR_CVAR_NOLOCAL=1).  Prints a pass/fail table per directory (and as markdown,
# WORKDIR/results.md, for docs/results.md).  For a
# person to run, not part of CI: the MPICH build takes 30+ minutes on two
# cores, the tests about as long.
#
# usage: sh contrib/mpich/check.sh [WORKDIR]      (default: build-mpich)
#   BUILD=debian     how MPICH meets Wireup:
#                    debian: configured against Debian's libfabric-dev
#                      headers (--with-libfabric=/usr), run with
#                      LD_LIBRARY_PATH at WIREUP_LIB;
#                    installed: this tree configured and `make install`ed
#                      into WORKDIR/wireup, MPICH --with-libfabric=WORKDIR/wireup;
#                    embedded: this tree's HEAD (git archive, autogen.sh)
#                      as MPICH's modules/libfabric, --with-libfabric=embedded
#                      (libmpi.so carries Wireup; no libfabric.so.1 loaded).
#                    installed and embedded build in WORKDIR/build-BUILD and
#                    install into WORKDIR/install-BUILD.
#   PROVIDER=name    export FI_PROVIDER=name (default: unset, MPICH picks)
#   EXPECT=name      the provider MPICH must select (default: PROVIDER, or
#                    wireup); check.sh exits 1 when it selects another
#   WIREUP_LIB=dir   Wireup's libfabric.so.1 for BUILD=debian (default:
#                    build/src/.libs, built first if missing)
#   NPS="2 4"        rank caps (runtests -maxnp): a test listed for more
#                    ranks runs with the cap
#   DIRS="pt2pt ..." test directories
#   MPITEST_TIMEOUT  seconds per test (default here 300)
#   JOBS=2           make -j
#   MPICH_PREFIX=dir  reuse an installed MPICH (its bin/mpiexec and
#                    lib/libmpi.so) instead of building one; then
#   MPICH_TESTDIR=dir is its built test tree (BUILD/test/mpi, configured
#                    with the same prefix) and WORKDIR only holds the logs
#   MPICH_SRC=dir    an unpacked MPICH source to build instead of
#                    apt-get source
#   STOP=configure   stop after MPICH's configure (checks the build path)
#   SUMMARY_ONLY=1   run nothing, print the table again from WORKDIR's logs
#   Passing WIREUP_LIB=/usr/lib/x86_64-linux-gnu runs the same table on
#   Debian's libfabric, for comparison.
set -eu

mode=${BUILD:-debian}
case $mode in debian|installed|embedded) ;; *) echo "check.sh: BUILD=$mode: debian, installed or embedded" >&2; exit 1 ;; esac
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "${1:-$top/build-mpich}" && cd "${1:-$top/build-mpich}" && pwd)
lib=${WIREUP_LIB:-$top/build/src/.libs}
nps=${NPS:-"2 4"}
dirs=${DIRS:-"pt2pt comm coll rma datatype"}
jobs=${JOBS:-2}
export MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-300}
log=$work/log
mkdir -p "$log"

say() { printf '%s\n' "check.sh: $*" >&2; }

# 1. Wireup's library.
if [ "$mode" = debian ] && [ ! -e "$lib/libfabric.so.1" ]; then
	say "building Wireup in $top/build"
	(cd "$top" && ./autogen.sh && mkdir -p build && cd build && ../configure -q && nice make -j"$jobs") \
		>"$log/wireup-build.log" 2>&1 || { say "Wireup build failed: $log/wireup-build.log"; exit 1; }
fi

if [ "$mode" = debian ]; then
	prefix=${MPICH_PREFIX:-$work/install}
	bld=$work/build
else
	prefix=${MPICH_PREFIX:-$work/install-$mode}
	bld=$work/build-$mode
fi
tests=${MPICH_TESTDIR:-$bld/test/mpi}
if [ -n "${MPICH_PREFIX:-}" ]; then
	if [ ! -x "$prefix/bin/mpiexec" ] || [ ! -e "$prefix/lib/libmpi.so" ]; then
		say "MPICH_PREFIX=$prefix has no bin/mpiexec or lib/libmpi.so"
		exit 1
	fi
	if [ ! -e "$tests/runtests" ]; then
		say "MPICH_TESTDIR=$tests has no runtests (give MPICH's BUILD/test/mpi)"
		exit 1
	fi
	# The build tree around the test tree, for examples/cpi.
	bld=$(cd "$tests/../.." && pwd)
	say "reusing MPICH in $prefix, tests in $tests"
fi

# 2. MPICH's source, as Debian ships it.
if [ -z "${MPICH_PREFIX:-}" ]; then
for p in libfabric-dev dpkg-dev libhwloc-dev; do
	if ! dpkg -s "$p" >/dev/null 2>&1; then
		say "installing $p"
		apt-get install -y -q "$p" >/dev/null
	fi
done
src=${MPICH_SRC:-$(ls -d "$work"/mpich-*/ 2>/dev/null | head -n 1 || true)}
if [ -z "$src" ]; then
	say "apt-get source mpich (in $work)"
	if ! (cd "$work" && apt-get source -q mpich) >"$log/source.log" 2>&1; then
		say "apt-get source failed ($log/source.log): enable deb-src, e.g."
		say "  sed -i 's/^Types: deb\$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources && apt-get update"
		exit 1
	fi
	src=$(ls -d "$work"/mpich-*/ | head -n 1)
fi
src=${src%/}

# 2b. Wireup for MPICH to build against: installed into a prefix, or
# embedded as MPICH's modules/libfabric (in a copy of the source: the
# original stays as Debian ships it).
withfab=/usr
if [ "$mode" = installed ]; then
	lib=$work/wireup/lib
	withfab=$work/wireup
	if [ ! -e "$lib/libfabric.so.1" ]; then
		say "building and installing Wireup into $withfab"
		[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) >"$log/wireup-install.log" 2>&1
		mkdir -p "$work/wireup-build"
		(cd "$work/wireup-build" && "$top/configure" -q --prefix="$withfab" && nice make -j"$jobs" &&
			make install) >>"$log/wireup-install.log" 2>&1 ||
			{ say "Wireup install failed: $log/wireup-install.log"; exit 1; }
	fi
elif [ "$mode" = embedded ]; then
	withfab=embedded
	esrc=$work/mpich-embedded
	if [ ! -e "$esrc/modules/libfabric/configure" ]; then
		say "copying MPICH's source to $esrc, this tree's HEAD as modules/libfabric"
		rm -rf "$esrc" && cp -a "$src" "$esrc" && rm -rf "$esrc/modules/libfabric" &&
			mkdir "$esrc/modules/libfabric" ||
			{ say "cannot copy $src to $esrc"; exit 1; }
		git -C "$top" archive HEAD | tar -x -C "$esrc/modules/libfabric" ||
			{ say "git archive of $top failed (the embedded build takes a git tree's HEAD)"; exit 1; }
		(cd "$esrc/modules/libfabric" && ./autogen.sh) >"$log/wireup-autogen.log" 2>&1 ||
			{ say "autogen.sh in $esrc/modules/libfabric failed: $log/wireup-autogen.log"; exit 1; }
	fi
	src=$esrc
fi

# 3. MPICH against Debian's libfabric headers (or Wireup's): ch4:ofi, no shared memory
# module (every message goes through libfabric), no Fortran, C++ or ROMIO,
# the dataloop datatype engine (yaksa's generated code triples the build).
if [ ! -x "$prefix/bin/mpiexec" ]; then
	say "configuring and building MPICH (log in $log/mpich-*.log; 30+ minutes)"
	mkdir -p "$bld"
	(cd "$bld" && nice "$src/configure" --prefix="$prefix" --with-device=ch4:ofi --with-libfabric="$withfab" \
		--with-hwloc=/usr --with-datatype-engine=dataloop --with-ch4-shmmods=none \
		--disable-fortran --disable-cxx --disable-romio --enable-fast=O2 --disable-debuginfo \
		--enable-g=none --without-cuda --without-ze) >"$log/mpich-configure.log" 2>&1 ||
		{ say "MPICH configure failed: $log/mpich-configure.log"; exit 1; }
	if [ "${STOP:-}" = configure ]; then
		say "MPICH configured in $bld (STOP=configure)"
		exit 0
	fi
	# MPICH takes libfabric's link line from Debian's libfabric.pc with
	# its private (static-only) libraries, some of which Debian does not
	# ship as -dev: drop those that are not installed.
	for l in psm_infinipath psm2 rdmacm; do
		if ! ls /usr/lib/*/lib$l.so /usr/lib/lib$l.so >/dev/null 2>&1; then
			grep -rl -e "-l$l" "$bld" --include=Makefile --include='mpicc*' --include=config.status \
				--include='*.conf' | xargs -r sed -i "s/ -l$l\b//g"
		fi
	done
	(cd "$bld" && nice make -j"$jobs" && make install) >"$log/mpich-build.log" 2>&1 ||
		{ say "MPICH build failed: $log/mpich-build.log"; exit 1; }
fi
fi

# 4. Every libfabric call is Wireup's.
# (MPICH 4.0 has no MPIR_CVAR_OFI_USE_PROVIDER: setting it prints a warning
# in every rank, which fails every test; FI_PROVIDER chooses.  Nor has it
# MPIR_CVAR_CH4_SHM_ENABLE: MPIR_CVAR_NOLOCAL=1 turns shared memory off.)
export MPIR_CVAR_NOLOCAL=1
unset FI_PROVIDER
[ -z "${PROVIDER:-}" ] || export FI_PROVIDER="$PROVIDER"
expect=${EXPECT:-${PROVIDER:-wireup}}
[ "$mode" = embedded ] || export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
got=$(ldd "$prefix/lib/libmpi.so" | awk '/libfabric.so.1/ {print $3}')
if [ "$mode" = embedded ]; then
	if [ -n "$got" ]; then
		say "the embedded libmpi.so loads $got"
		exit 1
	fi
else
	if [ "$(readlink -f "$got")" != "$(readlink -f "$lib/libfabric.so.1")" ]; then
		say "libmpi.so loads $got, not Wireup's $lib/libfabric.so.1"
		exit 1
	fi
fi
mpiexec=$prefix/bin/mpiexec

results=$work/results.txt
: >"$results"
# The same rows as a markdown table for docs/results.md (results.md, printed at the end).
mdrows=$work/results.md.rows
: >"$mdrows"
row() {
	printf '%-10s %3s %6s %6s %6s  %s\n' "$1" "$2" "$3" "$4" "$5" "$6" | tee -a "$results"
	[ "$1" = directory ] || printf '| `%s` | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$mdrows"
}
row directory np passed failed capped "failing tests (ranks); capped: listed for more ranks, failed with the cap"

# 5. Which provider MPICH picks (rank 0 prints "libfabric provider: NAME -
# FABRIC" under MPIR_CVAR_DEBUG_SUMMARY; only here, as runtests would fail
# every test on the extra output), then cpi.
if [ -z "${SUMMARY_ONLY:-}" ]; then
	MPIR_CVAR_DEBUG_SUMMARY=1 timeout 120 "$mpiexec" -n 2 "$bld/examples/cpi" >"$log/provider.log" 2>&1 || true
fi
picked=$(sed -n 's/^libfabric provider: \([^ ]*\) - .*/\1/p' "$log/provider.log" | head -n 1)
status=0
if [ "$picked" = "$expect" ]; then
	say "MPICH selected the $picked provider ($(grep -m1 '^libfabric provider:' "$log/provider.log"))"
else
	say "MPICH selected provider '${picked:-none}', expected $expect (see $log/provider.log)"
	status=1
fi
for np in $nps; do
	[ -z "${SUMMARY_ONLY:-}" ] || break
	if timeout 120 "$mpiexec" -n "$np" "$bld/examples/cpi" >"$log/cpi.$np.log" 2>&1 &&
		grep -q 'pi is approximately' "$log/cpi.$np.log"; then
		row cpi "$np" 1 0 0 ""
	else
		row cpi "$np" 0 1 0 "cpi (see $log/cpi.$np.log)"
	fi
done

# 6. The test directories (runtests fails a test on any unexpected output,
# a Wireup warning at MPI_Init or exit included).
[ -n "${SUMMARY_ONLY:-}" ] || say "building MPICH's test programs"
[ -n "${SUMMARY_ONLY:-}" ] || nice make -C "$tests/util" -j"$jobs" >"$log/tests-build.log" 2>&1
for d in $dirs; do
	[ -z "${SUMMARY_ONLY:-}" ] || break
	nice make -C "$tests/$d" -j"$jobs" -k >>"$log/tests-build.log" 2>&1 || true
done
# A test that failed with the cap while its testlist entry asks for more
# ranks (most then refuse to run: "must be run with three processes")
# counts as capped, not failed.  runtests runs the entries in testlist
# order, so the k-th result of a program is its k-th entry.
summary() {
	d=$1 np=$2 tap=$3
	pass=$(grep '^ok ' "$tap" | grep -vc '# SKIP' || true)
	fail=0 capped=0 names=""
	for t in $(awk '{ bad = /^not ok / } /^(not )?ok / { sub(/^.* - /, ""); n = $1; sub(/.*\//, "", n)
		k[n]++; if (bad) print n ":" k[n] ":" $2 }' "$tap"); do
		name=${t%%:*} rest=${t#*:} k=${rest%%:*} ran=${rest#*:}
		listed=$(awk -v n="$name" -v k="$k" '$1 == n && ++i == k { print $2 + 0; exit }' "$tests/$d/testlist")
		if [ "${listed:-0}" -gt "$np" ]; then
			capped=$((capped + 1)) names="$names capped:$name($listed)"
		else
			fail=$((fail + 1)) names="$names $name($ran)"
		fi
	done
	row "$d" "$np" "$pass" "$fail" "$capped" "${names# }"
}
for np in $nps; do
	for d in $dirs; do
		tap=$log/$d.$np.tap
		if [ -z "${SUMMARY_ONLY:-}" ]; then
			(cd "$tests/$d" && ../runtests -srcdir=. -tests=testlist -mpiexec="$mpiexec" -maxnp="$np" \
				-tapfile="$tap") >"$log/$d.$np.log" 2>&1 || true
		fi
		summary "$d" "$np" "$tap"
	done
done
printf 'provider: %s (expected %s), BUILD=%s%s\n' "${picked:-none}" "$expect" "$mode" \
	"${FI_PROVIDER:+, FI_PROVIDER=$FI_PROVIDER}" | tee -a "$results"
{
	printf '### %s ch4:ofi on `%s`, BUILD=%s%s (%s)\n\n' "$(basename "$src")" "${picked:-none}" "$mode" \
		"${FI_PROVIDER:+, FI_PROVIDER=$FI_PROVIDER}" "$(date -u '+%Y-%m-%d')"
	echo '| directory | ranks | pass | fail | capped | failing tests (ranks); capped: listed for more ranks |'
	echo '|---|---|---|---|---|---|'
	cat "$mdrows"
} >"$work/results.md"
rm -f "$mdrows"
cat "$work/results.md"
say "table in $results; for docs/results.md: $work/results.md; per-test output in $tests/<dir> and $log"
exit $status
