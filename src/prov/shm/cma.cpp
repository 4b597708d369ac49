/* Cross-memory attach (region.h): process_vm_readv/_writev over any number
 * of iovecs, in calls of at most IOV_MAX entries a side, resumed after a
 * short copy (the kernel stops at a page it cannot fault in, or after a
 * signal). */
#include "prov/shm/region_impl.h"

#include <sys/uio.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include <rdma/fi_errno.h>

namespace wu::shm_tp {

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

ssize_t cma_copy(bool write, pid_t peer, const iovec *local, size_t lcnt, const iovec *remote,
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

} // namespace

ssize_t cma_read(pid_t peer, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	return cma_copy(false, peer, local, lcnt, remote, rcnt);
}

ssize_t cma_write(pid_t peer, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept
{
	return cma_copy(true, peer, local, lcnt, remote, rcnt);
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
