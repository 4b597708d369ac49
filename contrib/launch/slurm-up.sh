#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# slurm-up.sh DIR -- start a private single-node Slurm cluster (munged,
# slurmctld, slurmd, all as root, no cgroups) whose configuration, state,
# spool, pid files, logs and munge key/socket all live under DIR.
#
# Nothing system-wide is read or written: clients find the cluster through
# SLURM_CONF, which this script writes to DIR/env.sh and prints on stdout:
#     eval "$(contrib/launch/slurm-up.sh /tmp/wu-slurm)"   # or: . DIR/env.sh
#     srun --mpi=pmix -n 4 -O ./prog
#     contrib/launch/slurm-down.sh /tmp/wu-slurm
#
# Idempotent: if the cluster in DIR is already up and answering, it only
# prints the environment again.  Start-up is bounded (WU_SLURM_UP_TIMEOUT
# seconds, default 30); on failure the daemons it started are stopped, the
# log tails are shown and the exit status is 1.  The daemons use two ports
# probed free (another pair is tried if one is taken meanwhile) and listen on
# 127.0.0.1 only, provided the host name resolves to loopback (otherwise on
# every address).  Concurrent calls on one DIR are serialised (DIR/.lock).
# WU_SLURM_WATCH_PID=PID: also stop the cluster once process PID is gone.
# Status 77 (the automake "skip" code) means a needed program is missing.
set -u

die() { echo "slurm-up: $*" >&2; exit 1; }

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root (the private slurmd runs jobs as root)"

