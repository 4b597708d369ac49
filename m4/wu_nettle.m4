dnl SPDX-License-Identifier: BSD-3-Clause
# nettle: required (SHA-256 and HMAC-SHA256 for the tcp provider's job-key
# handshake and shm's keyed names).  PC_REQUIRES_PRIVATE names its
# pkg-config module for libfabric.pc when pkg-config found it.
AC_DEFUN([WU_CHECK_NETTLE], [
  WU_CHECK_PACKAGE([NETTLE], [nettle], [nettle], [nettle/hmac.h], [nettle], [nettle_hmac_sha256_set_key], [nettle-dev], [yes])
  PC_REQUIRES_PRIVATE=""
  AS_CASE(["$with_nettle"], [yes|check],
    [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists nettle], [PC_REQUIRES_PRIVATE="nettle"])])
])
