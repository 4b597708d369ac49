#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The conformance tier: libfabric's own test suite, fabtests, run against our
# providers tcp, shm and wireup and compared with what Debian's libfabric
# passes (docs/conformance.md).
#
# fabtests comes from a Debian source package and is never committed: Debian
# ships libfabric's source without its orig tarball reachable here, but its
# mpich source package carries libfabric, fabtests included, under
# modules/libfabric/fabtests (MPICH 4.0.2: fabtests 1.13.1).  It is fetched
# with `apt-get source` (deb-src: contrib/install-deps.sh enables it), built
# against Debian's libfabric-dev headers (--with-libfabric=/usr) and cached
# in WORKDIR.  The test lists and each test's command line are read from its
# scripts/runfabtests.sh; our own runner starts them (runfabtests.sh ends
# every process named fi_* on the machine, which would hit other runs):
# server and client on 127.0.0.1, each test on its own port (-B/-P), each
# process under a timeout in its own process group, and only those groups
# are ever killed.  Results are classified as runfabtests.sh does: both
# sides exit with ENODATA or ENOSYS -> Notrun, any other non-zero -> Fail.
#
# usage: sh contrib/conformance/fabtests.sh [options]
#   --work DIR        cache and results (default: build/conformance)
#   --lib DIR         our libfabric.so.1 (default: build/src/.libs)
#   --groups LIST     runfabtests.sh groups, comma-separated
#                     (default unit,functional,short; --full adds standard)
#   --providers LIST  default tcp,shm,wireup (our library)
#   --baseline        run Debian's libfabric (tcp, shm) instead of ours and
#                     write WORKDIR/debian-baseline.txt, the file committed as
#                     contrib/conformance/debian-baseline.txt
#   --timeout S       per process (default 60: fi_cq_test opens 32768 CQs)
#   --only REGEX      run only the tests whose command line matches
#   --against FILE    the baseline to gate on (default: the committed one)
#   --no-run          gate and table from the results of the last run only
# The fetched source and the built fabtests are also kept in
# $WU_CI_CACHE (default /var/cache/wireup-ci; empty: no cache) under a key
# hashed from all that makes them: the mpich source version apt offers,
# Debian's libfabric-dev and gcc versions and this script's fetch and build
# steps.  Any of these changing makes a new key, so a cached build is never
# stale, and a missing or unwritable cache only means building as before.
# Gate (not with --baseline): every test the baseline passes for a provider
# (for wireup: for tcp or shm) must pass on ours, unless it is listed in
# contrib/conformance/differences.txt.  Exit 0 pass, 1 fail, 77 when the
# fabtests source cannot be had (no deb-src, no registry).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/contrib/conformance
work=$top/build/conformance
lib=$top/build/src/.libs
groups=unit,functional,short
providers=
baseline=0
tmo=60
only=
basefile=$here/debian-baseline.txt
norun=0
jobs=${JOBS:-2}
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--lib) lib=$2; shift ;;
	--groups) groups=$2; shift ;;
	--full) groups=unit,functional,short,standard ;;
	--providers) providers=$2; shift ;;
	--baseline) baseline=1 ;;
	--timeout) tmo=$2; shift ;;
	--only) only=$2; shift ;;
	--against) basefile=$2; shift ;;
	--no-run) norun=1 ;;
	*) echo "usage: $0 [--work DIR] [--lib DIR] [--groups LIST|--full] [--providers LIST]" \
		"[--baseline] [--timeout S] [--only REGEX] [--against FILE]" >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$providers" ]; then
	if [ $baseline = 1 ]; then providers=tcp,shm; else providers=tcp,shm,wireup; fi
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
src=$work/fabtests-src
inst=$work/fabtests
say() { printf 'conformance: %s\n' "$*"; }