for prog in munged:munge mungekey:munge slurmctld:slurmctld slurmd:slurmd \
            srun:slurm-client sinfo:slurm-client; do
	cmd=${prog%%:*}; pkg=${prog#*:}
	command -v "$cmd" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin"
	command -v "$cmd" >/dev/null 2>&1 || {
		echo "slurm-up: $cmd not found: install the Debian package $pkg" >&2; exit 77; }
done

mkdir -p "$1" || die "cannot create $1"
DIR=$(cd "$1" && pwd -P) || die "cannot enter $1"
timeout_s=${WU_SLURM_UP_TIMEOUT:-30}
conf=$DIR/etc/slurm.conf
env_sh=$DIR/env.sh

# One caller at a time per DIR.  Every long-lived child closes fd 9 (9>&-),
# or it would hold the lock after this script is gone.
exec 9>"$DIR/.lock"
flock -w 60 9 || die "$DIR is locked by another slurm-up"

# Unix socket paths are limited to 107 bytes.  Sockets (munge, slurmd spool,
# PMIx rendezvous under TmpFS) need a short base; a long DIR gets a short
# directory in /tmp instead, recorded in DIR/sockdir and removed by slurm-down.
prepare_dirs() {
	if [ ${#DIR} -le 50 ]; then
		SOCK=$DIR/run
	elif [ -f "$DIR/sockdir" ] && SOCK=$(cat "$DIR/sockdir") && [ -d "$SOCK" ]; then
		:
	else
		SOCK=$(mktemp -d /tmp/wu-slurm.XXXXXX) || die "mktemp failed"
		echo "$SOCK" >"$DIR/sockdir"
	fi
	mkdir -p "$DIR/etc" "$DIR/state" "$DIR/log" "$DIR/run" "$SOCK/spool" "$SOCK/tmp" \
		"$SOCK/munge" || die "cannot create directories under $DIR"
	chmod 700 "$DIR/etc" "$SOCK/munge"
	rm -f "$DIR/state/"* 2>/dev/null   # fresh controller state: no stale jobs or nodes
}

print_env() {
	cat "$env_sh"
}

alive() { # alive PIDFILE: the recorded process still exists
	[ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# Clients must not inherit an outer allocation or another cluster's config.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export SLURM_CONF="$conf"

answering() { # the controller answers and the node is usable
	st=$(timeout 5 sinfo -h -N -o %t 2>/dev/null) || return 1
	case "$st" in idle*|mix*|alloc*|comp*) return 0 ;; esac
	return 1
}

if [ -f "$env_sh" ] && alive "$DIR/run/munged.pid" && alive "$DIR/run/slurmctld.pid" \
		&& alive "$DIR/run/slurmd.pid" && answering; then
	print_env
	exit 0
fi

# Anything left from a half-started or crashed instance goes first.
[ -d "$DIR/run" ] && sh "$(dirname "$0")/slurm-down.sh" "$DIR" >/dev/null 2>&1

listening_ports() { # every TCP port something listens on, in decimal
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] && awk '$4 == "0A" { split($2, a, ":"); print a[2] }' "$f"
	done | while read -r hex; do echo $((0x$hex)); done
}

pick_ports() { # two consecutive free ports in 20000..59999, seeded by pid and time
	used=$(listening_ports | sort -un)
	seed=$(( ($$ * 7919 + $(date +%s) % 100000) % 19990 ))
	n=0
	while [ $n -lt 200 ]; do
		p=$(( 20000 + (seed + n * 97) % 19990 * 2 ))
		if ! echo "$used" | grep -qx "$p" && ! echo "$used" | grep -qx "$((p + 1))"; then
			CTLD_PORT=$p; SLURMD_PORT=$((p + 1)); return 0
		fi
		n=$((n + 1))
	done
	return 1
}

host=$(hostname -s 2>/dev/null || hostname)
host=${host%%.*}
[ -n "$host" ] || die "cannot determine the short host name"

# Bind to the host name's address instead of every address -- only when that
# name resolves to loopback (else the daemons would not listen where the
# clients look, 127.0.0.1).
comm_params="# host name not on loopback: daemons listen on every address"
case "$(getent hosts "$host" 2>/dev/null)" in
127.*) comm_params="CommunicationParameters=NoCtldInAddrAny,NoInAddrAny" ;;
esac

write_conf() {
	cat >"$conf" <<EOF
# Private single-node cluster written by contrib/launch/slurm-up.sh.
ClusterName=wireup
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
$comm_params
Include $(cd "$(dirname "$0")" && pwd)/slurm-private.conf
AuthInfo=socket=$SOCK/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$SOCK/spool
TmpFS=$SOCK/tmp
SlurmctldPidFile=$DIR/run/slurmctld.dpid
SlurmdPidFile=$DIR/run/slurmd.dpid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/etc/plugstack.conf
MessageTimeout=20
SlurmdTimeout=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=64 RealMemory=1024 State=UNKNOWN
PartitionName=wireup Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	: >"$DIR/etc/plugstack.conf"
	{
		echo "# source this file (or eval slurm-up.sh's output) to use the private cluster"
		echo "export SLURM_CONF='$conf'"
	} >"$env_sh"
}

start_daemons() { # returns 0 when the cluster answers; 2 on a port clash
	if [ ! -s "$DIR/etc/munge.key" ]; then
		mungekey -c -k "$DIR/etc/munge.key" >/dev/null 2>&1 || die "cannot create a munge key"
		chmod 600 "$DIR/etc/munge.key"
	fi
	# -F: stay in the foreground, so $! is the daemon itself.
	setsid munged -F --force -S "$SOCK/munge/munge.socket" --key-file="$DIR/etc/munge.key" \
		--pid-file="$DIR/run/munged.dpid" --log-file="$DIR/log/munged.log" \
		--seed-file="$DIR/state/munge.seed" --num-threads=2 \
		</dev/null >>"$DIR/log/munged.out" 2>&1 9>&- &
	echo $! >"$DIR/run/munged.pid"
	t=0
	while ! [ -S "$SOCK/munge/munge.socket" ]; do
		alive "$DIR/run/munged.pid" || { echo "slurm-up: munged exited" >&2; return 1; }
		t=$((t + 1)); [ $t -gt 50 ] && { echo "slurm-up: no munge socket after 5 s" >&2; return 1; }
		sleep 0.1
	done

	setsid slurmctld -D -i -f "$conf" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 9>&- &
	echo $! >"$DIR/run/slurmctld.pid"
	setsid slurmd -D -N "$host" -f "$conf" </dev/null >>"$DIR/log/slurmd.out" 2>&1 9>&- &
	echo $! >"$DIR/run/slurmd.pid"

	deadline=$(( $(date +%s) + timeout_s ))
	while :; do
		for d in slurmctld slurmd; do
			if ! alive "$DIR/run/$d.pid"; then
				if grep -qi "address already in use" "$DIR/log/$d.log" "$DIR/log/$d.out" 2>/dev/null; then
					return 2
				fi
				echo "slurm-up: $d exited during start-up" >&2
				return 1
			fi
		done
		if answering; then
			# The node is idle: one trivial step proves munge, credentials and slurmstepd.
			if timeout 15 srun -n1 -t 1 true </dev/null >>"$DIR/log/srun-probe.out" 2>&1 9>&-; then
				return 0
			fi
		fi
		[ "$(date +%s)" -ge "$deadline" ] && { echo "slurm-up: not answering after $timeout_s s" >&2; return 1; }
		sleep 0.2
	done
}

show_logs() {
	for f in "$DIR"/log/*; do
		[ -s "$f" ] || continue
		echo "--- $f (tail)" >&2
		tail -n 15 "$f" >&2
	done
}

attempt=1
while :; do
	prepare_dirs
	pick_ports || die "no free port pair found"
	write_conf
	start_daemons
	rc=$?
	[ $rc -eq 0 ] && break
	sh "$(dirname "$0")/slurm-down.sh" "$DIR" >/dev/null 2>&1
	if [ $rc -eq 2 ] && [ $attempt -lt 3 ]; then
		attempt=$((attempt + 1)); continue   # someone took our port: pick others
	fi
	show_logs
	exit 1
done

# Optional safety net for test scripts: stop the cluster when that process
# is gone, even if it was killed without running its trap.
if [ -n "${WU_SLURM_WATCH_PID:-}" ]; then
	down=$(cd "$(dirname "$0")" && pwd)/slurm-down.sh
	: >"$DIR/run/watch.on"      # slurm-down removes it to dismiss the watcher
	setsid sh -c 'while kill -0 "$1" 2>/dev/null && [ -f "$2/run/watch.on" ]; do sleep 2; done
		[ -f "$2/run/watch.on" ] && rm -f "$2/run/watch.on" "$2/run/watch.pid" && sh "$3" "$2"' \
		watch "$WU_SLURM_WATCH_PID" "$DIR" "$down" </dev/null >/dev/null 2>&1 9>&- &
	echo $! >"$DIR/run/watch.pid"
fi
print_env
exit 0
