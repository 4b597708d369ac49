#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# MPICH on Wireup against Debian's MPICH (ch4:ucx), 2 ranks on one node,
# MPICH's own shared memory off on both (MPIR_CVAR_NOLOCAL=1), so every
# message crosses the fabric library: one ping-pong program
# (test/prov/common/mpi_pingpong.c) compiled once with the ch4:ofi MPICH that
# contrib/mpich/check.sh builds, then run
#   - on that MPICH with our libfabric.so.1, on the provider MPICH picks by
#     itself (wireup, asserted) or on PROVIDER;
#   - on Debian's libmpich12 (MPICH 4.0.2 built ch4:ucx, same version and
#     ABI) with UCX's default transports (UCX_TLS unset, i.e. "all": on one
#     node UCX picks its shared memory transports; the ones it selected are
#     printed), the target;
#   - on libmpich12 with UCX_TLS=tcp,self, a second comparison;
#   - on libmpich12 as Debian runs it by default (MPICH's own POSIX shared
#     memory, no NOLOCAL), for information only.
# Prints the median one-way latency of 8 B and bandwidth of 1 MiB over RUNS
# runs each, Wireup's ratio to each UCX column and whether issue 15's target
# (at least as good as ch4:ucx) is met.  Every run binds each rank to a core
# of its own (hydra's -bind-to core, the same in every column), so placement
# noise stays out of the numbers; the binding hydra made is printed.  For a
# person to run on an idle machine: on shared cores the numbers measure the
# scheduler (the load is printed before and after).
#
# usage: sh contrib/mpich/ucx-compare.sh [WORKDIR]   (default: build-mpich-ucx)
#   MPICH_PREFIX=dir  the ch4:ofi MPICH (default: build-mpich/install)
#   WIREUP_LIB=dir    Wireup's libfabric.so.1 (default: build/src/.libs)
#   PROVIDER=name     export FI_PROVIDER=name (default: unset, MPICH picks
#                     wireup; e.g. PROVIDER=tcp for the tcp provider alone)
#   RUNS=5
#   ITERS_8=10000 ITERS_1M=200   iterations per run (small for a smoke run)
#   BIND="-bind-to core"         hydra's binding option for every run
set -eu

# shellcheck disable=SC2034 # both read by common.sh
me=ucx-compare.sh work_default=build-mpich-ucx
# shellcheck source=contrib/mpich/common.sh
. "$(dirname "$0")/common.sh"
runs=${RUNS:-5}
expect=${PROVIDER:-wireup}
iters8=${ITERS_8:-10000}
iters1m=${ITERS_1M:-200}
bind=${BIND--bind-to core}

ucx=$(debian_mpich "$work/ucx")
"$prefix/bin/mpicc" -O2 -o "$work/mpi_pingpong" "$top/test/prov/common/mpi_pingpong.c"
# Both ranks on cores of their own: a rank that migrates, or two ranks on
# one core, measures the scheduler instead of the fabric.
# shellcheck disable=SC2086
cores=$(timeout 60 "$mpiexec" $bind -n 2 sh -c 'sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status' |
	sort | tr '\n' ' ')
say "binding (${bind:-none}): ranks on CPUs ${cores:-unknown}"

unset FI_PROVIDER UCX_TLS
wireup="LD_LIBRARY_PATH=$lib MPIR_CVAR_NOLOCAL=1${PROVIDER:+ FI_PROVIDER=$PROVIDER}"
ucxall="LD_LIBRARY_PATH=$work/ucx MPIR_CVAR_NOLOCAL=1"
ucxtcp="LD_LIBRARY_PATH=$work/ucx MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self"
debian="LD_LIBRARY_PATH=$work/ucx"

# Which provider MPICH on Wireup selected, and which transports UCX selected
# for the peer (not itself) with its default UCX_TLS.
# shellcheck disable=SC2086
env $wireup MPIR_CVAR_DEBUG_SUMMARY=1 timeout 120 "$mpiexec" $bind -n 2 "$work/mpi_pingpong" 8 10 \
	>"$work/provider.txt" 2>&1 || true
picked=$(sed -n 's/^libfabric provider: \([^ ]*\) - .*/\1/p' "$work/provider.txt" | head -n 1)
if [ "$picked" != "$expect" ]; then
	say "MPICH on Wireup selected provider '${picked:-none}', expected $expect (see $work/provider.txt)"
	exit 1
fi
say "MPICH on Wireup: provider $picked, MPIR_CVAR_NOLOCAL=1, $prefix"
# shellcheck disable=SC2086
env $ucxall UCX_LOG_LEVEL=info timeout 120 "$mpiexec" $bind -n 2 "$work/mpi_pingpong" 8 10 \
	>"$work/ucx-tls.txt" 2>&1 || true
