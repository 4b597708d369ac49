#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compares fi_tostr/fi_tostr_r output of Debian's libfabric 1.17 and ours on
# the inputs of tostr_dump.  Differences allowed on purpose (and only these):
#   - lines starting with "VERSION:" (FI_TYPE_VERSION prints the library's
#     own version: 1.17.0 vs ours);
#   - in our output, the fi_domain_attr fields 2.0 appended
#     (max_ep_auth_key, max_group_id), which 1.17 does not know;
#   - in our output, flag names 1.17's printer lacks (FI_AV_USER_ID,
#     FI_PEER, and 2.0's FI_TAGGED_DIRECTED_RECV, FI_TAGGED_MULTI_RECV,
#     FI_EXACT_DIRECTED_RECV): removed together with their ", " separator;
#   - FI_VARIABLE_MSG in Debian's output: 2.x gave its bit 48 to
#     FI_EXACT_DIRECTED_RECV (removed from ours as above);
#   - in our output, FI_PROGRESS_CONTROL_UNIFIED (2.x), which 1.17 prints
#     as Unknown.
# tostr_dump keeps 2.0-only bits and fields out of its fi_tostr_r
# truncation scans, so no other filtering is needed.
#
# Env: top_builddir, WU_LIB (ours; default
# $top_builddir/src/.libs/libfabric.so.1), DEBIAN_LIBFABRIC (reference),
# WU_EMBEDDED, TOSTR_DUMP (default $top_builddir/test/core/tostr_dump).
top_builddir=${top_builddir:-.}
WU_LIB=${WU_LIB:-$top_builddir/src/.libs/libfabric.so.1}
DEBIAN_LIB=${DEBIAN_LIBFABRIC:-/usr/lib/x86_64-linux-gnu/libfabric.so.1}
TOSTR_DUMP=${TOSTR_DUMP:-$top_builddir/test/core/tostr_dump}

if [ ! -e "$DEBIAN_LIB" ]; then
	echo "SKIP: Debian's $DEBIAN_LIB is missing; install package libfabric1 (apt-get install libfabric1) to compare against it"
	exit 77
fi
if [ "${WU_EMBEDDED:-}" = yes ]; then
	echo "SKIP: embedded build has no libfabric.so.1 to compare"
	exit 77
fi
if [ ! -e "$WU_LIB" ]; then
	echo "FAIL: our library $WU_LIB is missing (build it, or set WU_LIB)"
	exit 1
fi
if [ ! -x "$TOSTR_DUMP" ]; then
	echo "FAIL: $TOSTR_DUMP is missing (make check builds it)"
	exit 1
fi
# Comparing Debian's library with itself would prove nothing.
if [ "$(readlink -f "$WU_LIB")" = "$(readlink -f "$DEBIAN_LIB")" ]; then
	echo "FAIL: WU_LIB points at Debian's library"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tostr_diff.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# Debian's psm providers write crash backtraces (*.btr) into the working
# directory when the dump's probing children fault: keep them in $tmp.
cd "$tmp" || exit 1

LC_ALL=C "$TOSTR_DUMP" "$DEBIAN_LIB" >"$tmp/debian.raw" || {
	echo "FAIL: tostr_dump on $DEBIAN_LIB failed"
	exit 1
}
LC_ALL=C "$TOSTR_DUMP" "$WU_LIB" >"$tmp/ours.raw" || {
	echo "FAIL: tostr_dump on $WU_LIB failed"
	exit 1
}

new_flags='FI_AV_USER_ID|FI_PEER|FI_TAGGED_DIRECTED_RECV|FI_TAGGED_MULTI_RECV|FI_EXACT_DIRECTED_RECV'
grep -v '^VERSION:' "$tmp/debian.raw" |
	sed -E "s/, FI_VARIABLE_MSG\\b//g; s/\\bFI_VARIABLE_MSG(, )?//g" >"$tmp/debian.txt"
grep -v '^VERSION:' "$tmp/ours.raw" |
	grep -Ev '^ *(max_ep_auth_key|max_group_id): ' |
	sed -E "s/, ($new_flags)\\b//g; s/\\b($new_flags)(, )?//g; s/\\bFI_PROGRESS_CONTROL_UNIFIED\\b/Unknown/g" >"$tmp/ours.txt"

if ! diff -u "$tmp/debian.txt" "$tmp/ours.txt" >"$tmp/diff"; then
	echo "FAIL: fi_tostr output differs from Debian's (- Debian, + ours):"
	head -n 200 "$tmp/diff"
	exit 1
fi
echo "PASS: $(wc -l <"$tmp/debian.txt") lines identical to Debian's fi_tostr"
grep '^VERSION:' "$tmp/debian.raw" | sed 's/^/  Debian /'
grep '^VERSION:' "$tmp/ours.raw" | sed 's/^/  ours   /'
exit 0
