#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ucx provider benchmark (issue 16, Speed): one node, loopback only,
# medians of RUNS runs (default 5), every column in each run.  Two row
# groups, one per UCX_TLS, each beside the Wireup providers a user would
# pick instead:
#   UCX_TLS=tcp (and UCX_NET_DEVICES=lo)
#     ucx      Debian's fi_pingpong -p ucx -e rdm on our library
#     perf     ucx_perftest -t tag_lat: one-way usec, and its ping-pong
#              bandwidth SIZE / one-way time (what fi_pingpong reports)
#     perf_bw  ucx_perftest -t tag_bw: a stream, MB/s only
#     tcp      Debian's fi_pingpong -p tcp -e rdm on our library
#     perf_e   ucx_perftest -t tag_lat -e: UCP endpoints with peer failure
#              handling, as our provider makes them over tcp; UCX 1.13
#              then sends large messages another way (README).  Over
#              posix,sysv,cma,self UCX refuses it (ucp_ep_create:
#              "Destination is unreachable"), so our provider connects
#              without it there and the plain tag_lat is the same
#              configuration: that group has no -e column, and the script
#              checks the refusal once (perf_e_shm below)
#   UCX_TLS=posix,sysv,cma,self
#     ucx, perf, perf_bw  as above with these transports
#     shm      Debian's fi_pingpong -p shm -e rdm on our library
#     wireup   Debian's fi_pingpong -p wireup -e rdm on our library
# at 8 B, 64 B, 1 KiB, 4 KiB, 64 KiB and 1 MiB.  Latency is one-way usec
# (fi_pingpong's usec/xfer, ucx_perftest's half round trip); bandwidth is
# MB/s of 10^6 bytes (ucx_perftest prints 2^20, converted here).
#
# Bandwidth, what is compared with what: fi_pingpong's MB/s is ping-pong
# bandwidth (one message in flight, each answered before the next: SIZE
# over the one-way time) while tag_bw is a stream (many sends in flight,
# no reply), as shm_bench.sh says.  The fair counterpart of fi_pingpong is
# therefore tag_lat's own bandwidth, the same traffic pattern over raw UCP,
# and the issue's "at least 0.9x its bandwidth" target is checked against
# it.  Both ping-pong bandwidths are SIZE over the one-way time, so that
# target says the same as a latency within 1.11x: fi_pingpong cannot show
# more.  tag_bw with a window of one (-O 1) was not taken: it still sends
# without waiting for a reply, so it is neither a stream nor a ping-pong,
# and ucp_am_lat/ucp_am_bw measure UCP active messages, not the tag
# matching that our provider runs on.  The stream (perf_bw) is printed
# beside them and its ratio given for reference: it is what a program that
# keeps many sends in flight could reach.  ucx_perftest warms up with -w
# ITERS/10 iterations it does not count; both tools run ITERS iterations
# (enough that connection set-up stays out of the number).
#
# What UCX needs in a sandbox, loopback only (UCX 1.13, `ucx_info -d`
# lists the transports and devices it found; found on this machine, root,
# no Yama, an eth0 beside lo):
#   tcp       UCX_NET_DEVICES=lo.  Unset, UCX opens every interface (here
#             eth0 too, whose local address also works) and may put lanes
#             there: not loopback only.
#   posix     a writable /dev/shm (mode 1777) for its segments.
#   sysv      System V shared memory (shmget; an IPC namespace allows it).
#   cma       process_vm_readv to the peer: same user and
#             kernel.yama.ptrace_scope 0 (or no Yama, or root).  cma has
#             no active messages: UCX_TLS=cma,self alone fails with "no
#             active messages transport"; beside posix/sysv it carries
#             the rendezvous of large messages (rma_bw lane).
#   self      nothing (a process to itself).
# The script prints what it finds (ptrace scope, /dev/shm) once.
#
# Debian's libfabric 1.17 has no ucx provider (fi_info -l lists none; the
# script checks), so the ucx column has no Debian counterpart: it is
# compared with raw UCP (ucx_perftest) only.  Our ucx column is "n/a"
# while our library has no provider ucx.
#
# Prints the tables, ratios ucx/perf (latency and ping-pong bandwidth),
# ucx/perf_bw (stream, for reference), the fastest provider usable through
# libfabric per row (the "which should I use" answer), and the issue's
# targets per TLS and size as met, MISSED or n/a, then the same numbers
# as the README's markdown tables (with a ratio row and a verdict row), to
# paste as they are.  A benchmark, not a test: it exits 0 whatever the
# numbers.
#   contrib/bench/ucx_bench.sh [RUNS]
# env: BUILD=build dir, SIZES="8 64 ..." and ITERS=N (every size) to run
# fewer (test/bench/ucx_bench_parse.sh does).
#   contrib/bench/ucx_bench.sh --parse pp|lat|bw SIZE   (reads one tool's
# output on stdin, prints "usec MBps": the parsers the test checks)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
libdir=$build/src/.libs

