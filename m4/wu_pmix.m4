dnl SPDX-License-Identifier: BSD-3-Clause
# PMIx: required unless --without-pmix (src/pmix_glue is then left out).
AC_DEFUN([WU_CHECK_PMIX], [
  WU_CHECK_PACKAGE([PMIX], [pmix], [pmix], [pmix.h], [pmix], [PMIx_Init], [libpmix-dev], [auto])
  AS_IF([test "$with_pmix" != no && test "$wu_have_pmix" = no],
    [AC_MSG_ERROR([PMIx was not found: install the Debian package libpmix-dev, point --with-pmix=DIR at an installation, or build without the PMIx wire-up (--without-pmix)])])
  AS_IF([test "$wu_have_pmix" = yes], [AC_DEFINE([WU_HAVE_PMIX], [1], [PMIx wire-up is built])])
  AM_CONDITIONAL([WU_HAVE_PMIX], [test "$wu_have_pmix" = yes])
])
