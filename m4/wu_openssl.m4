dnl SPDX-License-Identifier: BSD-3-Clause
# OpenSSL's libcrypto: required (HMAC-SHA256 and random nonces for the tcp
# provider's job-key handshake).  PC_REQUIRES_PRIVATE names its pkg-config
# module for libfabric.pc when pkg-config found it.
AC_DEFUN([WU_CHECK_OPENSSL], [
  WU_CHECK_PACKAGE([OPENSSL], [openssl], [libcrypto], [openssl/hmac.h], [crypto], [HMAC], [libssl-dev], [yes])
  AC_DEFINE([WU_HAVE_OPENSSL], [1], [OpenSSL libcrypto is available])
  PC_REQUIRES_PRIVATE=""
  AS_CASE(["$with_openssl"], [yes|check],
    [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists libcrypto], [PC_REQUIRES_PRIVATE="libcrypto"])])
])
