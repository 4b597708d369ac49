#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# layering.sh [SRCDIR]: fails when a file under src/<part> (or util/), or a
# test or contrib file, includes a header of a part it may not use.  The
# table below is the only copy of the rules; docs/architecture.md's "Parts"
# section shows the same lines between its "layering table" markers, and this
# script fails when the two differ, so they cannot drift apart.
#
# A part may always include its own headers, the public <rdma/...> ones,
# system headers and the generated config.h.  A header belongs to the part
# named by its path under src/ ("prov/common/cq.h" is prov/common's,
# "prov/registry.h" is prov's).  "prov/*" stands for one provider folder
# (src/prov/tcp, ...): a provider may not include another provider, except
# prov/wireup, which multiplexes the others (shm and tcp sub-endpoints).
#
# A header named *_impl.h is its part's internals: only files of that very
# part (prov/shm, not any provider) and that part's tests include it.
#
# Tests and contrib: the lines that start with "test" or "contrib" name the
# part a test folder (or one file, or every other test: test/*) belongs to;
# it may include what that part may, plus its own folder's files and other
# test helpers.  A file of test/prov or test/fuzz named after a provider
# (test_shm_region.cpp, fuzz_shm_header.cpp) is also that provider's test
# for its *_impl.h.  Nothing in contrib/ includes a file of test/.
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
prov/*: core eq av getinfo prov/common
prov/wireup: core eq av getinfo prov/common prov/*
prov: core prov/* prov/wireup
api: core eq av getinfo pmix_glue prov/common prov prov/* prov/wireup
util: (nothing)
test/core: core
test/eq: eq
test/av: av
test/av/test_av_parts.cpp: prov/wireup
test/getinfo: getinfo
test/getinfo/test_getinfo.cpp: api
test/prov: prov
test/prov/common: prov/wireup
test/prov/tcp: prov/tcp
test/prov/shm: prov/shm
test/prov/ucx: prov/ucx
test/prov/wireup: prov/wireup
test/*: api
contrib: api
EOF
}

fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# docs/architecture.md must show the same table.
readme=$top/docs/architecture.md
if [ -f "$readme" ]; then
	shown=$(sed -n '/<!-- layering table -->/,/<!-- end layering table -->/p' "$readme" |
		grep -E '^[a-z_/*.]+: ')
	if [ "$shown" != "$(table)" ]; then
		echo "FAIL: docs/architecture.md's layering table differs from contrib/ci/layering.sh's:"
		printf '%s\n' "$shown" >"$tmp/readme"
		table | diff "$tmp/readme" - | sed 's/^/  /'
		fail=1
	fi
fi

table >"$tmp/table"
# Every quoted or bracketed include naming a path with a folder, as
# FILE:LINE:TEXT, checked in one awk run (a process per include is minutes
# on a busy machine).
files=$(cd "$top" && find src util test contrib -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.def' \) | sort)
(cd "$top" && grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*/[^">]*[">]' $files /dev/null) |
awk -v top="$top" -v tablef="$tmp/table" -v parts="$(cd "$top/src" && find . -mindepth 1 -maxdepth 1 -type d | sed 's|^\./||' | tr '\n' ' ')" '
# The part a path under src/ belongs to (a folder, or prov own files).
function part_of(p,   a, n) {
	n = split(p, a, "/")
	if (a[1] == "prov") {
		if (n == 2) return "prov"
		return "prov/" a[2]
	}
	return n > 1 ? a[1] : ""
}
# The table name for a part: one provider folder is "prov/*".
function key_of(p) {
	if (p ~ /^prov\// && p != "prov/common" && p != "prov/wireup") return "prov/*"
	return p
}
function allowed(me, theirs,   r, a, n, i) {
	if (me == theirs) return 1
	r = rule[key_of(me)]
	n = split(r, a, " ")
	for (i = 1; i <= n; i++)
		if (a[i] == key_of(theirs)) return 1
	return 0
}
# The part test or contrib file f belongs to: its own line, its folder, else test/* or contrib.
function test_part(f,   d, a) {
	if (f in rule) return rule[f]
	d = f; sub(/\/[^\/]*$/, "", d)
	if (d in rule) return rule[d]
	split(f, a, "/")
	if ((a[1] "/" a[2]) in rule) return rule[a[1] "/" a[2]]
	return a[1] == "test" ? rule["test/*"] : rule["contrib"]
}
# Is test file f (of part me) a test of part p, for p *_impl.h?
function test_of(f, me, p,   name, base) {
	if (me == p) return 1
	if (p !~ /^prov\// || f !~ /^test\/(prov|fuzz)\//) return 0
	name = substr(p, 6); base = f; sub(/.*\//, "", base)
	return base ~ ("(^|_)" name "(_|\\.)")
}
function exists(path,   l, r) {
	r = (getline l < path); close(path)
	return r >= 0
}
# a/b/../c -> a/c
function norm(p,   a, n, i, out, k, o) {
	n = split(p, a, "/"); k = 0
	for (i = 1; i <= n; i++) {
		if (a[i] == "." || a[i] == "") continue
		if (a[i] == ".." && k > 0) { k--; continue }
		o[++k] = a[i]
	}
	out = ""
	for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") o[i]
	return out
}
function fail(msg) { print "FAIL: " msg; bad = 1 }
BEGIN {
	while ((getline l < tablef) > 0) {
		k = l; sub(/: .*/, "", k); v = l; sub(/^[^:]*: /, "", v)
		if (v == "(nothing)") v = ""
		rule[k] = v
	}
	# The folders of src/ that includes may name.
	n = split(parts, ps, " ")
	for (i = 1; i <= n; i++) srcpart[ps[i]] = 1
}
{
	f = $0; sub(/:.*/, "", f)
	rest = substr($0, length(f) + 2); ln = rest; sub(/:.*/, "", ln)
	text = substr(rest, length(ln) + 2)
	inc = text; sub(/^[^#]*#[[:space:]]*include[[:space:]]*["<]/, "", inc); sub(/[">].*/, "", inc)
	quoted = text ~ /include[[:space:]]*"/
	if (inc ~ /^rdma\//) next
	tpart = ""
	if (f ~ /^util\//) me = "util"
	else if (f ~ /^src\//) me = part_of(substr(f, 5))
	else { tpart = test_part(f); me = tpart }
	if (me == "") next
	if (!(key_of(me) in rule)) {
		if (!(f in said)) fail(f ": part " me " is not in the layering table (contrib/ci/layering.sh, docs/architecture.md)")
		said[f] = 1
		next
	}
	first = inc; sub(/\/.*/, "", first)
	where = f ":" ln
	if (!(first in srcpart)) {
		if (!quoted) next
		if (tpart == "") { fail(where ": includes \"" inc "\", which is no part of src/"); next }
		dir = f; sub(/\/[^\/]*$/, "", dir)
		if (exists(top "/" dir "/" inc)) path = norm(dir "/" inc)
		else if (exists(top "/" inc)) path = norm(inc)
		else if (exists(top "/contrib/" inc)) path = norm("contrib/" inc)
		else { fail(where ": includes \"" inc "\", which is no part of src/ nor a file of the tree"); next }
		if (f ~ /^contrib\// && path ~ /^test\//)
			fail(where ": contrib includes a test file (" inc "): move what both need into src/ or contrib/")
		else if (path ~ /^src\//)
			fail(where ": includes " inc " by a path; name it from src/ (\"part/file.h\")")
		next
	}
	theirs = part_of(inc)
	base = inc; sub(/.*\//, "", base)
	if (base ~ /_impl\.h$/) {
		if (tpart != "" ? !test_of(f, me, theirs) : me != theirs)
			fail(where ": " inc " is internal to " theirs " (a *_impl.h): only its files and its tests include it")
		next
	}
	if (!allowed(me, theirs)) fail(where ": " me " may not include " inc " (a " theirs " header)")
}
' >"$tmp/out"
if [ -s "$tmp/out" ]; then
	cat "$tmp/out"
	fail=1
fi
[ $fail = 0 ] && echo "PASS: every include in src/, util/, test/ and contrib/ follows the layering table"
exit $fail
