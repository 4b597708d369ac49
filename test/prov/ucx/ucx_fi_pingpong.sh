#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_pingpong on our library over the ucx provider
# (issue 16): shm_fi_pingpong.sh's runs (msg and tagged, 8 B .. 1 MiB, data
# checks) with -p ucx, once over UCX's tcp transport and once over its
# shared-memory ones, both on this host (loopback).
set -u
here=$(dirname "$0")
status=0
for tls in tcp posix,sysv,cma,self; do
	echo "UCX_TLS=$tls"
	UCX_TLS=$tls WU_PP_PROV=ucx sh "$here/../shm/shm_fi_pingpong.sh"
	rc=$?
	[ $rc -eq 77 ] && exit 77
	[ $rc -ne 0 ] && status=1
done
exit $status
