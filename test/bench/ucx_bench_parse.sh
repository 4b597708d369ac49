#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# contrib/bench/ucx_bench.sh reads numbers out of two tools' tables; a
# change in either, or in the script, must not turn the README's table into
# silent n/a.  First its parsers over captured output (fi_pingpong 1.17,
# ucx_perftest 1.13 tag_lat with an intermediate report line, tag_bw, and
# failed runs), then one tiny live run (RUNS=1, 8 B, 50 iterations: about
# 10 s on an idle machine) whose table must hold a number in every column
# that can have one.  Speed is not checked: the numbers only have to exist.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${top_builddir:-$top/build}
bench=$top/contrib/bench/ucx_bench.sh
status=0
fail() { echo "FAIL: $*"; status=1; }
check() { # check NAME EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then echo "ok: $1: '$3'"; else fail "$1: expected '$2', got '$3'"; fi
}
parse() { sh "$bench" --parse "$@"; }

pp_out='bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
4k      100     =100     800k        1.16s      0.71    5780.79       0.00'
check "fi_pingpong 4 KiB" "5780.79 0.709" "$(echo "$pp_out" | parse pp 4096)"
pp8='bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
8       20k     =20k     312k        0.01s     22.86       0.35       2.86'
check "fi_pingpong 8 B (MB/s from usec, not the rounded column)" "0.35 22.857" "$(echo "$pp8" | parse pp 8)"
check "fi_pingpong failed (fi_getinfo error, no table)" "" \
	"$(printf 'fi_getinfo(): util/pingpong.c:1094, ret=-61 (No data available)\n' | parse pp 8)"

lat_out='+--------------+--------------+------------------------------+---------------------+-----------------------+
|              |              |        latency (usec)        |   bandwidth (MB/s)  |  message rate (msg/s) |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
[thread 0]                18  28926.986 25222.917 25222.917        0.15       0.15          40          40
Final:                   100     12.518  5046.006  8677.850        0.77       0.45         198         115'
# The overall latency (whole run, as fi_pingpong's), not the last
# interval's average; bandwidth SIZE / latency in 10^6 bytes.
check "tag_lat 4 KiB" "8677.850 0.472" "$(echo "$lat_out" | parse lat 4096)"
bw_out='+--------------+--------------+------------------------------+---------------------+-----------------------+
|              |              |       overhead (usec)        |   bandwidth (MB/s)  |  message rate (msg/s) |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
Final:                   100      1.995     2.840     2.840     1375.65    1375.65      352167      352167'
check "tag_bw 4 KiB (MB of 2^20 to 10^6)" "- 1442.474" "$(echo "$bw_out" | parse bw)"
ucx_err='[1795690083.362109] [vm:5115 :0]         libperf.c:1080 UCX  ERROR ucp_ep_create() failed: Destination is unreachable'
check "tag_lat failed" "" "$(echo "$ucx_err" | parse lat 8)"
check "tag_bw failed" "" "$(echo "$ucx_err" | parse bw)"

# The live run: every tool it drives must be there.
for t in fi_pingpong fi_info ucx_perftest ss; do
	command -v $t >/dev/null || { echo "SKIP: live run: $t missing (contrib/install-deps.sh installs it)"; exit 77; }
done
[ $status = 0 ] || exit $status
# Unpinned: under the suite's load a pinned spinner cannot leave a busy CPU.
out=$(BENCH_PIN=0 BUILD=$build SIZES=8 ITERS=50 timeout 600 sh "$bench" 1 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
check "exit status" 0 "$rc"
# row GROUP: the "8 usec" line of that group's table, as fields
row() { echo "$out" | awk -v g="$1" '/^UCX_TLS=/ { in_g = index($0, "UCX_TLS=" g) == 1 } in_g && $1 == "8" && $2 == "usec"'; }
num() { echo "$1" | awk '{ print ($1 + 0 > 0) ? "number" : "not a number: " $1 }'; }
has_ucx=no
LD_LIBRARY_PATH=$build/src/.libs timeout 30 fi_info -l 2>/dev/null | grep -q '^ucx:' && has_ucx=yes
# Columns: size metric ucx perf perf_bw <ours...> [perf_e] ucx/perf ucx/perf_bw best
r=$(row tcp)
check "tcp row: perf" number "$(num "$(echo "$r" | awk '{print $4}')")"
check "tcp row: perf_bw has no latency" n/a "$(echo "$r" | awk '{print $5}')"
check "tcp row: tcp" number "$(num "$(echo "$r" | awk '{print $6}')")"
check "tcp row: perf_e (tag_lat -e)" number "$(num "$(echo "$r" | awk '{print $7}')")"
r=$(row posix)
check "shm row: perf" number "$(num "$(echo "$r" | awk '{print $4}')")"
check "shm row: shm" number "$(num "$(echo "$r" | awk '{print $6}')")"
check "shm row: wireup" number "$(num "$(echo "$r" | awk '{print $7}')")"
for g in tcp posix; do
	u=$(row $g | awk '{print $3}')
	if [ $has_ucx = yes ]; then
		check "$g row: ucx (our library has ucx)" number "$(num "$u")"
	else
		check "$g row: ucx (our library has no ucx)" n/a "$u"
	fi
done
# The stream's bandwidth row has a number where its latency has none.
check "tcp bandwidth row: perf_bw" number \
	"$(num "$(echo "$out" | awk '/^UCX_TLS=tcp/ { t = 1 } /^UCX_TLS=posix/ { t = 0 } t && $1 == "8" && $2 == "MB/s" { print $5 }')")"
n=$(echo "$out" | grep -cE '^(met|MISSED|n/a) ')
check "one target line per TLS, size and metric" 4 "$n"
# The README-ready markdown: per TLS a header, the perftest row with a
# number, and the ratio and verdict rows.
check "markdown headers" "| UCX_TLS=tcp | 8 B | | UCX_TLS=posix,sysv,cma,self | 8 B |" \
	"$(echo "$out" | grep '^| UCX_TLS=' | tr '\n' ' ' | sed 's/ $//')"
check "markdown tag_lat rows hold numbers" "number number" \
	"$(echo "$out" | awk -F'|' '/^\| ucx_perftest tag_lat \|/ { print ($3 + 0 > 0) ? "number" : "not a number: " $3 }' | tr '\n' ' ' | sed 's/ $//')"
check "markdown verdict rows" 2 "$(echo "$out" | grep -cE '^\| target \(at most 1.1x\) \| (met|MISSED|n/a) \|$')"
exit $status
