/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm transport alone (src/prov/shm/region.h): regions, the receive
 * queue, bounce slots, cross-memory copy, wake-up, liveness and every
 * refusal, with no fabric objects.  Other processes are forked children;
 * nothing here measures time (waits have generous bounds only so that a
 * bug fails instead of hanging). */
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <rdma/fi_errno.h>

#include "prov/shm/region_impl.h"
#include "shm_test_util.h"

using namespace wu::shm_tp;
using wu::test::raw_region;
using wu::test::reap;
using wu::test::shm_exists;
using wu::test::shm_name;

namespace {

/* Every refusal must log; the per-site rate limit would hide repeats. */
const int no_log_limit = setenv("FI_LOG_INTERVAL", "0", 1);

struct region_ptr {
	region *r = nullptr;
	~region_ptr() { delete r; }
};
struct peer_ptr {
	peer *p = nullptr;
	~peer_ptr() { delete p; }
};

/* cell holds an atomic: not copyable, so built in place. */
struct make_cell {
	cell c{};
	make_cell(uint32_t sender, uint64_t n)
	{
		c.kind = 1;
		c.sender = sender;
		c.tag = n;
		c.len = n * 3 + sender;
		c.arg = ~n;
		c.inline_len = sizeof c.data;
		for (size_t i = 0; i < sizeof c.data; i++)
			c.data[i] = static_cast<unsigned char>(n + i + sender);
	}
	operator const cell &() const { return c; }
};

::testing::AssertionResult cell_ok(const cell &c)
{
	make_cell t(c.sender, c.tag);
	const cell &want = t.c;
	if (c.kind != 1 || c.len != want.len || c.arg != want.arg || c.inline_len != want.inline_len ||
	    memcmp(c.data, want.data, sizeof c.data) != 0)
		return ::testing::AssertionFailure() << "cell from " << c.sender << " #" << c.tag << " is corrupt";
	return ::testing::AssertionSuccess();
}

/* Pops one cell, waiting up to ~10 s (only a bug takes that long). */
bool pop_wait(region *r, cell *c)
{
	for (int i = 0; i < 1000; i++) {
		if (r->pop(c))
			return true;
		r->wait(10);
	}
	return false;
}

TEST(shm_region, create_attach_push_pop)
{
	std::string n = shm_name("basic");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	EXPECT_STREQ(r.r->name(), n.c_str());
	EXPECT_TRUE(shm_exists(n));
	struct stat sb{};
	ASSERT_EQ(stat(("/dev/shm/" + n).c_str(), &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0600u);
	peer_ptr p;
	ASSERT_EQ(peer::attach(n.c_str(), &p.p), 0);
	EXPECT_EQ(p.p->pid(), getpid());
	EXPECT_TRUE(p.p->alive());
	cell c;
	EXPECT_FALSE(r.r->pop(&c));
	for (uint64_t i = 0; i < 5000; i++) { /* several laps of the ring */
		ASSERT_EQ(p.p->push(make_cell(7, i)), 0);
		ASSERT_TRUE(r.r->pop(&c));
		EXPECT_EQ(c.tag, i);
		EXPECT_TRUE(cell_ok(c));
	}
	EXPECT_FALSE(r.r->pop(&c));
	EXPECT_EQ(r.r->skipped(), 0u);
	delete p.p;
	p.p = nullptr;
	delete r.r;
	r.r = nullptr;
	EXPECT_FALSE(shm_exists(n)) << "close must unlink the region";
}

/* A region of 4 cells named after what, and a peer attached to it. */
void small_ring(const char *what, region_ptr &r, peer_ptr &p)
{
	std::string n = shm_name(what);
	layout l;
	l.queue_cells = 4;
	ASSERT_EQ(region::create(n.c_str(), l, &r.r), 0);
	ASSERT_EQ(peer::attach(n.c_str(), &p.p), 0);
}

/* ready() (the popper's look between pops) and pop_body (a pop into the
 * caller's bytes) agree with pop over several laps of a small ring. */
TEST(shm_region, ready_and_pop_body_follow_the_laps)
{
	region_ptr r;
	peer_ptr p;
	ASSERT_NO_FATAL_FAILURE(small_ring("ready", r, p));
	EXPECT_FALSE(r.r->ready());
	for (uint64_t i = 0; i < 40; i += 2) {
		ASSERT_EQ(p.p->push(make_cell(3, i)), 0);
		ASSERT_EQ(p.p->push(make_cell(3, i + 1)), 0);
		ASSERT_TRUE(r.r->ready()) << i;
		cell c;
		ASSERT_TRUE(r.r->pop_body(reinterpret_cast<unsigned char *>(&c) + sizeof c.seq));
		EXPECT_EQ(c.tag, i);
		EXPECT_TRUE(cell_ok(c));
		ASSERT_TRUE(r.r->ready()) << i;
		ASSERT_TRUE(r.r->pop(&c));
		EXPECT_EQ(c.tag, i + 1);
		EXPECT_TRUE(cell_ok(c));
		EXPECT_FALSE(r.r->ready()) << i;
		EXPECT_FALSE(r.r->pop_body(reinterpret_cast<unsigned char *>(&c) + sizeof c.seq));
	}
}

TEST(shm_region, bad_names_and_layouts_refused)
{
	region *r = nullptr;
	EXPECT_EQ(region::create(nullptr, layout{}, &r), -FI_EINVAL);
	EXPECT_EQ(region::create("", layout{}, &r), -FI_EINVAL);
	EXPECT_EQ(region::create("a/b", layout{}, &r), -FI_EINVAL);
	EXPECT_EQ(region::create("..", layout{}, &r), -FI_EINVAL);
	EXPECT_EQ(region::create(std::string(name_max + 1, 'a').c_str(), layout{}, &r), -FI_EINVAL);
	EXPECT_EQ(region::create("ok", layout{}, nullptr), -FI_EINVAL);
	layout l;
	l.queue_cells = 1000; /* not a power of two */
	EXPECT_EQ(region::create(shm_name("lay").c_str(), l, &r), -FI_EINVAL);
	l = layout{};
	l.bounce_size = 100; /* not a multiple of 64 */
	EXPECT_EQ(region::create(shm_name("lay").c_str(), l, &r), -FI_EINVAL);
	l = layout{};
	l.bounce_slots = max_bounce_slots + 1;
	EXPECT_EQ(region::create(shm_name("lay").c_str(), l, &r), -FI_EINVAL);
	EXPECT_EQ(r, nullptr);
	peer *p = nullptr;
	EXPECT_EQ(peer::attach("no/such", &p), -FI_EINVAL);
	EXPECT_EQ(peer::attach(shm_name("none").c_str(), &p), -FI_ENOENT);
	EXPECT_EQ(p, nullptr);
}

TEST(shm_region, live_name_is_not_taken)
{
	std::string n = shm_name("live");
	region_ptr a, b;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &a.r), 0);
	EXPECT_EQ(region::create(n.c_str(), layout{}, &b.r), -FI_EEXIST);
	EXPECT_EQ(b.r, nullptr);
	EXPECT_TRUE(shm_exists(n));
}

