#!/bin/sh
# The README's test command: installs what is missing, builds, and runs every
# test tier.  Last line: "N passed, N failed[, N skipped]" over every test
# program (GoogleTest programs count their test cases).
#   build/          main build: make check (units, ABI, Debian binaries, C clients)
#   build-asan/     unit suites again under address,undefined sanitizers
#   build-tsan/     concurrency suites under the thread sanitizer
#   build-embedded/ --enable-embedded build linked into a C shared library
#   fuzzers         libFuzzer targets for a bounded time
#   make distcheck  tarball builds and passes its own checks (VPATH)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-2}
totals=$top/build/.ci-totals
log() { printf '\n=== %s\n' "$*"; }
gate() { # name, command...: a whole step that counts as one test
	name=$1; shift
	if "$@"; then echo "PASS: $name"; set -- $(cat "$totals"); echo "$(($1 + 1)) $2 $3" > "$totals"
	else echo "FAIL: $name"; set -- $(cat "$totals"); echo "$1 $(($2 + 1)) $3" > "$totals"; fi
}

log "dependencies"
sh contrib/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log "autogen + configure + build"
./autogen.sh >/tmp/wireup-autogen.log 2>&1 || { cat /tmp/wireup-autogen.log; echo "0 passed, 1 failed"; exit 1; }
mkdir -p build && rm -f "$totals" && echo "0 0 0" > "$totals"
(cd build && ../configure -q && make -j"$jobs" >/dev/null) || { echo "0 passed, 1 failed"; exit 1; }

log "make check"
(cd build && make -j"$jobs" check >/dev/null 2>&1)
sh contrib/ci/count-results.sh build "$totals"
grep -h -A3 '^FAIL\|^ERROR' build/test-suite.log 2>/dev/null | head -60

log "unit suites under address,undefined sanitizers"
mkdir -p build-asan
if (cd build-asan && ../configure -q --enable-debug --enable-sanitizers=address,undefined &&
	make -j"$jobs" >/dev/null); then
	(cd build-asan && make -j"$jobs" check-unit >/dev/null 2>&1)
	sh contrib/ci/count-results.sh build-asan "$totals"
	grep -h -B2 -A20 'ERROR: \(Address\|Leak\|Undefined\)Sanitizer\|runtime error' build-asan/test-suite.log 2>/dev/null | head -60
else
	gate "sanitizer build" false
fi

log "concurrency suites under the thread sanitizer"
mkdir -p build-tsan
if (cd build-tsan && ../configure -q --enable-sanitizers=thread && make -j"$jobs" >/dev/null); then
	(cd build-tsan && make -j"$jobs" check-tsan >/dev/null 2>&1)
	sh contrib/ci/count-results.sh build-tsan "$totals"
	grep -h -A30 'WARNING: ThreadSanitizer' build-tsan/test-suite.log 2>/dev/null | head -60
else
	gate "thread-sanitizer build" false
fi

log "embedded build, linked into a C shared library"
gate "embedded" sh contrib/ci/embedded-check.sh "$top/build-embedded"

log "fuzzers (libFuzzer, bounded)"
fuzz() {
	out=$(WU_FUZZ_ARTIFACTS=$top/build/fuzz-artifacts sh test/fuzz/run-fuzzers.sh "${WU_FUZZ_SECONDS:-60}" 2>&1)
	rc=$?
	echo "$out" | tail -5
	[ $rc = 0 ]
}
gate "fuzz" fuzz

log "make distcheck"
gate "distcheck" sh -c "cd build && make -j$jobs distcheck >/tmp/wireup-distcheck.log 2>&1 || { tail -40 /tmp/wireup-distcheck.log; exit 1; }"

set -- $(cat "$totals")
echo
if [ "$3" -gt 0 ]; then echo "$1 passed, $2 failed, $3 skipped"; else echo "$1 passed, $2 failed"; fi
[ "$2" -eq 0 ]
