#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages Wireup's build and tests need, only those
# that are missing.  Idempotent; silent when nothing is missing.
#   contrib/install-deps.sh          build + test dependencies
#   contrib/install-deps.sh build    build dependencies only
set -e
build="g++ make autoconf automake libtool pkg-config binutils libhwloc-dev libpmix-dev
libibverbs-dev libucx-dev libgtest-dev libgmock-dev libssl-dev"
test="libfabric-dev libfabric-bin ucx-utils openmpi-bin libopenmpi-dev iproute2 clang
libclang-rt-14-dev python3 slurmctld slurmd slurm-client munge hwloc valgrind groff-base"
case "${1:-all}" in
	build) want=$build ;;
	*) want="$build $test" ;;
esac
missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -qq --no-install-recommends $missing >/tmp/wireup-apt.log 2>&1; then
	$sudo apt-get update -qq >>/tmp/wireup-apt.log 2>&1
	$sudo apt-get install -y -qq --no-install-recommends $missing >>/tmp/wireup-apt.log 2>&1 || {
		tail -20 /tmp/wireup-apt.log; exit 1; }
fi
