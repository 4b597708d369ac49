dnl SPDX-License-Identifier: BSD-3-Clause
# rdma-core verbs: optional (auto), lists verbs devices as NICs.
AC_DEFUN([WU_CHECK_VERBS], [
  WU_CHECK_PACKAGE([VERBS], [verbs], [libibverbs], [infiniband/verbs.h], [ibverbs], [ibv_get_device_list], [libibverbs-dev], [auto])
  AS_IF([test "$wu_have_verbs" = yes], [AC_DEFINE([WU_HAVE_VERBS], [1], [rdma-core verbs are available])])
  AM_CONDITIONAL([WU_HAVE_VERBS], [test "$wu_have_verbs" = yes])
])
