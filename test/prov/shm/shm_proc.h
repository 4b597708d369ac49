/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the shm provider's process-level tests (test_shm_scale,
 * test_shm_faults, test_shm_user, test_shm_split, test_shm_pipe,
 * test_shm_pid_reuse): the provider through the public API
 * only, in processes made with fork and choreographed through pipes.
 *
 * Every wait here is bounded: a test that goes wrong fails after its
 * deadline, it never hangs the run.  Deadlines are generous (the machine
 * running make check may be busy); they bound a hang, they time nothing. */
#ifndef WU_TEST_PROV_SHM_PROC_H
#define WU_TEST_PROV_SHM_PROC_H

#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

namespace wu::test::shm {

using clock = std::chrono::steady_clock;

/* Is a provider named shm in this library at all?  Any fi_getinfo answer
 * of that name counts: a provider that is there but refuses the tests'
 * hints is a failure, not a skip. */
inline bool provider_present()
{
	fi_info *all = nullptr;
	if (fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &all) || !all)
		return false;
	bool found = false;
	for (fi_info *i = all; i; i = i->next)
		if (i->fabric_attr && i->fabric_attr->prov_name && strcmp(i->fabric_attr->prov_name, "shm") == 0)
			found = true;
	fi_freeinfo(all);
	return found;
}

/* main() of every shm test program: SKIP (77) while the provider is
 * missing. */
inline int skip_without_provider(const char *prog)
{
	if (provider_present())
		return 0;
	printf("SKIP: %s: the shm provider is missing (fi_getinfo lists no provider \"shm\")\n", prog);
	return 77;
}

/* Fabric and domain of the shm provider for RDM endpoints with caps, and
 * one FI_AV_TABLE AV that every endpoint of the process binds. */
struct env {
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	int error = 0; /* first failing call's result, 0 when all is open */
	std::string what;

	explicit env(uint64_t caps = FI_MSG | FI_TAGGED, size_t av_count = 0)
	{
		fi_info *hints = fi_allocinfo();
		if (!hints) {
			fail(-FI_ENOMEM, "fi_allocinfo");
			return;
		}
		hints->fabric_attr->prov_name = strdup("shm");
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = caps;
		/* The tests pass fi_context2 contexts and no descriptors. */
		hints->mode = FI_CONTEXT | FI_CONTEXT2;
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
		int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
		fi_freeinfo(hints);
		if (r || !info) {
			fail(r ? r : -FI_ENODATA, "fi_getinfo(shm, FI_EP_RDM)");
			return;
		}
		if ((r = fi_fabric(info->fabric_attr, &fabric, nullptr))) {
			fail(r, "fi_fabric");
			return;
		}
		if ((r = fi_domain(fabric, info, &domain, nullptr))) {
			fail(r, "fi_domain");
			return;
		}
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		aa.count = av_count;
		if ((r = fi_av_open(domain, &aa, &av, nullptr))) {
			fail(r, "fi_av_open");
			return;
		}
	}
	~env()
	{
		if (av)
			fi_close(&av->fid);
		if (domain)
			fi_close(&domain->fid);
		if (fabric)
			fi_close(&fabric->fid);
		fi_freeinfo(info);
	}
	env(const env &) = delete;
	env &operator=(const env &) = delete;

	void fail(int r, const char *call)
	{
		if (error)
			return;
		error = r;
		what = std::string(call) + ": " + fi_strerror(-r);
	}
	/* One address of a peer, inserted alone: its fi_addr_t, or
	 * FI_ADDR_NOTAVAIL. */
	fi_addr_t insert(const std::vector<char> &name)
	{
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		if (fi_av_insert(av, name.data(), 1, &a, 0, nullptr) != 1)
			return FI_ADDR_NOTAVAIL;
		return a;
	}
};

/* An RDM endpoint of env with its own tx and rx CQ (tagged format) and
 * its address. */
struct ep {
	fid_ep *e = nullptr;
	fid_cq *tx = nullptr, *rx = nullptr;
	std::vector<char> name;
	int error = 0;
	std::string what;

