#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man-lint.sh [SRCDIR]: renders every man page under man/ with groff's
# warnings on (-ww) and fails on any warning, so that `man` shows each page
# as written; and fails for a page Makefile.am does not list (make install
# would leave it out).
top=${1:-${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}}
command -v groff >/dev/null || { echo "SKIP: groff missing (apt-get install groff-base)"; exit 77; }
n=0 bad=0
for f in "$top"/man/*.[1-9]; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	out=$(LC_ALL=C.UTF-8 groff -ww -z -man "$f" 2>&1)
	if [ -n "$out" ]; then
		echo "man-lint.sh: $f:"; echo "$out"
		bad=$((bad + 1))
	fi
	if [ -f "$top/Makefile.am" ] && ! grep -q "man/${f##*/}" "$top/Makefile.am"; then
		echo "man-lint.sh: $f is not listed in Makefile.am (WU_MAN*), so make install leaves it out"
		bad=$((bad + 1))
	fi
done
[ "$n" -gt 0 ] || { echo "man-lint.sh: no man page under $top/man" >&2; exit 99; }
echo "man-lint.sh: $n pages, $bad with warnings or not installed"
[ "$bad" -eq 0 ]
