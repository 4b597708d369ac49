#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The README's test command: installs what is missing, builds, and runs every
# test tier.  Last line: "N passed, N failed[, N skipped]" over every test
# program (GoogleTest programs count their test cases).
#   build/          main build: make check (units, ABI, Debian binaries, C clients)
#   build-asan/     unit suites again under address,undefined sanitizers
#   build-tsan/     concurrency suites under the thread sanitizer
#   fuzzers         libFuzzer targets for a bounded time
#   conformance     libfabric's fabtests on tcp, shm, wireup vs Debian's baseline
#   build-embedded/ --enable-embedded build linked into a C shared library
#                   (built beside conformance, which keeps one core busy)
#   make distcheck  tarball builds and passes its own checks (VPATH)
# Every build directory is made afresh (no result of an earlier run can
# count); this run's logs are in build-ci/.  A tier's make status counts,
# and so does every test program it declares that left no result.
# Budget (docs/building.md "CI and its budget"): 30 min on 2 cores.  Most of
# it is compiling the library in six configurations and ~190 test programs;
# so test and benchmark programs link with lld (configure's WU_TEST_LD), the
# sanitizer tiers build the library and their own suites only (no `all`),
# and the conformance tier reuses a fabtests build cached by content hash
# under /var/cache/wireup-ci (WU_CI_CACHE; built as before when missing).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-2}
rm -rf build build-asan build-tsan build-embedded build-ci
logs=$top/build-ci
mkdir -p "$logs" build build-asan build-tsan
totals=$logs/totals
echo "0 0 0" > "$totals"
t0=$(date +%s)
tprev=$t0
# Each tier's header also says how long the previous one took (CI budget: 30 min).
log() {
	now=$(date +%s)
	printf '\n=== %s   [previous step %ss, %ss so far]\n' "$*" $((now - tprev)) $((now - t0))
	tprev=$now
}
gate() { # name, command...: a whole step that counts as one test (77: skipped)
	name=$1; shift
	"$@"; rc=$?
	set -- $(cat "$totals")
	case $rc in
	0) echo "PASS: $name"; echo "$(($1 + 1)) $2 $3" > "$totals" ;;
	77) echo "SKIP: $name"; echo "$1 $2 $(($3 + 1))" > "$totals" ;;
	*) echo "FAIL: $name"; echo "$1 $(($2 + 1)) $3" > "$totals" ;;
	esac
}
# tier DIR TARGET LIST: runs `make TARGET` in DIR and counts the results of
# the test programs make's variable LIST names (print-LIST in Makefile.am).
tier() {
	dir=$1 target=$2 var=$3
	tests=$(make -s --no-print-directory -C "$dir" "print-$var" | tail -1)
	[ -n "$tests" ] || { gate "$dir: make print-$var lists no test" false; return; }
	# -k: a program that does not build does not stop the others.
	(cd "$dir" && nice make -k -j"$jobs" "$target" >"$logs/$dir-$target.log" 2>&1)
	rc=$?
	# When a build failure stopped make before the tests ran, run those
	# that can still be built (RECHECK_LOGS= keeps the results there are).
	for t in $tests; do
		if [ ! -f "$dir/${t%.sh}.trs" ]; then
			(cd "$dir" && nice make -k -j"$jobs" check-TESTS TESTS="$tests" RECHECK_LOGS= \
				>>"$logs/$dir-$target.log" 2>&1)
			break
		fi
	done
	sh contrib/ci/count-results.sh "$dir" "$totals" "$rc" $tests
	grep -h -A3 '^FAIL\|^ERROR' "$dir/test-suite.log" 2>/dev/null | head -60
}

log "dependencies"
sh contrib/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log "autogen + configure + build (logs in build-ci/)"
./autogen.sh >"$logs/autogen.log" 2>&1 || { cat "$logs/autogen.log"; echo "0 passed, 1 failed"; exit 1; }
# Line tables only (-g1): the same code as -g, test failures keep file and
# line, and the build with its test programs takes 400 s instead of 459.
(cd build && ../configure -q --enable-werror CFLAGS=-g1 CXXFLAGS=-g1 && nice make -j"$jobs") >"$logs/build.log" 2>&1 ||
	{ tail -40 "$logs/build.log"; echo "0 passed, 1 failed"; exit 1; }

log "make check"
tier build check tests

log "unit suites under address,undefined sanitizers"
# Only the library (and its shared-library link); check-unit builds the
# suites it runs, not fi_info or the benchmarks.
# -g1 (line tables: reports keep file:line) instead of -g3: a fifth less
# compile time per test object (test_prov_rdm 8.0 -> 6.3 s of CPU).
if (cd build-asan && ../configure -q --enable-debug --enable-sanitizers=address,undefined CFLAGS=-g1 CXXFLAGS=-g1 &&
	nice make -j"$jobs" src/libfabric.la) >"$logs/build-asan.log" 2>&1; then
	tier build-asan check-unit unit-tests
	grep -h -B2 -A20 'ERROR: \(Address\|Leak\|Undefined\)Sanitizer\|runtime error' build-asan/test-suite.log 2>/dev/null | head -60