TEST(shm_region, queue_full_is_eagain)
{
	region_ptr r;
	peer_ptr p;
	ASSERT_NO_FATAL_FAILURE(small_ring("full", r, p));
	for (uint64_t i = 0; i < 4; i++)
		ASSERT_EQ(p.p->push(make_cell(1, i)), 0);
	EXPECT_EQ(p.p->push(make_cell(1, 4)), -FI_EAGAIN);
	cell c;
	ASSERT_TRUE(r.r->pop(&c));
	EXPECT_EQ(c.tag, 0u);
	EXPECT_EQ(p.p->push(make_cell(1, 4)), 0);
	EXPECT_EQ(p.p->push(make_cell(1, 5)), -FI_EAGAIN);
	for (uint64_t i = 1; i <= 4; i++) {
		ASSERT_TRUE(r.r->pop(&c));
		EXPECT_EQ(c.tag, i);
		EXPECT_TRUE(cell_ok(c));
	}
	EXPECT_FALSE(r.r->pop(&c));
}

/* Issue 32: a process of our user writes garbage into the queue's shared
 * words.  The consumer puts them right (audit in queue.cpp) instead of
 * staying silent for good. */
struct ring_words {
	raw_region raw;
	region_ctl *ctl;
	cell *cells;
	explicit ring_words(const std::string &name) : raw(name)
	{
		ctl = raw.ok() ? reinterpret_cast<region_ctl *>(raw.bytes() + raw.hdr().ctl_off) : nullptr;
		cells = raw.ok() ? reinterpret_cast<cell *>(raw.bytes() + raw.hdr().queue_off) : nullptr;
	}
};

/* Pops until a cell comes (the consumer's audit runs every 256 empty
 * pops and before sleeping). */
bool pop_soon(region *r, cell *c)
{
	for (int i = 0; i < 4096; i++)
		if (r->pop(c))
			return true;
	return pop_wait(r, c);
}

