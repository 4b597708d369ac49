#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The built libfabric.so.1 exports exactly the symbols and versions of
# libfabric 2.6's (shared/design/abi.md), all version nodes FABRIC_1.0..1.9
# exist, and the defaults (@@) are the newest layouts.
if [ "$WU_EMBEDDED" = yes ]; then echo "SKIP: embedded builds export nothing"; exit 77; fi
command -v objdump >/dev/null || { echo "SKIP: objdump missing (Debian package binutils)"; exit 77; }
lib=${WU_LIB:?}
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Defined dynamic symbols: "... DF .text ... Version Name"; drop the version
# node definitions themselves (ABS entries).
objdump -T "$lib" | awk '$2 ~ /g|w/ && $0 !~ /\*UND\*/ && $0 !~ /\*ABS\*/ {
	v=$(NF-1); gsub(/[()]/, "", v); print $NF, v }' | sort > "$tmp/got"
sort "$top_srcdir/test/c/exports.expected" > "$tmp/want"
status=0
if ! diff -u "$tmp/want" "$tmp/got"; then echo "FAIL: exported symbols differ (- expected, + built)"; status=1; fi
for n in 0 1 2 3 4 5 6 7 8 9; do
	objdump -T "$lib" | grep -q "FABRIC_1\.$n\$" || { echo "FAIL: version node FABRIC_1.$n missing"; status=1; }
done
# objdump -T prints a compatibility (@) binding's node in parentheses.
default_is() {
	objdump -T "$lib" | grep -E " FABRIC_$2 +$1\$" >/dev/null || { echo "FAIL: $1@@FABRIC_$2 is not the default"; status=1; }
}
for s in fi_getinfo fi_freeinfo fi_dupinfo; do default_is $s 1.9; done
default_is fi_fabric2 1.8
default_is fi_fabric 1.1
[ $status = 0 ] && echo "PASS: $(wc -l < "$tmp/got") exported symbols match"
exit $status
