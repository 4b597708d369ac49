dnl SPDX-License-Identifier: BSD-3-Clause
# UCX: optional (auto); used only by benchmarks and comparison tests.
AC_DEFUN([WU_CHECK_UCX], [
  WU_CHECK_PACKAGE([UCX], [ucx], [ucx], [ucp/api/ucp.h], [ucp], [ucp_init_version], [libucx-dev], [auto])
  AS_IF([test "$wu_have_ucx" = yes], [AC_DEFINE([WU_HAVE_UCX], [1], [UCX is available for comparisons])])
  AM_CONDITIONAL([WU_HAVE_UCX], [test "$wu_have_ucx" = yes])
])
