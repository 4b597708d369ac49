/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup public API: error codes.
 *
 * Positive values below 256 are plain errno numbers from <errno.h>, so the
 * library can hand system errors through unchanged.  Codes from 256 up are
 * fabric specific.  API calls return them negated (-FI_EAGAIN, ...). */
#ifndef FI_ERRNO_H
#define FI_ERRNO_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_SUCCESS		0

/* errno pass-through, in errno order */
#define FI_EPERM		EPERM
#define FI_ENOENT		ENOENT
#define FI_EINTR		EINTR
#define FI_EIO			EIO
#define FI_E2BIG		E2BIG
#define FI_EBADF		EBADF
#define FI_EAGAIN		EAGAIN
#define FI_ENOMEM		ENOMEM
#define FI_EACCES		EACCES
#define FI_EFAULT		EFAULT
#define FI_EBUSY		EBUSY
#define FI_ENODEV		ENODEV
#define FI_EINVAL		EINVAL
#define FI_EMFILE		EMFILE
#define FI_ENOSPC		ENOSPC
#define FI_ENOSYS		ENOSYS
#define FI_EWOULDBLOCK		EWOULDBLOCK
#define FI_ENOMSG		ENOMSG
#define FI_ENODATA		ENODATA
#define FI_EOVERFLOW		EOVERFLOW
#define FI_EMSGSIZE		EMSGSIZE
#define FI_ENOPROTOOPT		ENOPROTOOPT
#define FI_EOPNOTSUPP		EOPNOTSUPP
#define FI_EADDRINUSE		EADDRINUSE
#define FI_EADDRNOTAVAIL	EADDRNOTAVAIL
#define FI_ENETDOWN		ENETDOWN
#define FI_ENETUNREACH		ENETUNREACH
#define FI_ECONNABORTED		ECONNABORTED
#define FI_ECONNRESET		ECONNRESET
#define FI_ENOBUFS		ENOBUFS
#define FI_EISCONN		EISCONN
#define FI_ENOTCONN		ENOTCONN
#define FI_ESHUTDOWN		ESHUTDOWN
#define FI_ETIMEDOUT		ETIMEDOUT
#define FI_ECONNREFUSED		ECONNREFUSED
#define FI_EHOSTDOWN		EHOSTDOWN
#define FI_EHOSTUNREACH		EHOSTUNREACH
#define FI_EALREADY		EALREADY
#define FI_EINPROGRESS		EINPROGRESS
#define FI_EREMOTEIO		EREMOTEIO
#define FI_ECANCELED		ECANCELED
#define FI_EKEYREJECTED		EKEYREJECTED

/* Fabric-specific codes start here so they never clash with errno. */
#define FI_ERRNO_OFFSET		256

enum {
	FI_EOTHER = FI_ERRNO_OFFSET,	/* anything not covered below */
	FI_ETOOSMALL,			/* caller's buffer too short */
	FI_EOPBADSTATE,			/* object not in a usable state */
	FI_EAVAIL,			/* an error entry is waiting: read it */
	FI_EBADFLAGS,			/* unsupported flag bits */
	FI_ENOEQ,			/* event queue missing */
	FI_EDOMAIN,			/* wrong or unusable domain */
	FI_ENOCQ,			/* completion queue missing */
	FI_ECRC,			/* checksum mismatch */
	FI_ETRUNC,			/* data truncated */
	FI_ENOKEY,			/* key not available */
	FI_ENOAV,			/* address vector missing */
	FI_EOVERRUN,			/* queue overran */
	FI_ENORX,			/* peer had no receive posted */
	/* 2.x */
	FI_ENOMR,			/* memory registration failed */
	FI_EFIREWALLADDR,		/* peer is behind a firewall */
	FI_ERRNO_MAX
};

/* Text for a (positive or negative) FI_E* / errno value. */
const char *fi_strerror(int errnum);

#ifdef __cplusplus
}
#endif

#endif /* FI_ERRNO_H */
