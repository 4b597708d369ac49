#!/bin/sh
# The README's main command: installs what is missing, builds Wireup, and runs
# the main job.  Until the PMIx wire-up and the tcp data path land, the main
# job is what already works end to end:
#   1. a PMIx-launched exchange across 4 local processes (mpirun as the PMIx
#      server): each rank publishes an endpoint blob, fences, and reads every
#      peer's (test/pmix/pmix_probe);
#   2. Debian's own unmodified libfabric tools running on our library through
#      LD_LIBRARY_PATH (fi_info, fi_strerror).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/install-deps.sh
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build
cd build
[ -f Makefile ] || ../configure -q
make -j2 >/dev/null
make -j2 test/pmix/pmix_probe >/dev/null
lib=$PWD/src/.libs
echo "== PMIx exchange across 4 local ranks (mpirun)"
sh "$top/contrib/launch/run-pmix.sh" mpirun 4 "$PWD/test/pmix/pmix_probe" 4
echo "== Debian's fi_info --version on Wireup"
LD_LIBRARY_PATH=$lib fi_info --version
echo "== Debian's fi_info -l on Wireup"
LD_LIBRARY_PATH=$lib fi_info -l
echo "== Debian's fi_info, RDM + tagged, on Wireup"
LD_LIBRARY_PATH=$lib fi_info -t FI_EP_RDM -c FI_TAGGED
echo "== Debian's fi_strerror 61 on Wireup"
LD_LIBRARY_PATH=$lib fi_strerror 61
