#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's own libfabric-bin tools, unmodified, run on our library when
# LD_LIBRARY_PATH points at the build.  Proves the loader picks ours.
if [ "$WU_EMBEDDED" = yes ]; then echo "SKIP: embedded builds make no shared library"; exit 77; fi
for t in fi_info fi_strerror; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (Debian package libfabric-bin)"; exit 77; }
done
libdir=$(dirname "${WU_LIB:?}")
status=0
fail() { echo "FAIL: $*"; status=1; }

# The loader must initialise our libfabric.so.1, not Debian's.
loaded=$(LD_LIBRARY_PATH=$libdir LD_DEBUG=libs fi_info --version 2>&1 >/dev/null |
	sed -n 's/.*calling init: \(.*libfabric\.so\.1\)$/\1/p' | head -1)
case "$loaded" in
	"$libdir"/*) echo "ok: fi_info loaded $loaded" ;;
	*) fail "fi_info loaded '${loaded:-nothing}', not $libdir/libfabric.so.1" ;;
esac

out=$(LD_LIBRARY_PATH=$libdir fi_info --version 2>&1) || fail "fi_info --version exited $?: $out"
echo "$out" | grep -q '^libfabric: 2\.6' || fail "fi_info --version does not report our version: $out"
echo "ok: fi_info --version: $(echo "$out" | tr '\n' ' ')"

# 270/271 are 2.x codes (FI_ENOMR, FI_EFIREWALLADDR) 1.17 has no text for; 272 is past both.
for n in 61 1 11 22 255 256 257 260 263 265 272 300 99999; do
	ours=$(LD_LIBRARY_PATH=$libdir fi_strerror $n 2>&1)
	theirs=$(fi_strerror $n 2>&1)
	[ "$ours" = "$theirs" ] || fail "fi_strerror $n: ours '$ours', Debian's '$theirs'"
done
echo "ok: fi_strerror texts match Debian's"
exit $status
