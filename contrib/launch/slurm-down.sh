#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# slurm-down.sh DIR -- stop the private cluster that slurm-up.sh started in
# DIR: cancel its jobs, stop leftover job steps, then slurmd, slurmctld and
# munged, each by the pid recorded in DIR/run.  Every wait is bounded and
# ends in SIGKILL: about 2 s normally, 11 s measured with a crashed slurmctld
# and a step still running, never more than about 20 s.  Safe to run twice or
# on a DIR where nothing runs.  Logs, config and state stay in DIR.
set -u
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ -d "$1" ] || exit 0
DIR=$(cd "$1" && pwd -P) || exit 0
RUN=$DIR/run
SOCK=$RUN
[ -f "$DIR/sockdir" ] && SOCK=$(cat "$DIR/sockdir")

pid_of() { # pid_of NAME: the recorded pid if that process still exists
	[ -s "$RUN/$1.pid" ] || return 1
	p=$(cat "$RUN/$1.pid")
	case "$p" in ''|*[!0-9]*) return 1 ;; esac
	kill -0 "$p" 2>/dev/null && echo "$p"
}

wait_gone() { # wait_gone TENTHS PID...: true when all are gone in time
	n=$1; shift
	while [ "$n" -gt 0 ]; do
		left=""
		for p in "$@"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
		[ -z "$left" ] && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

stop() { # stop TENTHS PID...: SIGTERM, bounded wait, then SIGKILL
	t=$1; shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null
	wait_gone "$t" "$@" && return 0
	kill -KILL "$@" 2>/dev/null
	wait_gone 20 "$@"
}

descendants() { # every process below the given pids (from /proc, no ps needed)
	for f in /proc/[0-9]*/stat; do
		# pid and ppid; the command name may hold spaces, so cut after its ")".
		sed -n 's/^\([0-9]*\) .*) [A-Za-z] \([0-9]*\) .*/\1 \2/p' "$f" 2>/dev/null
	done | awk -v roots=" $* " '
		{ parent[$1] = $2 }
		END {
			n = split(roots, r, " "); for (i = 1; i <= n; i++) mark[r[i]] = 1
			do { more = 0
				for (p in parent) if (!(p in mark) && (parent[p] in mark)) { mark[p] = 1; more = 1 }
			} while (more)
			for (p in mark) if (index(roots, " " p " ") == 0) print p
		}'
}

# The watcher (if any) must not restart anything; it simply goes away.
rm -f "$RUN/watch.on"
if w=$(pid_of watch); then
	kill "$w" 2>/dev/null
fi

# 1. Jobs: cancel through the controller while it is still there.
cancelled=no
if pid_of slurmctld >/dev/null && [ -f "$DIR/etc/slurm.conf" ] &&
	SLURM_CONF=$DIR/etc/slurm.conf timeout 5 scancel --quiet --full --user=root >/dev/null 2>&1; then
	cancelled=yes
fi

# 2. Job steps: slurmstepd processes log into our slurmd log; they and the
#    tasks below them are stopped directly (a crashed controller cannot).
steps=""
for d in /proc/[0-9]*; do
	[ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
	for fd in "$d"/fd/*; do
		case "$(readlink "$fd" 2>/dev/null)" in
		"$DIR"/*|"$SOCK"/*) steps="$steps ${d#/proc/}"; break ;;
		esac
	done
done
if [ -n "$steps" ]; then
	# After a scancel they go by themselves within a few seconds.
	{ [ $cancelled = yes ] && wait_gone 30 $steps; } || {
		tasks=$(descendants $steps)
		stop 20 $steps $tasks
	}
fi

# 3. The daemons, together (nothing left needs munge; each takes 1-2 s to go).
daemons=""
for d in slurmd slurmctld munged; do
	p=$(pid_of $d) && daemons="$daemons $p"
done
stop 50 $daemons

rm -f "$RUN"/*.pid "$RUN"/*.dpid "$RUN/watch.on"
if [ -f "$DIR/sockdir" ]; then
	case "$SOCK" in /tmp/wu-slurm.*) rm -rf "$SOCK" ;; esac
	rm -f "$DIR/sockdir"
fi
exit 0
