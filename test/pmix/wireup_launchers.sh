#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
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
# The launcher loop is in launch-harness.sh.
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
work_name=wu-wireup
summary="wireup launchers"

# The rank that takes a port off the symmetric layout: the last one for
# N = 2 and 4 (its node leader publishes it on its own), none otherwise.
deviant() { case $1 in 2|4) echo $(($1 - 1)) ;; *) echo -1 ;; esac; }

run_case() { harness_case "$1" "$2" "$2" "$(deviant "$2")"; } # run_case LAUNCHER N

. "$top_srcdir/test/pmix/launch-harness.sh"
launch_harness_main