# --- source: Debian's mpich source package, fabtests alone ---------------
fetch() {
	[ -f "$src/scripts/runfabtests.sh" ] && return 0
	dl=$work/download
	rm -rf "$dl" "$src"
	mkdir -p "$dl" "$src"
	if ! apt-cache showsrc mpich 2>/dev/null | grep -q '^Package: mpich'; then
		say "SKIP: no Debian source entry for mpich (run contrib/install-deps.sh: it enables deb-src)"
		return 77
	fi
	if ! (cd "$dl" && apt-get source --download-only -qq mpich) >"$work/download.log" 2>&1; then
		tail -5 "$work/download.log"
		say "SKIP: apt-get source mpich failed"
		return 77
	fi
	orig=$(ls "$dl"/mpich_*.orig.tar.* 2>/dev/null | head -1)
	deb=$(ls "$dl"/mpich_*.debian.tar.* 2>/dev/null | head -1)
	[ -n "$orig" ] && [ -n "$deb" ] || { say "FAIL: no orig/debian tarball in $dl"; return 1; }
	# Debian's patches must leave fabtests alone: we take it from the orig
	# tarball without running dpkg-source over the whole of MPICH.
	if tar -xOf "$deb" --wildcards 'debian/patches/*' 2>/dev/null | grep -q '^+++ .*/fabtests/'; then
		say "FAIL: a Debian patch of mpich touches fabtests; extract with dpkg-source instead"
		return 1
	fi
	tar -xf "$orig" -C "$src" --wildcards --strip-components=4 '*/modules/libfabric/fabtests/*' ||
		{ say "FAIL: no modules/libfabric/fabtests in $orig"; return 1; }
	[ -f "$src/scripts/runfabtests.sh" ] || { say "FAIL: fabtests without runfabtests.sh"; return 1; }
	echo "$(basename "$(ls "$dl"/mpich_*.dsc)" .dsc)" >"$src/.debian-source"
}

# --- build: against Debian's libfabric-dev headers ------------------------
build() {
	[ -x "$inst/bin/fi_msg" ] && return 0
	b=$work/fabtests-build
	rm -rf "$b"
	mkdir -p "$b"
	say "building fabtests ($(fabtests_version)) against /usr (Debian's libfabric-dev)"
	if ! { (cd "$src" && autoreconf -i) &&
		(cd "$b" && "$src/configure" -q --with-libfabric=/usr --prefix="$inst" &&
			nice make -j"$jobs" && make install); } >"$work/build.log" 2>&1; then
		tail -30 "$work/build.log"
		say "FAIL: fabtests did not build (log: $work/build.log)"
		return 1
	fi
}

fabtests_version() {
	printf 'fabtests %s (Debian source %s)' \
		"$(sed -n 's/^AC_INIT(\[fabtests\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")" \
		"$(cat "$src/.debian-source" 2>/dev/null)"
}

# list GROUP: the command lines of one group of runfabtests.sh, one a line
list() {
	sed -n "/^$1=(/,/^)/{ /^$1=(/d; /^)/d; s/^[[:space:]]*\"//; s/\"[[:space:]]*\$//; p; }" \
		"$src/scripts/runfabtests.sh"
}

# --- running one test ------------------------------------------------------
ENODATA=61 ENOSYS=38
# The benchmarks allocate and clear about 1 GB each (8 MB x window 64, both
# ways) whatever the provider: most of the tier's time on a VM.  Huge pages
# for glibc's large allocations (THP "madvise", Debian's default) cut that
# by a third; it changes nothing a test checks.
GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1
export GLIBC_TUNABLES
port=$((${WU_CONFORMANCE_PORT:-$((20000 + ($$ % 40) * 1000))}))
port0=$port

in_use() { # port: anything bound to it (tcp or udp, v4 or v6)?
	awk -v p=":$(printf '%04X' "$1")" 'FNR > 1 && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null
}
next_port() {
	port=$((port + 1))
	[ $port -lt $((port0 + 1000)) ] || port=$((port0 + 1))
	while in_use $port; do port=$((port + 1)); done
}
# start OUT CMD...: CMD under timeout, which makes itself a process group
# leader: $! is that group's id.
start() {
	o=$1; shift
	timeout -k 2 "$tmo" "$@" >"$o" 2>&1 &
	pid=$!
}
stop() { # the process group we started
	kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	kill -KILL -- "-$1" 2>/dev/null
}
# ready PORT PID: until the server listens on PORT (tcp), binds it (udp) or
# has the shm region of that port (shm_name.cpp port_name: wu<uid>.p<port>,
# made at fi_enable), exits, or 1 s passes.
ready() {
	i=0 region=/dev/shm/wu$(id -u).p$1
	while [ $i -lt 20 ] && kill -0 "$2" 2>/dev/null; do
		for f in "$region" "$region".*; do
			# the magic is stored right after the file is made: a little margin
			[ -e "$f" ] && { sleep 0.02; return 0; }
		done
		awk -v p=":$(printf '%04X' "$1")" 'FNR > 1 && substr($2, length($2) - 4) == p &&
			((FILENAME ~ /tcp/ && $4 == "0A") || (FILENAME ~ /udp/ && $4 == "07")) { f = 1 }
			END { exit !f }' /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null &&
			return 0
		sleep 0.05
		i=$((i + 1))
	done
}

