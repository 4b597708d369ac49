/* fi_strerror: our own text for the FI-specific codes; plain errno values
 * go to the C library, as Debian's library does, so the text follows the
 * process's locale and libc exactly like theirs. */
#include <climits>
#include <cstring>
#include <iterator>

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
};
static_assert(std::size(fi_texts) == FI_ERRNO_MAX - FI_ERRNO_OFFSET,
	      "every FI_E* code needs a text");

} // namespace

/* Cannot throw: no guard needed. */
extern "C" WU_EXPORT const char *fi_strerror(int errnum)
{
	/* Sign does not matter.  INT_MIN has no positive counterpart; Debian
	 * hands it to strerror() unchanged, and so do we. */
	int code = errnum < 0 && errnum != INT_MIN ? -errnum : errnum;
	if (code < FI_ERRNO_OFFSET)
		return std::strerror(code);
	if (code < FI_ERRNO_MAX)
		return fi_texts[code - FI_ERRNO_OFFSET];
	return fi_texts[0];
}
