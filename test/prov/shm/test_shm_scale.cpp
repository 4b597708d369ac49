/* SPDX-License-Identifier: BSD-3-Clause */
/* 1,024 shm endpoints on one node (issue 14, "No peer limit"): 8 worker
 * processes of 128 RDM endpoints each.  Every endpoint sends 4 tagged
 * messages to endpoints of 4 other processes and receives 4 from 4 others
 * (8 B inline, 100 B and 4 KiB through bounce buffers, 64 KiB by the large
 * path), every payload checked.  A ninth process with one endpoint then
 * sends 8 B to all 1,024 endpoints and prints its resident memory per
 * attached peer (/proc/self/statm before and after): a printed number, not
 * an assertion.  Afterwards every region file is gone from /dev/shm.
 *
 * The parent (this gtest process) opens no fabric object: it forks the
 * processes, passes the addresses around through pipes and collects each
 * process's counts. */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/stat.h>

#include <cstdlib>
#include <memory>

using namespace wu::test::shm;

namespace {

/* WU_SHM_SCALE_PROCS and WU_SHM_SCALE_EPS change the shape (to debug
 * with fewer processes); make check runs the default. */
int procs = 8;
int eps_per_proc = 128;
int total = procs * eps_per_proc;
constexpr int fan_in = 4; /* messages each endpoint sends and receives */
constexpr size_t sizes[fan_in + 1] = {0, 8, 100, 4096, 65536}; /* by j = 1..fan_in */
constexpr uint64_t fan_tag = 1ull << 40;
constexpr int exchange_ms = 120000; /* bounds a hang; nothing is timed */
constexpr int pipe_ms = 180000;

int global(int p, int i) { return p * eps_per_proc + i; }
/* Endpoint (p, i) sends its j-th message to (p + j, i + j) and receives
 * its j-th from (p - j, i - j). */
int target(int p, int i, int j) { return global((p + j) % procs, (i + j) % eps_per_proc); }
int source(int p, int i, int j) { return global((p - j + procs) % procs, (i - j + eps_per_proc) % eps_per_proc); }
uint64_t tag_of(int src, int j) { return (uint64_t(src) << 4) | uint64_t(j); }
uint64_t seed_of(int src, int j) { return uint64_t(src) * 8 + uint64_t(j); }

/* What each process tells the parent. */
struct result {
	int setup = 0;          /* 0, or the failing call's fi errno */
	char what[96] = {};     /* which call */
	int sends_ok = 0, sends_err = 0;
	int recvs_ok = 0, recvs_err = 0, recvs_bad = 0; /* bad: wrong length or content */
	int eagain_stalls = 0;  /* a send refused with -FI_EAGAIN past the deadline */
	int first_err = 0;      /* first error completion's err */
	int timed_out = 0;
	rss rss_before, rss_after; /* pages */
	int close_failed = 0;
};

struct op {
	fi_context2 ctx; /* first: the provider may use it (FI_CONTEXT) */
	int ep = 0;
	int j = 0;       /* 1..fan_in, or 0 for the prober's message */
	int src = 0;     /* a receive's expected sender */
	bool recv = false;
	std::vector<unsigned char> buf;
};

void set_what(result &r, int err, const std::string &what)
{
	if (r.setup)
		return;
	r.setup = err ? err : -FI_EOTHER;
	snprintf(r.what, sizeof r.what, "%s", what.c_str());
}

/* Reads a batch of completions of cq; counts them into r. */
int drain(fid_cq *cq, result &r)
{
	fi_cq_tagged_entry es[16];
	ssize_t n = fi_cq_read(cq, es, 16);
	int got = 0;
	if (n > 0) {
		for (ssize_t k = 0; k < n; k++) {
			op *o = static_cast<op *>(es[k].op_context);
			if (!o->recv) {
				r.sends_ok++;
			} else {
				bool good;
				if (o->j) {
					good = es[k].len == sizes[o->j] && es[k].tag == tag_of(o->src, o->j) &&
					       check(o->buf, seed_of(o->src, o->j), sizes[o->j]);
				} else {
					uint64_t v = 0;
					memcpy(&v, o->buf.data(), sizeof v);
					good = es[k].len == 8 && v == (fan_tag | uint64_t(o->ep));
				}
				if (good)
					r.recvs_ok++;
				else
					r.recvs_bad++;
			}
			got++;
		}
	} else if (n == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		if (fi_cq_readerr(cq, &err, 0) == 1) {
			op *o = static_cast<op *>(err.op_context);
			if (o && o->recv)
				r.recvs_err++;
			else
				r.sends_err++;
			if (!r.first_err)
				r.first_err = err.err ? err.err : FI_EOTHER;
			got++;
		}
	}
	return got;
}

/* A send to post. */
struct to_post {
	fid_ep *e;
	op *o;
	fi_addr_t to;
	uint64_t tag;
};

/* Posts every send; those refused with -FI_EAGAIN are posted again after
 * a round of progress on all of cqs (a peer may need our progress, and we
 * theirs, before its queue has room), until the deadline. */
void post_all(std::vector<to_post> todo, const std::vector<fid_cq *> &cqs, result &r, clock::time_point deadline)
{
	while (!todo.empty() && !r.setup) {
		std::vector<to_post> again;
		for (auto &t : todo) {
			ssize_t s = fi_tsend(t.e, t.o->buf.data(), t.o->buf.size(), nullptr, t.to, t.tag, &t.o->ctx);
			if (s == -FI_EAGAIN)
				again.push_back(t);
			else if (s)
				set_what(r, int(s), "fi_tsend");
		}
		todo.swap(again);
		if (todo.empty())
			break;
		for (fid_cq *cq : cqs)
			drain(cq, r);
		if (clock::now() > deadline) {
			r.eagain_stalls += int(todo.size());
			return;
		}
	}
}

/* Waits for the parent's one-byte command, driving progress of eps in
 * the meantime (peers may still need us), with a nap when idle. */
bool await_parent(int fd, std::vector<std::unique_ptr<ep>> &eps, result &r)
{
	auto deadline = clock::now() + std::chrono::milliseconds(pipe_ms);
	while (clock::now() < deadline) {
		pollfd pf{fd, POLLIN, 0};
		if (poll(&pf, 1, 1) == 1) {
			char c;
			return ::read(fd, &c, 1) == 1;
		}
		for (auto &x : eps) {
			drain(x->tx, r);
			drain(x->rx, r);
		}
	}
	return false;
}

/* Worker p: eps_per_proc endpoints. */
[[noreturn]] void worker(int p, int in, int out)
{
	alarm(600); /* never outlive a failed parent */
	result r;
	env v(FI_MSG | FI_TAGGED, total + 1);
	std::vector<std::unique_ptr<ep>> eps;
	if (v.error)
		set_what(r, v.error, v.what);
	for (int i = 0; i < eps_per_proc && !r.setup; i++) {
		eps.push_back(std::make_unique<ep>(v));
		if (eps.back()->error)
			set_what(r, eps.back()->error, "endpoint " + std::to_string(i) + ": " + eps.back()->what);
	}
	uint32_t ok = r.setup ? 0 : 1;
	put(out, &ok, sizeof ok);
	if (!ok) {
		put(out, &r, sizeof r);
		_exit(1);
	}
	for (auto &x : eps)
		put_blob(out, x->name);

	/* Everyone's addresses, in global order: fi_addr_t of global g. */
	std::vector<fi_addr_t> addr(total);
	for (int g = 0; g < total; g++) {
		std::vector<char> name;
		if (!get_blob(in, name, pipe_ms))
			_exit(2);
		addr[g] = v.insert(name);
		if (addr[g] == FI_ADDR_NOTAVAIL)
			set_what(r, -FI_EINVAL, "fi_av_insert of address " + std::to_string(g));
	}

	/* Receives first: fan_in tagged ones by exact tag, and the prober's. */
	std::vector<op> ops(size_t(eps_per_proc) * (2 * fan_in + 1));
	size_t next = 0;
	for (int i = 0; i < eps_per_proc && !r.setup; i++) {
		for (int j = 0; j <= fan_in; j++) {
			op &o = ops[next++];
			o.ep = j ? i : global(p, i);
			o.j = j;
			o.recv = true;
			o.src = j ? source(p, i, j) : 0;
			o.buf.assign(j ? sizes[j] : 8, 0);
			uint64_t tag = j ? tag_of(o.src, j) : fan_tag;
			ssize_t s = fi_trecv(eps[i]->e, o.buf.data(), o.buf.size(), nullptr, FI_ADDR_UNSPEC, tag, 0,
					     &o.ctx);
			if (s)
				set_what(r, int(s), "fi_trecv");
		}
	}
	char ready = r.setup ? 0 : 1;
	put(out, &ready, 1);
	char go = 0;
	if (!get(in, &go, 1, pipe_ms) || !go)
		_exit(3);

	r.rss_before = resident_pages();
	auto deadline = clock::now() + std::chrono::milliseconds(exchange_ms);
	std::vector<to_post> todo;
	std::vector<fid_cq *> cqs;
	for (int i = 0; i < eps_per_proc && !r.setup; i++) {
		cqs.push_back(eps[i]->tx);
		cqs.push_back(eps[i]->rx);
		for (int j = 1; j <= fan_in; j++) {
			op &o = ops[next++];
			o.ep = i;
			o.j = j;
			o.buf.resize(sizes[j]);
			int me = global(p, i);
			fill(o.buf, seed_of(me, j));
			todo.push_back({eps[i]->e, &o, addr[target(p, i, j)], tag_of(me, j)});
		}
	}
	post_all(std::move(todo), cqs, r, deadline);
	const int want_sends = eps_per_proc * fan_in, want_recvs = eps_per_proc * (fan_in + 1);
	while (!r.setup && (r.sends_ok + r.sends_err < want_sends ||
			    r.recvs_ok + r.recvs_err + r.recvs_bad < want_recvs)) {
		int got = 0;
		for (auto &x : eps)
			got += drain(x->tx, r) + drain(x->rx, r);
		if (clock::now() > deadline) {
			r.timed_out = 1;
			break;
		}
		if (!got)
			sched_yield();
	}
	r.rss_after = resident_pages();
	put(out, &r, sizeof r);
	/* Close only when everyone is done: peers may still be reading our
	 * bounce buffers or waiting for our acknowledgements. */
	if (!await_parent(in, eps, r))
		_exit(4);
	int closed = 0;
	for (auto &x : eps)
		closed |= x->close();
	put(out, &closed, sizeof closed);
	_exit(0);
}

/* The prober: one endpoint that sends 8 B to each of the total
 * endpoints, its resident memory measured around the attaching. */
[[noreturn]] void prober(int in, int out)
{
	alarm(600);
	result r;
	env v(FI_MSG | FI_TAGGED, total + 1);
	std::vector<std::unique_ptr<ep>> eps;
	if (v.error)
		set_what(r, v.error, v.what);
	else {
		eps.push_back(std::make_unique<ep>(v));
		if (eps[0]->error)
			set_what(r, eps[0]->error, eps[0]->what);
	}
	uint32_t ok = r.setup ? 0 : 1;
	put(out, &ok, sizeof ok);
	if (!ok) {
		put(out, &r, sizeof r);
		_exit(1);
	}
	put_blob(out, eps[0]->name);
	std::vector<fi_addr_t> addr(total);
	for (int g = 0; g < total; g++) {
		std::vector<char> name;
		if (!get_blob(in, name, pipe_ms))
			_exit(2);
		addr[g] = v.insert(name);
		if (addr[g] == FI_ADDR_NOTAVAIL)
			set_what(r, -FI_EINVAL, "fi_av_insert of address " + std::to_string(g));
	}
	char ready = r.setup ? 0 : 1;
	put(out, &ready, 1);
	char go = 0;
	if (!get(in, &go, 1, pipe_ms) || !go)
		_exit(3);

	std::vector<op> ops(total);
	auto deadline = clock::now() + std::chrono::milliseconds(exchange_ms);
	std::vector<fid_cq *> cqs{eps[0]->tx, eps[0]->rx};
	r.rss_before = resident_pages();
	std::vector<to_post> todo;
	for (int g = 0; g < total && !r.setup; g++) {
		op &o = ops[g];
		o.ep = g;
		o.buf.resize(8);
		uint64_t val = fan_tag | uint64_t(g);
		memcpy(o.buf.data(), &val, 8);
		todo.push_back({eps[0]->e, &o, addr[g], fan_tag});
	}
	post_all(std::move(todo), cqs, r, deadline);
	while (!r.setup && r.sends_ok + r.sends_err < total) {
		if (!drain(eps[0]->tx, r))
			sched_yield();
		if (clock::now() > deadline) {
			r.timed_out = 1;
			break;
		}
	}
	r.rss_after = resident_pages();
	put(out, &r, sizeof r);
	if (!await_parent(in, eps, r))
		_exit(4);
	int closed = eps[0]->close();
	put(out, &closed, sizeof closed);
	_exit(0);
}

} // namespace

