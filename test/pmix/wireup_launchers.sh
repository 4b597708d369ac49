#!/bin/sh
# make check: run test/pmix/test_wireup_launch (every wire-up mode, the
# zero-code "pmix:" AV, a rank off the symmetric layout) as 1, 2, 4, 8 and
# 12 PMIx clients (oversubscribed: 2 cores here) under Open MPI's mpirun,
# and as 1, 2, 4 and 8 under srun on a private
# single-node Slurm started here and always stopped again.
#
# Every case that can run must pass.  A missing launcher does not fail the
# test: its cases are left out and, if all that ran passed, the exit status is
# 77 (skip) with a message naming the Debian package to install.
# Environment: top_srcdir, top_builddir (set by make check), optionally
# WU_WIREUP_SIZES (mpirun, default "1 2 4 8 12"), WU_WIREUP_SRUN_SIZES (default
# "1 2 4 8") and WU_PMIX_LAUNCHERS (default "mpirun srun").
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
launch=$top_srcdir/contrib/launch
probe=$top_builddir/test/pmix/test_wireup_launch
sizes=${WU_WIREUP_SIZES:-1 2 4 8 12}
srun_sizes=${WU_WIREUP_SRUN_SIZES:-1 2 4 8}
launchers=${WU_PMIX_LAUNCHERS:-mpirun srun}
budget=70            # seconds for the whole script
case_limit=30        # seconds for one launch

if [ ! -x "$probe" ]; then
	echo "SKIP: $probe was not built (configured without PMIx? install libpmix-dev)"
	exit 77
fi
PATH=$PATH:/usr/sbin:/sbin

start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

pass=0; fail=0; skipped=""
work=""
cleanup() {
	if [ -n "$work" ]; then
		sh "$launch/slurm-down.sh" "$work/slurm" >/dev/null 2>&1
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
work=$(mktemp -d /tmp/wu-wireup.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }

show_slurm_logs() {
	for f in "$work"/slurm/log/*.log; do
		[ -s "$f" ] || continue
		echo "--- $f (last lines)"
		tail -n 20 "$f"
	done
}

# The rank that takes a port off the symmetric layout: the last one for
# N = 2 and 4 (its node leader publishes it on its own), none otherwise.
deviant() { case $1 in 2|4) echo $(($1 - 1)) ;; *) echo -1 ;; esac; }

run_case() { # run_case LAUNCHER N
	left=$((budget - $(elapsed)))
	if [ $left -lt 5 ]; then
		echo "FAIL: $1 N=$2: not run, the $budget s budget is spent"
		fail=$((fail + 1)); return
	fi
	[ $left -gt $case_limit ] && left=$case_limit
	out=$work/$1-$2.out
	t0=$(now)
	WU_LAUNCH_TIMEOUT=$left sh "$launch/run-pmix.sh" "$1" "$2" "$probe" "$2" "$(deviant "$2")" >"$out" 2>&1
	rc=$?
	t=$(secs "$t0" "$(now)")
	okl=$(grep -c '^test_wireup_launch rank .* OK$' "$out")
	if [ $rc -eq 0 ] && [ "$okl" -eq "$2" ]; then
		echo "PASS: $1 N=$2 ($t s)"
		grep '^test_wireup_launch rank 0/' "$out" | sed 's/^/  /'
		pass=$((pass + 1))
	else
		[ $rc -eq 124 ] && rc="124 (timed out after $left s)"
		echo "FAIL: $1 N=$2: status $rc, $okl of $2 ranks OK ($t s); output:"
		sed 's/^/  | /' "$out"
		[ "$1" = srun ] && show_slurm_logs
		fail=$((fail + 1))
	fi
}

for l in $launchers; do
	case $l in
	mpirun)
		if ! command -v mpirun >/dev/null 2>&1; then
			skipped="$skipped mpirun (install the Debian package openmpi-bin);"; continue
		fi
		for n in $sizes; do run_case mpirun "$n"; done
		;;
	srun)
		miss=""
		for p in munged:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client; do
			command -v "${p%%:*}" >/dev/null 2>&1 || miss="$miss ${p#*:}"
		done
		if [ -n "$miss" ]; then
			skipped="$skipped srun (install the Debian packages$miss);"; continue
		fi
		if [ "$(id -u)" != 0 ]; then
			skipped="$skipped srun (the private Slurm needs root);"; continue
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
			skipped="$skipped srun ($(cat "$work/slurm-up.out"));"; continue
		elif [ $up -ne 0 ]; then
			echo "FAIL: the private Slurm did not start"
			fail=$((fail + 1)); continue
		fi
		echo "slurm up in $(secs "$t0" "$(now)") s"
		export WU_SLURM_DIR="$work/slurm"
		for n in $srun_sizes; do run_case srun "$n"; done
		t0=$(now)
		sh "$launch/slurm-down.sh" "$work/slurm"
		echo "slurm down in $(secs "$t0" "$(now)") s"
		;;
	*)
		echo "FAIL: unknown launcher $l"; fail=$((fail + 1))
		;;
	esac
done

echo "wireup launchers: $pass passed, $fail failed in $(elapsed) s${skipped:+; skipped:$skipped}"
[ $fail -eq 0 ] || exit 1
if [ -n "$skipped" ]; then
	echo "SKIP: launchers not available:$skipped"
	exit 77
fi
exit 0
