dnl SPDX-License-Identifier: BSD-3-Clause
# GoogleTest: needed by `make check` only; configure warns, the unit tests then SKIP.
AC_DEFUN([WU_CHECK_GTEST], [
  PKG_CHECK_MODULES([GTEST], [gtest_main gmock], [wu_have_gtest=yes], [wu_have_gtest=no])
  AS_IF([test "$wu_have_gtest" = no],
    [AC_MSG_WARN([GoogleTest was not found: `make check` needs the Debian packages libgtest-dev and libgmock-dev])])
  AM_CONDITIONAL([WU_HAVE_GTEST], [test "$wu_have_gtest" = yes])
])