# run_unit PROV TEST NEG LOG: sets res
run_unit() {
	cmd=$(printf '%s' "$2" | sed 's/GOOD_ADDR/127.0.0.1/g; s/SERVER_ADDR/127.0.0.1/g')
	# shellcheck disable=SC2086 # the test's command line, split as runfabtests.sh does
	start "$4.server" "$inst/bin/"$cmd -p "$1"
	wait $pid
	rc=$?
	if [ "$3" = 1 ]; then
		if [ $rc = $ENODATA ]; then rc=0; else rc=1; fi
	fi
	echo "exit $rc" >>"$4.server"
	hung=0
	[ $rc != 124 ] || hung=1
	case $rc in
	0) res=Pass ;;
	$ENODATA | $ENOSYS) res=Notrun ;;
	*) res=Fail ;;
	esac
}

# run_cs PROV TEST LOG: sets res
run_cs() {
	next_port
	# shellcheck disable=SC2086
	start "$3.server" "$inst/bin/"$2 -p "$1" -s 127.0.0.1 -B $port
	spid=$pid
	ready $port $spid
	# shellcheck disable=SC2086
	start "$3.client" "$inst/bin/"$2 -p "$1" -s 127.0.0.1 -P $port 127.0.0.1
	wait $pid
	crc=$?
	if [ $crc != 0 ]; then # a failed client: give the server 2 s, as runfabtests.sh does
		i=0
		while kill -0 $spid 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
		kill -0 $spid 2>/dev/null && stop $spid
	fi
	wait $spid
	src_=$?
	echo "exit $src_ (port $port)" >>"$3.server"
	echo "exit $crc" >>"$3.client"
	hung=0
	[ $crc != 124 ] && [ $src_ != 124 ] || hung=1
	if [ $src_ = $crc ] && { [ $crc = $ENODATA ] || [ $crc = $ENOSYS ]; }; then
		res=Notrun
	elif [ $src_ != 0 ] || [ $crc != 0 ]; then
		res=Fail
	else
		res=Pass
	fi
}

# The tests, one a line: GROUP|NEG|COMMAND
tests() {
	for g in $(echo "$groups" | tr ',' ' '); do
		list ${g}_tests | sed "s/^/$g|0|/"
		[ "$g" = unit ] && list neg_unit_tests | sed 's/^/unit|1|/'
	done | { if [ -n "$only" ]; then grep -E -- "$only"; else cat; fi; }
}

why() { # PROV TEST: the first error line of its last run's output
	l=$(awk -F'|' -v p="$1" -v t="$2" '$1 == p && $2 == t { print $3 }' "$work/logs-ours.txt" | tail -1)
	r=$(cat "$l.client" "$l.server" 2>/dev/null | grep -m1 -E 'ret=-|\(-?[0-9]+\)|[Ee]rror|FAIL|[Ff]ailed|not set')
	[ -n "$r" ] || r=$(cat "$l.client" "$l.server" 2>/dev/null | grep -o 'exit [0-9]*' | tr '\n' ' ')
	printf '%s' "$r" | cut -c1-150
}
result_of() { # FILE PROV TEST: the result FILE records (PROV may be "tcp|shm")
	awk -F'|' -v p="|$2|" -v t="$3" 'index(p, "|" $1 "|") && $3 == t { print $2; exit }' "$1" 2>/dev/null
}
baseline_passes() { # PROV TEST: Debian passes TEST on PROV (wireup: on tcp or shm)
	case $1 in wireup) set -- "tcp|shm" "$2" ;; esac
	awk -F'|' -v p="|$1|" -v t="$2" 'index(p, "|" $1 "|") && $2 == "Pass" && $3 == t { f = 1 }
		END { exit !f }' "$basefile"
}
documented() { # PROV TEST: a documented difference
	awk -F'|' -v p="$1" -v t="$2" '$1 == p && $2 == t { f = 1 } END { exit !f }' "$here/differences.txt" 2>/dev/null
}

