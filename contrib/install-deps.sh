#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages Wireup's build and tests need, only those
# that are missing.  Idempotent; silent when nothing is missing.
#   contrib/install-deps.sh          build + test dependencies
#   contrib/install-deps.sh build    build dependencies only
# The test dependencies include deb-src entries for Debian's archive: the
# conformance tier (contrib/conformance/fabtests.sh) takes fabtests from a
# Debian source package with `apt-get source`.
set -e
build="g++ make autoconf automake libtool pkg-config binutils libhwloc-dev libpmix-dev
libibverbs-dev libucx-dev libgtest-dev libgmock-dev nettle-dev lld"
test="libfabric-dev libfabric-bin ucx-utils openmpi-bin libopenmpi-dev iproute2 clang
libclang-rt-14-dev python3 slurmctld slurmd slurm-client munge hwloc valgrind groff-base
gcc xz-utils"
case "${1:-all}" in
	build) want=$build ;;
	*) want="$build $test" ;;
esac
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
# deb-src beside each deb entry of Debian's archive (deb822 .sources files and
# the one-line sources.list), then one apt-get update; nothing when apt
# already knows a Debian source package.
deb_src() {
	apt-cache showsrc mpich 2>/dev/null | grep -q '^Package: mpich' && return 0
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && grep -q '^URIs:.*debian' "$f" || continue
		$sudo sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
	done
	f=/etc/apt/sources.list
	if [ -f "$f" ] && ! grep -q '^deb-src .*debian' "$f"; then
		sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' "$f" | $sudo tee -a "$f" >/dev/null
	fi
	echo "install-deps: enabling Debian source packages (deb-src)"
	$sudo apt-get update -qq >/tmp/wireup-apt.log 2>&1 || { tail -20 /tmp/wireup-apt.log; exit 1; }
}
[ "${1:-all}" = build ] || deb_src
missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -qq --no-install-recommends $missing >/tmp/wireup-apt.log 2>&1; then
	$sudo apt-get update -qq >>/tmp/wireup-apt.log 2>&1
	$sudo apt-get install -y -qq --no-install-recommends $missing >>/tmp/wireup-apt.log 2>&1 || {
		tail -20 /tmp/wireup-apt.log; exit 1; }
fi
