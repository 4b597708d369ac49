dnl SPDX-License-Identifier: BSD-3-Clause
# hwloc: required (NIC locality in fi_getinfo).
AC_DEFUN([WU_CHECK_HWLOC], [
  WU_CHECK_PACKAGE([HWLOC], [hwloc], [hwloc], [hwloc.h], [hwloc], [hwloc_topology_init], [libhwloc-dev], [yes])
  AC_DEFINE([WU_HAVE_HWLOC], [1], [hwloc is available])
])
