#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man-vars.sh [SRCDIR [BUILDDIR]]: fails naming every FI_* variable the
# library defines that no man page under man/ mentions, and every provider
# `fi_info -l` lists that the README's provider table lacks.
#
# The variables are those the built util/fi_info -e prints (every provider
# loaded, so every fi_param_define'd variable), plus those declared in the
# sources' knob tables (core/params.def, each `param::def ...[]` table):
# the PMIx wire-up defines its variables only inside a PMIx job, and a
# provider not configured in this build still has its page.
top=${1:-${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}}
build=${2:-${top_builddir:-.}}
fi_info=$build/util/fi_info
[ -x "$fi_info" ] || { echo "SKIP: $fi_info not built (an embedded build has no tools)"; exit 77; }
[ -d "$top/man" ] || { echo "man-vars.sh: no man/ under $top" >&2; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# fi_info -e prints "# FI_NAME: type" per variable.  FI_PROVIDER=^none
# keeps a caller's FI_PROVIDER from hiding providers (and their variables).
lib=$build/src/.libs
if ! LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} FI_PROVIDER= \
	"$fi_info" -e >"$tmp/env" 2>"$tmp/env.err"; then
	echo "man-vars.sh: $fi_info -e failed:"; cat "$tmp/env.err"
	exit 99
fi
sed -n 's/^# \(FI_[A-Z0-9_]*\): .*/\1/p' "$tmp/env" >"$tmp/vars"
[ -s "$tmp/vars" ] || { echo "man-vars.sh: $fi_info -e printed no variable" >&2; exit 99; }

# The knob tables: core ones are FI_<NAME>; a provider's FI_<PROV>_<NAME>,
# PROV from its folder (src/prov/<prov>/, src/pmix_glue/ is "pmix").
sed -n 's/^WU_PARAM([A-Z_]*, *\([a-z0-9_]*\),.*/\1/p' "$top/src/core/params.def" |
	tr a-z A-Z | sed 's/^/FI_/' >>"$tmp/vars"
for f in $(grep -rl 'param::def [a-z_]*\[\] *=' "$top/src" --include='*.cpp'); do
	case $f in
	*/src/prov/*/*) p=${f#*/src/prov/}; p=${p%%/*} ;;
	*/src/pmix_glue/*) p=pmix ;;
	*) echo "man-vars.sh: $f: knob table outside a provider or pmix_glue" >&2; exit 99 ;;
	esac
	P=$(echo "$p" | tr a-z A-Z)
	sed -n 's/^[[:space:]]*{FI_PARAM_[A-Z_]*, *"\([a-z0-9_]*\)".*/\1/p' "$f" |
		tr a-z A-Z | sed "s/^/FI_${P}_/" >>"$tmp/vars"
done
sort -u "$tmp/vars" -o "$tmp/vars"

# A variable counts as documented when a page names it as a whole word.
cat "$top"/man/*.[1-9] | sed 's/\\-/-/g; s/\\f[BIRP]//g' >"$tmp/pages"
fail=0 n=0
while read -r v; do
	n=$((n + 1))
	if ! grep -qw -- "$v" "$tmp/pages"; then
		echo "FAIL: $v is defined by the library but no man page in man/ mentions it"
		fail=1
	fi
done <"$tmp/vars"

# Every provider fi_info -l lists has a row in the README's provider table.
LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} FI_PROVIDER= "$fi_info" -l 2>/dev/null |
	sed -n 's/^\([a-z0-9_]*\):$/\1/p' >"$tmp/provs"
[ -s "$tmp/provs" ] || { echo "man-vars.sh: $fi_info -l listed no provider" >&2; exit 99; }
while read -r p; do
	if ! grep -q "^| \`$p\` |" "$top/README.md"; then
		echo "FAIL: provider $p (fi_info -l) has no row in README.md's provider table"
		fail=1
	fi
	if [ ! -f "$top/man/fi_$p.7" ]; then
		echo "FAIL: provider $p (fi_info -l) has no man page man/fi_$p.7"
		fail=1
	fi
done <"$tmp/provs"

[ $fail = 0 ] && echo "PASS: $n variables, each in a man page; $(wc -l <"$tmp/provs") providers in README.md and man/"
[ $fail = 0 ]
