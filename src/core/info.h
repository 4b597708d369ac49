/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_info allocation, deep copy and release (C ownership: the application
 * frees what we hand out with fi_freeinfo). */
#ifndef WU_CORE_INFO_H
#define WU_CORE_INFO_H

#include <cstddef>
#include <memory>
#include <rdma/fabric.h>

namespace wu {

/* How many bytes of fi_info and of each attribute struct a caller bound to
 * one symbol version owns (man/fabric.7.md "ABI CHANGES": every change is an
 * append).  Older callers' structs are prefixes of ours; we read and write
 * only those prefixes of what they hand us. */
struct info_layout {
	size_t info, tx, rx, ep, domain, fabric;
	friend constexpr bool operator==(const info_layout &, const info_layout &) = default;
};

/* FABRIC_1.9 (libfabric 2.5 and later): our own layout. */
inline constexpr info_layout layout_current{sizeof(fi_info),	     sizeof(fi_tx_attr),
					    sizeof(fi_rx_attr),	     sizeof(fi_ep_attr),
					    sizeof(fi_domain_attr), sizeof(fi_fabric_attr)};
/* FABRIC_1.8 (2.0-2.4): fi_domain_attr ends after max_group_id. */
inline constexpr info_layout layout_1_8{sizeof(fi_info),    sizeof(fi_tx_attr),
					sizeof(fi_rx_attr), sizeof(fi_ep_attr),
					offsetof(fi_domain_attr, max_cntr_value),
					sizeof(fi_fabric_attr)};
/* FABRIC_1.7 (1.20-1.22): ends after max_ep_auth_key. */
inline constexpr info_layout layout_1_7{sizeof(fi_info),    sizeof(fi_tx_attr),
					sizeof(fi_rx_attr), sizeof(fi_ep_attr),
					offsetof(fi_domain_attr, max_group_id),
					sizeof(fi_fabric_attr)};
/* FABRIC_1.3 (1.9-1.19, Debian's 1.17): ends after tclass. */
inline constexpr info_layout layout_1_3{sizeof(fi_info),    sizeof(fi_tx_attr),
					sizeof(fi_rx_attr), sizeof(fi_ep_attr),
					offsetof(fi_domain_attr, max_ep_auth_key),
					sizeof(fi_fabric_attr)};
/* FABRIC_1.2 (1.7-1.8): no tclass in fi_tx_attr or fi_domain_attr. */
inline constexpr info_layout layout_1_2{sizeof(fi_info),    offsetof(fi_tx_attr, tclass),
					sizeof(fi_rx_attr), sizeof(fi_ep_attr),
					offsetof(fi_domain_attr, tclass),
					sizeof(fi_fabric_attr)};
/* FABRIC_1.1 (1.5-1.6): and no fi_info::nic. */
inline constexpr info_layout layout_1_1{offsetof(fi_info, nic), offsetof(fi_tx_attr, tclass),
					sizeof(fi_rx_attr),	 sizeof(fi_ep_attr),
					offsetof(fi_domain_attr, tclass),
					sizeof(fi_fabric_attr)};
/* FABRIC_1.0 (1.0-1.4): fi_domain_attr ends after max_ep_srx_ctx, fi_ep_attr
 * has no auth key, fi_fabric_attr no api_version (its place is padding). */
inline constexpr info_layout layout_1_0{offsetof(fi_info, nic),
					offsetof(fi_tx_attr, tclass),
					sizeof(fi_rx_attr),
					offsetof(fi_ep_attr, auth_key_size),
					offsetof(fi_domain_attr, cntr_cnt),
					offsetof(fi_fabric_attr, api_version)};

/* Whether a caller of layout l owns the member at offset off of size n. */
constexpr bool layout_has(size_t l_size, size_t off, size_t n) noexcept
{
	return off + n <= l_size;
}

/* All five attribute structs allocated and zeroed; nullptr on ENOMEM. */
/* *dst = a malloc'd copy of len bytes of src (nullptr for none); false
 * when out of memory. */
bool dup_mem(void **dst, const void *src, size_t len) noexcept;
fi_info *info_alloc() noexcept;
/* Deep copy of one entry (not the list) into current-size structs whose
 * members past the caller's layout are zero; reads only within l. */
fi_info *info_dup(const fi_info *src, const info_layout &l = layout_current) noexcept;
/* Deep copy of a whole list. */
fi_info *info_dup_list(const fi_info *src) noexcept;
/* Frees a list, reading only the members within l of each struct. */
void info_free(fi_info *info, const info_layout &l) noexcept;
void info_free(fi_info *info) noexcept;
/* Owns a list from info_alloc/info_dup/getinfo (current layout). */
using info_ptr = std::unique_ptr<fi_info, void (*)(fi_info *)>;
/* Drops what a caller of layout l cannot see from results we allocated
 * (nic, auth keys past its structs), so that its fi_freeinfo, which reads
 * only within l, leaks nothing. */
void info_trim(fi_info *list, const info_layout &l) noexcept;
/* Deep copy of a NIC; nullptr on ENOMEM. */
fid_nic *nic_dup(const fid_nic *src) noexcept;
/* The NIC fid's tostr slot: Debian's NIC block layout (src/core/tostr.cpp). */
int nic_tostr(const struct fid *fid, char *buf, size_t len) noexcept;
/* A NIC with all three attr structs allocated and zeroed. */
fid_nic *nic_alloc() noexcept;

} // namespace wu

#endif
