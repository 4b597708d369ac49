# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests that run Debian's unmodified libfabric-bin tools
# (fi_info, fi_pingpong) on our library.
#   need_tool VAR NAME  VAR := the tool's path; exits 77 (skip) without it
#   our_lib             libdir := the directory of our libfabric.so.1
#                       (WU_LIB, else top_builddir's); exits 1 without it
need_tool() {
	_t=$(command -v "$2" 2>/dev/null || true)
	if [ -z "$_t" ]; then
		echo "SKIP: $2 not found (Debian: apt-get install libfabric-bin)"
		exit 77
	fi
	eval "$1=\$_t"
}
our_lib() {
	lib=${WU_LIB:-${top_builddir:-$(cd "$(dirname "$0")/../../.." && pwd)/build}/src/.libs/libfabric.so.1}
	libdir=$(dirname "$lib")
	if [ ! -e "$libdir/libfabric.so.1" ]; then
		echo "FAIL: our library not found in $libdir"
		exit 1
	fi
}
