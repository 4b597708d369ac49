#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The README's main command: installs what is missing, builds Wireup, and runs
# the main job: a PMIx-launched wire-up + ping-pong across 4 local processes
# (mpirun as the PMIx server): each rank opens an RDM endpoint of the wireup
# provider (shm between these local ranks), Wireup fills its AV with every
# rank through PMIx (fi_addr == rank; nothing fetched for ranks on this
# node), every pair of
# ranks exchanges a tagged message, ranks 0 and 1 ping-pong 8 bytes
# (contrib/wireup_pingpong.c).  Then Debian's own unmodified libfabric tools
# and Open MPI (its OFI MTL) run on our library through LD_LIBRARY_PATH.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/install-deps.sh
mkdir -p build
if [ ! -x configure ]; then
	./autogen.sh >/dev/null 2>build/autogen.err || { cat build/autogen.err >&2; exit 1; }
	# On a fresh checkout automake names each build-aux file it installs:
	# not news.  Anything else it says (warnings) is shown.
	grep -v ": installing '" build/autogen.err >&2 || true
fi
cd build
[ -f Makefile ] || ../configure -q
make -j2 >/dev/null
lib=$PWD/src/.libs
echo "== PMIx wire-up + ping-pong across 4 local ranks (mpirun)"
sh "$top/contrib/launch/run-pmix.sh" mpirun 4 "$PWD/contrib/wireup_pingpong"
echo "== Debian's fi_info --version on Wireup"
LD_LIBRARY_PATH=$lib fi_info --version
echo "== Debian's fi_info -l on Wireup"
LD_LIBRARY_PATH=$lib fi_info -l
echo "== Debian's fi_info, RDM + tagged, on Wireup"
LD_LIBRARY_PATH=$lib fi_info -t FI_EP_RDM -c FI_TAGGED
echo "== Debian's fi_strerror 61 on Wireup"
LD_LIBRARY_PATH=$lib fi_strerror 61
echo "== Debian's Open MPI, OFI MTL, on Wireup's tcp provider (2 ranks)"
top_builddir=$PWD sh "$top/test/prov/tcp/ompi_mtl.sh"