TEST(shm_region, garbage_in_the_tail_is_put_right)
{
	region_ptr r;
	peer_ptr p;
	ASSERT_NO_FATAL_FAILURE(small_ring("tailjunk", r, p));
	ring_words w(r.r->name());
	ASSERT_TRUE(w.raw.ok());
	cell c;
	/* Impossible (far from the head): every push would spin and fail. */
	w.ctl->tail.store(0x0123456789abcdefull);
	EXPECT_FALSE(r.r->pop(&c));
	for (int i = 0; i < 512; i++)
		(void)r.r->pop(&c);
	ASSERT_EQ(p.p->push(make_cell(1, 0)), 0);
	ASSERT_TRUE(pop_soon(r.r, &c));
	EXPECT_EQ(c.tag, 0u);
	/* Possible but wrong: one ahead, a free cell before the pushed one. */
	w.ctl->tail.fetch_add(1);
	ASSERT_EQ(p.p->push(make_cell(1, 1)), 0);
	ASSERT_TRUE(pop_soon(r.r, &c));
	EXPECT_EQ(c.tag, 1u);
	ASSERT_EQ(p.p->push(make_cell(1, 2)), 0);
	ASSERT_TRUE(pop_soon(r.r, &c));
	EXPECT_EQ(c.tag, 2u);
	/* A head cell with a seq no honest producer writes. */
	w.cells[0].seq.store(cellseq::make(77, cellseq::st_pub, 5));
	w.cells[1].seq.store(~0ull);
	w.cells[2].seq.store(~0ull);
	w.cells[3].seq.store(~0ull);
	for (uint64_t i = 3; i < 12; i++) {
		int e = -FI_EAGAIN;
		for (int k = 0; k < 4096 && e == -FI_EAGAIN; k++) {
			e = p.p->push(make_cell(1, i));
			if (e == -FI_EAGAIN && r.r->pop(&c))
				ADD_FAILURE() << "popped " << c.tag << " that nobody pushed";
		}
		ASSERT_EQ(e, 0) << i;
		ASSERT_TRUE(pop_soon(r.r, &c)) << i;
		EXPECT_EQ(c.tag, i);
		EXPECT_TRUE(cell_ok(c));
	}
}

/* Threads: what ThreadSanitizer checks (processes are below). */
TEST(shm_region, many_producer_threads_one_consumer)
{
	std::string n = shm_name("mpsc-t");
	layout l;
	l.queue_cells = 64; /* small: producers meet a full ring often */
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), l, &r.r), 0);
	constexpr int producers = 4;
	constexpr uint64_t per = 20000;
	std::vector<std::thread> ts;
	std::atomic<int> failures{0};
	for (int t = 0; t < producers; t++)
		ts.emplace_back([&, t] {
			peer *p = nullptr;
			if (peer::attach(n.c_str(), &p) != 0) {
				failures++;
				return;
			}
			for (uint64_t i = 0; i < per;) {
				int rc = p->push(make_cell(uint32_t(t), i));
				if (rc == 0)
					i++;
				else if (rc == -FI_EAGAIN)
					std::this_thread::yield();
				else {
					failures++;
					break;
				}
			}
			delete p;
		});
	std::vector<uint64_t> next(producers, 0);
	uint64_t got = 0;
	cell c;
	while (got < producers * per && failures == 0) {
		if (!pop_wait(r.r, &c))
			break;
		ASSERT_LT(c.sender, uint32_t(producers));
		ASSERT_EQ(c.tag, next[c.sender]) << "producer " << c.sender << " out of order";
		ASSERT_TRUE(cell_ok(c));
		next[c.sender]++;
		got++;
	}
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(failures, 0);
	EXPECT_EQ(got, producers * per);
	EXPECT_FALSE(r.r->pop(&c));
}

TEST(shm_region, many_producer_processes_one_consumer)
{
	std::string n = shm_name("mpsc-p");
	layout l;
	l.queue_cells = 128;
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), l, &r.r), 0);
	constexpr int producers = 6;
	constexpr uint64_t per = 20000;
	std::vector<pid_t> kids;
	for (int t = 0; t < producers; t++) {
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			alarm(120);
			peer *p = nullptr;
			if (peer::attach(n.c_str(), &p) != 0)
				_exit(2);
			for (uint64_t i = 0; i < per;) {
				int rc = p->push(make_cell(uint32_t(t), i));
				if (rc == 0)
					i++;
				else if (rc != -FI_EAGAIN)
					_exit(3);
				else
					sched_yield();
			}
			_exit(0);
		}
		kids.push_back(pid);
	}
	std::vector<uint64_t> next(producers, 0);
	uint64_t got = 0;
	cell c;
	while (got < producers * per) {
		if (!pop_wait(r.r, &c))
			break;
		ASSERT_LT(c.sender, uint32_t(producers));
		ASSERT_EQ(c.tag, next[c.sender]) << "producer " << c.sender << " out of order";
		ASSERT_TRUE(cell_ok(c));
		next[c.sender]++;
		got++;
	}
	for (pid_t k : kids)
		EXPECT_EQ(reap(k), 0);
	EXPECT_EQ(got, producers * per);
	EXPECT_FALSE(r.r->pop(&c));
	EXPECT_EQ(r.r->skipped(), 0u);
}

