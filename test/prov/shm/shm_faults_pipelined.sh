#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_shm_faults again with single copy turned off (FI_SHM_CMA=0): a large
# message then goes through the sender's bounce buffers slot by slot (the
# fallback of a kernel that refuses process_vm_readv), and a peer killed
# in the middle of that pipeline must still give the survivor a bounded
# completion.  Exit 77 (skip) as test_shm_faults does when the provider
# is missing.
set -u
prog=${top_builddir:-$(cd "$(dirname "$0")/../../.." && pwd)/build}/test/prov/shm/test_shm_faults
if [ ! -x "$prog" ]; then
	echo "FAIL: $prog not built"
	exit 1
fi
FI_SHM_CMA=0 exec "$prog" --gtest_filter='kinds/shm_faults.*/large'
