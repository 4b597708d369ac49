/* SPDX-License-Identifier: BSD-3-Clause */
/* A peer killed with SIGKILL in the middle of a transfer (issue 14,
 * "Faults and cleanup"), for each kind of message the shm provider moves:
 * inline (8 B, in the queue cell), medium (8 KiB, through the sender's
 * bounce buffers) and large (4 MiB, single copy, more than the bounce
 * buffers hold).
 *
 *  - survivor_sends: the dead peer was the receiver (it never posted a
 *    receive nor made progress).  The survivor's send completes within a
 *    bounded wait: an error, or a success only for a kind that can be
 *    delivered without the receiver (never for large); a second send to
 *    the dead peer is refused or completes, bounded too.
 *  - survivor_receives: the dead peer was the sender, killed after its send
 *    started; the survivor posts the receive afterwards.  It completes
 *    within a bounded wait: with the whole, correct payload, or an error.
 *  - directed_recv_from_dead_peer: a FI_DIRECTED_RECV receive from a peer
 *    that dies without sending either errors or stays posted and is then
 *    canceled (FI_ECANCELED); the test prints which (fi_endpoint(3) allows
 *    both).
 * After each, a live peer's message still reaches the survivor: a dead
 * producer does not wedge its queue.
 *  - vandal_peer (issue 32): a live peer of our user ftruncate()s its own
 *    region, which we have attached, to 0 and writes garbage into our
 *    queue's shared tail: our next send to it fails (no SIGBUS), and a
 *    healthy peer's message still reaches us; one that shrinks our own
 *    region does not kill us either.
 *
 * The processes are forked before any fabric object is opened and talk
 * through pipes; every wait is bounded (a failure, never a hang). */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "prov/shm/region_impl.h"

using namespace wu::test::shm;

