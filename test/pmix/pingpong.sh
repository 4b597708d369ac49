#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The main job as a test: contrib/wireup_pingpong under mpirun (N = 2, 4, 8
# on the wireup provider, N = 4 on tcp) and under srun on a private Slurm
# (N = 4): wire-up through PMIx, a tagged message between every pair of
# ranks, and an 8-byte ping-pong.
prog=$top_builddir/contrib/wireup_pingpong
launch=$top_srcdir/contrib/launch
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun missing (Debian package openmpi-bin)"; exit 77; }
fail=0
run() { # launcher n
	out=$(WU_LAUNCH_TIMEOUT=60 sh "$launch/run-pmix.sh" "$1" "$2" "$prog" 2>&1)
	rc=$?
	ok=$(echo "$out" | grep -c "peers checked OK")
	if [ $rc -eq 0 ] && [ "$ok" -eq "$2" ]; then
		echo "PASS: $1 N=$2: $(echo "$out" | grep 'rank 0/' )"
	else
		echo "FAIL: $1 N=$2 (status $rc, $ok of $2 ranks OK):"; echo "$out" | sed 's/^/  | /'
		fail=1
	fi
}
for n in 2 4 8; do run mpirun $n; done
WU_PINGPONG_PROV=tcp; export WU_PINGPONG_PROV
run mpirun 4
unset WU_PINGPONG_PROV
if command -v slurmctld >/dev/null 2>&1 && command -v srun >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/wu-pp-slurm.XXXXXX")
	trap 'sh "$launch/slurm-down.sh" "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
	if WU_SLURM_WATCH_PID=$$ sh "$launch/slurm-up.sh" "$dir" >"$dir.up" 2>&1; then
		WU_SLURM_DIR=$dir; export WU_SLURM_DIR
		run srun 4
	else
		echo "FAIL: private Slurm did not start:"; sed 's/^/  | /' "$dir.up"; fail=1
	fi
	rm -f "$dir.up"
else
	echo "SKIP: srun part needs slurmctld, slurmd, slurm-client, munge and root"; [ $fail = 0 ] && exit 77
fi
exit $fail