# Parsers: one tool's output -> "usec MBps" ("-" where it has none).
# fi_pingpong: the last result line "bytes #sent #ack total time MB/sec
# usec/xfer Mxfers/sec".  Its MB/sec is SIZE / usec/xfer rounded to two
# decimals (0.08 at 8 B); recomputed from usec/xfer to keep the digits.
parse_pp() {
	awk -v s="$1" 'NR > 1 && $1 ~ /^[0-9]/ && NF >= 8 && $7 + 0 > 0 { l = $7 }
		END { if (l != "") printf "%s %.3f\n", l, s / l }'
}
# ucx_perftest: "Final: iters 50%ile avg-lat overall-lat avg-bw overall-bw
# avg-rate overall-rate", latency usec, bandwidth MB of 2^20 bytes.
# tag_lat: overall one-way latency, bandwidth SIZE / latency (ping-pong).
parse_lat() {
	awk -v s="$1" '$1 == "Final:" && $5 + 0 > 0 { l = $5 } END { if (l != "") printf "%s %.3f\n", l, s / l }'
}
# tag_bw: a stream, its overall bandwidth only.
parse_bw() { awk '$1 == "Final:" && $7 + 0 > 0 { b = $7 } END { if (b != "") printf "- %.3f\n", b * 1.048576 }'; }
if [ "${1:-}" = --parse ]; then
	case ${2:-} in
	pp) parse_pp "${3:?--parse pp SIZE}" ;;
	lat) parse_lat "${3:?--parse lat SIZE}" ;;
	bw) parse_bw ;;
	*) echo "usage: $0 --parse pp|lat|bw SIZE" >&2; exit 2 ;;
	esac
	exit 0
fi

runs=${1:-5}
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong missing (apt-get install libfabric-bin)"; exit 77; }
command -v ucx_perftest >/dev/null || { echo "SKIP: ucx_perftest missing (apt-get install ucx-utils)"; exit 77; }
[ -e "$libdir/libfabric.so.1" ] || { echo "SKIP: $libdir/libfabric.so.1 is not built"; exit 77; }
# Only what this script sets: an inherited FI_PROVIDER or UCX_TLS would
# change every column.
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\|UCX_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
sizes=${SIZES:-8 64 1024 4096 65536 1048576}
port=$(( 24000 + ($$ % 500) * 20 ))  # below the ephemeral range
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Both sides of each two-process run on CPUs of their own (pin.sh).
. "$here/pin.sh"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"

# Which of our providers exist; Debian's library never has ucx.
LD_LIBRARY_PATH=$libdir timeout 30 fi_info -l 2>/dev/null | sed -n 's/^\([a-z_;]*\):$/\1/p' >"$tmp/ours.provs"
has() { grep -qx "$1" "$tmp/ours.provs"; }
has ucx || echo "note: $libdir/libfabric.so.1 has no ucx provider: column ucx is n/a"
if timeout 30 fi_info -l 2>/dev/null | grep -q '^ucx:'; then
	echo "note: this system's libfabric lists a ucx provider (not measured here)"
else
	echo "note: the system's libfabric ($(timeout 30 fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')) has no ucx provider: no Debian column"
fi
ps=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo "none (no Yama)")
echo "note: ptrace scope $ps, uid $(id -u), /dev/shm $(stat -c %A /dev/shm 2>/dev/null)"

# wait_port PORT: until a server listens there (a fixed sleep loses the
# race on a loaded machine); at most 10 s.
wait_port() {
	if command -v ss >/dev/null; then
		i=0
		while [ $i -lt 100 ] && ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; do
			sleep 0.1; i=$((i + 1))
		done
	else
		sleep 0.5
	fi
}
iters() { # enough that a start-up stall stays out of the number
	if [ -n "${ITERS:-}" ]; then echo "$ITERS"
	elif [ "$1" -ge 1048576 ]; then echo 1000; elif [ "$1" -ge 65536 ]; then echo 5000; else echo 20000; fi
}
tls_env() { # the environment of one row group
	case $1 in
	tcp) echo "UCX_TLS=tcp UCX_NET_DEVICES=lo" ;;
	shm) echo "UCX_TLS=posix,sysv,cma,self" ;;
	esac
}

