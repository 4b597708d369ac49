#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fi_strerror of our library must print the same text as Debian's for every
# code in -300..300 (but the 2.x codes 270/271): applications show and match
# these strings.
# Env: top_builddir, WU_LIB (ours), DEBIAN_LIBFABRIC (reference), WU_EMBEDDED.
top_builddir=${top_builddir:-.}
WU_LIB=${WU_LIB:-$top_builddir/src/.libs/libfabric.so.1}
DEB_LIB=${DEBIAN_LIBFABRIC:-/usr/lib/x86_64-linux-gnu/libfabric.so.1}
DUMP=$top_builddir/test/core/strerror_dump

if [ ! -e "$DEB_LIB" ]; then
	echo "SKIP: Debian's $DEB_LIB is missing; install package libfabric1 (apt-get install libfabric1) to compare against it"
	exit 77
fi
if [ "$WU_EMBEDDED" = yes ]; then
	echo "SKIP: embedded build has no libfabric.so.1 to compare"
	exit 77
fi
if [ ! -x "$DUMP" ]; then
	echo "FAIL: $DUMP not built (make check builds it)"
	exit 1
fi
if [ ! -e "$WU_LIB" ]; then
	echo "FAIL: our library $WU_LIB is missing; build it first or set WU_LIB"
	exit 1
fi
if [ "$(readlink -f "$WU_LIB")" = "$(readlink -f "$DEB_LIB")" ]; then
	echo "FAIL: WU_LIB and the Debian reference are the same file ($DEB_LIB)"
	exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# Same locale for both so libc's errno texts are comparable.
# 270 and 271 (FI_ENOMR, FI_EFIREWALLADDR) are 2.x codes 1.17 has no text for.
LC_ALL=C "$DUMP" "$DEB_LIB" | grep -Ev '^-?27[01]	' > "$tmp/debian.txt" || { echo "FAIL: dump of $DEB_LIB"; exit 1; }
LC_ALL=C "$DUMP" "$WU_LIB" | grep -Ev '^-?27[01]	' > "$tmp/ours.txt" || { echo "FAIL: dump of $WU_LIB"; exit 1; }

if ! diff -u "$tmp/debian.txt" "$tmp/ours.txt"; then
	echo "FAIL: fi_strerror text differs from Debian's (- Debian, + ours)"
	exit 1
fi
echo "PASS: fi_strerror matches $DEB_LIB for $(wc -l < "$tmp/ours.txt") codes"
