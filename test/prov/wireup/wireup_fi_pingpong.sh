#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_pingpong on our library over the wireup provider
# (issue 15): both processes on this node, so their traffic goes through
# the shm sub-endpoints; shm_fi_pingpong.sh's runs (msg and tagged, 8 B ..
# 1 MiB, data checks) with -p wireup.
WU_PP_PROV=wireup exec sh "$(dirname "$0")/../shm/shm_fi_pingpong.sh"