# run_provider TAG PROV: every test; results in $work/results-TAG-PROV.txt
run_provider() {
	out=$work/results-$1-$2.txt
	logs=$work/logs/$1-$2
	if [ -n "$only" ]; then
		# A partial run replaces the results of its own tests only.
		logs=$logs-only
		tests | cut -d'|' -f3 | sed "s/^/$2|/" >"$work/only.txt"
		for f in "$out" "$work/logs-$1.txt"; do
			awk -F'|' 'NR == FNR { skip[$0] = 1; next } !(($1 "|" $NF) in skip) && !(($1 "|" $2) in skip)' \
				"$work/only.txt" "$f" >"$f.tmp" 2>/dev/null
			mv "$f.tmp" "$f"
		done
	else
		grep -v "^$2|" "$work/logs-$1.txt" >"$work/logs-$1.tmp" 2>/dev/null
		mv "$work/logs-$1.tmp" "$work/logs-$1.txt"
		: >"$out"
	fi
	rm -rf "$logs"
	mkdir -p "$logs"
	flaky=$work/flaky-$1-$2.txt
	times=$work/times-$1-$2.txt
	rm -f "$work/hung-$1-$2.txt"
	: >"$flaky"
	: >"$times"
	n=0
	tests | while IFS='|' read -r g neg t; do
		n=$((n + 1))
		log=$logs/$(printf '%03d' $n)
		tries=1
		t1=$(date +%s)
		while :; do
			if [ "$g" = unit ]; then run_unit "$2" "$t" "$neg" "$log"; else run_cs "$2" "$t" "$log"; fi
			[ "$res" = Fail ] && [ $tries = 1 ] && [ $hung = 0 ] || break
			# One more try for a failure that may count (not for a hang:
			# the timeout is generous): all of them for the baseline,
			# those the baseline passes for ours.
			[ "$1" = debian ] || baseline_passes "$2" "$t" || break
			tries=2
			mv "$log.server" "$log.try1.server" 2>/dev/null
			mv "$log.client" "$log.try1.client" 2>/dev/null
		done
		[ $tries = 2 ] && [ "$res" = Pass ] && echo "$2|$t" >>"$flaky"
		[ "$res" = Fail ] && [ $hung = 1 ] && echo "$2|$t" >>"$work/hung-$1-$2.txt"
		echo "$2|$res|$t" >>"$out"
		echo "$2|$t|$log" >>"$work/logs-$1.txt"
		echo "$2|$(($(date +%s) - t1))|$t" >>"$times"
		[ "$res" != Fail ] || echo "  $1 $2: $res: $t (logs: ${log#$top/}.*)"
	done
}

count() { # FILE RESULT
	grep -c "^[^|]*|$2|" "$1" 2>/dev/null || true
}

# --- cache: fetch and build once per key ---------------------------------------
cache=${WU_CI_CACHE-/var/cache/wireup-ci}
cache_key() {
	v=$(apt-cache showsrc mpich 2>/dev/null | sed -n 's/^Version: //p' | head -1)
	[ -n "$v" ] || return 1
	{
		echo "mpich $v"
		dpkg-query -W -f='${Version}\n' libfabric-dev gcc 2>/dev/null
		sed -n '/^fetch() {$/,/^}$/p; /^build() {$/,/^}$/p' "$0"
	} | sha256sum | cut -c1-16
}
from_cache() {
	[ -n "$cache" ] && key=$(cache_key) || { key=; return 1; }
	c=$cache/fabtests-$key
	[ -x "$c/fabtests/bin/fi_msg" ] && [ -f "$c/fabtests-src/scripts/runfabtests.sh" ] || return 1
	rm -rf "$src" "$inst"
	cp -a "$c/fabtests-src" "$src" && cp -a "$c/fabtests" "$inst" || return 1
	say "fabtests from the cache ($c)"
}
to_cache() { # best effort: a copy renamed into place, so no reader sees half of it
	[ -n "$cache" ] && [ -n "$key" ] || return 0
	c=$cache/fabtests-$key
	[ -d "$c" ] && return 0
	mkdir -p "$cache" 2>/dev/null && t=$(mktemp -d "$cache/.new.XXXXXX" 2>/dev/null) || return 0
	if cp -a "$src" "$t/fabtests-src" && cp -a "$inst" "$t/fabtests" && mv "$t" "$c" 2>/dev/null; then
		say "fabtests cached in $c"
	fi
	rm -rf "$t"
}

# --- main --------------------------------------------------------------------
if [ -x "$inst/bin/fi_msg" ] && [ -f "$src/scripts/runfabtests.sh" ]; then
	: # built in WORKDIR by an earlier run
elif ! from_cache; then
	fetch || exit $?
	build || exit 1
	to_cache
fi
unset FI_PROVIDER FI_PROVIDER_PATH FI_LOG_LEVEL
t0=$(date +%s)
if [ $baseline = 1 ]; then
	unset LD_LIBRARY_PATH
	tag=debian
	say "Debian's libfabric ($(dpkg-query -W -f='${Version}' libfabric1 2>/dev/null)), $(fabtests_version)"
