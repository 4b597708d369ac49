#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified fi_pingpong (libfabric-bin) on our library: tcp RDM
# and MSG, server and client on 127.0.0.1, sizes 8 B .. 1 MiB, each run
# bounded by a timeout.  Exit 77 (skip) when fi_pingpong is not installed.
set -u
. "$(dirname "$0")/../common/debian_bin.sh"
need_tool pp fi_pingpong
our_lib
# A port of our own so parallel test runs do not collide with 47592, below
# the kernel's ephemeral range (32768 and up here) so that no connection of
# another test holds it; a port taken all the same is tried again elsewhere.
base=$(( 10000 + ($$ % 2000) * 10 ))
status=0
n=0
for ep in rdm msg; do
	for size in 8 4096 65536 1048576; do
		for try in 1 2 3; do
			n=$((n + 1))
			port=$((base + n))
			out=$(mktemp)
			LD_LIBRARY_PATH=$libdir timeout 30 "$pp" -p tcp -e "$ep" -B "$port" -S "$size" -I 200 >"$out.srv" 2>&1 &
			srv=$!
			sleep 0.3
			LD_LIBRARY_PATH=$libdir timeout 30 "$pp" -p tcp -e "$ep" -P "$port" -S "$size" -I 200 127.0.0.1 >"$out" 2>&1
			crc=$?
			wait $srv
			src=$?
			grep -q "Address already in use" "$out.srv" || break
			echo "note: port $port was taken, trying another"
			rm -f "$out" "$out.srv"
		done
		line=$(tail -1 "$out")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "=200" "$out"; then
			echo "PASS: fi_pingpong -e $ep -S $size: $line"
		else
			echo "FAIL: fi_pingpong -e $ep -S $size (client $crc, server $src)"
			sed 's/^/  client: /' "$out"
			sed 's/^/  server: /' "$out.srv"
			status=1
		fi
		rm -f "$out" "$out.srv"
	done
done
exit $status
