#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What our ucx provider adds to UCP per message, in instructions (callgrind
# counts them, so the machine's load does not change the answer; this VM
# has no hardware counters for perf stat).  The client of an 8 B ping-pong
# runs under callgrind, its server natively, twice (N1 and N2 iterations)
# so that start-up cancels out of (count(N2) - count(N1)) / (N2 - N1):
#   ours   Debian's fi_pingpong -p ucx -e rdm on our library
#   raw    ucx_perftest -t tag_lat (raw UCP, what ucx_bench.sh compares with)
# for UCX_TLS=tcp (UCX_NET_DEVICES=lo) and UCX_TLS=posix,sysv,cma,self.
# Per ping-pong iteration it prints
#   app->lib   instructions inside the calls the program makes into the
#              fabric library (ours) or into UCP (raw), and how many calls
#   lib->ucx   instructions inside the calls our library makes into UCX
#              (ours only), and how many
#   ucx->lib   instructions in our callbacks that UCX calls (completions)
#   layer      app->lib - lib->ucx + ucx->lib: our provider's own
#              instructions
#   program    the benchmark program's own instructions per iteration
#              (self cost of fi_pingpong or ucx_perftest, plus their libc
#              calls) and its polls per iteration, which its busy-wait
#              follows: what of a gap is the program, not the library
#   per message  the layer without the empty polls, whose number depends
#              on timing: the data calls (fi_inject, fi_recv ...) minus
#              the UCP data calls in them, plus ucx->lib less its
#              ucp_request_free, plus one poll's own cost (fi_cq_read
#              minus the ucp_worker_progress in it, per poll): what one
#              8 B round trip costs in our layer, against raw's app->ucp
#              (since small receives are deferred to the next poll, that
#              poll also posts them: ucp_tag_recv_nbx moved from fi_recv
#              into "one poll")
# and, for ours, each entry point and each UCX function called from our
# library with calls and instructions per call (busy polling makes the
# number of empty fi_cq_read calls per iteration depend on timing: compare
# per call there).  Not a test; needs valgrind.
#   contrib/bench/ucx_cost.sh [SIZE [N1 N2]]   (env: BUILD=build dir,
#   KEEP=dir to keep the callgrind files for callgrind_annotate)
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
libdir=$build/src/.libs
size=${1:-8}
n1=${2:-2000}
n2=${3:-6000}
for t in valgrind fi_pingpong ucx_perftest fi_info; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (apt-get install valgrind libfabric-bin ucx-utils)"; exit 77; }
done
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\|UCX_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
ours_ok=0
LD_LIBRARY_PATH=$libdir timeout 30 fi_info -l 2>/dev/null | grep -q '^ucx:' && ours_ok=1
[ $ours_ok = 1 ] || echo "note: $libdir/libfabric.so.1 has no ucx provider: only raw is counted"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ -n "${KEEP:-}" ] && { mkdir -p "$KEEP"; trap 'cp "$tmp"/*.[0-9]* "$KEEP"/ 2>/dev/null; rm -rf "$tmp"' EXIT; }
port=$(( 26000 + ($$ % 300) * 20 ))
wait_port() {
	i=0
	while [ $i -lt 100 ] && ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; do sleep 0.1; i=$((i + 1)); done
}
cg="valgrind --tool=callgrind --compress-strings=no --compress-pos=no"

# run WHO TLSENV N OUT: one client under callgrind
run() {
	port=$((port + 1))
	case $1 in
	ours)
		env LD_LIBRARY_PATH="$libdir" $2 timeout 600 fi_pingpong -p ucx -e rdm -B $port -S "$size" -I "$3" \
			>/dev/null 2>&1 &
		s=$!
		wait_port $port
		env LD_LIBRARY_PATH="$libdir" $2 timeout 600 $cg --callgrind-out-file="$4" \
			fi_pingpong -p ucx -e rdm -P $port -S "$size" -I "$3" 127.0.0.1 >"$4.log" 2>&1 ;;
	raw)
		env $2 timeout 600 ucx_perftest -p $port >/dev/null 2>&1 &
		s=$!
		wait_port $port
		env $2 timeout 600 $cg --callgrind-out-file="$4" \
			ucx_perftest 127.0.0.1 -p $port -t tag_lat -s "$size" -n "$3" -w 10 >"$4.log" 2>&1 ;;
	esac
	wait $s 2>/dev/null
}