TEST(shm_scale, endpoints_1024_exchange_across_processes)
{
	const int n = procs + 1; /* the workers, then the prober */
	std::vector<std::vector<char>> names;
	/* Last: removes the regions of processes killed on a failure (after
	 * the check at the end has counted them), so /dev/shm does not fill. */
	struct cleaner {
		std::vector<std::vector<char>> &names;
		~cleaner()
		{
			for (auto &name : names) {
				std::string path = region_path(name);
				if (!path.empty())
					unlink(path.c_str());
			}
		}
	} clean_all{names};
	std::vector<int> to(n), from(n);
	std::vector<pid_t> pid(n);
	for (int p = 0; p < n; p++) {
		int down[2], up[2];
		ASSERT_EQ(pipe(down), 0);
		ASSERT_EQ(pipe(up), 0);
		pid[p] = fork();
		ASSERT_GE(pid[p], 0);
		if (pid[p] == 0) {
			::close(down[1]);
			::close(up[0]);
			for (int q = 0; q < p; q++) {
				::close(to[q]);
				::close(from[q]);
			}
			if (p < procs)
				worker(p, down[0], up[1]);
			prober(down[0], up[1]);
		}
		::close(down[0]);
		::close(up[1]);
		to[p] = down[1];
		from[p] = up[0];
	}
	/* Kills what is left whatever happens below. */
	struct reaper {
		std::vector<pid_t> &pid;
		~reaper()
		{
			for (pid_t x : pid)
				if (x > 0)
					reap(x, 30000);
		}
	} reap_all{pid};

	for (int p = 0; p < n; p++) {
		uint32_t ok = 0;
		ASSERT_TRUE(get(from[p], &ok, sizeof ok, pipe_ms)) << "process " << p << " said nothing";
		if (!ok) {
			result r;
			ASSERT_TRUE(get(from[p], &r, sizeof r, pipe_ms));
			FAIL() << "process " << p << ": " << r.what << " (" << fi_strerror(-r.setup) << ")";
		}
		for (int i = 0; i < (p < procs ? eps_per_proc : 1); i++) {
			std::vector<char> name;
			ASSERT_TRUE(get_blob(from[p], name, pipe_ms)) << "process " << p << ", address " << i;
			names.push_back(name); /* the prober's last */
		}
	}
	ASSERT_EQ(names.size(), size_t(total + 1));
	printf("first address: %s (%zu bytes)\n", printable(names[0]).c_str(), names[0].size());
	for (int p = 0; p < n; p++)
		for (int g = 0; g < total; g++)
			ASSERT_TRUE(put_blob(to[p], names[g]));
	for (int p = 0; p < n; p++) {
		char ready = 0;
		ASSERT_TRUE(get(from[p], &ready, 1, pipe_ms)) << "process " << p << " never got ready";
		EXPECT_EQ(ready, 1) << "process " << p << " failed to set up (its result follows)";
	}
	for (int p = 0; p < n; p++) {
		char go = 1;
		ASSERT_TRUE(put(to[p], &go, 1));
	}
	std::vector<result> res(n);
	for (int p = 0; p < n; p++)
		ASSERT_TRUE(get(from[p], &res[p], sizeof res[p], pipe_ms)) << "process " << p << " reported nothing";
	for (int p = 0; p < n; p++) {
		char close_now = 1;
		ASSERT_TRUE(put(to[p], &close_now, 1));
	}
	for (int p = 0; p < n; p++) {
		int closed = -1;
		EXPECT_TRUE(get(from[p], &closed, sizeof closed, pipe_ms)) << "process " << p << " did not close";
		EXPECT_EQ(closed, 0) << "process " << p << ": fi_close failed";
		int status = reap(pid[p], 30000);
		pid[p] = 0;
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << p << " status " << status;
	}

	for (int p = 0; p < n; p++) {
		const result &r = res[p];
		bool prob = p == procs;
		SCOPED_TRACE(prob ? std::string("prober") : "worker " + std::to_string(p));
		EXPECT_EQ(r.setup, 0) << r.what << ": " << fi_strerror(-r.setup);
		EXPECT_EQ(r.timed_out, 0) << "the exchange did not finish in " << exchange_ms / 1000 << " s";
		EXPECT_EQ(r.eagain_stalls, 0) << "sends refused with -FI_EAGAIN until the deadline";
		EXPECT_EQ(r.sends_ok, prob ? total : eps_per_proc * fan_in);
		EXPECT_EQ(r.sends_err, 0) << "first error: " << fi_strerror(r.first_err);
		EXPECT_EQ(r.recvs_ok, prob ? 0 : eps_per_proc * (fan_in + 1));
		EXPECT_EQ(r.recvs_err, 0) << "first error: " << fi_strerror(r.first_err);
		EXPECT_EQ(r.recvs_bad, 0) << "messages with wrong length, tag or content";
	}
	/* Shared pages count once per process that maps them: a peer's queue
	 * pages the owner already touched come in whole by the kernel's fault
	 * around (64 KiB) at the first push.  The private part is what the
	 * attaching costs beyond the mapping. */
	double kib = double(sysconf(_SC_PAGESIZE)) / 1024.0;
	const result &pr = res[procs];
	long all = pr.rss_after.resident - pr.rss_before.resident;
	long shared = pr.rss_after.shared - pr.rss_before.shared;
	printf("resident memory per attached peer (prober, %d peers): %.1f KiB, of which %.1f KiB private and %.1f KiB "
	       "mapped pages of the peers' regions (%ld -> %ld pages)\n",
	       total, double(all) * kib / total, double(all - shared) * kib / total, double(shared) * kib / total,
	       pr.rss_before.resident, pr.rss_after.resident);
	long grew = 0, grew_shared = 0;
	for (int p = 0; p < procs; p++) {
		grew += res[p].rss_after.resident - res[p].rss_before.resident;
		grew_shared += res[p].rss_after.shared - res[p].rss_before.shared;
	}
	printf("resident growth of a worker during the exchange (%d endpoints, %d peers each way): %.1f KiB, of which "
	       "%.1f KiB shared pages (average of %d)\n",
	       eps_per_proc, fan_in, double(grew) * kib / procs, double(grew_shared) * kib / procs, procs);

	/* Closed endpoints leave no region behind. */
	int left = 0, known = 0;
	for (auto &name : names) {
		std::string path = region_path(name);
		if (path.empty())
			continue;
		known++;
		struct stat st;
		if (stat(path.c_str(), &st) == 0 && left++ < 3)
			ADD_FAILURE() << path << " is still there after its endpoint closed";
	}
	EXPECT_EQ(left, 0);
	if (!known)
		printf("note: addresses are not fi_shm://<name>; the /dev/shm check was not made\n");
}

int main(int argc, char **argv)
{
	if (int s = skip_without_provider("test_shm_scale"))
		return s;
	if (const char *e = getenv("WU_SHM_SCALE_PROCS"))
		procs = atoi(e);
	if (const char *e = getenv("WU_SHM_SCALE_EPS"))
		eps_per_proc = atoi(e);
	if (procs < fan_in + 1 || eps_per_proc < 1) {
		printf("WU_SHM_SCALE_PROCS must be at least %d, WU_SHM_SCALE_EPS at least 1\n", fan_in + 1);
		return 1;
	}
	total = procs * eps_per_proc;
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
