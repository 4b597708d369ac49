#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets in test/fuzz with clang in a scratch
# directory and runs each for a bounded time.  Kept out of `make check`
# (gcc builds stay untouched); CI calls it directly.
#
#   test/fuzz/run-fuzzers.sh [TOTAL_SECONDS]     (default $WU_FUZZ_SECONDS or 60)
#
# WU_FUZZ_TARGETS picks targets (default all); JOBS (default 2) the make
# jobs of the library build the whole-library targets need, and how many
# targets build and run at once.
#
# The time is split evenly between the targets (with JOBS at once, the
# wall time is TOTAL_SECONDS / JOBS).  Exit status: 0 clean,
# 1 a finding or a build failure (the crashing inputs are copied to
# $WU_FUZZ_ARTIFACTS, default ./fuzz-artifacts), 77 when clang or its
# libFuzzer runtime is missing (Debian: apt-get install clang
# libclang-rt-14-dev).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
total=${1:-${WU_FUZZ_SECONDS:-60}}
case $total in
'' | *[!0-9]*) echo "run-fuzzers: seconds must be a whole number, got '$total'" >&2; exit 2 ;;
esac
artifacts=${WU_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}

# target name, then its sources relative to the top of the tree.
targets='addr tcp_frame'
sources_addr='test/fuzz/fuzz_addr.cpp src/core/addr.cpp src/core/addr_node.cpp src/core/addr_print.cpp test/fuzz/log_stub.cpp'
sources_tcp_frame='test/fuzz/fuzz_tcp_frame.cpp src/prov/tcp/frame.cpp src/prov/common/atomic.cpp'
targets="$targets pmix_wire"
sources_pmix_wire='test/fuzz/fuzz_pmix_wire.cpp src/pmix_glue/wire.cpp'
# Drives a real endpoint: links the whole library (lib_*=1), which this
# script builds once with clang in its scratch directory.
targets="$targets tcp_stream"
sources_tcp_stream='test/fuzz/fuzz_tcp_stream.cpp'
lib_tcp_stream=1

cxx=${FUZZ_CXX:-}
if [ -z "$cxx" ]; then
	for c in clang++ clang++-14 clang++-15 clang++-16; do
		if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
	done
fi
if [ -z "$cxx" ]; then
	echo "SKIP: run-fuzzers: no clang++ found (Debian: apt-get install clang libclang-rt-14-dev)"
	exit 77
fi

# The named-AV header check (a shared AV left behind by another process).
targets="$targets av_header"
sources_av_header='test/fuzz/fuzz_av_header.cpp src/av/arena.cpp'
# The shm region header check (a region a peer left in /dev/shm).
targets="$targets shm_header"
sources_shm_header='test/fuzz/fuzz_shm_header.cpp src/prov/shm/layout.cpp'
# The wireup provider's addresses (a peer's published name).
targets="$targets wx_addr"
# wx_addr.cpp reads the AV's address formats (sockaddr mode): the library.
sources_wx_addr='test/fuzz/fuzz_wx_addr.cpp'
lib_wx_addr=1
# The ucx provider's addresses (a peer's published name).
targets="$targets ucx_addr"
sources_ucx_addr='test/fuzz/fuzz_ucx_addr.cpp src/prov/ucx/ucx_addr.cpp'
# fi_av_insert of any blob on every provider's AV (issue 32).
targets="$targets av_insert"
sources_av_insert='test/fuzz/fuzz_av_insert.cpp'
lib_av_insert=1
# WU_FUZZ_TARGETS="a b" runs only those.
targets=${WU_FUZZ_TARGETS:-$targets}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wu-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# libFuzzer's runtime ships separately from the compiler on Debian.
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
	'extern "C" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }' >"$tmp/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$tmp/probe.cpp" -o "$tmp/probe" >"$tmp/probe.log" 2>&1; then
	echo "SKIP: run-fuzzers: $cxx cannot link -fsanitize=fuzzer (Debian: apt-get install libclang-rt-14-dev):"
	sed 's/^/  /' "$tmp/probe.log" | head -5
	exit 77
fi

ntargets=0
for t in $targets; do ntargets=$((ntargets + 1)); done
per=$((total / ntargets))
[ "$per" -ge 1 ] || per=1

