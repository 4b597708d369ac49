#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI (Debian's openmpi-bin, unmodified) on Wireup by default, issue
# 15: `mpirun --mca pml cm --mca mtl ofi` with no provider include list and
# no FI_* environment, on 2 and 4 ranks of this node (oversubscribed).  The
# OFI MTL selects the wireup provider by itself (mtl_base_verbose shows
# it), every rank loads our libfabric.so.1 and mpi_check passes: ping-pong,
# all-to-all, wildcard receives, cancel, and one-sided through whatever osc
# Open MPI picks by default (rdma over vader on one node).
# A second run per size adds `--mca btl ofi,self --mca osc rdma`: Debian's
# openmpi-mca-params.conf turns the OFI BTL off, this turns it on, and the
# BTL must accept wireup (its default exclude list drops tcp and shm, so
# wireup is the only provider it may take) and carry mpi_check's one-sided
# operations (with only the self BTL beside it, osc rdma has no other way
# to reach a peer: the BTL's init succeeds even when it found no provider,
# and then MPI_Win_allocate fails).  On one node osc rdma reaches the
# memory of an MPI_Win_allocate window directly (it shares it between the
# node's ranks); an MPI_Win_create window goes through the BTL, and the
# wireup provider's route lines (FI_LOG_LEVEL=info, this run only) show
# the BTL's endpoint reaching its peers through shm.
# btl_ofi_verbose and mtl_ofi_verbose are one variable, registered by the
# component that opens first: the BTL.
# Exit 77 only when mpicc or mpirun is missing.
. "$(dirname "$0")/ompi_env.sh"
trap 'rm -rf "$tmp"' EXIT INT TERM

for np in 2 4; do
	run_mpi mtl$np $np --mca pml cm --mca mtl ofi --mca mtl_base_verbose 100 --mca mtl_ofi_verbose 100
	check_run mtl$np $np
	expect_n "the OFI MTL was selected on every rank" $np "select: component ofi selected" "$log"
	expect_n "the OFI MTL had no include list" $np 'mtl:ofi:provider_include = "(|\(null\))"$' "$log"
	expect_n "the OFI MTL took the wireup provider on every rank" $np "mtl:ofi:prov: wireup$" "$log"
	end_run mtl$np

	run_mpi btl$np $np --mca pml cm --mca mtl ofi --mca btl ofi,self --mca osc rdma \
		--mca btl_base_verbose 100 --mca btl_ofi_verbose 100 --mca osc_base_verbose 100 \
		-x FI_LOG_LEVEL=info
	check_run btl$np $np
	expect_n "the OFI MTL took the wireup provider on every rank" $np "mtl:ofi:prov: wireup$" "$log"
	expect_n "the OFI BTL started on every rank" $np "select: init of component ofi returned success" "$log"
	expect_n "the OFI BTL had no include list" $np 'btl:ofi:provider_include = "(|\(null\))"$' "$log"
	expect_n "the OFI BTL excluded tcp and shm (its default)" $np \
		'btl:ofi:provider_exclude = "shm,sockets,tcp,udp,rstream,usnic"' "$log"
	expect_n "osc rdma freed every window it made (7 per rank)" $((7 * np)) \
		"rdma component destroying window" "$log"
	# Each rank's MTL and BTL endpoints both reach every other rank, all
	# on this node: shm.
	routes=$(grep -Ec "<info> fi_addr [0-9]+ \(fi_wx://.* goes through shm$" "$log")
	if [ "$routes" -ge $((2 * np * (np - 1))) ]; then
		echo "  ok: wireup routed every peer of the MTL's and the BTL's endpoints through shm ($routes)"
	else
		echo "  FAIL: $routes shm routes, expected at least $((2 * np * (np - 1)))"
		failed=1
	fi
	expect_n "no route through tcp on one node" 0 "<info> fi_addr [0-9]+ .* goes through tcp$" "$log"
	end_run btl$np
done
exit $status