tls=$(grep 'ep_cfg\[' "$work/ucx-tls.txt" | grep -v 'self/' | head -n 1 | sed 's/.*ep_cfg\[[0-9]*\]: *//')
say "Debian's MPICH ch4:ucx ($ucx), MPIR_CVAR_NOLOCAL=1, UCX_TLS unset (all): UCX selected ${tls:-nothing printed, see $work/ucx-tls.txt}"

# run LABEL BYTES ITERS FIELD env... -> prints the median of field FIELD (us
# or MB/s) over RUNS runs, or "none"; the runs go to $work/LABEL.BYTES.txt.
run() {
	label=$1 bytes=$2 iters=$3 field=$4
	shift 4
	i=0
	while [ "$i" -lt "$runs" ]; do
		# shellcheck disable=SC2086
		env "$@" timeout 300 "$mpiexec" $bind -n 2 "$work/mpi_pingpong" "$bytes" "$iters" 2>>"$work/err.txt" |
			sed -n "s/.*: \([0-9.]*\) us one-way, \([0-9.]*\) MB\/s.*/\\$field/p"
		i=$((i + 1))
	done | sort -n >"$work/$label.$bytes.txt"
	awk '{ v[NR] = $1 } END { if (NR == 0) print "none"; else print v[int((NR + 1) / 2)] }' "$work/$label.$bytes.txt"
}
# spread LABEL BYTES -> "n runs, min .. max"
spread() {
	awk '{ v[NR] = $1 } END { printf "%d runs, %s .. %s", NR, v[1], v[NR] }' "$work/$1.$2.txt"
}
# verdict OURS THEIRS lat|bw -> "ratio R, met|MISSED"
verdict() {
	awk -v a="$1" -v b="$2" -v k="$3" 'BEGIN {
		if (a == "none" || b == "none" || b + 0 == 0) { print "no ratio"; exit }
		r = a / b
		ok = (k == "lat") ? (r <= 1) : (r >= 1)
		printf "Wireup/UCX %.2f, %s\n", r, ok ? "met" : "MISSED" }'
}

: >"$work/err.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
say "load before: $load0"
# shellcheck disable=SC2086
{
	wl=$(run wireup 8 "$iters8" 1 $wireup)
	al=$(run ucx-all 8 "$iters8" 1 $ucxall)
	tl=$(run ucx-tcp 8 "$iters8" 1 $ucxtcp)
	dl=$(run debian 8 "$iters8" 1 $debian)
	wb=$(run wireup 1048576 "$iters1m" 2 $wireup)
	ab=$(run ucx-all 1048576 "$iters1m" 2 $ucxall)
	tb=$(run ucx-tcp 1048576 "$iters1m" 2 $ucxtcp)
	db=$(run debian 1048576 "$iters1m" 2 $debian)
}
load1=$(cut -d' ' -f1-3 /proc/loadavg)
say "load after: $load1"
printf '%-44s %12s %12s\n' "2 ranks, medians of $runs runs" "8 B us" "1 MiB MB/s"
printf '%-44s %12s %12s   (%s; %s)\n' "MPICH on Wireup ($picked)" "$wl" "$wb" "$(spread wireup 8)" "$(spread wireup 1048576)"
printf '%-44s %12s %12s   (%s; %s)\n' "Debian MPICH ch4:ucx, UCX_TLS default (all)" "$al" "$ab" "$(spread ucx-all 8)" "$(spread ucx-all 1048576)"
printf '%-44s %12s %12s   (%s; %s)\n' "Debian MPICH ch4:ucx, UCX_TLS=tcp,self" "$tl" "$tb" "$(spread ucx-tcp 8)" "$(spread ucx-tcp 1048576)"
printf '%-44s %12s %12s   (%s; %s)\n' "Debian MPICH, its own shm (info)" "$dl" "$db" "$(spread debian 8)" "$(spread debian 1048576)"
echo "target: at least as good as ch4:ucx (UCX_TLS default), 8 B and 1 MiB"
echo "8 B   vs UCX default: $(verdict "$wl" "$al" lat)"
echo "1 MiB vs UCX default: $(verdict "$wb" "$ab" bw)"
echo "8 B   vs UCX tcp,self: $(verdict "$wl" "$tl" lat)"
echo "1 MiB vs UCX tcp,self: $(verdict "$wb" "$tb" bw)"
echo "UCX selected (UCX_TLS default): ${tls:-unknown}"
echo "binding: ${bind:-none}, ranks on CPUs ${cores:-unknown}"
echo "load before $load0, after $load1"
