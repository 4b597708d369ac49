#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# layering.sh [SRCDIR]: fails when a file under src/<part> (or util/)
# includes a header of a part it may not use.  The table below is the only
# copy of the rules; docs/architecture.md's "Parts" section shows the same lines
# between its "layering table" markers, and this script fails when the two
# differ, so they cannot drift apart.
#
# A part may always include its own headers, the public <rdma/...> ones,
# system headers and the generated config.h.  A header belongs to the part
# named by its path under src/ ("prov/common/cq.h" is prov/common's,
# "prov/registry.h" is prov's).  "prov/*" stands for one provider folder
# (src/prov/tcp, ...): a provider may not include another provider, except
# prov/wireup, which multiplexes the others (shm and tcp sub-endpoints).
top=${1:-${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}}
[ -d "$top/src" ] || { echo "layering.sh: no src/ under $top" >&2; exit 99; }

table() {
	cat <<'EOF'
core: (nothing)
eq: core
getinfo: core
av: core eq
pmix_glue: core av
prov/common: core eq av
prov/*: core eq av getinfo pmix_glue prov/common
prov/wireup: core eq av getinfo pmix_glue prov/common prov/*
prov: core prov/* prov/wireup
api: core eq av getinfo pmix_glue prov/common prov prov/* prov/wireup
util: (nothing)
EOF
}

fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# docs/architecture.md must show the same table.
readme=$top/docs/architecture.md
if [ -f "$readme" ]; then
	shown=$(sed -n '/<!-- layering table -->/,/<!-- end layering table -->/p' "$readme" |
		grep -E '^[a-z_/*]+: ')
	if [ "$shown" != "$(table)" ]; then
		echo "FAIL: docs/architecture.md's layering table differs from contrib/ci/layering.sh's:"
		printf '%s\n' "$shown" >"$tmp/readme"
		table | diff "$tmp/readme" - | sed 's/^/  /'
		fail=1
	fi
fi

# The part a path under src/ belongs to (a folder, or prov's own files).
part_of() {
	case $1 in
	prov/common/*) echo prov/common ;;
	prov/*/*) echo "prov/${1#prov/}" | sed 's|^\(prov/[^/]*\)/.*|\1|' ;;
	prov/*) echo prov ;;
	*/*) echo "${1%%/*}" ;;
	*) echo "" ;;
	esac
}

# The table's name for a part: one provider folder is "prov/*".
key_of() {
	case $1 in prov/common | prov | prov/wireup) echo "$1" ;; prov/*) echo 'prov/*' ;; *) echo "$1" ;; esac
}

# The rule line of part $1, empty if the table lacks it.
rule_of() {
	table | grep -F "$(key_of "$1"): " | head -n 1
}

# Is part $1 allowed to include a header of part $2?
allowed() {
	[ "$1" = "$2" ] && return 0
	rule=$(rule_of "$1")
	for a in ${rule#*: }; do
		[ "$a" = "$(key_of "$2")" ] && return 0
	done
	return 1
}

files=$(cd "$top" && find src util -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.def' \) | sort)
for f in $files; do
	case $f in
	util/*) me=util ;;
	src/*) me=$(part_of "${f#src/}") ;;
	esac
	[ -n "$me" ] || continue # src/*.{c,h} at the top: none today
	if [ -z "$(rule_of "$me")" ]; then
		echo "FAIL: $f: part $me is not in the layering table (contrib/ci/layering.sh, docs/architecture.md \"Parts\")"
		fail=1
		continue
	fi
	# Every quoted or bracketed include naming a path with a folder.
	grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*/[^">]*[">]' "$top/$f" |
	while IFS= read -r line; do
		n=${line%%:*}
		inc=$(printf '%s\n' "$line" | sed -E 's/^[^#]*#[[:space:]]*include[[:space:]]*["<]([^">]*)[">].*/\1/')
		case $inc in
		rdma/*) continue ;; # the public headers: everyone's
		esac
		first=${inc%%/*}
		[ -d "$top/src/$first" ] || {
			# Quoted paths must name a part; bracketed ones are system headers.
			case $line in *'"'*) echo "FAIL: $f:$n: includes \"$inc\", which is no part of src/" ;; esac
			continue
		}
		theirs=$(part_of "$inc")
		allowed "$me" "$theirs" || echo "FAIL: $f:$n: $me may not include $inc (a $theirs header)"
	done
done >"$tmp/out"
if [ -s "$tmp/out" ]; then
	cat "$tmp/out"
	fail=1
fi
[ $fail = 0 ] && echo "PASS: every include in src/ and util/ follows the layering table"
exit $fail