else
	if [ ! -e "$lib/libfabric.so.1" ]; then
		say "FAIL: no libfabric.so.1 in $lib (build first)"
		exit 1
	fi
	lib=$(cd "$lib" && pwd)
	export LD_LIBRARY_PATH="$lib"
	# The binaries must resolve libfabric.so.1 to ours, not Debian's.
	if ! ldd "$inst/bin/fi_msg" | grep -q "=> $lib/libfabric.so.1"; then
		say "FAIL: fi_msg does not load $lib/libfabric.so.1"
		exit 1
	fi
	tag=ours
	say "our library ($lib), $(fabtests_version), groups $groups"
	[ -f "$basefile" ] || { say "FAIL: no $basefile (make it with --baseline)"; exit 1; }
	grep -q "$(fabtests_version)" "$basefile" ||
		say "WARNING: the baseline was made with another fabtests than $(fabtests_version)"
fi
for p in $(echo "$providers" | tr ',' ' '); do
	[ $norun = 1 ] && continue
	s=$(date +%s)
	run_provider $tag "$p"
	r=$work/results-$tag-$p.txt
	say "$p ($tag): $(count "$r" Pass) pass, $(count "$r" Fail) fail, $(count "$r" Notrun) notrun" \
		"of $(wc -l <"$r") in $(($(date +%s) - s)) s"
done
[ $norun = 1 ] || say "$(($(date +%s) - t0)) s for $(echo "$providers" | tr ',' ' ')"

if [ $baseline = 1 ]; then
	f=$work/debian-baseline.txt
	{
		echo "# SPDX-License-Identifier: BSD-3-Clause"
		echo "# What Debian's libfabric does with fabtests: PROVIDER|RESULT|TEST, one a line."
		echo "# Made $(date -u +%Y-%m-%d) by: sh contrib/conformance/fabtests.sh --baseline --groups $groups"
		echo "# on Debian libfabric1 $(dpkg-query -W -f='${Version}' libfabric1 2>/dev/null)," \
			"$(fabtests_version) (Debian source), groups $groups,"
		echo "# LD_LIBRARY_PATH unset, server and client on 127.0.0.1.  Copy it over"
		echo "# contrib/conformance/debian-baseline.txt to renew the baseline."
		echo "# Fail after a timeout (${tmo} s; a slow machine may need another baseline):"
		for p in $(echo "$providers" | tr ',' ' '); do
			sed 's/^/#   /' "$work/hung-$tag-$p.txt" 2>/dev/null
		done
		for p in $(echo "$providers" | tr ',' ' '); do cat "$work/results-$tag-$p.txt"; done
	} >"$f"
	say "baseline written to $f"
	exit 0
fi

# --- gate and table ------------------------------------------------------
table=$work/conformance-table.txt
bad=$work/regressions.txt
: >"$bad"
{
	printf '# fabtests %s on our library (%s), %s\n' "$(fabtests_version)" "$lib" "$(date -u '+%Y-%m-%d %H:%M UTC')"
	printf '# deb: Debian libfabric (contrib/conformance/debian-baseline.txt); ours: this run.\n'
	printf '# !: the baseline passes it and ours does not (the gate fails); d: documented difference\n'
	printf '%-50s %-8s %-8s %-8s %-8s %-8s\n' test tcp:deb tcp:ours shm:deb shm:ours wireup
	tests | while IFS='|' read -r g neg t; do
		line=$(printf '%-50s' "$t")
		for p in tcp shm wireup; do
			if [ $p != wireup ]; then
				d=$(result_of "$basefile" $p "$t")
				line="$line $(printf '%-8s' "${d:--}")"
			fi
			o=$(result_of "$work/results-ours-$p.txt" $p "$t")
			# Only the providers of this run are gated; one of them without
			# a result (the runner died) fails too.
			mark= gated=0
			case ",$providers," in *",$p,"*) gated=1; [ -n "$o" ] || o=none ;; esac
			if [ $gated = 1 ] && [ "$o" != Pass ] && baseline_passes $p "$t"; then
				if documented $p "$t"; then mark=d; else mark='!'; echo "$p|$o|$t|$(why $p "$t")" >>"$bad"; fi
			fi
			line="$line $(printf '%-8s' "${o:--}$mark")"
		done
		echo "$line"
	done
} >"$table"
say "table: ${table#$top/}"
cat "$work"/flaky-ours-*.txt 2>/dev/null | sed 's/^/conformance: passed on the second try: /'
if [ -s "$bad" ]; then
	say "FAIL: $(wc -l <"$bad") tests Debian's libfabric passes do not pass on ours" \
		"(not in contrib/conformance/differences.txt):"
	sed 's/^/  /' "$bad"
	exit 1
fi
say "PASS: every test the baseline passes passes on ours or is a documented difference"