	explicit ep(env &v)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ca.wait_obj = FI_WAIT_NONE;
		int r;
		if ((r = fi_cq_open(v.domain, &ca, &tx, nullptr))) {
			fail(r, "fi_cq_open(tx)");
			return;
		}
		if ((r = fi_cq_open(v.domain, &ca, &rx, nullptr))) {
			fail(r, "fi_cq_open(rx)");
			return;
		}
		if ((r = fi_endpoint(v.domain, v.info, &e, nullptr))) {
			fail(r, "fi_endpoint");
			return;
		}
		if ((r = fi_ep_bind(e, &tx->fid, FI_TRANSMIT))) {
			fail(r, "fi_ep_bind(tx)");
			return;
		}
		if ((r = fi_ep_bind(e, &rx->fid, FI_RECV))) {
			fail(r, "fi_ep_bind(rx)");
			return;
		}
		if ((r = fi_ep_bind(e, &v.av->fid, 0))) {
			fail(r, "fi_ep_bind(av)");
			return;
		}
		if ((r = fi_enable(e))) {
			fail(r, "fi_enable");
			return;
		}
		size_t len = 0;
		r = fi_getname(&e->fid, nullptr, &len);
		if (r != -FI_ETOOSMALL || len == 0) {
			fail(r ? r : -FI_EOTHER, "fi_getname(size)");
			return;
		}
		name.resize(len);
		if ((r = fi_getname(&e->fid, name.data(), &len))) {
			fail(r, "fi_getname");
			return;
		}
		name.resize(len);
	}
	~ep() { close(); }
	ep(const ep &) = delete;
	ep &operator=(const ep &) = delete;
	int close()
	{
		int r = 0;
		if (e && fi_close(&e->fid))
			r = -1;
		if (tx && fi_close(&tx->fid))
			r = -1;
		if (rx && fi_close(&rx->fid))
			r = -1;
		e = nullptr;
		tx = rx = nullptr;
		return r;
	}
	void fail(int r, const char *call)
	{
		error = r;
		what = std::string(call) + ": " + fi_strerror(-r);
	}
};

/* The name as text (FI_ADDR_STR names are strings; anything else is
 * shown in hex). */
inline std::string printable(const std::vector<char> &name)
{
	std::string s;
	for (char c : name) {
		if (c == 0)
			break;
		if (c < 32 || c > 126)
			return "(binary name)";
		s += c;
	}
	return s;
}

/* The /dev/shm file behind a "fi_shm://<name>" address, or "" when the
 * address is not of that form. */
inline std::string region_path(const std::vector<char> &name)
{
	std::string s = printable(name);
	const std::string pre = "fi_shm://";
	if (s.compare(0, pre.size(), pre) != 0 || s.size() == pre.size() || s.find('/', pre.size()) != std::string::npos)
		return "";
	return "/dev/shm/" + s.substr(pre.size());
}

/* One completion of cq within the deadline: 1 (success, *e filled), -1
 * (error, *err filled), 0 (deadline passed).  Reading drives progress. */
inline int wait_cq(fid_cq *cq, fi_cq_tagged_entry *e, fi_cq_err_entry *err, clock::time_point deadline)
{
	for (;;) {
		ssize_t r = fi_cq_read(cq, e, 1);
		if (r == 1)
			return 1;
		if (r == -FI_EAVAIL) {
			*err = fi_cq_err_entry{};
			return fi_cq_readerr(cq, err, 0) == 1 ? -1 : 0;
		}
		if (r != -FI_EAGAIN) {
			*err = fi_cq_err_entry{};
			err->err = int(-r);
			return -1;
		}
		if (clock::now() > deadline)
			return 0;
	}
}

/* Pipes: whole writes and reads, the reads bounded. */
inline bool put(int fd, const void *p, size_t n)
{
	const char *c = static_cast<const char *>(p);
	while (n) {
		ssize_t w = ::write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= size_t(w);
	}
	return true;
}

inline bool get(int fd, void *p, size_t n, int timeout_ms)
{
	char *c = static_cast<char *>(p);
	auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
	while (n) {
		int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count());
		if (left <= 0)
			return false;
		pollfd pf{fd, POLLIN, 0};
		int k = poll(&pf, 1, left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		ssize_t r = ::read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		n -= size_t(r);
	}
	return true;
}

/* get() that drives progress of cqs (reads of no entries) while it
 * waits: a peer may need us to make progress before it can answer. */
inline bool get_progress(int fd, void *p, size_t n, int timeout_ms, std::initializer_list<fid_cq *> cqs)
{
	auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		pollfd pf{fd, POLLIN, 0};
		if (poll(&pf, 1, 0) == 1)
			return get(fd, p, n, timeout_ms);
		if (clock::now() > deadline)
			return false;
		for (fid_cq *cq : cqs)
			fi_cq_read(cq, nullptr, 0);
		usleep(50);
	}
}

/* Length-prefixed blobs (addresses) over a pipe. */
inline bool put_blob(int fd, const std::vector<char> &b)
{
	uint32_t n = uint32_t(b.size());
	return put(fd, &n, sizeof n) && put(fd, b.data(), n);
}

inline bool get_blob(int fd, std::vector<char> &b, int timeout_ms)
{
	uint32_t n = 0;
	if (!get(fd, &n, sizeof n, timeout_ms) || n > 4096)
		return false;
	b.resize(n);
	return get(fd, b.data(), n, timeout_ms);
}

/* Resident pages of this process, and of those the shared ones (file and
 * shared-memory pages, /proc/self/statm fields 2 and 3). */
struct rss {
	long resident = -1, shared = -1;
};

inline rss resident_pages()
{
	rss r;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return r;
	long size = 0;
	if (fscanf(f, "%ld %ld %ld", &size, &r.resident, &r.shared) != 3)
		r = rss{};
	fclose(f);
	return r;
}

/* The second user of the other-user tests (root only): created with
 * useradd if missing; false when it cannot be. */
inline const char *const outsider_name = "wireup-outsider";