# The library for lib_* targets: configured as usual but compiled by clang
# with libFuzzer's coverage and the sanitizers; its convenience archive and
# the libraries it needs (from its .la) go on the target's link line.
# Line tables are all a report needs; full -g costs compile time.
fuzz_flags='-gline-tables-only -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined'
lib_status=
build_lib() {
	[ -n "$lib_status" ] && return "$lib_status"
	ccc=$(echo "$cxx" | sed 's/clang++/clang/')
	echo "run-fuzzers: building the library with $cxx (log: fuzz-lib.log in the scratch dir)"
	mkdir -p "$tmp/lib"
	if (cd "$tmp/lib" && "$top/configure" -q CC="$ccc" CXX="$cxx" \
		CFLAGS="$fuzz_flags -fsanitize=fuzzer-no-link" CXXFLAGS="$fuzz_flags -fsanitize=fuzzer-no-link" &&
		make -j"${JOBS:-2}" src/libwireup.la) >"$tmp/fuzz-lib.log" 2>&1; then
		lib_status=0
	else
		echo "FAIL: the library does not build with $cxx for fuzzing:"
		tail -30 "$tmp/fuzz-lib.log"
		lib_status=1
	fi
	return "$lib_status"
}

# One target: build, then fuzz; its report goes to $tmp/out_$t, its status
# to $tmp/rc_$t.  Each compile and each fuzzer is one process, so targets
# run JOBS at a time (each still gets its ${per}s) and report in order.
one() {
	t=$1
	eval "srcs=\$sources_$t"
	eval "lib=\${lib_$t:-}"
	bin="$tmp/fuzz_$t"
	set --
	for s in $srcs; do set -- "$@" "$top/$s"; done
	if [ -n "$lib" ]; then
		[ "$lib_status" = 0 ] || { echo "FAIL: fuzz_$t: the library did not build"; return 1; }
		# shellcheck disable=SC2046
		set -- "$@" -I "$tmp/lib" "$tmp/lib/src/.libs/libwireup.a" \
			$(sed -n "s/^dependency_libs='\(.*\)'$/\1/p" "$tmp/lib/src/libwireup.la")
	fi
	echo "run-fuzzers: building fuzz_$t with $cxx"
	if ! "$cxx" -std=c++20 -gline-tables-only -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I "$top/include" -I "$top/src" "$@" -o "$bin" >"$tmp/build_$t.log" 2>&1; then
		echo "FAIL: fuzz_$t does not build:"
		cat "$tmp/build_$t.log"
		return 1
	fi
	# Work on a copy: the seed corpus in the tree stays as shipped.
	mkdir -p "$tmp/corpus_$t" "$tmp/art_$t"
	if [ -d "$here/corpus/$t" ]; then cp "$here/corpus/$t"/* "$tmp/corpus_$t/" 2>/dev/null; fi
	echo "run-fuzzers: fuzz_$t for ${per}s"
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$bin" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$tmp/art_$t/" "$tmp/corpus_$t" >"$tmp/run_$t.log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/run_$t.log")
	if [ "$rc" -ne 0 ] || [ -n "$(ls "$tmp/art_$t")" ]; then
		echo "FAIL: fuzz_$t found a problem (exit $rc); last lines:"
		tail -40 "$tmp/run_$t.log"
		mkdir -p "$artifacts"
		cp "$tmp/art_$t"/* "$artifacts/" 2>/dev/null &&
			echo "  inputs saved in $artifacts (replay: fuzz_$t FILE)"
		return 1
	fi
	echo "PASS: fuzz_$t: ${runs:-?} runs in ${per}s, corpus $(ls "$tmp/corpus_$t" | wc -l) inputs, no findings"
}

for t in $targets; do
	eval "[ -z \"\${lib_$t:-}\" ]" || { build_lib; break; }
done
jobs=${JOBS:-2}
running=0
for t in $targets; do
	(one "$t" >"$tmp/out_$t" 2>&1; echo $? >"$tmp/rc_$t") &
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then wait; running=0; fi
done
wait
status=0
for t in $targets; do
	cat "$tmp/out_$t"
	[ "$(cat "$tmp/rc_$t" 2>/dev/null)" = 0 ] || status=1
done
exit $status