TEST(shm_region, bounce_round_trip_across_processes)
{
	std::string n = shm_name("bounce");
	layout l;
	l.bounce_slots = 4;
	l.bounce_size = 4096;
	region_ptr sender;
	ASSERT_EQ(region::create(n.c_str(), l, &sender.r), 0);
	EXPECT_EQ(sender.r->bounce_size(), 4096u);
	EXPECT_EQ(sender.r->bounce_slots(), 4u);
	std::string rn = shm_name("bounce-rx");
	region_ptr rx; /* the receiver's region, for the sender's cells */
	ASSERT_EQ(region::create(rn.c_str(), layout{}, &rx.r), 0);
	int slots[4];
	for (int &s : slots) {
		s = sender.r->bounce_get();
		ASSERT_GE(s, 0);
		EXPECT_FALSE(sender.r->slot_free(s));
	}
	EXPECT_EQ(sender.r->bounce_get(), -1) << "every slot is taken";
	sender.r->bounce_put(slots[3]); /* taken but not sent */
	EXPECT_TRUE(sender.r->slot_free(slots[3]));
	for (int i = 0; i < 3; i++)
		memset(sender.r->bounce_addr(slots[i]), 'a' + i, 4096);
	EXPECT_EQ(sender.r->bounce_addr(4), nullptr);
	EXPECT_EQ(sender.r->bounce_addr(-1), nullptr);

	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* The receiver: attach the sender, check each slot, release it. */
		alarm(60);
		peer *p = nullptr;
		if (peer::attach(n.c_str(), &p) != 0)
			_exit(2);
		if (p->bounce_addr(4) != nullptr)
			_exit(3);
		for (int i = 0; i < 3; i++) {
			auto *b = static_cast<const unsigned char *>(p->bounce_addr(uint32_t(slots[i])));
			for (int k = 0; k < 4096; k++)
				if (b[k] != 'a' + i)
					_exit(4);
			p->bounce_release(uint32_t(slots[i]));
		}
		p->bounce_release(1000); /* out of range: ignored, logged */
		_exit(0);
	}
	ASSERT_EQ(reap(pid), 0);
	for (int i = 0; i < 4; i++)
		EXPECT_TRUE(sender.r->slot_free(slots[i]));
	for (int i = 0; i < 4; i++)
		EXPECT_GE(sender.r->bounce_get(), 0);
}

/* A child with a buffer at a known address: it waits on a pipe, then
 * reports what its buffer holds. */