namespace {

enum kind { k_inline, k_medium, k_large };
const char *const kind_names[] = {"inline", "medium", "large"};
constexpr size_t kind_size[] = {8, 8192, 4 << 20};
constexpr uint64_t data_tag = 7, hello_tag = 9;
constexpr int bound_ms = 30000;   /* bounds every wait of the survivor */
constexpr int pipe_ms = 60000;
constexpr int linger_ms = 300;    /* lets a started transfer get going */

enum role : char {
	r_idle = 'i',   /* posts no receive, makes progress until killed */
	r_send = 's',   /* sends one message of its kind, then progresses until killed */
	r_hello = 'h',  /* sends 8 B (hello_tag) when told, waits for it, closes */
	r_vandal = 'v', /* when told, shrinks its region and writes junk into the parent's tail */
	r_cutter = 'x', /* when told, shrinks the parent's region */
};

bool cut(const std::vector<char> &name)
{
	int fd = open(region_path(name).c_str(), O_RDWR);
	bool ok = fd >= 0 && ftruncate(fd, 0) == 0;
	if (fd >= 0)
		::close(fd);
	return ok;
}

/* The vandal's deed: its own region cut to nothing, the parent's queue
 * tail overwritten.  Whether both worked. */
bool vandalise(const std::vector<char> &mine, const std::vector<char> &parent)
{
	bool shrunk = cut(mine);
	int fd = open(region_path(parent).c_str(), O_RDWR);
	struct stat sb{};
	bool junk = false;
	if (fd >= 0 && fstat(fd, &sb) == 0) {
		void *m = mmap(nullptr, size_t(sb.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			auto *h = static_cast<wu::shm_tp::region_hdr *>(m);
			auto *ctl = reinterpret_cast<wu::shm_tp::region_ctl *>(static_cast<char *>(m) + h->ctl_off);
			ctl->tail.store(0xdeadbeefdeadbeefull);
			junk = true;
			munmap(m, size_t(sb.st_size));
		}
	}
	if (fd >= 0)
		::close(fd);
	return shrunk && junk;
}

struct child {
	pid_t pid = -1;
	int to = -1, from = -1;
	std::vector<char> name;
	std::string region;

	~child() { finish(); }
	void finish()
	{
		kill9();
		if (to >= 0)
			::close(to);
		if (from >= 0)
			::close(from);
		to = from = -1;
	}
	/* SIGKILL, reaped; the region it leaves (its owner is gone) removed so
	 * test runs do not fill /dev/shm. */
	void kill9()
	{
		if (pid <= 0)
			return;
		kill_reap(pid);
		if (!region.empty())
			unlink(region.c_str());
	}
};

/* The child's side: its endpoint, the parent's address, then its role. */
[[noreturn]] void run_child(role ro, kind k, uint64_t caps, int in, int out)
{
	alarm(300); /* never outlive a failed parent */
	env v(caps);
	if (v.error) {
		fprintf(stderr, "child: %s\n", v.what.c_str());
		_exit(10);
	}
	ep e(v);
	if (e.error) {
		fprintf(stderr, "child: %s\n", e.what.c_str());
		_exit(11);
	}
	if (!put_blob(out, e.name))
		_exit(12);
	std::vector<char> parent;
	if (!get_blob(in, parent, pipe_ms))
		_exit(13);
	fi_addr_t to = v.insert(parent);
	if (to == FI_ADDR_NOTAVAIL)
		_exit(14);
	fi_context2 ctx;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	if (ro == r_vandal || ro == r_cutter) {
		char go = 0;
		if (!get_progress(in, &go, 1, pipe_ms, {e.tx, e.rx}))
			_exit(15);
		char c = (ro == r_vandal ? vandalise(e.name, parent) : cut(parent)) ? 'V' : 'X';
		put(out, &c, 1);
		for (;;) /* alive, and touching nothing of ours any more */
			pause();
	}
	if (ro == r_idle) {
		char c = 'R';
		put(out, &c, 1);
		for (;;) { /* a live peer that never receives what we send it */
			fi_cq_read(e.tx, nullptr, 0);
			fi_cq_read(e.rx, nullptr, 0);
			usleep(100);
		}
	}
	if (ro == r_send) {
		std::vector<unsigned char> buf(kind_size[k]);
		fill(buf, data_tag + k);
		ssize_t s;
		auto deadline = clock::now() + std::chrono::milliseconds(pipe_ms);
		while ((s = fi_tsend(e.e, buf.data(), buf.size(), nullptr, to, data_tag, &ctx)) == -FI_EAGAIN &&
		       clock::now() < deadline)
			fi_cq_read(e.tx, nullptr, 0);
		/* Give the transfer time to start; whether it finishes
		 * depends on the kind (a large one waits for the receiver). */
		int done = s ? -2 : wait_cq(e.tx, &ce, &err, clock::now() + std::chrono::milliseconds(linger_ms));
		char c = s ? 'F' : done == 1 ? 'C' : done == -1 ? 'E' : 'P';
		put(out, &c, 1);
		for (;;) { /* keep the transfer moving until the kill */
			fi_cq_read(e.tx, nullptr, 0);
			fi_cq_read(e.rx, nullptr, 0);
			usleep(100);
		}
	}
	/* r_hello */
	char go = 0;
	if (!get_progress(in, &go, 1, pipe_ms * 3, {e.tx, e.rx}))
		_exit(15);
	uint64_t word = 0x68656c6c6f;
	ssize_t s;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	while ((s = fi_tsend(e.e, &word, sizeof word, nullptr, to, hello_tag, &ctx)) == -FI_EAGAIN &&
	       clock::now() < deadline)
		fi_cq_read(e.tx, nullptr, 0);
	int done = s ? -2 : wait_cq(e.tx, &ce, &err, deadline);
	char c = done == 1 ? 'C' : 'X';
	put(out, &c, 1);
	/* Stay until the parent has it (our region must outlive its read). */
	get_progress(in, &go, 1, pipe_ms, {e.tx, e.rx});
	e.close();
	_exit(done == 1 ? 0 : 16);
}

/* Forks a child of role ro; its address is read later (connect). */
void spawn(child &c, role ro, kind k, uint64_t caps)
{
	int down[2], up[2];
	ASSERT_EQ(pipe(down), 0);
	ASSERT_EQ(pipe(up), 0);
	fflush(stdout);
	c.pid = fork();
	ASSERT_GE(c.pid, 0);
	if (c.pid == 0) {
		::close(down[1]);
		::close(up[0]);
		run_child(ro, k, caps, down[0], up[1]);
	}
	::close(down[0]);
	::close(up[1]);
	c.to = down[1];
	c.from = up[0];
}

/* Swaps addresses with c: c's fi_addr_t in our AV. */
fi_addr_t connect(env &v, ep &me, child &c)
{
	if (!get_blob(c.from, c.name, pipe_ms)) {
		ADD_FAILURE() << "the child sent no address (did it fail to open an endpoint?)";
		return FI_ADDR_NOTAVAIL;
	}
	c.region = region_path(c.name);
	EXPECT_TRUE(put_blob(c.to, me.name));
	fi_addr_t a = v.insert(c.name);
	EXPECT_NE(a, FI_ADDR_NOTAVAIL) << "fi_av_insert of " << printable(c.name);
	return a;
}

/* A live peer's 8 B still arrive after the other died. */
void hello_still_arrives(ep &me, child &h)
{
	uint64_t word = 0;
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(me.e, &word, sizeof word, nullptr, FI_ADDR_UNSPEC, hello_tag, 0, &ctx), 0);
	char go = 1;
	ASSERT_TRUE(put(h.to, &go, 1));
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	EXPECT_EQ(r, 1) << "a live peer's message after the death of another: "
			<< (r ? fi_strerror(err.err) : "nothing within the bound");
	EXPECT_EQ(word, 0x68656c6c6fu);
	char c = 0;
	EXPECT_TRUE(get_progress(h.from, &c, 1, pipe_ms, {me.tx, me.rx}));
	EXPECT_EQ(c, 'C') << "the live peer's send did not complete";
	ASSERT_TRUE(put(h.to, &go, 1));
	int st = reap(h.pid, pipe_ms);
	h.pid = -1;
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "live peer status " << st;
}

struct shm_faults : ::testing::TestWithParam<kind> {};

std::string kind_name(const ::testing::TestParamInfo<kind> &i) { return kind_names[i.param]; }

} // namespace

