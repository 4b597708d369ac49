/* SPDX-License-Identifier: BSD-3-Clause */
/* Cross-memory attach (region.h): process_vm_readv/_writev over any number
 * of iovecs, in calls of at most IOV_MAX entries a side, resumed after a
 * short copy (the kernel stops at a page it cannot fault in, or after a
 * signal); each copy only while the peer's pidfd says its process has not
 * exited, so that it never reaches a later process given the same pid. */
#include "prov/shm/region_impl.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"

namespace wu::shm_tp {

struct proc_ref {
	pid_t pid = 0;
	uint64_t start = 0;
	unique_fd fd; /* pidfd */
};

namespace {

/* A position in an iovec array, and the next batch of up to IOV_MAX
 * entries from there (the first one trimmed by what was done of it). */
struct iov_cursor {
	const iovec *v;
	size_t cnt;
	size_t i = 0, off = 0;

	bool done() const noexcept
	{
		return i >= cnt;
	}
	void skip_empty() noexcept
	{
		while (i < cnt && off >= v[i].iov_len) {
			i++;
			off = 0;
		}
	}
	size_t batch(iovec *out, size_t max) const noexcept
	{
		size_t n = 0;
		for (size_t k = i; k < cnt && n < max; k++) {
			size_t o = k == i ? off : 0;
			if (v[k].iov_len <= o)
				continue;
			out[n].iov_base = static_cast<char *>(v[k].iov_base) + o;
			out[n].iov_len = v[k].iov_len - o;
			n++;
		}
		return n;
	}
	void advance(size_t bytes) noexcept
	{
		while (bytes && i < cnt) {
			size_t room = v[i].iov_len - off;
			if (bytes < room) {
				off += bytes;
				return;
			}
			bytes -= room;
			i++;
			off = 0;
		}
		skip_empty();
	}
};

ssize_t copy_pid(bool write, pid_t peer, const iovec *local, size_t lcnt, const iovec *remote,
		 size_t rcnt) noexcept
{
	if (peer <= 0 || (lcnt && !local) || (rcnt && !remote))
		return -FI_EINVAL;
	iov_cursor l{local, lcnt}, r{remote, rcnt};
	l.skip_empty();
	r.skip_empty();
	iovec lb[IOV_MAX], rb[IOV_MAX];
	size_t total = 0;
	while (!l.done() && !r.done()) {
		size_t ln = l.batch(lb, IOV_MAX), rn = r.batch(rb, IOV_MAX);
		ssize_t n = write ? process_vm_writev(peer, lb, ln, rb, rn, 0) : process_vm_readv(peer, lb, ln, rb, rn, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -FI_EFAULT; /* no progress: a bad address on one side */
		total += size_t(n);
		l.advance(size_t(n));
		r.advance(size_t(n));
	}
	return ssize_t(total);
}

/* Has the process of pidfd exited (readable)?  A failing poll says yes:
 * no copy without the proof. */
bool exited(int pidfd) noexcept
{
	pollfd p{pidfd, POLLIN, 0};
	int n;
	while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {
	}
	return n != 0;
}

/* The pid is the bound process's while its pidfd is not readable (a pid
 * is given again only once its process has exited and been reaped).  So:
 * no copy once it has exited, and none reported done unless it is still
 * there after (one poll each side, whatever the number of batches).  What
 * is left: a write whose process exits, is reaped and has its pid given
 * to another process between the first poll and the system call; the
 * second poll still fails the operation. */
ssize_t cma_copy(bool write, const proc_ref &p, const iovec *local, size_t lcnt, const iovec *remote,
		 size_t rcnt) noexcept
{
	if (exited(p.fd))
		return -FI_EHOSTDOWN;
	ssize_t n = copy_pid(write, p.pid, local, lcnt, remote, rcnt);
	if (exited(p.fd))
		return -FI_EHOSTDOWN;
	return n;
}

/* Processes bound so far, by (pid, start): one pidfd per peer process
 * however many of our peers name it.  A handful of entries: a list. */
std::mutex procs_lock;
std::vector<std::weak_ptr<const proc_ref>> procs;

} // namespace

int bind_proc(pid_t pid, uint64_t start, std::shared_ptr<const proc_ref> *out) noexcept
{
	if (pid <= 0 || !start || !out)
		return -FI_EINVAL;
	try {
		std::lock_guard<std::mutex> g(procs_lock);
		for (size_t i = 0; i < procs.size();) {
			auto p = procs[i].lock();
			if (!p) {
				procs[i] = std::move(procs.back());
				procs.pop_back();
				continue;
			}
			if (p->pid == pid && p->start == start) {
				*out = std::move(p);
				return 0;
			}
			i++;
		}
#ifdef SYS_pidfd_open
		unique_fd fd(int(syscall(SYS_pidfd_open, pid, 0)));
#else
		unique_fd fd;
		errno = ENOSYS;
#endif
		if (fd < 0) {
			int e = errno;
			if (e == ESRCH)
				return -FI_EHOSTDOWN;
			WU_WARN_SPARSE(log_prov(), FI_LOG_EP_DATA, "shm: pidfd_open(%d) failed: %s; no single copy with it\n",
				int(pid), strerror(e));
			return -e;
		}
		/* The pidfd names whatever process had the pid when it was
		 * opened: the owner, if the pid still had the owner's start time
		 * after that. */
		if (!owner_alive(pid, start))
			return -FI_EHOSTDOWN;
		auto p = std::make_shared<proc_ref>();
		p->pid = pid;
		p->start = start;
		p->fd = std::move(fd);
		procs.push_back(p);
		*out = std::move(p);
		return 0;
	} catch (...) {
		return -FI_ENOMEM;
	}
}

bool proc_exited(const proc_ref &p) noexcept
{
	return exited(p.fd);
}

ssize_t cma_read(const proc_ref &p, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	return cma_copy(false, p, local, lcnt, remote, rcnt);
}

ssize_t cma_write(const proc_ref &p, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	return cma_copy(true, p, local, lcnt, remote, rcnt);
}

const proc_ref *peer::proc() noexcept
{
	/* Gone or no pidfd stays so; out of descriptors or memory may pass:
	 * bind again next time. */
	if (!proc_ && proc_err_ != -FI_EHOSTDOWN && proc_err_ != -FI_ENOSYS && proc_err_ != -FI_EPERM)
		proc_err_ = bind_proc(pid_, start_, &proc_);
	return proc_.get();
}

ssize_t peer::cma_read(const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	const proc_ref *p = proc();
	return p ? shm_tp::cma_read(*p, local, lcnt, remote, rcnt) : proc_err_;
}

ssize_t peer::cma_write(const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	const proc_ref *p = proc();
	return p ? shm_tp::cma_write(*p, local, lcnt, remote, rcnt) : proc_err_;
}

bool peer::cma_alive() noexcept
{
	const proc_ref *p = proc();
	return p && !proc_exited(*p);
}

ssize_t peer::cma_copy_unchecked(bool write, const iovec *local, size_t lcnt, const iovec *remote,
				 size_t rcnt) noexcept
{
	const proc_ref *p = proc();
	return p ? copy_pid(write, p->pid, local, lcnt, remote, rcnt) : proc_err_;
}

namespace {

bool judge_probe(ssize_t n, int e, const char **why) noexcept
{
	const char *w = nullptr;
	if (n >= 0 || e == EFAULT)
		w = nullptr; /* permitted (EFAULT: allowed, the address was not mapped) */
	else if (e == EPERM || e == EACCES)
		w = "the kernel refuses cross-memory attach to this process (ptrace restrictions: "
		    "kernel.yama.ptrace_scope, another user, or a non-dumpable process)";
	else if (e == ENOSYS)
		w = "process_vm_readv is not available (kernel without CONFIG_CROSS_MEMORY_ATTACH, or seccomp)";
	else if (e == ESRCH)
		w = "the peer process is gone";
	else
		w = "process_vm_readv failed";
	if (why)
		*why = w ? w : "";
	return !w;
}

} // namespace

bool cma_usable(pid_t peer, const char **why) noexcept
{
	if (peer <= 0) {
		if (why)
			*why = "no peer process";
		return false;
	}
	char b;
	iovec l{&b, 1}, r{nullptr, 1};
	ssize_t n = process_vm_readv(peer, &l, 1, &r, 1, 0);
	return judge_probe(n, n < 0 ? errno : 0, why);
}

bool peer::cma_probe(const char **why) const noexcept
{
	char b;
	iovec l{&b, 1}, r{reinterpret_cast<void *>(uintptr_t(owner_base_)), 1};
	ssize_t n = process_vm_readv(pid_, &l, 1, &r, 1, 0);
	if (n < 0 && errno == EFAULT) {
		if (why)
			*why = "the peer's region is not where its header says";
		return false;
	}
	return judge_probe(n, n < 0 ? errno : 0, why);
}

} // namespace wu::shm_tp