TEST(shm_region, cma_read_write)
{
	std::vector<unsigned char> buf(3 << 20);
	for (size_t i = 0; i < buf.size(); i++)
		buf[i] = static_cast<unsigned char>(i * 7 + 1);
	int go[2], back[2];
	ASSERT_EQ(pipe(go), 0);
	ASSERT_EQ(pipe(back), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		char b;
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		/* After the parent's writes: every byte is now i * 5 + 3. */
		for (size_t i = 0; i < buf.size(); i++)
			if (buf[i] != static_cast<unsigned char>(i * 5 + 3))
				_exit(3);
		_exit(0);
	}
	const char *why = nullptr;
	if (!cma_usable(pid, &why)) {
		kill(pid, SIGKILL);
		reap(pid);
		GTEST_SKIP() << "cross-memory attach refused here: " << why;
	}
	EXPECT_FALSE(cma_usable(0, &why));
	/* Bound to its pid and start time; another start time is another process. */
	std::shared_ptr<const proc_ref> pr, other;
	ASSERT_EQ(bind_proc(pid, start_time(pid), &pr), 0);
	EXPECT_EQ(bind_proc(pid, start_time(pid) + 1, &other), -FI_EHOSTDOWN);
	EXPECT_FALSE(other);
	std::shared_ptr<const proc_ref> again;
	ASSERT_EQ(bind_proc(pid, start_time(pid), &again), 0);
	EXPECT_EQ(again.get(), pr.get()) << "one pidfd per process";
	const proc_ref &proc = *pr;
	/* Read it all in one iovec, then in more iovecs than IOV_MAX. */
	std::vector<unsigned char> got(buf.size());
	iovec l{got.data(), got.size()}, r{buf.data(), buf.size()};
	EXPECT_EQ(cma_read(proc, &l, 1, &r, 1), ssize_t(buf.size()));
	EXPECT_EQ(got, buf);
	size_t pieces = 3 * IOV_MAX + 5, piece = buf.size() / pieces;
	std::vector<iovec> rv(pieces);
	for (size_t i = 0; i < pieces; i++)
		rv[i] = iovec{buf.data() + i * piece, piece};
	std::vector<unsigned char> got2(pieces * piece);
	iovec l2{got2.data(), got2.size()};
	EXPECT_EQ(cma_read(proc, &l2, 1, rv.data(), rv.size()), ssize_t(got2.size()));
	EXPECT_EQ(0, memcmp(got2.data(), buf.data(), got2.size()));
	/* Write: many local pieces into one remote range. */
	std::vector<unsigned char> src(buf.size());
	for (size_t i = 0; i < src.size(); i++)
		src[i] = static_cast<unsigned char>(i * 5 + 3);
	size_t lp = 2 * IOV_MAX + 1, lsz = (src.size() + lp - 1) / lp;
	std::vector<iovec> lv;
	for (size_t off = 0; off < src.size(); off += lsz)
		lv.push_back(iovec{src.data() + off, std::min(lsz, src.size() - off)});
	EXPECT_EQ(cma_write(proc, lv.data(), lv.size(), &r, 1), ssize_t(src.size()));
	/* A bad remote address is an error, not a crash. */
	iovec bad{reinterpret_cast<void *>(8), 16};
	EXPECT_EQ(cma_read(proc, &l, 1, &bad, 1), -FI_EFAULT);
	EXPECT_EQ(write(go[1], "x", 1), 1);
	EXPECT_EQ(reap(pid), 0) << "the child's buffer does not hold what cma_write wrote";
	/* Gone (and reaped: its pid may be another process's now): refused
	 * before any copy. */
	std::fill(got.begin(), got.end(), 0);
	EXPECT_EQ(cma_read(proc, &l, 1, &r, 1), -FI_EHOSTDOWN) << "the peer is gone";
	EXPECT_EQ(cma_write(proc, &l, 1, &r, 1), -FI_EHOSTDOWN) << "the peer is gone";
	EXPECT_EQ(std::count(got.begin(), got.end(), 0), ssize_t(got.size()));
	EXPECT_EQ(bind_proc(pid, start_time(pid), &other), -FI_EINVAL) << "no start time: no process";
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
}

TEST(shm_region, cma_probe_of_a_peer)
{
	std::string n = shm_name("probe");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	int go[2];
	ASSERT_EQ(pipe(go), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		peer *p = nullptr;
		if (peer::attach(n.c_str(), &p) != 0)
			_exit(2);
		const char *why = nullptr;
		bool ok = p->cma_probe(&why);
		_exit(ok ? 0 : 5);
	}
	int st = reap(pid);
	close(go[0]);
	close(go[1]);
	if (st == 5)
		GTEST_SKIP() << "cross-memory attach refused here";
	EXPECT_EQ(st, 0);
}

TEST(shm_region, stale_region_is_reclaimed)
{
	std::string n = shm_name("stale");
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		region *r = nullptr;
		char b = region::create(n.c_str(), layout{}, &r) == 0 ? 1 : 0;
		if (write(ready[1], &b, 1) != 1)
			_exit(2);
		pause(); /* until killed */
		_exit(0);
	}
	char b = 0;
	ASSERT_EQ(read(ready[0], &b, 1), 1);
	ASSERT_EQ(b, 1);
	peer_ptr p;
	ASSERT_EQ(peer::attach(n.c_str(), &p.p), 0);
	EXPECT_TRUE(p.p->alive());
	region_ptr mine;
	EXPECT_EQ(region::create(n.c_str(), layout{}, &mine.r), -FI_EEXIST) << "its owner is alive";
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	EXPECT_EQ(reap(pid), 128 + SIGKILL);
	EXPECT_TRUE(shm_exists(n)) << "SIGKILL leaves the region behind";
	EXPECT_FALSE(p.p->alive());
	EXPECT_EQ(p.p->push(make_cell(1, 1)), 0) << "a push does not look at liveness while there is room";
	peer *q = nullptr;
	EXPECT_EQ(peer::attach(n.c_str(), &q), -FI_EHOSTDOWN);
	ASSERT_EQ(region::create(n.c_str(), layout{}, &mine.r), 0) << "the stale region is reclaimed";
	cell c;
	EXPECT_FALSE(mine.r->pop(&c)) << "a reclaimed region starts empty";
	ASSERT_EQ(peer::attach(n.c_str(), &q), 0);
	EXPECT_TRUE(q->alive());
	EXPECT_EQ(q->pid(), getpid());
	delete q;
	close(ready[0]);
	close(ready[1]);
}

