#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Differential test: msg_cm.c, built against the system's libfabric
# headers, run on Debian's libfabric (the reference, reported) and on ours
# (must pass) by swapping LD_LIBRARY_PATH.  Cases: bind flags, FI_SHUTDOWN
# on both sides over growing private data, a client waiting for a server
# application that answers late, a fixed RDM port opened twice.
# Exit 77 (skip) without a C compiler or libfabric-dev.
set -u
prog=msg_cm
. "$(dirname "$0")/../common/diff_prog.sh"
# A fixed port of our own, below the ephemeral range, per process: Debian's
# run leaves it with connections in TIME_WAIT, then ours opens it twice.
port=$(( 20000 + ($$ % 2000) * 4 ))
status=0
for c in badflags shutdown slowaccept "reuse $port"; do
	if [ -n "$deb" ]; then
		if FI_PROVIDER=tcp LD_LIBRARY_PATH=$deb timeout 60 "$tmp/msg_cm" $c >"$tmp/deb.out" 2>&1; then
			echo "reference: Debian's libfabric passes $c"
		else
			echo "reference: Debian's libfabric fails $c:"
			sed 's/^/  debian: /' "$tmp/deb.out"
		fi
	fi
	# slowaccept: the server answers 1.5 s late, past our lowered timeout.
	if FI_TCP_CONN_TIMEOUT=500 LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/msg_cm" $c >"$tmp/our.out" 2>&1; then
		echo "PASS: $c"
	else
		echo "FAIL: $c"
		status=1
	fi
	sed 's/^/  ours: /' "$tmp/our.out"
done
exit $status
