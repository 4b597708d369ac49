/* SPDX-License-Identifier: BSD-3-Clause */
/* shm addresses as text (shm_addr.h): what a name may hold and where an
 * address ends.  Kept free of the key and the log so that fuzz targets link
 * it alone; making names is shm_name.cpp. */
#include "prov/shm/shm_addr.h"

#include <cstring>

#include <rdma/fi_errno.h>

namespace wu::shm {
namespace {

bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

} // namespace

bool valid_name(const char *s, size_t n) noexcept
{
	if (!s || n == 0 || n > name_max || s[0] == '.')
		return false;
	for (size_t k = 0; k < n; k++)
		if (!name_char(s[k]))
			return false;
	return true;
}

long addr_len(const void *addr, size_t avail) noexcept
{
	if (!addr)
		return -FI_EINVAL;
	auto *s = static_cast<const char *>(addr);
	size_t n = strnlen(s, avail < addr_max ? avail : addr_max);
	if (n == (avail < addr_max ? avail : addr_max) || n <= scheme_len ||
	    strncmp(s, scheme, scheme_len) != 0 || !valid_name(s + scheme_len, n - scheme_len))
		return -FI_EINVAL;
	return long(n + 1);
}

} // namespace wu::shm
