#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: issue 15's "zero bytes for node-local peers" under a real
# launcher: test/pmix/test_wireup_local_launch as 2 and 4 ranks of this node
# under Open MPI's mpirun (the wireup provider, the "pmix:" AV and a modex
# av_fill; every rank must show local_gets=0 local_bytes=0 and shm routes
# only); at N=4 rank 2 first opens a plain shm endpoint, so its wireup
# endpoint misses the rank's shm name and the others find it through its
# note.  77 (skip) only when mpirun is missing.  The launcher loop is in
# launch-harness.sh.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
launch=$top_srcdir/contrib/launch
probe=$top_builddir/test/pmix/test_wireup_local_launch
sizes=${WU_WIREUP_LOCAL_SIZES:-2 4}
launchers=mpirun
budget=60            # seconds for the whole script
case_limit=30        # seconds for one launch
work_name=wu-wireup-local
summary="wireup local peers under a launcher"

deviant() { case $1 in 4) echo 2 ;; *) echo -1 ;; esac; }
run_case() { harness_case "$1" "$2" "$2" "$(deviant "$2")"; } # run_case LAUNCHER N

. "$top_srcdir/test/pmix/launch-harness.sh"
launch_harness_main