else
	tail -40 "$logs/build-asan.log"
	gate "sanitizer build" false
fi

log "concurrency suites under the thread sanitizer"
# Without UCX: its libraries are not built with TSan (the ucx provider's
# suites run in the plain and ASan tiers; see test/prov/common/prov_fixture.h).
# The library at -O1 (what TSan's authors advise), its test objects at -O0
# and both with line tables only: test_prov_rdm compiled at -g -O1 in 18 s
# of CPU, at -g1 -O0 in 5.5.
# Like the ASan tier: the library, then check-tsan builds its suites.
if (cd build-tsan && ../configure -q --enable-sanitizers=thread --without-ucx CFLAGS=-g1 CXXFLAGS=-g1 \
	WU_OPT_FLAGS='-O1 -DNDEBUG' &&
	nice make -j"$jobs" src/libfabric.la) \
	>"$logs/build-tsan.log" 2>&1; then
	tier build-tsan check-tsan tsan-tests
	grep -h -A30 'WARNING: ThreadSanitizer' build-tsan/test-suite.log 2>/dev/null | head -60
else
	tail -40 "$logs/build-tsan.log"
	gate "thread-sanitizer build" false
fi

log "fuzzers (libFuzzer, bounded)"
fuzz() {
	WU_FUZZ_ARTIFACTS=$logs/fuzz-artifacts nice sh test/fuzz/run-fuzzers.sh "${WU_FUZZ_SECONDS:-60}" \
		>"$logs/fuzz.log" 2>&1
	rc=$?
	grep '^PASS\|^FAIL\|^SKIP' "$logs/fuzz.log"
	[ $rc = 0 ] || tail -40 "$logs/fuzz.log"
	return $rc
}
gate "fuzz" fuzz

log "conformance: fabtests (Debian's source) on tcp, shm, wireup against Debian's baseline; beside it the embedded build"
# The fabtests pairs keep one core busy on average (231 s of CPU in 215 s),
# so the embedded build (a niced make -j2) runs beside them rather than
# after; their timeouts are per process and generous (60 s).
(nice sh contrib/ci/embedded-check.sh "$top/build-embedded" >"$logs/embedded.log" 2>&1
	echo $? >"$logs/embedded.rc") &
embedded_job=$!
conformance() {
	sh contrib/conformance/fabtests.sh --work "$top/build/conformance" --lib "$top/build/src/.libs" \
		>"$logs/conformance.log" 2>&1
	rc=$?
	cp build/conformance/conformance-table.txt "$logs/" 2>/dev/null
	grep '^conformance:\|^  [a-z]*|' "$logs/conformance.log" | head -60
	return $rc
}
gate "conformance" conformance

log "embedded build, linked into a C shared library (beside conformance)"
wait "$embedded_job"
embedded() {
	cat "$logs/embedded.log"
	return "$(cat "$logs/embedded.rc" 2>/dev/null || echo 1)"
}
gate "embedded" embedded

log "make distcheck"
# The tarball is configured, built, installed, uninstalled and cleaned in a
# VPATH tree as usual; its check runs the structural tests only, since the
# main tier (also VPATH) already ran every test on the same sources and
# dist-contents proves every tracked file is in the tarball.  Packaging, not
# speed, is checked there: the tarball's build is unoptimised (-O0 halves it).
dc_tests='contrib/ci/spdx.sh contrib/ci/layering.sh contrib/ci/man-lint.sh test/abi/abi_compare test/c/exports.sh'
gate "distcheck" sh -c "cd build && nice make -j$jobs distcheck TESTS='$dc_tests' check_PROGRAMS=test/abi/abi_compare \
	DISTCHECK_CONFIGURE_FLAGS='CFLAGS=-O0 CXXFLAGS=-O0' \
	>'$logs/distcheck.log' 2>&1 || { tail -40 '$logs/distcheck.log'; exit 1; }"
gate "dist-contents" sh -c "cd build && rm -rf wireup-*/ && make -s distdir >'$logs/distdir.log' 2>&1 &&
	sh '$top/contrib/ci/dist-contents.sh' wireup-*/; rc=\$?; rm -rf wireup-*/; exit \$rc"

log "done"

set -- $(cat "$totals")
echo
if [ "$3" -gt 0 ]; then echo "$1 passed, $2 failed, $3 skipped"; else echo "$1 passed, $2 failed"; fi
[ "$2" -eq 0 ]
