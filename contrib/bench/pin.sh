# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the two-process benchmarks: sets pin_a and pin_b, command
# prefixes that put each side of a measurement on a CPU of its own, the
# same two CPUs for every column.  Unpinned, the scheduler moves busy-polling
# processes between CPUs mid-run and a run's 8 B latency doubles or not
# by chance.  The CPUs are the first two this shell may run on; override
# with BENCH_CPUS=a,b, or BENCH_PIN=0 to run unpinned.  With one CPU or
# no taskset both prefixes are empty.
pin_a= pin_b=
if [ "${BENCH_PIN:-1}" != 0 ] && command -v taskset >/dev/null 2>&1; then
	cpus=${BENCH_CPUS:-$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//' | awk -F, '{
		for (i = 1; i <= NF; i++) {
			n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1]
			for (c = lo; c <= hi; c++) { printf "%s%d", k++ ? "," : "", c; if (k == 2) exit }
		} }')}
	case $cpus in
	*,*) pin_a="taskset -c ${cpus%%,*}" pin_b="taskset -c ${cpus#*,}" ;;
	esac
fi
