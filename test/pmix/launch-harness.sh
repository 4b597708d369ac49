# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the PMIx launcher tests (launchers.sh, wireup_launchers.sh): runs
# a PMIx client under Open MPI's mpirun and under srun on a private
# single-node Slurm started here and always stopped again.
#
# Every case that can run must pass.  A missing launcher does not fail the
# test: its cases are left out and, if all that ran passed, the exit status is
# 77 (skip) with a message naming the Debian package to install.
#
# The sourcing script sets, then calls launch_harness_main:
#   launch      contrib/launch in the source tree
#   probe       the client program; its ranks print "<basename> rank ... OK"
#   sizes       rank counts under mpirun
#   srun_sizes  rank counts under srun (default: $sizes)
#   launchers   which launchers to try ("mpirun srun")
#   budget      seconds for the whole script
#   case_limit  seconds for one launch
#   work_name   prefix of the temporary directory under /tmp
#   summary     what the summary line calls the test
# and defines run_case LAUNCHER N, which normally calls
# harness_case LAUNCHER N [ARG...] to launch $probe ARG... as N ranks.

elapsed() { echo $(( $(date +%s) - start )); }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

cleanup() {
	if [ -n "$work" ]; then
		sh "$launch/slurm-down.sh" "$work/slurm" >/dev/null 2>&1
		rm -rf "$work"
	fi
}

show_slurm_logs() {
	for f in "$work"/slurm/log/*.log; do
		[ -s "$f" ] || continue
		echo "--- $f (last lines)"
		tail -n 20 "$f"
	done
}

harness_case() { # harness_case LAUNCHER N [ARG...]: one launch, counted
	hl=$1; hn=$2; shift 2
	left=$((budget - $(elapsed)))
	if [ $left -lt 5 ]; then
		echo "FAIL: $hl N=$hn: not run, the $budget s budget is spent"
		fail=$((fail + 1)); return
	fi
	[ $left -gt $case_limit ] && left=$case_limit
	out=$work/$hl-$hn.out
	t0=$(now)
	WU_LAUNCH_TIMEOUT=$left sh "$launch/run-pmix.sh" "$hl" "$hn" "$probe" "$@" >"$out" 2>&1
	rc=$?
	t=$(secs "$t0" "$(now)")
	name=${probe##*/}
	okl=$(grep -c "^$name rank .* OK\$" "$out")
	if [ $rc -eq 0 ] && [ "$okl" -eq "$hn" ]; then
		echo "PASS: $hl N=$hn ($t s)"
		grep "^$name rank 0/" "$out" | sed 's/^/  /'
		pass=$((pass + 1))
	else
		[ $rc -eq 124 ] && rc="124 (timed out after $left s)"
		echo "FAIL: $hl N=$hn: status $rc, $okl of $hn ranks OK ($t s); output:"
		sed 's/^/  | /' "$out"
		[ "$hl" = srun ] && show_slurm_logs
		fail=$((fail + 1))
	fi
}

srun_cases() { # start the private Slurm, run_case srun N for each size, stop it
	miss=""
	for p in munged:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client; do
		command -v "${p%%:*}" >/dev/null 2>&1 || miss="$miss ${p#*:}"
	done
	if [ -n "$miss" ]; then
		skipped="$skipped srun (install the Debian packages$miss);"; return
	fi
	if [ "$(id -u)" != 0 ]; then
		skipped="$skipped srun (the private Slurm needs root);"; return
	fi
	t0=$(now)
	for attempt in 1 2; do
		WU_SLURM_WATCH_PID=$$ sh "$launch/slurm-up.sh" "$work/slurm" >"$work/slurm-up.out" 2>&1
		up=$?
		[ $up -eq 0 ] || [ $up -eq 77 ] && break
		echo "note: slurm-up attempt $attempt failed (status $up):"
		sed 's/^/  | /' "$work/slurm-up.out"
		sh "$launch/slurm-down.sh" "$work/slurm" >/dev/null 2>&1
	done
	if [ $up -eq 77 ]; then
		skipped="$skipped srun ($(cat "$work/slurm-up.out"));"; return
	elif [ $up -ne 0 ]; then
		echo "FAIL: the private Slurm did not start"
		fail=$((fail + 1)); return
	fi
	echo "slurm up in $(secs "$t0" "$(now)") s"
	export WU_SLURM_DIR="$work/slurm"
	for n in $srun_sizes; do run_case srun "$n"; done
	t0=$(now)
	sh "$launch/slurm-down.sh" "$work/slurm"
	echo "slurm down in $(secs "$t0" "$(now)") s"
}

launch_harness_main() { # every launcher, the summary, and the exit status
	if [ ! -x "$probe" ]; then
		echo "SKIP: $probe was not built (configured without PMIx? install libpmix-dev)"
		exit 77
	fi
	PATH=$PATH:/usr/sbin:/sbin
	srun_sizes=${srun_sizes:-$sizes}

	start=$(date +%s)
	pass=0; fail=0; skipped=""
	work=""
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	work=$(mktemp -d "/tmp/$work_name.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }

	for l in $launchers; do
		case $l in
		mpirun)
			if ! command -v mpirun >/dev/null 2>&1; then
				skipped="$skipped mpirun (install the Debian package openmpi-bin);"; continue
			fi
			for n in $sizes; do run_case mpirun "$n"; done
			;;
		srun)
			srun_cases
			;;
		*)
			echo "FAIL: unknown launcher $l"; fail=$((fail + 1))
			;;
		esac
	done

	echo "$summary: $pass passed, $fail failed in $(elapsed) s${skipped:+; skipped:$skipped}"
	[ $fail -eq 0 ] || exit 1
	if [ -n "$skipped" ]; then
		echo "SKIP: launchers not available:$skipped"
		exit 77
	fi
	exit 0
}