TEST_P(shm_faults, survivor_sends)
{
	kind k = GetParam();
	child victim, hello;
	spawn(victim, r_idle, k, FI_TAGGED);
	spawn(hello, r_hello, k, FI_TAGGED);
	env v(FI_TAGGED);
	ASSERT_EQ(v.error, 0) << v.what;
	ep me(v);
	ASSERT_EQ(me.error, 0) << me.what;
	fi_addr_t a = connect(v, me, victim);
	ASSERT_NE(a, FI_ADDR_NOTAVAIL);
	/* The live peer's address now, so that its region is known (and
	 * removed) however the test ends. */
	ASSERT_NE(connect(v, me, hello), FI_ADDR_NOTAVAIL);
	char c = 0;
	ASSERT_TRUE(get_progress(victim.from, &c, 1, pipe_ms, {me.tx, me.rx}));

	std::vector<unsigned char> buf(kind_size[k]);
	fill(buf, 1);
	fi_context2 ctx;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	ssize_t s;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	while ((s = fi_tsend(me.e, buf.data(), buf.size(), nullptr, a, data_tag, &ctx)) == -FI_EAGAIN &&
	       clock::now() < deadline)
		fi_cq_read(me.tx, nullptr, 0);
	ASSERT_EQ(s, 0) << "fi_tsend to a live peer: " << fi_strerror(int(-s));
	/* In the middle: the receiver has the announcement but never acts. */
	int r = wait_cq(me.tx, &ce, &err, clock::now() + std::chrono::milliseconds(linger_ms));
	victim.kill9();
	if (r == 0)
		r = wait_cq(me.tx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	ASSERT_NE(r, 0) << "no completion of a " << kind_names[k] << " send within " << bound_ms / 1000
			<< " s of its receiver's death";
	printf("%s send to a peer killed mid-transfer: %s\n", kind_names[k],
	       r == 1 ? "completed (delivered into the peer's queue or buffers)" : fi_strerror(err.err));
	if (r == -1) {
		EXPECT_EQ(err.op_context, &ctx);
		EXPECT_NE(err.err, 0);
	}
	if (k == k_large) {
		EXPECT_EQ(r, -1) << "a 4 MiB send to a receiver that never received cannot have succeeded";
	}

	/* Again, to the peer known dead: refused or completed, bounded. */
	s = fi_tsend(me.e, buf.data(), buf.size(), nullptr, a, data_tag, &ctx);
	if (s == 0) {
		r = wait_cq(me.tx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
		EXPECT_NE(r, 0) << "a second send to the dead peer never completed";
		if (k == k_large) {
			EXPECT_EQ(r, -1);
		}
	} else {
		EXPECT_NE(s, -FI_EAGAIN) << "the dead peer's queue looks merely full";
		printf("a second %s send to the dead peer: %s\n", kind_names[k], fi_strerror(int(-s)));
	}
	hello_still_arrives(me, hello);
}

TEST_P(shm_faults, survivor_receives)
{
	kind k = GetParam();
	child victim, hello;
	spawn(victim, r_send, k, FI_TAGGED);
	spawn(hello, r_hello, k, FI_TAGGED);
	env v(FI_TAGGED);
	ASSERT_EQ(v.error, 0) << v.what;
	ep me(v);
	ASSERT_EQ(me.error, 0) << me.what;
	fi_addr_t a = connect(v, me, victim);
	ASSERT_NE(a, FI_ADDR_NOTAVAIL);
	/* The live peer's address now, so that its region is known (and
	 * removed) however the test ends. */
	ASSERT_NE(connect(v, me, hello), FI_ADDR_NOTAVAIL);
	char c = 0;
	ASSERT_TRUE(get_progress(victim.from, &c, 1, pipe_ms, {me.tx, me.rx})) << "the sender never said it sent";
	ASSERT_NE(c, 'F') << "the sender's fi_tsend failed";
	printf("%s sender before the kill: %s\n", kind_names[k],
	       c == 'C' ? "its send completed" : c == 'E' ? "its send failed" : "its send was pending");
	victim.kill9();

	std::vector<unsigned char> buf(kind_size[k], 0);
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(me.e, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, data_tag, 0, &ctx), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
	ASSERT_NE(r, 0) << "no completion of a receive of a " << kind_names[k] << " message within "
			<< bound_ms / 1000 << " s of its sender's death";
	printf("receive of the %s message whose sender was killed: %s\n", kind_names[k],
	       r == 1 ? "delivered whole" : fi_strerror(err.err));
	if (r == 1) {
		EXPECT_EQ(ce.op_context, &ctx);
		EXPECT_EQ(ce.len, kind_size[k]);
		EXPECT_TRUE(check(buf, data_tag + k, kind_size[k])) << "a success completion with wrong content";
	} else {
		EXPECT_EQ(err.op_context, &ctx);
		EXPECT_NE(err.err, 0);
	}
	if (k == k_inline) {
		EXPECT_EQ(r, 1) << "an inline message in our queue is delivered whoever sent it";
	}
	hello_still_arrives(me, hello);
}

INSTANTIATE_TEST_SUITE_P(kinds, shm_faults, ::testing::Values(k_inline, k_medium, k_large), kind_name);

TEST(shm_faults_vandal, shrunk_peer_fails_and_junk_tail_is_survived)
{
	child bad, h;
	ASSERT_NO_FATAL_FAILURE(spawn(bad, r_vandal, k_inline, FI_TAGGED));
	ASSERT_NO_FATAL_FAILURE(spawn(h, r_hello, k_inline, FI_TAGGED));
	env v(FI_TAGGED);
	ep me(v);
	ASSERT_TRUE(v.error == 0 && me.error == 0) << v.what << me.what;
	fi_addr_t a = connect(v, me, bad), ha = connect(v, me, h);
	ASSERT_TRUE(a != FI_ADDR_NOTAVAIL && ha != FI_ADDR_NOTAVAIL);
	/* Attach its region: one inline send (it needs no receive). */
	uint64_t word = 1;
	fi_context2 ctx;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	ssize_t s;
	while ((s = fi_tsend(me.e, &word, sizeof word, nullptr, a, data_tag, &ctx)) == -FI_EAGAIN &&
	       clock::now() < deadline)
		fi_cq_read(me.tx, &ce, 0);
	ASSERT_EQ(s, 0);
	ASSERT_EQ(wait_cq(me.tx, &ce, &err, deadline), 1);
	char go = 1, c = 0;
	ASSERT_TRUE(put(bad.to, &go, 1));
	ASSERT_TRUE(get_progress(bad.from, &c, 1, pipe_ms, {me.tx, me.rx}));
	ASSERT_EQ(c, 'V') << "the vandal could not do its deed";
	/* Its region is gone from under our mapping: an error, not SIGBUS. */
	deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	while ((s = fi_tsend(me.e, &word, sizeof word, nullptr, a, data_tag, &ctx)) == -FI_EAGAIN &&
	       clock::now() < deadline)
		fi_cq_read(me.tx, &ce, 0);
	if (s == 0) {
		int r = wait_cq(me.tx, &ce, &err, deadline);
		EXPECT_EQ(r, -1) << "a send into a shrunk region did not fail";
		if (r == -1) {
			EXPECT_EQ(err.err, FI_EHOSTDOWN) << fi_strerror(err.err);
		}
	} else {
		EXPECT_EQ(s, -FI_EHOSTDOWN) << fi_strerror(int(-s));
	}
	/* Our queue's tail was junk: a healthy peer still gets through. */
	hello_still_arrives(me, h);
}

/* Our own region cut to nothing by a process of our user: we survive it
 * (the endpoint receives nothing more, logged) and close cleanly. */
TEST(shm_faults_vandal, own_region_shrunk_is_survived)
{
	child bad;
	ASSERT_NO_FATAL_FAILURE(spawn(bad, r_cutter, k_inline, FI_TAGGED));
	env v(FI_TAGGED);
	ep me(v);
	ASSERT_TRUE(v.error == 0 && me.error == 0) << v.what << me.what;
	ASSERT_NE(connect(v, me, bad), FI_ADDR_NOTAVAIL);
	char go = 1, c = 0;
	ASSERT_TRUE(put(bad.to, &go, 1));
	ASSERT_TRUE(get_progress(bad.from, &c, 1, pipe_ms, {me.tx, me.rx}));
	ASSERT_EQ(c, 'V') << "the cutter could not shrink our region";
	uint64_t word = 0;
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(me.e, &word, sizeof word, nullptr, FI_ADDR_UNSPEC, 0, ~0ull, &ctx), 0);
	fi_cq_tagged_entry ce;
	for (int i = 0; i < 2000; i++) /* progress: pops, audits, reads bounce flags */
		EXPECT_LE(fi_cq_read(me.rx, &ce, 1), 0);
	EXPECT_EQ(me.close(), 0);
}

TEST(shm_faults_directed, recv_from_dead_peer_errors_or_cancels)
{
	const uint64_t caps = FI_TAGGED | FI_DIRECTED_RECV;
	child victim, hello;
	spawn(victim, r_idle, k_inline, caps);
	spawn(hello, r_hello, k_inline, caps);
	env v(caps);
	ASSERT_EQ(v.error, 0) << v.what;
	ASSERT_TRUE(v.info->caps & FI_DIRECTED_RECV);
	ep me(v);
	ASSERT_EQ(me.error, 0) << me.what;
	fi_addr_t a = connect(v, me, victim);
	ASSERT_NE(a, FI_ADDR_NOTAVAIL);
	/* The live peer's address now, so that its region is known (and
	 * removed) however the test ends. */
	ASSERT_NE(connect(v, me, hello), FI_ADDR_NOTAVAIL);
	char c = 0;
	ASSERT_TRUE(get_progress(victim.from, &c, 1, pipe_ms, {me.tx, me.rx}));

	uint64_t word = 0;
	fi_context2 ctx;
	ASSERT_EQ(fi_trecv(me.e, &word, sizeof word, nullptr, a, data_tag, 0, &ctx), 0);
	victim.kill9();
	/* Long enough for a provider that checks its peers' liveness when a
	 * wait runs long to notice; a receive may also just stay posted. */
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	int r = wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::seconds(5));
	EXPECT_NE(r, 1) << "a receive from a peer that sent nothing completed successfully";
	if (r == -1) {
		printf("FI_DIRECTED_RECV receive from a dead peer: error completion (%s)\n", fi_strerror(err.err));
		EXPECT_EQ(err.op_context, &ctx);
		EXPECT_NE(err.err, 0);
	} else if (r == 0) {
		ASSERT_EQ(fi_cancel(&me.e->fid, &ctx), 0);
		r = wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
		ASSERT_EQ(r, -1) << "fi_cancel of the receive gave no error completion";
		EXPECT_EQ(err.err, FI_ECANCELED);
		EXPECT_EQ(err.op_context, &ctx);
		printf("FI_DIRECTED_RECV receive from a dead peer: stayed posted, canceled (FI_ECANCELED)\n");
	}
	hello_still_arrives(me, hello);
}

int main(int argc, char **argv)
{
	if (int s = skip_without_provider("test_shm_faults"))
		return s;
	signal(SIGPIPE, SIG_IGN);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
