#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Our util/fi_info must print what Debian's fi_info prints, byte for byte,
# with the same exit status, when both run on our libfabric.so.1.  Cases
# where fi_getinfo finds nothing are compared too: the error text and exit
# code are part of the interface.  In --version output only the lines
# naming releases and API levels may differ: each tool's own release, the
# API it was built for (ours: our headers') and Wireup's release, which only
# ours prints; the end of this script checks those of ours.
if [ "$WU_EMBEDDED" = yes ]; then echo "SKIP: embedded builds make no fi_info"; exit 77; fi
debian=/usr/bin/fi_info
[ -x "$debian" ] || { echo "SKIP: $debian missing (Debian package libfabric-bin)"; exit 77; }
ours=${top_builddir:?}/util/fi_info
[ -x "$ours" ] || { echo "FAIL: $ours not built"; exit 1; }
libdir=$top_builddir/src/.libs
[ -e "$libdir/libfabric.so.1" ] || { echo "FAIL: $libdir/libfabric.so.1 not built"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# Same library for both: Debian's through LD_LIBRARY_PATH, ours through the
# libtool wrapper, which puts the same directory first.  Check the loader
# really initialised ours in both, or the comparison proves nothing.
for prog in "$debian" "$ours"; do
	loaded=$(LD_LIBRARY_PATH=$libdir LD_DEBUG=libs "$prog" --version 2>&1 >/dev/null |
		sed -n 's/.*calling init: \(.*libfabric\.so\.1\)$/\1/p' | head -1)
	case "$loaded" in
	"$libdir"/*) ;;
	*) echo "FAIL: $prog loaded '${loaded:-nothing}', not $libdir/libfabric.so.1"; exit 1 ;;
	esac
done

# Both tools print their argv[0] (usage, getopt errors, --version); ours is
# the real binary behind the wrapper.  Learn each name from the usage line.
name_of() {
	LD_LIBRARY_PATH=$libdir "$1" --help 2>/dev/null | sed -n '1s/^Usage: //p'
}
sed_literal() { printf '%s\n' "$1" | sed 's/[][\.*^$/]/\\&/g'; }
debian_name=$(sed_literal "$(name_of "$debian")")
ours_name=$(sed_literal "$(name_of "$ours")")
if [ -z "$debian_name" ] || [ -z "$ours_name" ]; then echo "FAIL: no usage line from --help"; exit 1; fi

# run WHO ARGS...: outputs in $tmp/WHO.{out,err,rc}, with what legitimately
# differs between two processes made equal: the program name, the pid in shm
# addresses and in library log lines (FI_LOG_LEVEL may be set).
run() {
	who=$1; shift
	if [ "$who" = debian ]; then prog=$debian; name=$debian_name
	else prog=$ours; name=$ours_name; fi
	LD_LIBRARY_PATH=$libdir "$prog" "$@" </dev/null >"$tmp/raw.out" 2>"$tmp/raw.err"
	echo $? >"$tmp/$who.rc"
	for s in out err; do
		sed -e "s/$name/PROG/g" -e 's#fi_shm://[0-9]*#fi_shm://PID#g' \
			-e 's/^libfabric:[0-9]*:[0-9]*:/libfabric:PID:TIME:/' \
			"$tmp/raw.$s" >"$tmp/$who.$s"
	done
}

# One case a line, shell-quoted.  "V " in front: a --version case, whose
# first output line names each tool's own release.
ncase=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	case "$line" in
	'#'*) continue ;;
	'V '*) version=1; line=${line#V } ;;
	*) version=0 ;;
	esac
	[ "$line" = "''" ] && line=
	eval "set -- $line"
	run debian "$@"
	run ours "$@"
	if [ "$version" = 1 ]; then
		for who in debian ours; do
			sed -e 1d -e '/^libfabric api: /d' -e '/^wireup: /d' "$tmp/$who.out" >"$tmp/cut" &&
				mv "$tmp/cut" "$tmp/$who.out"
		done
	fi
	ncase=$((ncase + 1))
	bad=
	cmp -s "$tmp/debian.out" "$tmp/ours.out" || bad="$bad stdout"
	cmp -s "$tmp/debian.err" "$tmp/ours.err" || bad="$bad stderr"
	cmp -s "$tmp/debian.rc" "$tmp/ours.rc" ||
		bad="$bad exit($(cat "$tmp/debian.rc") vs $(cat "$tmp/ours.rc"))"
	if [ -n "$bad" ]; then
		fail "fi_info ${line:-(no options)}:$bad (Debian's -, ours +)"
		for s in out err; do
			diff -a -u "$tmp/debian.$s" "$tmp/ours.$s" | sed -n '3,23p'
		done
	fi
done <<'EOF'
''
-h
--help
-x
--bogus
-t
--caps
--list=3
--v
--p=x
--e
V --version
V -l --version
V --version -x
-x --version
-c FI_FOO --version
-l
-l -v
-l -p tcp
-l -i tcp
-e
-g FI_LOG
-g ''
-g 'no such variable'
-e -i tcp
-e -v
-v
-i tcp
-i TCP
-i xyzzy
--info=
-p tcp
-p tcp -v
-p 'tcp;ofi_rxm'
-p shm
-p udp
-p nope
-p nope -v
-p nope -e
-p nope -l
-p tcp -p nope
-t FI_EP_MSG
-t fi_ep_rdm
-t FI_EP_DGRAM
-t FI_EP_UNSPEC
-t FI_EP_SOCK_STREAM
-t FI_EP_FOO
-t 'FI_EP_MSG|FI_EP_RDM'
-t ''
-c FI_MSG
-c 'FI_MSG|FI_TAGGED'
-c 'fi_msg||FI_RMA|'
-c 'FI_MSG|foo|FI_BAR'
-c FI_MSG -c FI_RMA
-c 'FI_TAGGED|FI_DIRECTED_RECV|FI_LOCAL_COMM|FI_REMOTE_COMM'
-c FI_VARIABLE_MSG
-c ''
-m FI_CONTEXT
-m 'FI_CONTEXT|FI_CONTEXT2|FI_MSG_PREFIX' -t FI_EP_DGRAM
-m FI_CONTEXT -m FI_CONTEXT2
-m ''
-m FI_BUFFERED_RECV
-a FI_SOCKADDR_IN
-a fi_sockaddr_in6
-a FI_ADDR_STR
-a FI_ADDR_IB_UD
-a FI_FOO
-d lo
-d nope
-f 127.0.0.1/32
-f nope
-n 127.0.0.1
-n 127.0.0.1 -P 9228
-s 127.0.0.1
-s 127.0.0.1 -P 9228 -v
-P 9228
-n ''
-n no.such.host.invalid
-n localhost -p tcp -t FI_EP_MSG -v
-t FI_EP_RDM -c FI_TAGGED
-t FI_EP_RDM -c FI_TAGGED -v
-c FI_FOO -t FI_BAR
-- -l
foo -l
--ep_type FI_EP_RDM --caps FI_TAGGED --verbose
--addr_format=FI_SOCKADDR_IN --fabric=127.0.0.1/32 --domain=lo --provider=tcp
--src=127.0.0.1 --port 9228
-ptcp -tFI_EP_MSG -lv
EOF

echo "$ncase cases compared"

# Our --version names the API it implements (our headers') the way
# libfabric's tool does, and Wireup's release (config.h, from AC_INIT).
hdr=$top_srcdir/include/rdma/fabric.h
major=$(sed -n 's/^#define FI_MAJOR_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$hdr")
minor=$(sed -n 's/^#define FI_MINOR_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$hdr")
pkg=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
run ours --version
# The "libfabric:" line (the library's version) is compared with Debian's above.
want=$(printf 'PROG: %s.%s.0\nlibfabric api: %s.%s\nwireup: %s' "$major" "$minor" "$major" "$minor" "$pkg")
got=$(grep -v '^libfabric: ' "$tmp/ours.out")
if [ -n "$major" ] && [ -n "$pkg" ] && [ "$got" = "$want" ] && [ "$(wc -l <"$tmp/ours.out")" = 4 ]; then
	echo "ok: fi_info --version says libfabric api $major.$minor, wireup $pkg"
else
	fail "fi_info --version prints (- wanted without the libfabric: line, + got):"
	printf '%s\n' "$want" | diff -u - "$tmp/ours.out" | sed -n '3,$p'
fi
[ $status = 0 ] && echo "ok: util/fi_info prints what Debian's fi_info prints"
exit $status
