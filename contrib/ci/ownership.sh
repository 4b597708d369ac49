#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ownership.sh [SRCDIR] [--baseline]: fails when a file under src/ holds more
# raw owning operations than contrib/ci/ownership.baseline allows it.
#
# Counted, outside comments and string literals: a `new` expression (also
# `new (std::nothrow)` and `new T[n]`), a `delete` / `delete[]` expression
# and a call of close() or ::close() on an fd.  Owned resources live in RAII
# types (core/owned.h, core/fd.h, smart pointers), so only the helpers that
# implement ownership (the allowlist below) write them.  A record that lives
# in an intrusive list or a table of raw pointers is made by make_owned and
# release()d into it, and freed by dispose() (core/owned.h) where the
# structure lets it go; an object handed across the C ABI as a fid (the
# application holds the handle, fi_close frees it) is released at open and
# taken back into a std::unique_ptr in its close.  Placement construction
# in shared memory uses std::construct_at (nothing is owned there).
# The baseline (one "COUNT PATH" a line) is empty but for files another
# branch is moving; a count above it fails naming the file, a count below it
# is reported so the entry can go.  --baseline prints today's counts.
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
mode=check
for a in "$@"; do
	case $a in
	--baseline) mode=print ;;
	*) top=$a ;;
	esac
done
[ -d "$top/src" ] || { echo "ownership.sh: no src/ under $top" >&2; exit 99; }
baseline=$top/contrib/ci/ownership.baseline

# The helpers that implement ownership: the only files allowed any.
allowlist='
src/core/owned.h
src/core/fd.h
'

# Raw owning operations in the files named ("PATH:LINE: TEXT" each), in one
# awk and one grep for the whole tree: a few processes per file cost 15 s.
raw_ops() {
	# Drop line comments, block comments and string/char literals, then
	# look for the three forms.  "= delete;" (deleted functions), fi_close,
	# a member .close()/->close() and a declaration "close()" do not count.
	awk '
	FNR == 1 { inc = 0 }
	{
		line = $0
		sub(/\/\/.*$/, "", line)
		out = ""
		while (length(line) > 0) {
			if (inc) {
				i = index(line, "*/")
				if (i == 0) { line = ""; break }
				line = substr(line, i + 2); inc = 0
				continue
			}
			i = index(line, "/*")
			if (i == 0) { out = out line; break }
			out = out substr(line, 1, i - 1)
			line = substr(line, i + 2); inc = 1
		}
		gsub(/"([^"\\]|\\.)*"/, "\"\"", out)
		gsub(/'"'"'([^'"'"'\\]|\\.)*'"'"'/, "0", out)
		print FILENAME ":" FNR ": " out
	}' "$@" |
	grep -E '(^|[^[:alnum:]_.>:])new([[:space:]]+[[:alpha:]_:(]|\()|(^|[^[:alnum:]_])delete([[:space:]]+[[:alpha:]_(*]|[[:space:]]*[[(])|(^|[^[:alnum:]_.>:])(::)?close[[:space:]]*\([^)]'
}

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

files=$(cd "$top" && find src -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) | sort)
counted=
for f in $files; do
	case $allowlist in *"
$f
"*) continue ;; esac
	counted="$counted $f"
done
# shellcheck disable=SC2086
(cd "$top" && raw_ops $counted) | cut -d: -f1 | sort | uniq -c | awk '{ print $1, $2 }' >"$tmp/now"

if [ $mode = print ]; then
	echo "# SPDX-License-Identifier: BSD-3-Clause"
	echo "# Raw new/delete/close() a file of src/ may still hold (contrib/ci/ownership.sh)."
	cat "$tmp/now"
	exit 0
fi

[ -f "$baseline" ] || { echo "ownership.sh: no $baseline" >&2; exit 99; }
fail=0
while read -r n f; do
	allowed=$(awk -v f="$f" '$2 == f { print $1 }' "$baseline")
	allowed=${allowed:-0}
	if [ "$n" -gt "$allowed" ]; then
		echo "FAIL: $f went up to $n raw new/delete/close() (baseline $allowed); own the resource in an RAII type (core/owned.h, core/fd.h, std::unique_ptr):"
		(cd "$top" && raw_ops "$f") | sed 's|^|  |'
		fail=1
	fi
done <"$tmp/now"
grep -v '^#' "$baseline" | while read -r allowed f; do
	n=$(awk -v f="$f" '$2 == f { print $1 }' "$tmp/now")
	n=${n:-0}
	[ "$n" -lt "$allowed" ] &&
		echo "note: $f holds $n raw new/delete/close() now, the baseline $allowed: lower it (ownership.sh --baseline)"
done
[ $fail = 0 ] && echo "PASS: no file of src/ holds more raw new/delete/close() than contrib/ci/ownership.baseline allows"
exit $fail