# perf_e_shm: whether UCX takes peer failure handling over shared memory
# (1.13 does not); printed once, the reason the shm group has no -e column.
perf_e_shm() {
	next_port
	env $(tls_env shm) timeout 30 $pin_a ucx_perftest -p $port -e >/dev/null 2>&1 &
	s=$!
	wait_port $port
	if env $(tls_env shm) timeout 30 $pin_b ucx_perftest 127.0.0.1 -p $port -e -t tag_lat -s 8 -n 100 2>&1 |
		grep -q '^Final:'; then
		echo "note: UCX takes peer failure handling over $(tls_env shm): compare with ucx_perftest -e by hand"
	else
		echo "note: UCX refuses peer failure handling over $(tls_env shm) (ucx_perftest -e fails): ours connects without it there, as tag_lat does"
	fi
	wait $s 2>/dev/null
}

# next_port: the next control port nobody listens on (other benchmarks and
# tests may run at the same time).
next_port() {
	port=$((port + 1))
	while command -v ss >/dev/null && ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
}
# pp GROUP PROV SIZE -> "usec MBps": Debian's fi_pingpong on our library.
pp_one() {
	next_port
	n=$(iters "$3")
	env LD_LIBRARY_PATH="$libdir" $(tls_env "$1") timeout 120 \
		$pin_a fi_pingpong -p "$2" -e rdm -B $port -S "$3" -I "$n" >/dev/null 2>&1 &
	s=$!
	wait_port $port
	env LD_LIBRARY_PATH="$libdir" $(tls_env "$1") timeout 120 \
		$pin_b fi_pingpong -p "$2" -e rdm -P $port -S "$3" -I "$n" 127.0.0.1 2>/dev/null | parse_pp "$3"
	wait $s 2>/dev/null
}
# perf GROUP lat|bw SIZE [-e] -> "usec MBps": ucx_perftest, both on
# 127.0.0.1 (-e: with peer failure handling).
perf_one() {
	next_port
	n=$(iters "$3")
	w=$((n / 10)); [ $w -ge 10 ] || w=10
	env $(tls_env "$1") timeout 120 $pin_a ucx_perftest -p $port ${4:-} >/dev/null 2>&1 &
	s=$!
	wait_port $port
	env $(tls_env "$1") timeout 120 $pin_b ucx_perftest 127.0.0.1 -p $port ${4:-} -t "tag_$2" -s "$3" -n "$n" -w "$w" 2>/dev/null |
		if [ "$2" = lat ]; then parse_lat "$3"; else parse_bw; fi
	wait $s 2>/dev/null
}
# twice: one more try when a run gave nothing (a port taken between the
# check and the bind, a server that died); still nothing leaves the sample out.
twice() { o=$("$@"); [ -n "$o" ] || o=$("$@"); [ -z "$o" ] || echo "$o"; }
pp() { has "$2" && twice pp_one "$@"; }
perf() { twice perf_one "$@"; }

groups="tcp shm"
perf_e_shm
cols() { case $1 in tcp) echo "ucx perf perf_bw tcp perf_e" ;; shm) echo "ucx perf perf_bw shm wireup" ;; esac; }
# Runs outermost: the machine drifts between fast and slow periods over
# minutes, so every column gets a sample from each period.
for r in $(seq "$runs"); do
	for g in $groups; do
		for sz in $sizes; do
			for c in $(cols $g); do
				case $c in
				ucx|tcp|shm|wireup) pp $g $c "$sz" ;;
				perf) perf $g lat "$sz" ;;
				perf_e) perf $g lat "$sz" -e ;;
				perf_bw) perf $g bw "$sz" ;;
				esac >>"$tmp/$g.$c.$sz"
			done
		done
	done
done

. "$here/median.sh"
# get GROUP COL SIZE FIELD(1 usec, 2 MB/s) -> median or "-"
get() { awk -v f="$4" '$f != "" && $f != "-" {print $f}' "$tmp/$1.$2.$3" 2>/dev/null | median; }
na() { v=$1; { [ "$v" = "-" ] || [ -z "$v" ]; } && v=n/a; echo "$v"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
# best GROUP SIZE FIELD: the fastest provider usable through libfabric
best() {
	for c in $(cols $1); do
		case $c in perf|perf_bw|perf_e) continue ;; esac
		echo "$c $(get $1 $c $2 $3)"
	done | awk -v f="$3" '$2 != "-" && $2 + 0 > 0 {
		if (b == "" || (f == 1 && $2 < v) || (f == 2 && $2 > v)) { b = $1; v = $2 } }
		END { print b == "" ? "n/a" : b }'
}
for g in $groups; do
	echo
	echo "$(tls_env $g) (ucx, perf, perf_bw), medians of $runs runs:"
	printf '%-9s %-6s' size metric
	for c in $(cols $g); do printf ' %10s' "$c"; done
	printf ' %10s %10s %8s\n' ucx/perf ucx/perf_bw best
	for sz in $sizes; do
		for f in 1 2; do
			printf '%-9s %-6s' "$sz" "$( [ $f = 1 ] && echo usec || echo MB/s )"
			for c in $(cols $g); do printf ' %10s' "$(na "$(get $g $c "$sz" $f)")"; done
			o=$(get $g ucx "$sz" $f)
			rb=n/a; [ $f = 2 ] && rb=$(ratio "$o" "$(get $g perf_bw "$sz" 2)")
			printf ' %10s %10s %8s\n' "$(ratio "$o" "$(get $g perf "$sz" $f)")" "$rb" "$(best $g "$sz" $f)"
		done
	done
