# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the differential shell tests (msg_cm.sh, srx_msg.sh) with
# prog set to the C program's name (test/prov/$prog.c): finds our library
# and Debian's, builds $prog into $tmp against the system's libfabric
# headers, exits 77 (skip) when it cannot.  Sets srcdir, libdir, cc, tmp
# (removed on exit) and deb (Debian's library directory, or empty).
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
lib=${WU_LIB:-${top_builddir:-$(cd "$(dirname "$0")/../../.." && pwd)/build}/src/.libs/libfabric.so.1}
libdir=$(cd "$(dirname "$lib")" && pwd)
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "FAIL: our library not found in $libdir"
	exit 1
fi
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$cc" -o "$tmp/$prog" "$(cd "$(dirname "$0")" && pwd)/$prog.c" -lfabric 2>"$tmp/cc.log"; then
	echo "SKIP: cannot build $prog.c against libfabric-dev (Debian: apt-get install libfabric-dev)"
	cat "$tmp/cc.log"
	exit 77
fi
deb=
ref=${DEBIAN_LIBFABRIC:-$("$cc" -print-file-name=libfabric.so.1)}
[ -e "$ref" ] && deb=$(cd "$(dirname "$ref")" && pwd)
