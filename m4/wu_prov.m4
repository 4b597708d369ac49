dnl SPDX-License-Identifier: BSD-3-Clause
# The configure switches of the built-in providers (--enable-<name>=yes|no).
# WU_PROV_ARG(name, what): --enable-name, default yes; enable_<name> is yes or no.
AC_DEFUN([WU_PROV_ARG], [
  AC_ARG_ENABLE([$1],
    [AS_HELP_STRING([--enable-$1@<:@=yes|no@:>@], [build $2 (default: yes)])],
    [AS_CASE(["$enableval"], [yes|no], [], [AC_MSG_ERROR([--enable-$1 takes yes or no, not "$enableval"])])],
    [enable_$1=yes])
])
# WU_PROV_DEFINE(name, NAME): after the switches are final, WU_PROV_NAME in
# config.h and as an automake conditional, WU_GTEST_NAME for its GoogleTest
# programs, and name appended to WU_PROVIDERS (the configure summary).
AC_DEFUN([WU_PROV_DEFINE], [
  AS_IF([test "$enable_$1" = yes],
    [AC_DEFINE([WU_PROV_$2], [1], [The $1 provider is built])
     WU_PROVIDERS="${WU_PROVIDERS:+$WU_PROVIDERS }$1"])
  AM_CONDITIONAL([WU_PROV_$2], [test "$enable_$1" = yes])
  AM_CONDITIONAL([WU_GTEST_$2], [test "$enable_$1" = yes && test "$wu_have_gtest" = yes])
])
