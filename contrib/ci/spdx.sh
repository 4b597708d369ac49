#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# spdx.sh [SRCDIR]: fails when a source, header, script or build file of the
# tree lacks its SPDX licence line (LICENSE) in its first three lines.
# Data files (fuzz corpora, XML topologies, expected outputs) carry none.
top=${1:-${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}}
[ -d "$top/src" ] || { echo "spdx.sh: no src/ under $top" >&2; exit 99; }
cd "$top" || exit 99
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
# One find and one awk over every file (a head and a grep per file cost
# 15 s); the files libtoolize and autoreconf generate are left out.
find . \( -name .git -o -name 'build*' -o -name autom4te.cache -o -name corpus -o -name '_build' \) -prune -o -type f \
	\( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.sh' -o -name '*.mk' -o -name '*.m4' \
	-o -name '*.py' -o -name '*.md' -o -name '*.map' -o -name '*.def' -o -name Makefile.include \
	-o -name Makefile.am -o -name configure.ac -o -name '*.pc.in' -o -name '*.[1-9]' \) -print |
	grep -v -e '^\./aclocal\.m4$' -e '^\./m4/libtool\.m4$' -e '^\./m4/lt.*\.m4$' -e '^\./config/' | sort >"$tmp/all"
n=$(grep -c . "$tmp/all")
[ "$n" -gt 0 ] || { echo "spdx.sh: no file found under $top" >&2; exit 99; }
xargs awk 'FNR <= 3 && /SPDX-License-Identifier: BSD-3-Clause/ { print FILENAME; nextfile }
	FNR > 3 { nextfile }' <"$tmp/all" | sort >"$tmp/ok"
comm -23 "$tmp/all" "$tmp/ok" >"$tmp/missing"
sed 's/.*/spdx.sh: & has no SPDX-License-Identifier line/' "$tmp/missing" >&2
missing=$(grep -c . "$tmp/missing")
echo "spdx.sh: $n files, $missing without a licence line"
[ "$missing" -eq 0 ]
