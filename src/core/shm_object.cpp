/* SPDX-License-Identifier: BSD-3-Clause */
/* Ownership checks for shared memory objects (shm.h). */
#include "core/shm_object.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"

namespace wu::shm_object {

int create_excl(const char *name) noexcept
{
	if (!name)
		return -EINVAL;
	unique_fd fd(shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600));
	if (fd < 0)
		return -errno;
	/* The umask may have taken bits away; openers insist on exactly 0600. */
	if (fchmod(fd, 0600) != 0) {
		int e = errno;
		shm_unlink(name);
		return -e;
	}
	return fd.release();
}

int check_ours(int fd, const char *name, const fi_provider *prov,
		   enum fi_log_subsys subsys, const char *what) noexcept
{
	struct stat sb{};
	if (fstat(fd, &sb) != 0) {
		WU_WARN(prov, subsys, "%s: shared memory object %s: fstat: %s\n", what, name,
			strerror(errno));
		return -FI_EACCES;
	}
	if (!S_ISREG(sb.st_mode)) {
		WU_WARN(prov, subsys, "%s: shared memory object %s is not a regular object; refused\n",
			what, name);
		return -FI_EACCES;
	}
	if (sb.st_uid != geteuid()) {
		WU_WARN(prov, subsys,
			"%s: shared memory object %s belongs to uid %u, not to this user (uid %u); refused\n",
			what, name, unsigned(sb.st_uid), unsigned(geteuid()));
		return -FI_EACCES;
	}
	if ((sb.st_mode & 07777) != 0600) {
		WU_WARN(prov, subsys, "%s: shared memory object %s has mode %04o, not 0600; refused\n",
			what, name, unsigned(sb.st_mode & 07777));
		return -FI_EACCES;
	}
	return 0;
}

int open_ours(const char *name, bool read_only, const fi_provider *prov,
		   enum fi_log_subsys subsys, const char *what) noexcept
{
	if (!name)
		return -FI_EINVAL;
	/* O_NOFOLLOW: /dev/shm is world-writable, a link there is someone else's. */
	unique_fd fd(shm_open(name, (read_only ? O_RDONLY : O_RDWR) | O_NOFOLLOW, 0));
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return -FI_ENOENT;
		WU_WARN(prov, subsys, "%s: shared memory object %s: %s; refused\n", what, name,
			strerror(e));
		return -FI_EACCES;
	}
	if (int r = check_ours(fd, name, prov, subsys, what))
		return r;
	return fd.release();
}

} // namespace wu::shm_object
