/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared memory objects we create for other processes of the same job
 * (named AVs, and any provider's shared segments): they live in a
 * namespace every local user can write to, so an object found under our
 * name is only used once it is shown to be ours. */
#ifndef WU_CORE_SHM_OBJECT_H
#define WU_CORE_SHM_OBJECT_H

#include <cstddef>

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>

namespace wu::shm_object {

/* Creates name exclusively (O_CREAT | O_EXCL), readable and writable by
 * this user only (0600 whatever the umask).  The descriptor, or -errno
 * (-EEXIST: someone created it first; open it with open_ours). */
int create_excl(const char *name) noexcept;

/* Opens an existing object and checks it with check_ours.  The
 * descriptor, or a negative FI_E*: -FI_ENOENT when there is none (not
 * logged: a probe is normal), -FI_EACCES when it is not ours (logged). */
int open_ours(const char *name, bool read_only, const fi_provider *prov,
		   enum fi_log_subsys subsys, const char *what) noexcept;

/* 0 when fd is a regular object owned by our effective uid with mode
 * exactly 0600; else -FI_EACCES, logged at warn with name and why. */
int check_ours(int fd, const char *name, const fi_provider *prov,
		   enum fi_log_subsys subsys, const char *what) noexcept;

} // namespace wu::shm_object

#endif