# edges FILE -> "CALLER_OBJ CALLEE_OBJ CALLEE calls Ir" for every call
# edge between two different objects, summed over call sites.
edges() {
	awk '
	function base(p) { sub(/.*\//, "", p); sub(/\.so.*/, "", p); return p }
	/^ob=/ { ob = base(substr($0, 4)); next }
	/^fn=/ { cob = ""; next }
	/^cob=/ { cob = base(substr($0, 5)); next }
	/^cfn=/ { cfn = substr($0, 5); next }
	/^calls=/ {
		split($1, a, "="); n = a[2]
		getline; callee = cob == "" ? ob : cob
		if (callee != ob) { k = ob SUBSEP callee SUBSEP cfn; c[k] += n; ir[k] += $2 }
		cob = ""; next }
	END { for (k in c) { split(k, p, SUBSEP); printf "%s\t%s\t%s\t%d\t%d\n", p[1], p[2], p[3], c[k], ir[k] } }' "$1"
}
# sum FILE CALLER_RE CALLEE_RE -> "calls Ir" over matching edges
sum() { awk -F'\t' -v a="$2" -v b="$3" '$1 ~ a && $2 ~ b { n += $4; i += $5 } END { printf "%d %d\n", n, i }' "$1"; }
# sumf FILE CALLER_RE CALLEE_RE FN_RE KEEP -> "calls Ir" over matching edges
# whose callee matches FN_RE (KEEP=1) or does not (KEEP=0)
sumf() {
	awk -F'\t' -v a="$2" -v b="$3" -v f="$4" -v k="$5" \
		'$1 ~ a && $2 ~ b && (($3 ~ f) == (k == 1)) { n += $4; i += $5 } END { printf "%d %d\n", n, i }' "$1"
}
# msgcost FILE1 FILE2 -> our layer per round trip without the empty polls:
# the data calls (every entry point but fi_cq_read: ep_ops) minus the UCP
# calls of the data path made from our library, plus our callbacks minus
# the ucp_request_free in them (raw UCP pays that one too), plus one
# poll's own cost.  Only calls made per message: what start-up and close
# do (fi_close's wait for UCP endpoints to close loops as long as that
# takes) stays out.
ucp_data='^ucp_(tag_send_nbx|tag_send_sync_nbx|tag_recv_nbx|tag_msg_recv_nbx|tag_probe_nb|put_nbx|get_nbx|ep_flush_nbx)$'
msgcost() {
	set -- $(sumf "$1" '^fi_pingpong' '^libfabric' 'ep_ops<' 1) $(sumf "$2" '^fi_pingpong' '^libfabric' 'ep_ops<' 1) \
		$(sumf "$1" '^libfabric' '^libuc[pts]' "$ucp_data" 1) \
		$(sumf "$2" '^libfabric' '^libuc[pts]' "$ucp_data" 1) \
		$(sum "$1" '^libuc[pts]' '^libfabric') $(sum "$2" '^libuc[pts]' '^libfabric') \
		$(sumf "$1" '^fi_pingpong' '^libfabric' 'cq_read' 1) $(sumf "$2" '^fi_pingpong' '^libfabric' 'cq_read' 1) \
		$(sumf "$1" '^libfabric' '^libuc[pts]' '^ucp_worker_progress$' 1) \
		$(sumf "$2" '^libfabric' '^libuc[pts]' '^ucp_worker_progress$' 1) \
		$(sumf "$1" '^libfabric' '^libuc[pts]' '^ucp_request_free$' 1) \
		$(sumf "$2" '^libfabric' '^libuc[pts]' '^ucp_request_free$' 1)
	echo "$@" | awk -v d=$((n2 - n1)) '{
		a = ($4 - $2) / d; b = ($8 - $6) / d; c = ($12 - $10) / d - ($24 - $22) / d
		# one poll'"'"'s own cost: fi_cq_read minus the UCP progress in it,
		# over the polls, from the difference of the two runs (so the
		# progress of start-up and close drops out); from the longer
		# run'"'"'s totals when it made no more polls than the shorter one
		# (how many polls a run makes depends on timing)
		if ($15 - $13 > 0) { q = ($16 - $14) / ($15 - $13); w = ($20 - $18) / ($15 - $13) }
		else { q = ($15 > 0) ? $16 / $15 : 0; w = ($15 > 0) ? $20 / $15 : 0 }
		printf "ours per message %8.0f Ir per round trip (calls %.0f - UCP in them %.0f + callbacks %.0f + one poll %.0f)\n",
			a - b + c + q - w, a, b, c, q - w }'
}
# per WHO FILE1 FILE2 CALLER_RE CALLEE_RE -> calls and Ir per iteration
per() {
	set -- $(sum "$2" "$4" "$5") $(sum "$3" "$4" "$5")
	awk -v c1="$1" -v i1="$2" -v c2="$3" -v i2="$4" -v d=$((n2 - n1)) \
		'BEGIN { printf "%8.1f calls %10.0f Ir", (c2 - c1) / d, (i2 - i1) / d }'
}
# table FILE1 FILE2 CALLER_RE CALLEE_RE: per function, per iteration and per call
table() {
	for f in "$1" "$2"; do
		awk -F'\t' -v a="$3" -v b="$4" '$1 ~ a && $2 ~ b { print $3 "\t" $4 "\t" $5 }' "$f" |
			sort -t "$tab" -k1,1 >"$f.t"
	done
	join -t "$tab" -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$1.t" "$2.t" |
		awk -F'\t' -v d=$((n2 - n1)) '{ c = ($4 - $2) / d; i = ($5 - $3) / d
			pc = ($4 > 0) ? $5 / $4 : 0
			if ($4 >= d) printf "%9.0f Ir/iter  %7.2f calls/iter %8.0f Ir/call  %s\n", i, c, pc, $1 }' |
		sort -nr | head -12 | sed 's/^/    /'
}
tab=$(printf '\t')
# selfir FILE OBJ_RE -> the instructions executed in the objects matching
# OBJ_RE themselves (callgrind's self cost, calls into other objects left out)
selfir() {
	awk -v re="$2" '
	function base(p) { sub(/.*\//, "", p); sub(/\.so.*/, "", p); return p }
	/^ob=/ { ob = base(substr($0, 4)); next }
	/^(fn|cob|cfn|cfi|cfl|fi|fe|fl)=/ { next }
	/^calls=/ { skip = 1; next }
	/^[0-9+-]/ { if (skip) { skip = 0; next } if (ob ~ re) s += $2; next }
	END { printf "%d\n", s }' "$1"
}
# own FILE1 FILE2 EDGES1 EDGES2 PROG_RE LIB_RE POLL_FN -> the benchmark
# program's own instructions per iteration (its loop, the checks around
# each call and its busy-wait: self cost in PROG_RE plus its calls to libc),
# and its polls per iteration (calls of POLL_FN, whoever makes them: UCX's
# progress from perftest goes through a PLT callgrind cannot name), on which its
# busy-wait depends: the part of a gap that is the program, not the library.
own() {
	set -- "$@" $(selfir "$1" "$5") $(selfir "$2" "$5") \
		$(sumf "$3" "$5" '^libc' '^__libc_start_main' 0) $(sumf "$4" "$5" '^libc' '^__libc_start_main' 0) \
		$(sumf "$3" "$6" "$6" "$7" 1) $(sumf "$4" "$6" "$6" "$7" 1)
	awk -v s1="$8" -v s2="$9" -v l1="${11}" -v l2="${13}" -v p1="${14}" -v p2="${16}" -v d=$((n2 - n1)) \
		'BEGIN { printf "%8.0f Ir per iteration (self %.0f + libc %.0f), %.1f polls per iteration", \
			((s2 - s1) + (l2 - l1)) / d, (s2 - s1) / d, (l2 - l1) / d, (p2 - p1) / d }'
}
echo "size $size B, iterations $n1 and $n2 (client under callgrind, server native)"
for g in "tcp:UCX_TLS=tcp UCX_NET_DEVICES=lo" "shm:UCX_TLS=posix,sysv,cma,self"; do
	name=${g%%:*} envs=${g#*:}
	echo
	echo "== $envs"
	for n in $n1 $n2; do run raw "$envs" $n "$tmp/raw.$name.$n"; done
	for n in $n1 $n2; do edges "$tmp/raw.$name.$n" >"$tmp/raw.$name.$n.e"; done
	echo "raw  app->ucp   $(per raw "$tmp/raw.$name.$n1.e" "$tmp/raw.$name.$n2.e" '^(ucx_perftest|libucx_perftest)' '^libuc[pts]')"
	echo "raw  program   $(own "$tmp/raw.$name.$n1" "$tmp/raw.$name.$n2" "$tmp/raw.$name.$n1.e" "$tmp/raw.$name.$n2.e" '^(ucx_perftest|libucx_perftest)$' '.' '^ucp_worker_progress$')"
	echo "  UCX calls from ucx_perftest (raw):"
	table "$tmp/raw.$name.$n1.e" "$tmp/raw.$name.$n2.e" '^(ucx_perftest|libucx_perftest)' '^libuc[pts]'
	[ $ours_ok = 1 ] || continue
	for n in $n1 $n2; do run ours "$envs" $n "$tmp/ours.$name.$n"; done
	for n in $n1 $n2; do edges "$tmp/ours.$name.$n" >"$tmp/ours.$name.$n.e"; done
	a=$(per ours "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^fi_pingpong' '^libfabric')
	b=$(per ours "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^libfabric' '^libuc[pts]')
	c=$(per ours "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^libuc[pts]' '^libfabric')
	echo "ours app->lib   $a"
	echo "ours lib->ucx   $b"
	echo "ours ucx->lib   $c (our completion callbacks, inside lib->ucx)"
	echo "$a $b $c" | awk '{ printf "ours layer      %10.0f Ir per iteration (app->lib - lib->ucx + ucx->lib)\n", $3 - $7 + $11 }'
	msgcost "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e"
	echo "ours program   $(own "$tmp/ours.$name.$n1" "$tmp/ours.$name.$n2" "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^fi_pingpong$' '.' 'cq_read')"
	echo "  entry points (fi_pingpong -> our library):"
	table "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^fi_pingpong' '^libfabric'
	echo "  UCX calls from our library:"
	table "$tmp/ours.$name.$n1.e" "$tmp/ours.$name.$n2.e" '^libfabric' '^libuc[pts]'
done
exit 0
