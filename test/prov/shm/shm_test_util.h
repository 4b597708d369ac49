/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the shm transport tests (test_shm_region*.cpp): unique
 * region names, a forked child that reports through a pipe, and direct
 * access to a region's bytes for the tests that corrupt them. */
#ifndef WU_TEST_PROV_SHM_TEST_UTIL_H
#define WU_TEST_PROV_SHM_TEST_UTIL_H

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "prov/shm/region_impl.h"

namespace wu::test {

/* Unique per process and call: the ASan and TSan builds may run at once. */
inline std::string shm_name(const char *what)
{
	static int n = 0;
	char b[64];
	snprintf(b, sizeof b, "wu-t-%s-%d-%d", what, int(getpid()), n++);
	return b;
}

inline bool shm_exists(const std::string &name)
{
	struct stat sb{};
	return stat(("/dev/shm/" + name).c_str(), &sb) == 0;
}

/* The header of name's object, mapped for writing (tests only). */
struct raw_region {
	int fd = -1;
	void *m = MAP_FAILED;
	size_t size = 0;
	explicit raw_region(const std::string &name)
	{
		fd = shm_open(name.c_str(), O_RDWR, 0);
		struct stat sb{};
		if (fd >= 0 && fstat(fd, &sb) == 0) {
			size = size_t(sb.st_size);
			m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		}
	}
	~raw_region()
	{
		if (m != MAP_FAILED)
			munmap(m, size);
		if (fd >= 0)
			close(fd);
	}
	bool ok() const { return m != MAP_FAILED; }
	shm_tp::region_hdr &hdr() { return *static_cast<shm_tp::region_hdr *>(m); }
	unsigned char *bytes() { return static_cast<unsigned char *>(m); }
};

/* Waits for a child and returns its exit status (or 128 + signal). */
inline int reap(pid_t pid)
{
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

} // namespace wu::test

#endif