done

human() { # human BYTES -> 8 B, 4 KiB, 1 MiB
	awk -v b="$1" 'BEGIN { if (b >= 1048576 && b % 1048576 == 0) printf "%d MiB", b / 1048576
		else if (b >= 1024 && b % 1024 == 0) printf "%d KiB", b / 1024; else printf "%d B", b }'
}
# target TEXT VALUE OP LIMIT: met / MISSED / n/a
target() {
	awk -v t="$1" -v v="$2" -v op="$3" -v l="$4" 'BEGIN {
		if (v + 0 <= 0 || l + 0 <= 0) { printf "n/a     %s\n", t; exit }
		ok = (op == "<=" && v <= l) || (op == ">=" && v >= l)
		printf "%-7s %s: %s %s %s\n", ok ? "met" : "MISSED", t, v, op, l }'
}
mul() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0) printf "%.3f", a * b; else print "-" }'; }
echo
echo "Targets (issue 16), medians of $runs runs; ucx = fi_pingpong -p ucx on our library, perf = ucx_perftest tag_lat:"
for g in $groups; do
	for sz in $sizes; do
		target "$g $sz B latency at most 1.1x perf's (usec)" "$(get $g ucx "$sz" 1)" "<=" "$(mul "$(get $g perf "$sz" 1)" 1.1)"
		target "$g $sz B ping-pong bandwidth at least 0.9x perf's (MB/s)" "$(get $g ucx "$sz" 2)" ">=" \
			"$(mul "$(get $g perf "$sz" 2)" 0.9)"
	done
done

# The same numbers as the README's tables (markdown, one-way usec, then the
# ratio row and the targets' verdict per size), to paste as they are.
label() {
	case $1 in
	ucx) echo "ucx (ours, fi_pingpong)" ;; perf) echo "ucx_perftest tag_lat" ;;
	perf_bw) echo "ucx_perftest tag_bw (MB/s, stream)" ;;
	perf_e) echo "ucx_perftest tag_lat -e (peer failure handling, as ours)" ;; *) echo "$1 (ours)" ;;
	esac
}
verdict() { # verdict GROUP SIZE: the latency target (the bandwidth one says the same)
	lat=$(get $1 ucx "$2" 1) pl=$(get $1 perf "$2" 1)
	awk -v a="$lat" -v b="$pl" 'BEGIN { if (a + 0 <= 0 || b + 0 <= 0) print "n/a"
		else if (a <= 1.1 * b) print "met"; else print "MISSED" }'
}
echo
echo "README tables (one-way usec; MB/s for tag_bw; medians of $runs runs, load $(cut -d' ' -f1 /proc/loadavg)):"
for g in $groups; do
	echo
	printf '| UCX_TLS=%s |' "$(tls_env $g | sed 's/^UCX_TLS=//; s/ .*//')"
	for sz in $sizes; do printf ' %s |' "$(human "$sz")"; done
	printf '\n|---|'
	for sz in $sizes; do printf -- '---|'; done
	echo
	for c in $(cols $g); do
		f=1; [ $c = perf_bw ] && f=2
		printf '| %s |' "$(label $c)"
		for sz in $sizes; do printf ' %s |' "$(na "$(get $g $c "$sz" $f)")"; done
		echo
	done
	printf '| ucx / tag_lat latency |'
	for sz in $sizes; do printf ' %s |' "$(ratio "$(get $g ucx "$sz" 1)" "$(get $g perf "$sz" 1)")"; done
	if cols $g | grep -qw perf_e; then
		printf '\n| ucx / tag_lat -e latency |'
		for sz in $sizes; do printf ' %s |' "$(ratio "$(get $g ucx "$sz" 1)" "$(get $g perf_e "$sz" 1)")"; done
	fi
	printf '\n| target (at most 1.1x) |'
	for sz in $sizes; do printf ' %s |' "$(verdict $g "$sz")"; done
	echo
done
echo
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
exit 0