TEST(shm_region, full_ring_of_a_dead_owner_is_hostdown)
{
	std::string n = shm_name("deadfull");
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		layout l;
		l.queue_cells = 2;
		region *r = nullptr;
		char b = region::create(n.c_str(), l, &r) == 0 ? 1 : 0;
		if (write(ready[1], &b, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	char b = 0;
	ASSERT_EQ(read(ready[0], &b, 1), 1);
	ASSERT_EQ(b, 1);
	peer_ptr p;
	ASSERT_EQ(peer::attach(n.c_str(), &p.p), 0);
	EXPECT_EQ(p.p->push(make_cell(1, 0)), 0);
	EXPECT_EQ(p.p->push(make_cell(1, 1)), 0);
	EXPECT_EQ(p.p->push(make_cell(1, 2)), -FI_EAGAIN);
	kill(pid, SIGKILL);
	reap(pid);
	EXPECT_EQ(p.p->push(make_cell(1, 2)), -FI_EHOSTDOWN);
	shm_unlink(n.c_str());
	close(ready[0]);
	close(ready[1]);
}

TEST(shm_region, regions_are_unlinked_at_normal_exit_only_by_their_creator)
{
	std::string n = shm_name("exit");
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		region *r = nullptr; /* never closed */
		exit(region::create(n.c_str(), layout{}, &r) == 0 && shm_exists(n) ? 0 : 2);
	}
	ASSERT_EQ(reap(pid), 0);
	EXPECT_FALSE(shm_exists(n)) << "exit() leaves the region behind";

	/* A forked child inherits our region object and our exit list; its
	 * exit and its closing neither unlink ours. */
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		delete r.r;
		exit(0);
	}
	ASSERT_EQ(reap(pid), 0);
	EXPECT_TRUE(shm_exists(n)) << "a forked child unlinked its parent's region";
}

/* Each header field, corrupted alone, is refused with a line naming the
 * region; put back, the region attaches again. */
TEST(shm_region, corrupt_header_refused)
{
	std::string n = shm_name("corrupt");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	raw_region raw(n);
	ASSERT_TRUE(raw.ok());
	region_hdr saved = raw.hdr();
	struct mutation {
		const char *what;
		void (*apply)(region_hdr &);
		int want;
	};
	const mutation ms[] = {
		{"magic", [](region_hdr &h) { h.magic ^= 1; }, -FI_EINVAL},
		{"version", [](region_hdr &h) { h.version = region_version + 1; }, -FI_EINVAL},
		{"hdr_size", [](region_hdr &h) { h.hdr_size += 8; }, -FI_EINVAL},
		{"owner_pid", [](region_hdr &h) { h.owner_pid = 0; }, -FI_EINVAL},
		{"owner_start", [](region_hdr &h) { h.owner_start += 1; }, -FI_EHOSTDOWN},
		{"owner_uid", [](region_hdr &h) { h.owner_uid += 1; }, -FI_EACCES},
		{"total_size", [](region_hdr &h) { h.total_size += 4096; }, -FI_EINVAL},
		{"queue_cells odd", [](region_hdr &h) { h.queue_cells = 1000; }, -FI_EINVAL},
		{"queue_cells big", [](region_hdr &h) { h.queue_cells = 1u << 30; }, -FI_EINVAL},
		{"queue_cells 0", [](region_hdr &h) { h.queue_cells = 0; }, -FI_EINVAL},
		{"queue_cells half", [](region_hdr &h) { h.queue_cells /= 2; }, -FI_EINVAL},
		{"bounce_slots", [](region_hdr &h) { h.bounce_slots += 1; }, -FI_EINVAL},
		{"bounce_slots huge", [](region_hdr &h) { h.bounce_slots = ~0u; }, -FI_EINVAL},
		{"bounce_size", [](region_hdr &h) { h.bounce_size += 64; }, -FI_EINVAL},
		{"bounce_size odd", [](region_hdr &h) { h.bounce_size += 1; }, -FI_EINVAL},
		{"ctl_off", [](region_hdr &h) { h.ctl_off += 64; }, -FI_EINVAL},
		{"queue_off", [](region_hdr &h) { h.queue_off = ~0ull; }, -FI_EINVAL},
		{"flags_off", [](region_hdr &h) { h.flags_off -= 64; }, -FI_EINVAL},
		{"bounce_off", [](region_hdr &h) { h.bounce_off = h.total_size; }, -FI_EINVAL},
		{"name", [](region_hdr &h) { memset(h.name, 'x', sizeof h.name); }, -FI_EINVAL},
		{"wake_name", [](region_hdr &h) { memset(h.wake_name, 'x', sizeof h.wake_name); }, -FI_EINVAL},
		{"wake_name char", [](region_hdr &h) { h.wake_name[0] = '/'; }, -FI_EINVAL},
	};
	for (const mutation &m : ms) {
		SCOPED_TRACE(m.what);
		m.apply(raw.hdr());
		peer *p = nullptr;
		testing::internal::CaptureStderr();
		int rc = peer::attach(n.c_str(), &p);
		std::string log = testing::internal::GetCapturedStderr();
		EXPECT_EQ(rc, m.want);
		EXPECT_EQ(p, nullptr);
		delete p;
		if (m.want != -FI_EHOSTDOWN) {
			EXPECT_NE(log.find(n), std::string::npos) << "no log line names the region: " << log;
		}
		raw.hdr() = saved;
	}
	/* The object's size no longer what the header says. */
	ASSERT_EQ(ftruncate(raw.fd, off_t(raw.size + 4096)), 0);
	peer *p = nullptr;
	EXPECT_EQ(peer::attach(n.c_str(), &p), -FI_EINVAL);
	ASSERT_EQ(ftruncate(raw.fd, off_t(raw.size)), 0);
	ASSERT_EQ(peer::attach(n.c_str(), &p), 0) << "restored, it attaches";
	delete p;
}

