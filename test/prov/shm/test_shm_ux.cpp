/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider robustness (issue 14): an endpoint that posts no receives
 * holds at most FI_SHM_UNEXP_LIMIT of unexpected messages, loses none,
 * and still sees the answers to its own operations while at the limit. */
#include <gtest/gtest.h>

#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "prov/shm/shm_ep.h"
#include "../common/prov_fixture.h"

using namespace wu::test;

namespace {

/* Bytes held for unexpected messages: taken, and set aside. */
size_t ux_bytes(fid_ep *ep)
{
	wu::shm::shm_ep *e = wu::shm::ep_of(ep);
	std::lock_guard g(e->b.mtx); /* auto progress may run */
	return e->ux_bytes + e->park_bytes;
}

/* Drives progress on both endpoints of p for a while, counting the send
 * completions of *count_tx's endpoint. */
void spin(rdm_pair &p, int rounds, int *a_tx = nullptr, int *b_tx = nullptr)
{
	fi_cq_tagged_entry e;
	for (int i = 0; i < rounds; i++) {
		if (fi_cq_read(p.a.tx, &e, 1) == 1 && a_tx)
			++*a_tx;
		if (fi_cq_read(p.b.tx, &e, 1) == 1 && b_tx)
			++*b_tx;
		(void)fi_cq_read(p.a.rx, &e, 0);
		(void)fi_cq_read(p.b.rx, &e, 0);
	}
}

size_t flood_len(int i)
{
	/* Small (inline) and medium (bounce) ones, interleaved. */
	return i % 3 == 0 ? 8 : 1000;
}

void flood(fid_ep *ep, fi_addr_t to, int n, uint64_t tag0)
{
	std::vector<char> msg(1000);
	for (int i = 0; i < n; i++) {
		std::fill(msg.begin(), msg.end(), char(i));
		ASSERT_EQ(fi_tsend(ep, msg.data(), flood_len(i), nullptr, to, tag0 + uint64_t(i), nullptr), 0) << i;
	}
}

/* Receives n messages of flood() in order on who, driving both. */
void take(rdm_pair &p, rdm_ep &who, int n, uint64_t tag0)
{
	std::vector<char> in(1000);
	fi_cq_tagged_entry e;
	for (int i = 0; i < n; i++) {
		std::fill(in.begin(), in.end(), char(-1));
		ASSERT_EQ(fi_trecv(who.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, tag0 + uint64_t(i), 0, nullptr),
			  0);
		ASSERT_EQ(p.wait_rx(who, e), 1) << i;
		EXPECT_EQ(e.tag, tag0 + uint64_t(i));
		ASSERT_EQ(e.len, flood_len(i)) << i;
		for (size_t k = 0; k < e.len; k++)
			ASSERT_EQ(in[k], char(i)) << i << " byte " << k;
	}
}

constexpr size_t limit = 16384;
/* Unexpected messages up to the limit (the check comes before a message
 * is taken: one more may pass it), then cells set aside up to as much
 * again. */
constexpr size_t bound = 2 * (limit + wu::shm::ux_overhead + 1000);

/* A flood of small and medium messages with no receive posted: the
 * receiver holds no more than the limit of them, and once receives are
 * posted every one arrives whole and in order. */
TEST(shm_unexp, a_flood_without_receives_holds_memory_under_the_limit)
{
	setenv("FI_SHM_UNEXP_LIMIT", "16384", 1);
	rdm_pair p("shm", FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	ASSERT_NE(p.a.ep, nullptr);
	const int n = 600; /* about 400 KiB of unexpected messages unbounded */
	flood(p.a.ep, p.a_to_b, n, 0);
	int a_tx = 0;
	spin(p, 3000, &a_tx);
	EXPECT_GT(ux_bytes(p.b.ep), limit / 2); /* it did take messages */
	EXPECT_LE(ux_bytes(p.b.ep), bound);
	EXPECT_LE(wu::shm::ep_of(p.b.ep)->parked_cells.size(), wu::shm::park_max);
	EXPECT_LT(a_tx, n); /* the rest are held back, not lost */
	take(p, p.b, n, 0);
	EXPECT_EQ(ux_bytes(p.b.ep), 0u);
	fi_cq_tagged_entry e;
	while (a_tx < n) {
		ASSERT_EQ(p.wait_tx(p.a, e), 1) << a_tx;
		a_tx++;
	}
}

/* Two endpoints flood each other and post no receives: both reach the
 * limit.  A large send of a, issued before, still completes while a is at
 * the limit (the receiver's answer is behind b's flood in a's queue: a
 * sets b's later messages aside to read it), so an application waiting
 * for it before it posts receives does not hang; then each side gets
 * every message in order. */
TEST(shm_unexp, endpoints_at_the_limit_still_see_the_answers_to_their_sends)
{
	setenv("FI_SHM_UNEXP_LIMIT", "16384", 1);
	rdm_pair p("shm", FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	ASSERT_NE(p.a.ep, nullptr);
	const int n = 300;
	const int m = 40; /* b to a: past the limit, within what a sets aside */
	const size_t big = 100000; /* above the bounce size: LARGE */
	std::vector<char> out(big), in(big, 0);
	for (size_t i = 0; i < big; i++)
		out[i] = char(i * 7 + 1);
	ASSERT_EQ(fi_tsend(p.a.ep, out.data(), big, nullptr, p.a_to_b, 1u << 20, nullptr), 0);
	flood(p.a.ep, p.a_to_b, n, 0);
	flood(p.b.ep, p.b_to_a, m, 0);
	int a_tx = 0, b_tx = 0;
	spin(p, 3000, &a_tx, &b_tx);
	EXPECT_LE(ux_bytes(p.a.ep), bound);
	EXPECT_LE(ux_bytes(p.b.ep), bound);
	EXPECT_GT(ux_bytes(p.a.ep), limit / 2);
	/* b takes the large one and a's flood; a posts nothing yet. */
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_trecv(p.b.ep, in.data(), big, nullptr, FI_ADDR_UNSPEC, 1u << 20, 0, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.len, big);
	EXPECT_EQ(in, out);
	take(p, p.b, n, 0);
	/* Every send of a completes, the large one included, a still at
	 * the limit with b's messages. */
	while (a_tx < n + 1) {
		ASSERT_EQ(wait_one(p.a.tx, e, nullptr, {p.b.tx, p.a.rx, p.b.rx}), 1) << a_tx;
		a_tx++;
	}
	EXPECT_GT(wu::shm::ep_of(p.a.ep)->ux_bytes, limit);
	EXPECT_FALSE(wu::shm::ep_of(p.a.ep)->parked_cells.empty());
	take(p, p.a, m, 0);
	while (b_tx < m) {
		ASSERT_EQ(p.wait_tx(p.b, e), 1) << b_tx;
		b_tx++;
	}
	EXPECT_EQ(ux_bytes(p.a.ep), 0u);
	EXPECT_EQ(ux_bytes(p.b.ep), 0u);
}

/* A flood under automatic progress, no receive posted for a while, then
 * received with fi_cq_sread (nobody else calls into either endpoint). */
void auto_flood(const char *limit, const char *cells)
{
	setenv("FI_SHM_UNEXP_LIMIT", limit, 1);
	setenv("FI_SHM_QUEUE_CELLS", cells, 1);
	prov_env env("shm", FI_EP_RDM, FI_MSG | FI_TAGGED, FI_PROGRESS_AUTO);
	rdm_ep a(env), b(env, nullptr, FI_WAIT_FD);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	unsetenv("FI_SHM_QUEUE_CELLS");
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = a.insert(b);
	const int n = 600;
	flood(a.ep, to_b, n, 0);
	usleep(200000);
	if (strcmp(limit, "0") != 0) {
		EXPECT_LE(ux_bytes(b.ep), bound);
	}
	std::vector<char> in(1000);
	fi_cq_tagged_entry e;
	for (int i = 0; i < n; i++) {
		std::fill(in.begin(), in.end(), char(-1));
		ASSERT_EQ(fi_trecv(b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0, nullptr), 0);
		ASSERT_EQ(fi_cq_sread(b.rx, &e, 1, nullptr, 10000), 1) << i;
		ASSERT_EQ(e.tag, uint64_t(i));
		ASSERT_EQ(e.len, flood_len(i));
		ASSERT_EQ(in[0], char(i));
	}
	for (int i = 0; i < n; i++)
		ASSERT_EQ(wait_one(a.tx, e), 1) << i;
}

/* At the limit the receiver leaves cells in its queue: the sender's
 * progress thread retries its queued sends once receives make room. */
TEST(shm_unexp, auto_progress_resumes_once_receives_are_posted)
{
	auto_flood("16384", "1024");
}

/* The same without a limit, against a small queue: a sender's queued
 * sends are retried by its progress thread even when nothing arrives for
 * it (it used to sleep with them queued). */
TEST(shm_flow, auto_progress_retries_sends_queued_on_a_full_queue)
{
	auto_flood("0", "16");
}

/* 0: no limit, as before. */
TEST(shm_unexp, zero_means_no_limit)
{
	setenv("FI_SHM_UNEXP_LIMIT", "0", 1);
	rdm_pair p("shm", FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_UNEXP_LIMIT");
	ASSERT_NE(p.a.ep, nullptr);
	const int n = 300;
	flood(p.a.ep, p.a_to_b, n, 0);
	int a_tx = 0;
	spin(p, 3000, &a_tx);
	EXPECT_EQ(a_tx, n);
	EXPECT_GT(ux_bytes(p.b.ep), bound);
	take(p, p.b, n, 0);
}

/* Atomics larger than a bounce buffer (at the defaults about 1,000
 * uint64 operands fit one) go in parts: every count fi_atomicvalid and
 * fi_query_atomic report works, for all three families. */
TEST(shm_atomic, the_count_fi_atomicvalid_reports_works_for_every_family)
{
	rdm_pair p("shm", FI_MSG | FI_ATOMIC);
	ASSERT_NE(p.a.ep, nullptr);
	size_t cnt = 0, fcnt = 0, ccnt = 0;
	ASSERT_EQ(fi_atomicvalid(p.a.ep, FI_UINT64, FI_SUM, &cnt), 0);
	ASSERT_EQ(fi_fetch_atomicvalid(p.a.ep, FI_UINT64, FI_SUM, &fcnt), 0);
	ASSERT_EQ(fi_compare_atomicvalid(p.a.ep, FI_UINT64, FI_CSWAP, &ccnt), 0);
	EXPECT_EQ(cnt, wu::atomic::max_bytes / 8);
	EXPECT_EQ(fcnt, cnt);
	EXPECT_EQ(ccnt, cnt);
	fi_atomic_attr at{};
	ASSERT_EQ(fi_query_atomic(p.env.domain, FI_UINT64, FI_CSWAP, &at, FI_COMPARE_ATOMIC), 0);
	EXPECT_EQ(at.count, ccnt);
	const size_t n = cnt;
	std::vector<uint64_t> target(n + 2, 0), ops(n), cmp(n), res(n, 99);
	for (size_t i = 0; i < n; i++) {
		target[i + 1] = i;
		ops[i] = 1000 + i;
		cmp[i] = i % 2 ? i : i + 1; /* odd elements swap */
	}
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(p.env.domain, target.data(), target.size() * 8, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 5,
			    0, &mr, nullptr),
		  0);
	uint64_t key = fi_mr_key(mr);
	uint64_t base = (p.env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_compare_atomic(p.a.ep, ops.data(), n, nullptr, cmp.data(), nullptr, res.data(), nullptr, p.a_to_b,
				    base + 8, key, FI_UINT64, FI_CSWAP, nullptr),
		  0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(res[i], i) << i;
		ASSERT_EQ(target[i + 1], i % 2 ? 1000 + i : i) << i;
	}
	EXPECT_EQ(target[0], 0u);
	EXPECT_EQ(target[n + 1], 0u);
	ASSERT_EQ(fi_fetch_atomic(p.a.ep, ops.data(), n, nullptr, res.data(), nullptr, p.a_to_b, base + 8, key,
				  FI_UINT64, FI_SUM, nullptr),
		  0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(res[i], i % 2 ? 1000 + i : i) << i;
		ASSERT_EQ(target[i + 1], (i % 2 ? 1000 + i : i) + 1000 + i) << i;
	}
	ASSERT_EQ(fi_atomic(p.a.ep, ops.data(), n, nullptr, p.a_to_b, base + 8, key, FI_UINT64, FI_SUM, nullptr), 0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(target[i + 1], (i % 2 ? 1000 + i : i) + 2 * (1000 + i)) << i;
	/* One more than reported is refused when posted. */
	ops.push_back(0);
	EXPECT_EQ(fi_atomic(p.a.ep, ops.data(), n + 1, nullptr, p.a_to_b, base + 8, key, FI_UINT64, FI_SUM, nullptr),
		  -FI_EMSGSIZE);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* ---- fi_av(3) / fi_endpoint(3) / fi_cq(3) behaviour issue 14 asks of shm ---- */

/* FI_SOURCE: a message from a sender the receiver's AV does not hold
 * reports FI_ADDR_NOTAVAIL (fi_cq(3)); once inserted, its fi_addr. */
TEST(shm_api, source_of_an_unknown_sender_is_fi_addr_notavail)
{
	rdm_pair p("shm", FI_MSG | FI_SOURCE, false);
	ASSERT_NE(p.a.ep, nullptr);
	ASSERT_TRUE(p.env.info->caps & FI_SOURCE);
	int v = 7, w = 0;
	ASSERT_EQ(fi_recv(p.b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, &v, sizeof v, nullptr, p.a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	ASSERT_EQ(p.wait_rx(p.b, e, nullptr, &src), 1);
	EXPECT_EQ(src, FI_ADDR_NOTAVAIL);
	EXPECT_EQ(w, 7);
	fi_addr_t b_to_a = p.b.insert(p.a);
	ASSERT_EQ(fi_recv(p.b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, &v, sizeof v, nullptr, p.a_to_b, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e, nullptr, &src), 1);
	EXPECT_EQ(src, b_to_a);
}

/* Both threading levels are offered by fi_getinfo and open. */
TEST(shm_api, thread_domain_and_thread_safe_are_both_offered)
{
	for (fi_threading t : {FI_THREAD_DOMAIN, FI_THREAD_SAFE}) {
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup("shm");
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG;
		hints->domain_attr->threading = t;
		fi_info *got = nullptr;
		ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got), 0) << t;
		fi_freeinfo(hints);
		ASSERT_NE(got, nullptr);
		EXPECT_EQ(got->domain_attr->threading, t);
		fid_fabric *fab = nullptr;
		fid_domain *dom = nullptr;
		ASSERT_EQ(fi_fabric(got->fabric_attr, &fab, nullptr), 0);
		EXPECT_EQ(fi_domain(fab, got, &dom, nullptr), 0);
		if (dom) {
			EXPECT_EQ(fi_close(&dom->fid), 0);
		}
		EXPECT_EQ(fi_close(&fab->fid), 0);
		fi_freeinfo(got);
	}
}

/* An FI_WAIT_FD CQ: fi_control(FI_GETWAIT) gives a descriptor, fi_trywait
 * says when it is safe to sleep on it, a peer's message makes it readable
 * (nobody else drives progress), and fi_cq_sread sleeps until one comes. */
TEST(shm_api, wait_fd_cq_wakes_on_a_peers_message)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	rdm_ep a(env), b(env, nullptr, FI_WAIT_FD);
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = a.insert(b);
	int fd = -1;
	ASSERT_EQ(fi_control(&b.rx->fid, FI_GETWAIT, &fd), 0);
	ASSERT_GE(fd, 0);
	int v = 11, w = 0;
	fi_cq_tagged_entry e;
	/* First contact (its answer needs the sender's progress) before the
	 * sender stops driving its own. */
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, to_b, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	fid *fids[1] = {&b.rx->fid};
	ASSERT_EQ(fi_trywait(env.fabric, fids, 1), 0);
	pollfd pf{fd, POLLIN, 0};
	EXPECT_EQ(poll(&pf, 1, 0), 0); /* nothing yet */
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, to_b, nullptr), 0);
	EXPECT_EQ(poll(&pf, 1, 10000), 1);
	ASSERT_EQ(wait_one(b.rx, e), 1);
	EXPECT_EQ(w, 11);
	/* fi_cq_sread: the send comes from another thread while it sleeps. */
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	std::thread t([&] {
		int x = 12;
		usleep(50000);
		EXPECT_EQ(fi_send(a.ep, &x, sizeof x, nullptr, to_b, nullptr), 0);
	});
	EXPECT_EQ(fi_cq_sread(b.rx, &e, 1, nullptr, 10000), 1);
	t.join();
	EXPECT_EQ(w, 12);
	ASSERT_EQ(wait_one(a.tx, e), 1);
	ASSERT_EQ(wait_one(a.tx, e), 1);
}

/* Counters bound for sends and receives count completions, and errors. */
TEST(shm_api, counters_count_sends_receives_and_errors)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG);
	fi_info *i = fi_dupinfo(env.info);
	fid_cntr *sc = nullptr, *rc = nullptr;
	fi_cntr_attr ca{};
	ca.events = FI_CNTR_EVENTS_COMP;
	ASSERT_EQ(fi_cntr_open(env.domain, &ca, &sc, nullptr), 0);
	ASSERT_EQ(fi_cntr_open(env.domain, &ca, &rc, nullptr), 0);
	{
		rdm_ep a(env), b(env);
		ASSERT_NE(b.ep, nullptr);
		/* Bound after enable is refused by fi_endpoint(3); bind to fresh ones. */
		fid_ep *ea = nullptr, *eb = nullptr;
		ASSERT_EQ(fi_endpoint(env.domain, i, &ea, nullptr), 0);
		ASSERT_EQ(fi_endpoint(env.domain, i, &eb, nullptr), 0);
		ASSERT_EQ(fi_ep_bind(ea, &a.tx->fid, FI_TRANSMIT), 0);
		ASSERT_EQ(fi_ep_bind(ea, &a.rx->fid, FI_RECV), 0);
		ASSERT_EQ(fi_ep_bind(ea, &a.av->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(ea, &sc->fid, FI_SEND), 0);
		ASSERT_EQ(fi_ep_bind(eb, &b.tx->fid, FI_TRANSMIT), 0);
		ASSERT_EQ(fi_ep_bind(eb, &b.rx->fid, FI_RECV), 0);
		ASSERT_EQ(fi_ep_bind(eb, &b.av->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(eb, &rc->fid, FI_RECV), 0);
		ASSERT_EQ(fi_enable(ea), 0);
		ASSERT_EQ(fi_enable(eb), 0);
		char name[64];
		size_t len = sizeof name;
		ASSERT_EQ(fi_getname(&eb->fid, name, &len), 0);
		fi_addr_t to_b = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(fi_av_insert(a.av, name, 1, &to_b, 0, nullptr), 1);
		int v[2] = {1, 2}, w = 0;
		for (int k = 0; k < 3; k++)
			ASSERT_EQ(fi_recv(eb, &w, k == 2 ? 1 : sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		for (int k = 0; k < 3; k++)
			ASSERT_EQ(fi_send(ea, k == 2 ? static_cast<void *>(v) : static_cast<void *>(&v[0]),
					  k == 2 ? sizeof v : sizeof v[0], nullptr, to_b, nullptr),
				  0);
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while ((fi_cntr_read(rc) + fi_cntr_readerr(rc) < 3 || fi_cntr_read(sc) < 3) &&
		       std::chrono::steady_clock::now() < until) {
			fi_cq_tagged_entry e;
			(void)fi_cq_read(a.tx, &e, 1);
			(void)fi_cq_read(b.rx, &e, 1);
		}
		EXPECT_EQ(fi_cntr_read(sc), 3u);
		EXPECT_EQ(fi_cntr_read(rc), 2u);
		EXPECT_EQ(fi_cntr_readerr(rc), 1u); /* the truncated one */
		EXPECT_EQ(fi_close(&ea->fid), 0);
		EXPECT_EQ(fi_close(&eb->fid), 0);
	}
	EXPECT_EQ(fi_close(&sc->fid), 0);
	EXPECT_EQ(fi_close(&rc->fid), 0);
	fi_freeinfo(i);
}

/* fi_close delivers the injects the application already counts as sent,
 * here queued behind the unanswered first cell and a queue of 16 cells
 * (MPICH's MPI_Bsend then MPI_Finalize: the receiver waited forever). */
TEST(shm_close, fi_close_delivers_injects_still_queued_for_a_peer)
{
	setenv("FI_SHM_QUEUE_CELLS", "16", 1);
	rdm_pair p("shm", FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_QUEUE_CELLS");
	constexpr int n = 200;
	std::vector<char> msg(1000);
	for (int i = 0; i < n; i++) {
		std::fill(msg.begin(), msg.end(), char(i));
		ASSERT_EQ(fi_tinject(p.a.ep, msg.data(), flood_len(i), p.a_to_b, 100 + uint64_t(i)), 0) << i;
	}
	int got = 0;
	std::thread rx([&] {
		std::vector<char> in(1000);
		fi_cq_tagged_entry e;
		for (int i = 0; i < n; i++) {
			std::fill(in.begin(), in.end(), char(-1));
			if (fi_trecv(p.b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 100 + uint64_t(i), 0, nullptr))
				return;
			if (wait_one(p.b.rx, e, nullptr, {p.b.tx}) != 1 || e.tag != 100 + uint64_t(i) ||
			    e.len != flood_len(i) || in[0] != char(i) || in[e.len - 1] != char(i))
				return;
			got++;
		}
	});
	p.a.close(); /* returns once b took every queued cell */
	rx.join();
	EXPECT_EQ(got, n);
}

} // namespace
