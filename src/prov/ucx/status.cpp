/* SPDX-License-Identifier: BSD-3-Clause */
/* The one place a UCX status becomes a fabric errno. */
#include "prov/ucx/ucx_ep.h"

namespace wu::ucx {

int fi_err(ucs_status_t s, const char *where) noexcept
{
	if (s == UCS_OK)
		return 0;
	int e;
	switch (s) {
	case UCS_INPROGRESS: e = FI_EINPROGRESS; break;
	case UCS_ERR_NO_MESSAGE: e = FI_ENOMSG; break;
	case UCS_ERR_NO_RESOURCE:
	case UCS_ERR_BUSY: e = FI_EAGAIN; break;
	case UCS_ERR_IO_ERROR: e = FI_EIO; break;
	case UCS_ERR_NO_MEMORY: e = FI_ENOMEM; break;
	case UCS_ERR_INVALID_PARAM:
	case UCS_ERR_INVALID_ADDR: e = FI_EINVAL; break;
	case UCS_ERR_NOT_IMPLEMENTED:
	case UCS_ERR_UNSUPPORTED: e = FI_EOPNOTSUPP; break;
	case UCS_ERR_MESSAGE_TRUNCATED: e = FI_ETRUNC; break;
	case UCS_ERR_NO_PROGRESS:
	case UCS_ERR_TIMED_OUT: e = FI_ETIMEDOUT; break;
	case UCS_ERR_BUFFER_TOO_SMALL: e = FI_ETOOSMALL; break;
	case UCS_ERR_NO_ELEM: e = FI_ENOENT; break;
	case UCS_ERR_SOME_CONNECTS_FAILED:
	case UCS_ERR_UNREACHABLE: e = FI_EHOSTUNREACH; break;
	case UCS_ERR_NO_DEVICE: e = FI_ENODEV; break;
	case UCS_ERR_OUT_OF_RANGE: e = FI_EINVAL; break;
	case UCS_ERR_EXCEEDS_LIMIT: e = FI_EMSGSIZE; break;
	case UCS_ERR_CANCELED: e = FI_ECANCELED; break;
	case UCS_ERR_REJECTED:
	case UCS_ERR_CONNECTION_RESET: e = FI_ECONNRESET; break;
	case UCS_ERR_NOT_CONNECTED: e = FI_ENOTCONN; break;
	case UCS_ERR_ENDPOINT_TIMEOUT: e = FI_ETIMEDOUT; break;
	case UCS_ERR_ALREADY_EXISTS: e = FI_EALREADY; break;
	case UCS_ERR_SHMEM_SEGMENT: e = FI_EIO; break;
	default: e = FI_EOTHER; break;
	}
	/* A canceled receive and a truncation are normal outcomes the
	 * completion reports; everything else is worth a line. */
	if (s == UCS_ERR_CANCELED || s == UCS_ERR_MESSAGE_TRUNCATED || s == UCS_ERR_NO_RESOURCE ||
	    s == UCS_INPROGRESS)
		WU_DBG(P(), FI_LOG_EP_DATA, "%s: UCX %s (%d) -> %s\n", where, ucs_status_string(s), int(s),
		       fi_strerror(e));
	else
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: UCX %s (%d) -> %s\n", where, ucs_status_string(s), int(s),
			fi_strerror(e));
	return -e;
}

} // namespace wu::ucx