TEST(shm_region, other_version_refused_and_reclaimed_when_stale)
{
	std::string n = shm_name("ver");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	{
		raw_region raw(n);
		ASSERT_TRUE(raw.ok());
		raw.hdr().version = 7;
		peer *p = nullptr;
		testing::internal::CaptureStderr();
		EXPECT_EQ(peer::attach(n.c_str(), &p), -FI_EINVAL);
		std::string log = testing::internal::GetCapturedStderr();
		EXPECT_NE(log.find(n), std::string::npos) << log;
		EXPECT_NE(log.find("version"), std::string::npos) << log;
		/* Its owner (us) is alive: the name stays taken. */
		region *again = nullptr;
		EXPECT_EQ(region::create(n.c_str(), layout{}, &again), -FI_EEXIST);
		/* Its owner gone: another version's region is stale too. */
		raw.hdr().owner_start += 1;
		EXPECT_EQ(region::create(n.c_str(), layout{}, &again), 0);
		delete again;
	}
}

TEST(shm_region, wrong_mode_refused)
{
	std::string n = shm_name("mode");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	ASSERT_EQ(chmod(("/dev/shm/" + n).c_str(), 0644), 0);
	peer *p = nullptr;
	testing::internal::CaptureStderr();
	EXPECT_EQ(peer::attach(n.c_str(), &p), -FI_EACCES);
	std::string log = testing::internal::GetCapturedStderr();
	EXPECT_NE(log.find(n), std::string::npos) << log;
	EXPECT_EQ(p, nullptr);
}

/* A producer that reserved a cell and was killed before publishing it:
 * while it lives the consumer waits for it; once it is dead the consumer
 * skips the cell and the cells behind it arrive. */
