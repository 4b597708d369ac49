dnl SPDX-License-Identifier: BSD-3-Clause
# WU_CHECK_PACKAGE(prefix, with-name, pkg-config-module, header, library, function,
#                  debian-package, required: yes|no|auto)
# pkg-config first, then --with-X=DIR / --with-X-libdir=DIR, then the default
# search path.  Results: <prefix>_CPPFLAGS, <prefix>_LDFLAGS, <prefix>_LIBS and
# wu_have_<with-name>=yes|no.  Configure options are mirrored into
# WU_DISTCHECK_FLAGS so `make distcheck` configures the same way.
AC_DEFUN([WU_CHECK_PACKAGE], [
  AC_ARG_WITH([$2],
    [AS_HELP_STRING([--with-$2@<:@=DIR@:>@], [use $2 (installed under DIR); "no" disables it])],
    [], [with_$2=m4_if([$8], [yes], [yes], [check])])
  AC_ARG_WITH([$2-libdir],
    [AS_HELP_STRING([--with-$2-libdir=DIR], [look for the $2 library in DIR])])
  $1_CPPFLAGS=""
  $1_LDFLAGS=""
  $1_LIBS=""
  wu_have_$2=no
  wu_pkg_$2_need=m4_if([$8], [yes], [yes], [no])
  AS_CASE(["$with_$2"],
    [no], [AS_IF([test "$wu_pkg_$2_need" = yes],
            [AC_MSG_ERROR([$2 is required; --without-$2 is not supported here])])],
    [yes|check], [
      PKG_CHECK_MODULES([$1], [$3],
        [$1_CPPFLAGS="$$1_CFLAGS"; wu_have_$2=yes], [wu_have_$2=no])
      AS_IF([test "$wu_have_$2" = no], [
        wu_save_CPPFLAGS="$CPPFLAGS"; wu_save_LIBS="$LIBS"; wu_save_LDFLAGS="$LDFLAGS"
        AS_IF([test -n "$with_$2_libdir"], [$1_LDFLAGS="-L$with_$2_libdir"; LDFLAGS="$LDFLAGS $$1_LDFLAGS"])
        AC_CHECK_HEADER([$4], [AC_CHECK_LIB([$5], [$6], [wu_have_$2=yes; $1_LIBS="-l$5"])])
        CPPFLAGS="$wu_save_CPPFLAGS"; LIBS="$wu_save_LIBS"; LDFLAGS="$wu_save_LDFLAGS"
      ])],
    [
      $1_CPPFLAGS="-I$with_$2/include"
      AS_IF([test -n "$with_$2_libdir"], [wu_$2_libdir="$with_$2_libdir"],
            [test -d "$with_$2/lib64"], [wu_$2_libdir="$with_$2/lib64"],
            [wu_$2_libdir="$with_$2/lib"])
      $1_LDFLAGS="-L$wu_$2_libdir -Wl,-rpath,$wu_$2_libdir"
      wu_save_CPPFLAGS="$CPPFLAGS"; wu_save_LIBS="$LIBS"; wu_save_LDFLAGS="$LDFLAGS"
      CPPFLAGS="$CPPFLAGS $$1_CPPFLAGS"; LDFLAGS="$LDFLAGS $$1_LDFLAGS"
      AC_CHECK_HEADER([$4], [AC_CHECK_LIB([$5], [$6], [wu_have_$2=yes; $1_LIBS="-l$5"])])
      CPPFLAGS="$wu_save_CPPFLAGS"; LIBS="$wu_save_LIBS"; LDFLAGS="$wu_save_LDFLAGS"
      AS_IF([test "$wu_have_$2" = no],
        [AC_MSG_ERROR([--with-$2=$with_$2 was given, but $4 / lib$5 were not found there])])
      WU_DISTCHECK_FLAGS="$WU_DISTCHECK_FLAGS --with-$2=$with_$2"
    ])
  AS_IF([test "$wu_have_$2" = no && test "$with_$2" = yes && test "$wu_pkg_$2_need" = yes],
    [AC_MSG_ERROR([$2 was not found: install the Debian package $7 (apt-get install $7), or point --with-$2=DIR at an installation])])
  AS_IF([test "$wu_have_$2" = no && test "$with_$2" = yes && test "$wu_pkg_$2_need" != yes],
    [AC_MSG_ERROR([--with-$2 was given but $2 was not found: install the Debian package $7])])
  AC_MSG_CHECKING([whether to use $2])
  AC_MSG_RESULT([$wu_have_$2])
  AC_SUBST([$1_CPPFLAGS])
  AC_SUBST([$1_LDFLAGS])
  AC_SUBST([$1_LIBS])
])
