#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: run test/pmix/pmix_probe as 1, 2, 4 and 8 PMIx clients
# (oversubscribed) under Open MPI's mpirun and under srun on a private
# single-node Slurm started here and always stopped again.
#
# Every case that can run must pass.  A missing launcher does not fail the
# test: its cases are left out and, if all that ran passed, the exit status is
# 77 (skip) with a message naming the Debian package to install.
# Environment: top_srcdir, top_builddir (set by make check), optionally
# WU_PMIX_SIZES (default "1 2 4 8") and WU_PMIX_LAUNCHERS (default "mpirun srun").
# The launcher loop is in launch-harness.sh.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
launch=$top_srcdir/contrib/launch
probe=$top_builddir/test/pmix/pmix_probe
sizes=${WU_PMIX_SIZES:-1 2 4 8}
srun_sizes=$sizes
launchers=${WU_PMIX_LAUNCHERS:-mpirun srun}
budget=85            # seconds for the whole script
case_limit=30        # seconds for one launch
work_name=wu-launchers
summary=launchers

run_case() { harness_case "$1" "$2" "$2"; } # run_case LAUNCHER N

. "$top_srcdir/test/pmix/launch-harness.sh"
launch_harness_main