TEST(shm_region, producer_killed_mid_push_does_not_wedge_the_consumer)
{
	std::string n = shm_name("midpush");
	layout l;
	l.queue_cells = 8;
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), l, &r.r), 0);
	peer_ptr me;
	ASSERT_EQ(peer::attach(n.c_str(), &me.p), 0);
	ASSERT_EQ(me.p->push(make_cell(1, 0)), 0);
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* Exactly what a push does up to the point of death: reserve the
		 * tail's cell and move the tail on. */
		alarm(60);
		raw_region raw(n);
		if (!raw.ok())
			_exit(2);
		const region_hdr &h = raw.hdr();
		auto *ctl = reinterpret_cast<region_ctl *>(raw.bytes() + h.ctl_off);
		auto *cells = reinterpret_cast<cell *>(raw.bytes() + h.queue_off);
		uint64_t pos = ctl->tail.load();
		uint64_t L = pos / h.queue_cells;
		uint64_t want = cellseq::make(L, cellseq::st_free, 0);
		if (!cells[pos % h.queue_cells].seq.compare_exchange_strong(
			    want, cellseq::make(L, cellseq::st_resv, uint64_t(getpid()))))
			_exit(3);
		ctl->tail.store(pos + 1);
		char b = 1;
		if (write(ready[1], &b, 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	char b = 0;
	ASSERT_EQ(read(ready[0], &b, 1), 1);
	ASSERT_EQ(me.p->push(make_cell(1, 1)), 0) << "the next producer is not held up";
	ASSERT_EQ(me.p->push(make_cell(1, 2)), 0);
	cell c;
	ASSERT_TRUE(r.r->pop(&c));
	EXPECT_EQ(c.tag, 0u);
	/* Alive: its cell is waited for, however long (the bound here only
	 * covers several liveness checks). */
	for (int i = 0; i < 5; i++) {
		EXPECT_FALSE(r.r->pop(&c));
		r.r->wait(15);
	}
	EXPECT_EQ(r.r->skipped(), 0u);
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	EXPECT_EQ(reap(pid), 128 + SIGKILL);
	testing::internal::CaptureStderr();
	ASSERT_TRUE(pop_wait(r.r, &c)) << "the consumer is wedged behind a dead producer's cell";
	std::string log = testing::internal::GetCapturedStderr();
	EXPECT_EQ(c.tag, 1u);
	EXPECT_TRUE(cell_ok(c));
	EXPECT_EQ(r.r->skipped(), 1u);
	EXPECT_NE(log.find(n), std::string::npos) << log;
	EXPECT_TRUE(r.r->ready()) << "a skip moves the popper's look on too";
	ASSERT_TRUE(r.r->pop(&c));
	EXPECT_EQ(c.tag, 2u);
	/* The ring keeps working, laps included. */
	for (uint64_t i = 3; i < 40; i++) {
		ASSERT_EQ(me.p->push(make_cell(1, i)), 0);
		ASSERT_TRUE(r.r->pop(&c));
		EXPECT_EQ(c.tag, i);
	}
	close(ready[0]);
	close(ready[1]);
}

TEST(shm_region, wait_wakes_on_push_from_another_process)
{
	std::string n = shm_name("wait");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	cell c;
	r.r->wait(0); /* empty, no time: returns */
	r.r->wait(5);
	EXPECT_FALSE(r.r->pop(&c));
	int go[2];
	ASSERT_EQ(pipe(go), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		peer *p = nullptr;
		if (peer::attach(n.c_str(), &p) != 0)
			_exit(2);
		for (uint64_t i = 0; i < 100; i++) {
			char b;
			/* One push per go-ahead: the parent is asleep (or about
			 * to be) each time. */
			if (read(go[0], &b, 1) != 1)
				_exit(3);
			usleep(2000);
			if (p->push(make_cell(2, i)) != 0)
				_exit(4);
		}
		_exit(0);
	}
	for (uint64_t i = 0; i < 100; i++) {
		ASSERT_EQ(write(go[1], "x", 1), 1);
		/* Long: only the push ends this wait (the bound turns a lost
		 * wake-up into a failure instead of a hang). */
		int naps = 0;
		while (!r.r->pop(&c) && naps++ < 3)
			r.r->wait(20000);
		ASSERT_LT(naps, 3) << "push " << i << " did not wake the owner";
		EXPECT_EQ(c.tag, i);
	}
	EXPECT_EQ(reap(pid), 0);
	close(go[0]);
	close(go[1]);
}

TEST(shm_region, wait_fd_becomes_readable_on_push)
{
	std::string n = shm_name("waitfd");
	region_ptr r;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r.r), 0);
	int fd = r.r->wait_fd();
	ASSERT_GE(fd, 0);
	peer_ptr me;
	ASSERT_EQ(peer::attach(n.c_str(), &me.p), 0);
	ASSERT_EQ(me.p->push(make_cell(3, 0)), 0);
	EXPECT_FALSE(r.r->wait_arm()) << "cells are waiting: do not sleep";
	cell c;
	ASSERT_TRUE(r.r->pop(&c));
	for (uint64_t i = 1; i <= 20; i++) {
		ASSERT_TRUE(r.r->wait_arm());
		pollfd pf{fd, POLLIN, 0};
		EXPECT_EQ(poll(&pf, 1, 0), 0) << "readable before anything was pushed";
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			alarm(60);
			peer *p = nullptr;
			_exit(peer::attach(n.c_str(), &p) == 0 && p->push(make_cell(3, i)) == 0 ? 0 : 2);
		}
		pf.revents = 0;
		EXPECT_EQ(poll(&pf, 1, 30000), 1) << "wait_fd did not become readable";
		EXPECT_TRUE(pf.revents & POLLIN);
		EXPECT_EQ(reap(pid), 0);
		ASSERT_TRUE(r.r->pop(&c));
		EXPECT_EQ(c.tag, i);
	}
	/* Not armed: posters make no system call, the fd stays quiet. */
	ASSERT_TRUE(r.r->wait_arm());
	ASSERT_FALSE(r.r->pop(&c)); /* disarms */
	ASSERT_EQ(me.p->push(make_cell(3, 99)), 0);
	pollfd pf{fd, POLLIN, 0};
	EXPECT_EQ(poll(&pf, 1, 0), 0);
}

} // namespace
