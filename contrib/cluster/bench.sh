#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make bench-cluster (issue 30): contrib/cluster/cluster.sh at every size of
# WU_CLUSTER_SIZES (NODESxRANKS, default "2x2 4x4 8x8 2x16 16x16") under every
# launcher of WU_CLUSTER_LAUNCHERS (default "mpirun slurm"), three tables
# in markdown on stdout (docs/cluster.md says what each column means):
#   wire-up   contrib/wireup_pingpong in each PMIx mode of WU_CLUSTER_MODES
#             (default "modex direct symmetric", symmetric by host names
#             with no exchange at all; "launcher"
#             needs a launcher that publishes endpoints, which neither
#             does): per rank the max of PMIx gets,
#             bytes fetched, fences and AV fill time; local gets/bytes
#             summed over the job (must be 0); whole-job sums.
#   MPI       cluster_mpi under Open MPI, OFI MTL on wireup (no provider
#             named) vs ob1 with vader+tcp, WU_CLUSTER_RUNS (default 3) runs
#             each, alternating: medians of the per-run max MPI_Init (wall
#             and CPU) and peak RSS, runs whose all-to-all data check passed.
#   tcp       connections per rank to other nodes (max) and duplicates.
# Plus one fault row per launcher at the smallest size: node 2's ranks are
# killed during the all-to-all.  WU_CLUSTER_TABLES (default "wireup mpi
# fault") chooses the tables.
# BUILD is the build directory (default ./build); logs stay in WU_CLUSTER_LOGS
# (default a new /tmp/wuc-bench.XXXXXX).  Not a test: it never fails on numbers.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../bench/median.sh"
build=$(cd "${BUILD:-build}" && pwd) || exit 1
lib=$build/src/.libs
pp=$build/contrib/wireup_pingpong
sizes=${WU_CLUSTER_SIZES:-2x2 4x4 8x8 2x16 16x16}
launchers=${WU_CLUSTER_LAUNCHERS:-mpirun slurm}
logs=${WU_CLUSTER_LOGS:-$(mktemp -d /tmp/wuc-bench.XXXXXX)}
mkdir -p "$logs"
[ -x "$pp" ] || { echo "bench-cluster: $pp not built (PMIx missing?)" >&2; exit 1; }
mpicc -O2 -o "$logs/cluster_mpi" "$here/cluster_mpi.c" || exit 1
cl() { LD_LIBRARY_PATH=$lib WU_CLUSTER_SHM_REAP=$build/contrib/cluster/shm_reap sh "$here/cluster.sh" "$@"; }

