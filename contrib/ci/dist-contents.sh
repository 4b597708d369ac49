#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# dist-contents.sh DISTDIR: fails when a file git tracks is missing from the
# distribution tree (make distdir), so a tarball builds and documents what the
# repository does.  Only files that make sense in a git checkout stay out.
set -u
dist=${1:?usage: dist-contents.sh DISTDIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: dist-contents: $top is not a git checkout"; exit 77; }
[ -d "$dist" ] || { echo "dist-contents: no directory $dist" >&2; exit 99; }
missing=$(git -C "$top" ls-files | grep -v -x -e .gitignore | while read -r f; do
	[ -e "$dist/$f" ] || echo "$f"
done)
if [ -n "$missing" ]; then
	echo "dist-contents: tracked but not shipped (add them to EXTRA_DIST or a _SOURCES list):"
	echo "$missing" | sed 's/^/  /'
	exit 1
fi
echo "dist-contents: every tracked file is in $dist"
