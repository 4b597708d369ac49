#!/bin/sh
# The README's main command: installs what is missing, builds Wireup, and runs
# the main job.  Until the PMIx wire-up lands, the main job is Debian's own
# unmodified libfabric tools running on our library through LD_LIBRARY_PATH.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/install-deps.sh
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build
cd build
[ -f Makefile ] || ../configure -q
make -j2 >/dev/null
lib=$PWD/src/.libs
echo "== Debian's fi_info --version on Wireup"
LD_LIBRARY_PATH=$lib fi_info --version
echo "== Debian's fi_info -l on Wireup"
LD_LIBRARY_PATH=$lib fi_info -l || true
echo "== Debian's fi_info (RDM, tagged) on Wireup"
LD_LIBRARY_PATH=$lib fi_info -t FI_EP_RDM -c FI_TAGGED || true
echo "== Debian's fi_strerror 61 on Wireup"
LD_LIBRARY_PATH=$lib fi_strerror 61
