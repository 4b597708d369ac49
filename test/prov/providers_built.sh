#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The built-in providers are those configure built (--enable-<name>,
# config.h's WU_PROV_*): `fi_info -l` (our util/fi_info) lists each built
# one and none switched off.
if [ "$WU_EMBEDDED" = yes ]; then echo "SKIP: embedded builds make no fi_info"; exit 77; fi
top_builddir=${top_builddir:?}
ours=$top_builddir/util/fi_info
[ -x "$ours" ] || { echo "FAIL: $ours not built"; exit 1; }
config=${WU_CONFIG_H:-$top_builddir/config.h}
[ -f "$config" ] || { echo "FAIL: $config missing"; exit 1; }
# FI_PROVIDER_PATH unset: only built-in providers.
listed=$(env -u FI_PROVIDER_PATH -u FI_PROVIDER "$ours" -l 2>&1) || { echo "FAIL: fi_info -l: $listed"; exit 1; }
status=0
for p in tcp shm wireup ucx; do
	name=$(echo "$p" | tr a-z A-Z)
	if grep -q "^#define WU_PROV_$name 1" "$config"; then want=yes; else want=no; fi
	if printf '%s\n' "$listed" | grep -q "^$p:"; then got=yes; else got=no; fi
	if [ $want = $got ]; then
		echo "PASS: $p built: $want, listed: $got"
	else
		echo "FAIL: $p built: $want, but fi_info -l lists it: $got"
		status=1
	fi
done
[ $status = 0 ] || printf '%s\n' "$listed" | sed 's/^/  /'
exit $status