inline bool make_outsider(uid_t *uid, gid_t *gid)
{
	if (!getpwnam(outsider_name) &&
	    system((std::string("useradd -M -r -s /usr/sbin/nologin ") + outsider_name + " >/dev/null 2>&1").c_str()) !=
		    0)
		return false;
	passwd *pw = getpwnam(outsider_name);
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

/* Reaps pid within timeout_ms, killing it (SIGKILL) when it overstays;
 * its wait status, or -1. */
inline int reap(pid_t pid, int timeout_ms)
{
	auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		if (clock::now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1; /* overstayed: a failure whatever it returned */
		}
		usleep(2000);
	}
}

/* SIGKILL to pid (if any), reaped; pid becomes -1. */
inline void kill_reap(pid_t &pid)
{
	if (pid <= 0)
		return;
	::kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	pid = -1;
}

/* A forked peer process and the pipes to it (to: ours to write, from:
 * ours to read): killed, reaped and its region removed however a test
 * ends. */
struct peer_proc {
	pid_t pid = -1;
	int to = -1, from = -1;
	std::vector<char> name; /* its endpoint's, once known */
	peer_proc() = default;
	peer_proc(const peer_proc &) = delete;
	peer_proc &operator=(const peer_proc &) = delete;
	~peer_proc()
	{
		kill9();
		if (to >= 0)
			::close(to);
		if (from >= 0)
			::close(from);
		if (!name.empty())
			unlink(region_path(name).c_str()); /* left by a killed peer */
	}
	void kill9() { kill_reap(pid); }
};

/* Forks p; the child runs body(in, out), which must not return. */
template <class F>
bool fork_peer(peer_proc &p, F &&body)
{
	int down[2], up[2];
	if (pipe(down))
		return false;
	if (pipe(up)) {
		::close(down[0]);
		::close(down[1]);
		return false;
	}
	fflush(stdout);
	p.pid = fork();
	if (p.pid < 0)
		return false;
	if (p.pid == 0) {
		::close(down[1]);
		::close(up[0]);
		body(down[0], up[1]);
		_exit(99);
	}
	::close(down[0]);
	::close(up[1]);
	p.to = down[1];
	p.from = up[0];
	return true;
}

/* The child's half of the address swap (its name out, the parent's in):
 * the parent's fi_addr, or FI_ADDR_NOTAVAIL. */
inline fi_addr_t meet_parent(env &v, ep &e, int in, int out, int timeout_ms)
{
	std::vector<char> parent;
	if (!put_blob(out, e.name) || !get_blob(in, parent, timeout_ms))
		return FI_ADDR_NOTAVAIL;
	return v.insert(parent);
}

/* The parent's half. */
inline fi_addr_t meet_child(peer_proc &p, env &v, ep &me, int timeout_ms)
{
	if (!get_blob(p.from, p.name, timeout_ms) || !put_blob(p.to, me.name))
		return FI_ADDR_NOTAVAIL;
	return v.insert(p.name);
}

/* The parent's side of a two-process test: the forked child, and our
 * fabric and endpoint, opened after the fork. */
struct duo {
	peer_proc ch;
	std::unique_ptr<env> v;
	std::unique_ptr<ep> me;
	fi_addr_t a = FI_ADDR_NOTAVAIL; /* the child */
	/* Opens ours and swaps addresses: "" or what failed. */
	std::string open(uint64_t caps, int timeout_ms)
	{
		v = std::make_unique<env>(caps);
		if (v->error)
			return v->what;
		me = std::make_unique<ep>(*v);
		if (me->error)
			return me->what;
		a = meet_child(ch, *v, *me, timeout_ms);
		return a == FI_ADDR_NOTAVAIL ? "no address swap with the child" : "";
	}
	/* A byte of the child's, driving our progress meanwhile; 0: none. */
	char report(int timeout_ms)
	{
		char c = 0;
		return get_progress(ch.from, &c, 1, timeout_ms, {me->tx, me->rx}) ? c : 0;
	}
	/* Lets the child go (a byte) and reaps it: its wait status. */
	int release(int timeout_ms)
	{
		char go = 1;
		put(ch.to, &go, 1);
		int st = reap(ch.pid, timeout_ms);
		ch.pid = -1;
		return st;
	}
};

/* The child's end: stays, progressing, until the parent lets it go (its
 * region must outlive the parent's reads), then closes and exits 0. */
[[noreturn]] inline void child_done(ep &e, int in, int timeout_ms)
{
	char go = 0;
	get_progress(in, &go, 1, timeout_ms, {e.tx, e.rx});
	e.close();
	_exit(0);
}

/* A byte pattern that differs per message and per offset. */
inline unsigned char pattern(uint64_t seed, size_t i)
{
	return static_cast<unsigned char>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

inline void fill(std::vector<unsigned char> &b, uint64_t seed)
{
	for (size_t i = 0; i < b.size(); i++)
		b[i] = pattern(seed, i);
}

inline bool check(const std::vector<unsigned char> &b, uint64_t seed, size_t len)
{
	if (len > b.size())
		return false;
	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern(seed, i))
			return false;
	return true;
}

} // namespace wu::test::shm

#endif
