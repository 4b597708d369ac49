#!/bin/sh
# Differential test: srx_msg.c (a shared receive context over two MSG
# endpoints), built against the system's libfabric headers, run on
# Debian's libfabric tcp provider (the reference) and on ours by swapping
# LD_LIBRARY_PATH: ours must pass, and print what Debian's prints when
# Debian's passes.  Exit 77 (skip) without a C compiler or libfabric-dev.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=${WU_LIB:-${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)/build}/src/.libs/libfabric.so.1}
libdir=$(cd "$(dirname "$lib")" && pwd)
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "FAIL: our library not found in $libdir"
	exit 1
fi
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$cc" -o "$tmp/srx_msg" "$srcdir/test/prov/srx_msg.c" -lfabric 2>"$tmp/cc.log"; then
	echo "SKIP: cannot build srx_msg.c against libfabric-dev (Debian: apt-get install libfabric-dev)"
	cat "$tmp/cc.log"
	exit 77
fi
deb=
ref=${DEBIAN_LIBFABRIC:-$("$cc" -print-file-name=libfabric.so.1)}
[ -e "$ref" ] && deb=$(cd "$(dirname "$ref")" && pwd)
deb_ok=0
if [ -n "$deb" ]; then
	if FI_PROVIDER=tcp LD_LIBRARY_PATH=$deb timeout 60 "$tmp/srx_msg" >"$tmp/deb.out" 2>&1; then
		echo "reference: Debian's libfabric (tcp) passes"
		deb_ok=1
	else
		echo "reference: Debian's libfabric (tcp) fails:"
	fi
	sed 's/^/  debian: /' "$tmp/deb.out"
fi
status=0
if FI_PROVIDER=tcp LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/srx_msg" >"$tmp/our.out" 2>&1; then
	echo "PASS: srx_msg on ours"
else
	echo "FAIL: srx_msg on ours"
	status=1
fi
sed 's/^/  ours: /' "$tmp/our.out"
if [ $deb_ok = 1 ] && ! diff "$tmp/deb.out" "$tmp/our.out" >"$tmp/diff"; then
	echo "FAIL: ours prints differently from Debian's:"
	cat "$tmp/diff"
	status=1
fi
exit $status
