/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_info allocation, deep copy and release (C ownership: the application
 * frees what we hand out with fi_freeinfo). */
#ifndef WU_CORE_INFO_H
#define WU_CORE_INFO_H

#include <cstddef>
#include <rdma/fabric.h>

namespace wu {

/* sizeof(struct fi_domain_attr) in the 1.17 layout that FABRIC_1.3 binaries use. */
inline constexpr size_t domain_attr_size_v1_3 = 192;

/* All five attribute structs allocated and zeroed; nullptr on ENOMEM. */
fi_info *info_alloc() noexcept;
/* Deep copy of one entry (not the list); domain_attr_in_size says how much
 * of src->domain_attr may be read (older layouts are shorter). */
fi_info *info_dup(const fi_info *src, size_t domain_attr_in_size = sizeof(fi_domain_attr)) noexcept;
/* Deep copy of a whole list. */
fi_info *info_dup_list(const fi_info *src) noexcept;
void info_free(fi_info *info) noexcept;
/* Deep copy of a NIC; nullptr on ENOMEM. */
fid_nic *nic_dup(const fid_nic *src) noexcept;
/* The NIC fid's tostr slot: Debian's NIC block layout (src/core/tostr.cpp). */
int nic_tostr(const struct fid *fid, char *buf, size_t len) noexcept;
/* A NIC with all three attr structs allocated and zeroed. */
fid_nic *nic_alloc() noexcept;

} // namespace wu

#endif
