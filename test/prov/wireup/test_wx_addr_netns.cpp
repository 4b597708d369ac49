/* SPDX-License-Identifier: BSD-3-Clause */
/* wu::wireup::host_id() tells network namespaces apart: a child in a new
 * network namespace (unshare(CLONE_NEWNET), root only) computes another
 * id, a child in ours the same.  SKIP (77) when unshare is not permitted. */
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "prov/wireup/wx_addr.h"

namespace {

/* The host id a child computes (after unshare when new_ns); 0 and *err
 * set when it could not. */
uint64_t child_id(bool new_ns, int *err)
{
	int fd[2];
	if (pipe(fd) != 0)
		return 0;
	pid_t p = fork();
	if (p == 0) {
		close(fd[0]);
		uint64_t id = 0;
		int e = 0;
		if (new_ns && unshare(CLONE_NEWNET) != 0)
			e = errno;
		else
			id = wu::wireup::host_id();
		if (write(fd[1], &id, sizeof id) != sizeof id || write(fd[1], &e, sizeof e) != sizeof e)
			_exit(2);
		_exit(0);
	}
	close(fd[1]);
	uint64_t id = 0;
	*err = EIO;
	if (read(fd[0], &id, sizeof id) != sizeof id || read(fd[0], err, sizeof *err) != sizeof *err)
		id = 0;
	close(fd[0]);
	int st = 0;
	waitpid(p, &st, 0);
	return id;
}

} // namespace

int main()
{
	int err = 0;
	/* Computed in a fresh child: host_id() is cached per process, and a
	 * forked child of a process that computed it keeps that value. */
	uint64_t same = child_id(false, &err);
	uint64_t other = child_id(true, &err);
	if (!other && (err == EPERM || err == EINVAL || err == ENOSYS)) {
		printf("SKIP: test_wx_addr_netns: unshare(CLONE_NEWNET) not permitted (%s); needs root\n",
		       strerror(err));
		return 77;
	}
	int fails = 0;
	if (!same || !other) {
		printf("FAIL: a child could not compute its host id (%s)\n", strerror(err));
		fails++;
	}
	if (same != wu::wireup::host_id()) {
		printf("FAIL: a child in our network namespace got %016llx, we have %016llx\n",
		       (unsigned long long)same, (unsigned long long)wu::wireup::host_id());
		fails++;
	}
	if (other == wu::wireup::host_id()) {
		printf("FAIL: a child in a new network namespace got our host id %016llx\n",
		       (unsigned long long)other);
		fails++;
	}
	if (!fails)
		printf("PASS: host ids: ours %016llx, new network namespace %016llx\n",
		       (unsigned long long)same, (unsigned long long)other);
	return fails ? 1 : 0;
}
