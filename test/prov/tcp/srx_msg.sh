#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Differential test: srx_msg.c (a shared receive context over two MSG
# endpoints), built against the system's libfabric headers, run on
# Debian's libfabric tcp provider (the reference) and on ours by swapping
# LD_LIBRARY_PATH: ours must pass, and print what Debian's prints when
# Debian's passes.  Exit 77 (skip) without a C compiler or libfabric-dev.
set -u
prog=srx_msg
. "$(dirname "$0")/../common/diff_prog.sh"
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
