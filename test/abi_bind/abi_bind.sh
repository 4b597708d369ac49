#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs the abi_bind_1_N programs (abi_bind.c): first checks with objdump
# that each really imports fi_getinfo, fi_freeinfo and fi_dupinfo at
# FABRIC_1.N (and fi_fabric at 1.0 or 1.1), then runs it on our library.
if [ "$WU_EMBEDDED" = yes ]; then echo "SKIP: embedded builds make no shared library"; exit 77; fi
command -v objdump >/dev/null || { echo "SKIP: objdump missing (Debian package binutils)"; exit 77; }
libdir=${top_builddir:?}/src/.libs
[ -e "$libdir/libfabric.so.1" ] || { echo "FAIL: $libdir/libfabric.so.1 not built"; exit 1; }
status=0
for n in 0 1 2 3 7 8 9; do
	prog=$top_builddir/test/abi_bind/abi_bind_1_$n
	[ -x "$prog" ] || { echo "FAIL: $prog not built"; status=1; continue; }
	imports=$(objdump -T "$prog" | grep '\*UND\*')
	fab=1.1
	[ $n = 0 ] && fab=1.0
	for s in fi_getinfo:1.$n fi_freeinfo:1.$n fi_dupinfo:1.$n fi_fabric:$fab; do
		sym=${s%%:*} node=FABRIC_${s#*:}
		if printf '%s\n' "$imports" | grep -E "[( ]$node\)? +$sym\$" >/dev/null; then
			echo "PASS: abi_bind_1_$n imports $sym@$node"
		else
			echo "FAIL: abi_bind_1_$n does not import $sym@$node:"
			printf '%s\n' "$imports" | grep " $sym\$" | sed 's/^/  /'
			status=1
		fi
	done
	out=$(env -u FI_PROVIDER LD_LIBRARY_PATH=$libdir timeout 120 "$prog" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed "s/^/  1.$n: /"
	case $rc in
	0) echo "PASS: abi_bind_1_$n runs" ;;
	77) echo "SKIP: abi_bind_1_$n"; exit 77 ;;
	*) echo "FAIL: abi_bind_1_$n exit $rc"; status=1 ;;
	esac
done
exit $status
