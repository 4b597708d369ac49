/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_strerror: our own text for the FI-specific codes; plain errno values
 * the C library knows go to strerror(), as Debian's library does, so the
 * text follows the process's locale and libc exactly like theirs.  Unknown
 * errno values get a static "Unknown error N" (glibc's wording) instead of
 * strerror()'s per-thread buffer, which the next call would free. */
#include <array>
#include <climits>
#include <cstring>
#include <iterator>
#include <string.h>

#include <rdma/fi_errno.h>

#include "core/export.h"

namespace {

/* Indexed by code - FI_ERRNO_OFFSET; same wording as Debian 1.17 (checked by
 * test/core/strerror_diff.sh), because applications print and match it. */
constexpr const char *fi_texts[] = {
	"Unspecified error",                                 /* FI_EOTHER */
	"Provided buffer is too small",                      /* FI_ETOOSMALL */
	"Operation not permitted in current state",          /* FI_EOPBADSTATE */
	"Error available",                                   /* FI_EAVAIL */
	"Flags not supported",                               /* FI_EBADFLAGS */
	"Missing or unavailable event queue",                /* FI_ENOEQ */
	"Invalid resource domain",                           /* FI_EDOMAIN */
	"Missing or unavailable completion queue",           /* FI_ENOCQ */
	"CRC error",                                         /* FI_ECRC */
	"Truncation error",                                  /* FI_ETRUNC */
	"Required key not available",                        /* FI_ENOKEY */
	"Missing or unavailable address vector",             /* FI_ENOAV */
	"Queue has been overrun",                            /* FI_EOVERRUN */
	"Receiver not ready, no receive buffers available",  /* FI_ENORX */
	/* 2.x codes: Debian 1.17 has no text for these */
	"Memory registration limit exceeded",                /* FI_ENOMR */
	"Host unreachable due to firewall",                  /* FI_EFIREWALLADDR */
};
static_assert(std::size(fi_texts) == FI_ERRNO_MAX - FI_ERRNO_OFFSET,
	      "every FI_E* code needs a text");

constexpr std::size_t unknown_len = sizeof "Unknown error 255";
using unknown_table = std::array<std::array<char, unknown_len>, FI_ERRNO_OFFSET>;

constexpr unknown_table make_unknown() noexcept
{
	unknown_table t{};
	constexpr char prefix[] = "Unknown error ";
	for (int n = 0; n < FI_ERRNO_OFFSET; ++n) {
		auto &s = t[static_cast<std::size_t>(n)];
		std::size_t i = 0;
		for (; prefix[i]; ++i)
			s[i] = prefix[i];
		char digits[4] = {};
		int k = 0;
		for (int v = n; k == 0 || v; v /= 10)
			digits[k++] = static_cast<char>('0' + v % 10);
		while (k)
			s[i++] = digits[--k];
	}
	return t;
}
constexpr unknown_table unknown_texts = make_unknown();

bool libc_knows(int code) noexcept
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	return strerrordesc_np(code) != nullptr;
#else
	(void)code;
	return true;
#endif
}

} // namespace

/* Cannot throw: no guard needed. */
extern "C" WU_EXPORT const char *fi_strerror(int errnum)
{
	/* Sign does not matter.  INT_MIN has no positive counterpart; Debian
	 * hands it to strerror() unchanged, so it reads as unknown. */
	int code = errnum < 0 && errnum != INT_MIN ? -errnum : errnum;
	if (code == INT_MIN)
		return "Unknown error -2147483648";
	if (code < FI_ERRNO_OFFSET)
		return libc_knows(code) ? std::strerror(code) : unknown_texts[static_cast<std::size_t>(code)].data();
	if (code < FI_ERRNO_MAX)
		return fi_texts[code - FI_ERRNO_OFFSET];
	return fi_texts[0];
}
