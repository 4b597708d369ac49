#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_pingpong (libfabric-bin) on our library over the
# shm provider (issue 14): RDM, server and client on this node (their
# control socket on 127.0.0.1), sizes 8 B .. 1 MiB, msg and tagged, with
# fi_pingpong's own data checks (-c), each run bounded by a timeout.
# Exit 77 (skip) when fi_pingpong is not installed or our library has no
# provider "shm" yet.  WU_PP_PROV=<name> runs the same over another RDM
# provider (wireup_fi_pingpong.sh).
set -u
prov=${WU_PP_PROV:-shm}
. "$(dirname "$0")/../common/debian_bin.sh"
need_tool pp fi_pingpong
our_lib
fi_info=$(command -v fi_info 2>/dev/null || true)
if [ -n "$fi_info" ] && ! LD_LIBRARY_PATH=$libdir timeout 30 "$fi_info" -l 2>/dev/null | grep -q "^$prov:"; then
	echo "SKIP: the $prov provider is missing (fi_info -l on our library does not list $prov)"
	exit 77
fi
# Control ports of our own, apart from fi_pingpong.sh's (10000..29999).
base=$(( 30000 + ($$ % 200) * 10 ))
status=0
n=0
for mode in msg tagged; do
	for size in 8 4096 65536 1048576; do
		iters=200
		[ "$size" -ge 65536 ] && iters=50
		for try in 1 2 3; do
			n=$((n + 1))
			port=$((base + n))
			out=$(mktemp)
			LD_LIBRARY_PATH=$libdir timeout 60 "$pp" -p "$prov" -e rdm -m "$mode" -c -B "$port" -S "$size" -I $iters >"$out.srv" 2>&1 &
			srv=$!
			sleep 0.3
			LD_LIBRARY_PATH=$libdir timeout 60 "$pp" -p "$prov" -e rdm -m "$mode" -c -P "$port" -S "$size" -I $iters 127.0.0.1 >"$out" 2>&1
			crc=$?
			wait $srv
			src=$?
			grep -q "Address already in use" "$out.srv" || break
			echo "note: port $port was taken, trying another"
			rm -f "$out" "$out.srv"
		done
		line=$(tail -1 "$out")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "=$iters" "$out" && grep -q "=$iters" "$out.srv"; then
			echo "PASS: fi_pingpong -p $prov -e rdm -m $mode -c -S $size: $line"
		else
			echo "FAIL: fi_pingpong -p $prov -e rdm -m $mode -c -S $size (client $crc, server $src)"
			sed 's/^/  client: /' "$out" | head -40
			sed 's/^/  server: /' "$out.srv" | head -40
			status=1
		fi
		rm -f "$out" "$out.srv"
	done
done
exit $status
