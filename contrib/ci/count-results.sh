#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# count-results.sh BUILD_DIR TOTALS_FILE MAKE_STATUS TEST...
# Adds the results of a `make check` in BUILD_DIR to TOTALS_FILE ("pass fail
# skip").  TEST... is what the tier declares (its TESTS list): each must have
# left a result, a missing one fails and is named (a program that did not
# build leaves none).  A GoogleTest program counts its test cases; any other
# test program counts once.  A gtest program that died before its summary
# fails.  A nonzero MAKE_STATUS with no failure found fails once more: make
# failed for a reason no test result shows.  The end of each failed
# program's log follows: a crash leaves its reason (an abort's message) there.
dir=$1 totals=$2 status=$3
shift 3
[ -f "$totals" ] || echo "0 0 0" > "$totals"
read p f s < "$totals"
f0=$f
failed_logs=
[ $# -gt 0 ] || { f=$((f + 1)); echo "  FAIL: $dir: no test declared"; }
for t in "$@"; do
	base=${t%.sh}
	trs=$dir/$base.trs log=$dir/$base.log
	if [ ! -f "$trs" ]; then
		f=$((f + 1)); echo "  FAIL (no result, did it build?): $t"; continue
	fi
	res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
	case "$res" in FAIL|ERROR) failed_logs="$failed_logs $log" ;; esac
	if [ -f "$log" ] && grep -q '^\[==========\] Running' "$log"; then
		gp=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
		gf=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*, listed below:/\1/p' "$log" | tail -1)
		gs=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | head -1)
		if [ -z "$gp" ] && [ -z "$gf" ]; then
			f=$((f + 1)); echo "  FAIL (died): ${log#$dir/}"; continue
		fi
		p=$((p + ${gp:-0})); f=$((f + ${gf:-0})); s=$((s + ${gs:-0}))
		if [ "$res" != PASS ] && [ "$res" != SKIP ] && [ -z "$gf" ]; then
			f=$((f + 1)); echo "  FAIL (exit status): ${log#$dir/}"
		fi
		continue
	fi
	case "$res" in
		PASS|XFAIL) p=$((p + 1)) ;;
		SKIP) s=$((s + 1)); echo "  SKIP: ${log#$dir/}: $(grep -m1 SKIP "$log" 2>/dev/null)" ;;
		*) f=$((f + 1)); echo "  FAIL: ${log#$dir/}" ;;
	esac
done
if [ "$status" != 0 ] && [ "$f" = "$f0" ]; then
	f=$((f + 1)); echo "  FAIL: make in $dir exited with status $status (see its log)"
fi
for log in $failed_logs; do
	echo "--- the end of $log:"
	tail -12 "$log"
done | head -120
echo "$p $f $s" > "$totals"
