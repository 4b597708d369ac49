#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check: issue 28's fi_av_insertsym under a real launcher:
# test/pmix/test_wireup_sym_launch as 2 and 4 ranks of this node under Open
# MPI's mpirun; each rank binds host + base port + local rank and fills its
# AV with one insertsym from launcher data (no PMIx put or fence of
# addresses), then the ranks pass a message round a ring over shm.  77
# (skip) only when mpirun is missing.  The launcher loop is in
# launch-harness.sh.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
launch=$top_srcdir/contrib/launch
probe=$top_builddir/test/pmix/test_wireup_sym_launch
sizes=${WU_WIREUP_SYM_SIZES:-2 4}
launchers=mpirun
budget=60            # seconds for the whole script
case_limit=30        # seconds for one launch
work_name=wu-wireup-sym
summary="wireup fi_av_insertsym under a launcher"
# Ports of this run, apart from other tests running at once, and below the
# kernel's ephemeral range (32768-60999), where any outgoing connection may
# take one (wireup_node_gets.sh uses 10000-19999).
WU_SYM_PORT_BASE=$((5000 + $$ % 500 * 8))
export WU_SYM_PORT_BASE

run_case() { harness_case "$1" "$2" "$2"; } # run_case LAUNCHER N

. "$top_srcdir/test/pmix/launch-harness.sh"
launch_harness_main