echo "# bench-cluster $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), logs in $logs"
tables=${WU_CLUSTER_TABLES:-wireup mpi fault}
case " $tables " in *" wireup "*) ;; *) launchers_w="" ;; esac
echo
echo "## Wire-up (contrib/wireup_pingpong): per rank max / job sum"
echo
echo "| launcher | NxM | mode | pass | gets/rank | bytes/rank | local gets+bytes (job) | fences/rank | fill ms/rank | gets (job) | bytes (job) | tcp/rank | dup |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for l in ${launchers_w-$launchers}; do
	for s in $sizes; do
		n=${s%x*} m=${s#*x}
		for mode in ${WU_CLUSTER_MODES:-modex direct symmetric}; do
			extra=""
			[ $mode = symmetric ] && extra="-e FI_PMIX_PORT_BASE=19000 -e FI_PMIX_SYM_NODE_ADDR=hostname"
			log=$logs/pp-$l-$s-$mode.log
			# shellcheck disable=SC2086
			cl -l "$l" -n "$n" -m "$m" -t ${WU_CLUSTER_TIMEOUT:-300} -e WU_PINGPONG_STATS=1 -e FI_PMIX_MODE=$mode $extra \
				"$pp" >"$log" 2>&1
			rc=$?
			awk -v l="$l" -v s="$s" -v mode=$mode -v rc=$rc -v np=$((n * m)) '
				/^wireup_pingpong rank .* peers checked OK/ { ok++ }
				/^wireup_pingpong stats/ {
					for (i = 1; i < NF; i++) v[$i] = $(i + 1)
					r++
					if (v["gets"] > g) g = v["gets"]
					if (v["bytes_got"] > b) b = v["bytes_got"]
					if (v["fences"] > f) f = v["fences"]
					if (v["fill_us"] > t) t = v["fill_us"]
					if (v["tcp"] > c) c = v["tcp"]
					if (v["dup"] > d) d = v["dup"]
					lg += v["local_gets"]; lb += v["local_bytes"]
					sg += v["gets"]; sb += v["bytes_got"]
				}
				END {
					pass = rc == 0 && ok == np ? "yes" : "NO (" ok "/" np " ok, status " rc ")"
					printf "| %s | %s | %s | %s | %d | %d | %d+%d | %d | %.1f | %d | %d | %d | %d |\n",
						l, s, mode, pass, g, b, lg, lb, f, t / 1000, sg, sb, c, d
				}' "$log"
		done
	done
done
echo
echo "## Open MPI: OFI MTL on wireup vs ob1 (vader+tcp), cluster_mpi, max over ranks"
echo
runs=${WU_CLUSTER_RUNS:-3}
echo "Each row: $runs runs, the two stacks alternating; per run the max over ranks, then the median of the runs."
echo "MPI_Init CPU: user + system time of the rank's process across MPI_Init (with more ranks than cores, wall time is mostly the other ranks' CPU)."
echo
echo "| launcher | NxM | stack | passed | MPI_Init ms | MPI_Init CPU ms | peak RSS MB | RSS / ob1 | tcp/rank | dup |"
echo "|---|---|---|---|---|---|---|---|---|---|"
case " $tables " in *" mpi "*) launchers_m=$launchers ;; *) launchers_m="" ;; esac
for l in $launchers_m; do
	for s in $sizes; do
		n=${s%x*} m=${s#*x}
		for r in $(seq "$runs"); do
			for stack in ofi ob1; do
				if [ $stack = ofi ]; then
					set -- -e OMPI_MCA_pml=cm -e OMPI_MCA_mtl=ofi
				else
					set -- -e OMPI_MCA_pml=ob1 -e OMPI_MCA_btl=self,vader,tcp
				fi
				log=$logs/mpi-$l-$s-$stack-$r.log
				cl -l "$l" -n "$n" -m "$m" -t ${WU_CLUSTER_TIMEOUT:-300} "$@" "$logs/cluster_mpi" >"$log" 2>&1
				rc=$?
				# one line per run: pass init cpu rss tcp dup
				awk -v rc=$rc '
					/^cluster_mpi: PASS/ { pass = 1 }
					/^cluster_mpi: rank .* init_ms/ {
						for (i = 1; i < NF; i++) v[$i] = $(i + 1)
						if (v["init_ms"] > t) t = v["init_ms"]
						if (v["init_cpu_ms"] > u) u = v["init_cpu_ms"]
						if (v["rss_kb"] > q) q = v["rss_kb"]
						if (v["tcp"] > c) c = v["tcp"]
						if (v["dup"] > d) d = v["dup"]
					}
					END { print (pass && rc == 0) ? 1 : 0, t, u, q, c, d }' "$log" >>"$logs/mpi-$l-$s-$stack.runs"
			done
		done
		for stack in ofi ob1; do
			f=$logs/mpi-$l-$s-$stack.runs
			printf '| %s | %s | %s | %s/%s | %.0f | %.0f | %.1f | %s | %d | %d |\n' "$l" "$s" \
				"$([ $stack = ofi ] && echo 'OFI MTL on wireup' || echo 'ob1 vader+tcp')" \
				"$(awk '{ p += $1 } END { print p + 0 }' "$f")" "$runs" \
				"$(cut -d' ' -f2 "$f" | median)" "$(cut -d' ' -f3 "$f" | median)" \
				"$(cut -d' ' -f4 "$f" | median | awk '{ print $1 / 1024 }')" \
				"$([ $stack = ob1 ] && echo 1.00x || echo '-')" \
				"$(cut -d' ' -f5 "$f" | sort -n | tail -1)" "$(cut -d' ' -f6 "$f" | sort -n | tail -1)"
		done | awk '
			# the ofi row gets its RSS ratio from the ob1 row after it
			NR == 1 { row = $0; split($0, a, " [|] "); next }
			{ split($0, b, " [|] "); sub(/ \| - \|/, sprintf(" | %.2fx |", a[7] / b[7]), row); print row; print $0 }'
	done
done
case " $tables " in *" fault "*) ;; *) exit 0 ;; esac
echo
echo "## Fault: node 2's ranks kill -9'd 2 s into the all-to-all loop (OFI MTL on wireup)"
echo
echo "| launcher | NxM | ranks killed | job gone s after the kill | job status | survivors reporting an MPI error | shm objects left by the job | left after a new endpoint |"
echo "|---|---|---|---|---|---|---|---|"
s=${sizes%% *}
n=${s%x*} m=${s#*x}
for l in $launchers; do
	log=$logs/fault-$l-$s.log
	cl -l "$l" -n "$n" -m "$m" -t 120 -k 2 -a 2 -e OMPI_MCA_pml=cm -e OMPI_MCA_mtl=ofi \
		"$logs/cluster_mpi" 30 >"$log" 2>&1
	awk -v l="$l" -v s="$s" '
		/^cluster: (mpirun|slurm) .* killed/ { k = $0; sub(/.*killed /, "", k); sub(/[ ,].*/, "", k); st = $NF }
		/^cluster: fault: / { e = $0; sub(/.*job ended /, "", e); sub(/ s .*/, "", e) }
		/^cluster_mpi: rank [0-9]+ error/ { err++ }
		/^cluster: shm: / { job = $3 }
		/^cluster: LEFTOVER: \/dev\/shm/ { left++ }
		/^cluster: HANG/ { e = "HANG" }
		END { printf "| %s | %s | %s | %s | %s | %d | %d | %d |\n", l, s, k, e, st, err, job, left }' "$log"
done
