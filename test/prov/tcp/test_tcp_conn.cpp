/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider connection set-up under FI_TCP_CONN_TIMEOUT (lowered here):
 * incoming connections that never complete a handshake are dropped (RDM
 * listener, manual and auto progress; MSG passive endpoint), an RDM
 * connect refused because the peer does not listen yet is retried until
 * the peer shows up or the timeout ends it with an error completion, and
 * two endpoints dialing each other at once end with one connection. */
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "prov/tcp/tcp_ep.h"
#include "../common/tcp_fixture.h"

using namespace wu::test;
using wu::tcp::get_stats;

namespace {

using clk = std::chrono::steady_clock;

long ms_since(clk::time_point t0)
{
	return long(std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count());
}

/* FI_TCP_CONN_TIMEOUT for objects opened while it lives. */
struct conn_timeout {
	explicit conn_timeout(const char *ms) { setenv("FI_TCP_CONN_TIMEOUT", ms, 1); }
	~conn_timeout() { unsetenv("FI_TCP_CONN_TIMEOUT"); }
};

int raw_connect(const void *addr, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	EXPECT_GE(fd, 0);
	EXPECT_EQ(connect(fd, static_cast<const sockaddr *>(addr), socklen_t(len)), 0);
	return fd;
}

/* True once the provider has closed fd's connection (EOF or reset). */
bool closed_by_peer(int fd, int wait_ms)
{
	pollfd p{fd, POLLIN, 0};
	if (poll(&p, 1, wait_ms) <= 0)
		return false;
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Waits for both raw connections to be closed, driving progress on cqs
 * (none: auto progress).  Returns the time it took, or -1. */
long wait_closed(std::vector<int> fds, std::initializer_list<fid_cq *> cqs)
{
	auto t0 = clk::now();
	while (ms_since(t0) < 10000) {
		spin(cqs, 1);
		for (size_t i = 0; i < fds.size();)
			if (closed_by_peer(fds[i], 1))
				fds.erase(fds.begin() + long(i));
			else
				i++;
		if (fds.empty())
			return ms_since(t0);
	}
	return -1;
}

void silent_and_partial_clients_are_dropped(fi_progress mode)
{
	conn_timeout t{"300"};
	tcp_env env{FI_EP_RDM, 0, mode};
	rdm_ep a{env, nullptr, FI_WAIT_UNSPEC};
	uint64_t before = get_stats().silent_drops;
	int silent = raw_connect(a.name.data(), a.name.size());
	int partial = raw_connect(a.name.data(), a.name.size());
	ASSERT_EQ(send(partial, "WUTP1", 5, 0), 5); /* a handshake header cut short */
	long ms = mode == FI_PROGRESS_AUTO ? wait_closed({silent, partial}, {}) : wait_closed({silent, partial}, {a.rx});
	EXPECT_GE(ms, 150);
	EXPECT_LT(ms, 5000) << "the provider kept a connection that never handshook";
	EXPECT_EQ(get_stats().silent_drops, before + 2);
	::close(silent);
	::close(partial);
	/* Real peers are not affected. */
	rdm_ep b{env, nullptr, FI_WAIT_UNSPEC};
	fi_addr_t b_to_a = b.insert(a);
	int v = 42, got = 0;
	ASSERT_EQ(fi_recv(a.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(a.rx, e, nullptr, {b.tx}), 1);
	EXPECT_EQ(got, 42);
}

} // namespace

TEST(tcp_handshake_timeout, rdm_drops_silent_clients_manual_progress)
{
	silent_and_partial_clients_are_dropped(FI_PROGRESS_MANUAL);
}

TEST(tcp_handshake_timeout, rdm_drops_silent_clients_with_nobody_calling_auto_progress)
{
	silent_and_partial_clients_are_dropped(FI_PROGRESS_AUTO);
}

TEST(tcp_handshake_timeout, passive_endpoint_drops_silent_clients)
{
	conn_timeout t{"300"};
	tcp_env env{FI_EP_MSG};
	msg_listener l{env};
	ASSERT_TRUE(l.ok());
	fid_eq *peq = l.eq;
	fid_pep *pep = l.pep;
	sockaddr_in addr = l.name_as<sockaddr_in>();
	uint64_t before = get_stats().silent_drops;
	int silent = raw_connect(&addr, sizeof addr);
	int partial = raw_connect(&addr, sizeof addr);
	ASSERT_EQ(send(partial, "WU", 2, 0), 2);
	long ms = wait_closed({silent, partial}, {});
	EXPECT_GE(ms, 150);
	EXPECT_LT(ms, 5000);
	EXPECT_EQ(get_stats().silent_drops, before + 2);
	::close(silent);
	::close(partial);
	/* No event was posted for them; a real client still gets through. */
	uint32_t event = 0;
	alignas(fi_eq_cm_entry) unsigned char raw[sizeof(fi_eq_cm_entry) + 256];
	EXPECT_EQ(fi_eq_read(peq, &event, raw, sizeof raw, 0), -FI_EAGAIN);
	fid_ep *client = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &client, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(client, &env.eq->fid, 0), 0);
	ASSERT_EQ(fi_connect(client, &addr, nullptr, 0), 0);
	ASSERT_GE(fi_eq_sread(peq, &event, raw, sizeof raw, 10000, 0), ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_CONNREQ));
	auto *ent = reinterpret_cast<fi_eq_cm_entry *>(raw);
	ASSERT_EQ(fi_reject(pep, ent->info->handle, nullptr, 0), 0);
	fi_freeinfo(ent->info);
	EXPECT_EQ(fi_close(&client->fid), 0);
	l.close_pep();
	l.close_eq();
}

/* The peer starts listening 300 ms after our sends: they are delivered. */
TEST(tcp_refused_retry, sends_wait_for_a_peer_that_starts_listening_later)
{
	conn_timeout t{"5000"};
	tcp_env env{FI_EP_RDM};
	rdm_ep me{env};
	sockaddr_in later = free_port();
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(me.av, &later, 1, &peer, 0, nullptr), 1);
	int v = 7, sctx1, sctx2;
	std::vector<char> big(1 << 20), in(1 << 20, 0);
	for (size_t i = 0; i < big.size(); i++)
		big[i] = char(i * 3);
	ASSERT_EQ(fi_send(me.ep, &v, sizeof v, nullptr, peer, &sctx1), 0);
	ASSERT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, &sctx2), 0);
	auto t0 = clk::now();
	while (ms_since(t0) < 300)
		spin({me.tx}, 10);
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_cq_read(me.tx, &e, 1), -FI_EAGAIN) << "the sends failed before the timeout";

	fi_info *info = fi_dupinfo(env.info);
	free(info->src_addr);
	info->src_addr = malloc(sizeof later);
	memcpy(info->src_addr, &later, sizeof later);
	info->src_addrlen = sizeof later;
	rdm_ep them{env, info};
	fi_freeinfo(info);
	ASSERT_NE(them.ep, nullptr);
	int got = 0;
	ASSERT_EQ(fi_recv(them.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_recv(them.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(wait_one(them.rx, e, nullptr, {me.tx}), 1);
	EXPECT_EQ(got, 7);
	EXPECT_EQ(in, big);
	for (void *want : {(void *)&sctx1, (void *)&sctx2}) {
		ASSERT_EQ(wait_one(me.tx, e, nullptr, {them.rx}), 1);
		EXPECT_EQ(e.op_context, want);
	}
}

/* Nobody ever listens: the sends fail with FI_ECONNREFUSED once
 * FI_TCP_CONN_TIMEOUT has passed, never before and never hanging. */
TEST(tcp_refused_retry, no_listener_fails_after_the_timeout)
{
	for (fi_progress mode : {FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO}) {
		conn_timeout t{"300"};
		tcp_env env{FI_EP_RDM, 0, mode};
		rdm_ep me{env, nullptr, FI_WAIT_UNSPEC};
		sockaddr_in nobody = free_port();
		fi_addr_t peer;
		ASSERT_EQ(fi_av_insert(me.av, &nobody, 1, &peer, 0, nullptr), 1);
		int v = 1, ctx1, ctx2;
		std::vector<char> big(1 << 20, 'n');
		auto t0 = clk::now();
		ASSERT_EQ(fi_send(me.ep, &v, sizeof v, nullptr, peer, &ctx1), 0);
		ASSERT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, &ctx2), 0);
		for (void *want : {(void *)&ctx1, (void *)&ctx2}) {
			fi_cq_tagged_entry e;
			fi_cq_err_entry err{};
			ssize_t r = fi_cq_sread(me.tx, &e, 1, nullptr, 10000);
			ASSERT_EQ(r, -FI_EAVAIL) << "mode " << mode;
			ASSERT_EQ(fi_cq_readerr(me.tx, &err, 0), 1);
			EXPECT_EQ(err.err, FI_ECONNREFUSED);
			EXPECT_EQ(err.op_context, want);
		}
		long ms = ms_since(t0);
		EXPECT_GE(ms, 250) << "mode " << mode;
		EXPECT_LT(ms, 5000) << "mode " << mode;
	}
}

/* An inject makes no completion, not even when it fails (fi_msg(3)): a
 * refused inject (then a refused RMA inject) counts on the bound counter's
 * errors and puts nothing in the CQ, where an entry would carry a NULL
 * op_context (Open MPI's OFI MTL crashed on one); a later send with a
 * context to the same peer fails with exactly that context. */
TEST(tcp_refused_retry, failed_injects_make_no_completion_and_count_as_errors)
{
	conn_timeout t{"200"};
	tcp_env env{FI_EP_RDM, FI_MSG | FI_RMA};
	ASSERT_NE(env.domain, nullptr);
	counted_ep x(env, true);
	ASSERT_NE(x.ep, nullptr);
	sockaddr_in nobody = free_port();
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(x.av, &nobody, 1, &peer, 0, nullptr), 1);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	int v = 1;
	ASSERT_EQ(fi_inject(x.ep, &v, sizeof v, peer), 0);
	EXPECT_EQ(x.errors_reach(x.sc, 1), 1u);
	ASSERT_EQ(fi_inject_write(x.ep, &v, sizeof v, peer, 0, 0), 0);
	EXPECT_EQ(x.errors_reach(x.wc, 1), 1u);
	int ctx;
	ASSERT_EQ(fi_send(x.ep, &v, sizeof v, nullptr, peer, &ctx), 0);
	ASSERT_EQ(wait_one(x.cq, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	EXPECT_EQ(fi_cntr_readerr(x.sc), 2u);
	spin({x.cq}, 200);
	EXPECT_EQ(fi_cq_read(x.cq, &e, 1), -FI_EAGAIN);
}

/* FI_TCP_CONN_TIMEOUT=0 keeps the old behaviour: refused at once. */
TEST(tcp_refused_retry, zero_timeout_does_not_retry)
{
	conn_timeout t{"0"};
	tcp_env env{FI_EP_RDM};
	rdm_ep me{env};
	sockaddr_in nobody = free_port();
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(me.av, &nobody, 1, &peer, 0, nullptr), 1);
	int v = 1;
	auto t0 = clk::now();
	ssize_t r = fi_send(me.ep, &v, sizeof v, nullptr, peer, nullptr);
	if (r == 0) {
		fi_cq_tagged_entry e;
		fi_cq_err_entry err{};
		ASSERT_EQ(wait_one(me.tx, e, &err), -FI_EAVAIL);
		EXPECT_EQ(err.err, FI_ECONNREFUSED);
	} else {
		EXPECT_EQ(r, -FI_ECONNREFUSED);
	}
	EXPECT_LT(ms_since(t0), 1000);
}

/* A named AV is shared with other processes, whose fi_av_remove sends no
 * notice to this process's endpoints: an endpoint that cached a peer for
 * fi_addr 0 must notice that the entry now names someone else.  The second
 * handle on the same name stands in for the other process. */
TEST(tcp_shared_av, entry_replaced_elsewhere_is_looked_up_again)
{
	tcp_env env{FI_EP_RDM, FI_MSG};
	ASSERT_NE(env.domain, nullptr);
	rdm_ep b{env}, c{env};
	std::string name = "test-tcp-shared-" + std::to_string(getpid());
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	aa.name = name.c_str();
	aa.count = 16;
	fid_av *mine = nullptr, *theirs = nullptr;
	ASSERT_EQ(fi_av_open(env.domain, &aa, &mine, nullptr), 0);
	ASSERT_EQ(fi_av_open(env.domain, &aa, &theirs, nullptr), 0);
	fid_cq *cq = nullptr;
	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	ASSERT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
	fid_ep *a = nullptr;
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &a, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(a, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	ASSERT_EQ(fi_ep_bind(a, &mine->fid, 0), 0);
	ASSERT_EQ(fi_enable(a), 0);

	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(mine, b.name.data(), 1, &fa, 0, nullptr), 1);
	ASSERT_EQ(fa, 0u);
	int to_b = 1, got_b = 0, to_c = 2, got_c = 0;
	ASSERT_EQ(fi_recv(b.ep, &got_b, sizeof got_b, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_recv(c.ep, &got_c, sizeof got_c, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a, &to_b, sizeof to_b, nullptr, fa, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(cq, e, nullptr, {b.rx}), 1);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {cq}), 1);
	EXPECT_EQ(got_b, 1);

	int got_b2 = 0;
	ASSERT_EQ(fi_recv(b.ep, &got_b2, sizeof got_b2, nullptr, FI_ADDR_UNSPEC, nullptr), 0);

	/* "Another process" replaces entry 0 with c. */
	ASSERT_EQ(fi_av_remove(theirs, &fa, 1, 0), 0);
	fi_addr_t again = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(theirs, c.name.data(), 1, &again, 0, nullptr), 1);
	ASSERT_EQ(again, 0u) << "the freed slot was not reused; the test needs it";
	ASSERT_EQ(fi_send(a, &to_c, sizeof to_c, nullptr, fa, nullptr), 0);
	ASSERT_EQ(wait_one(cq, e, nullptr, {c.rx, b.rx}), 1);
	ASSERT_EQ(wait_one(c.rx, e, nullptr, {cq, b.rx}), 1);
	EXPECT_EQ(got_c, 2);
	spin({b.rx, cq});
	ssize_t r = fi_cq_read(b.rx, &e, 1);
	EXPECT_EQ(r, -FI_EAGAIN) << "b received what was sent to the new entry";
	EXPECT_EQ(got_b2, 0);

	EXPECT_EQ(fi_close(&a->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&theirs->fid), 0);
	EXPECT_EQ(fi_close(&mine->fid), 0);
}

/* ---- simultaneous connects (issue 30: duplicate connections at 8 x 8) ---- */

/* Established tcp sockets this process holds with port `port` at either
 * end (from its socket inodes in /proc/self/net/tcp). */
int established_with_port(uint16_t port)
{
	std::vector<unsigned long> inodes;
	if (DIR *d = opendir("/proc/self/fd")) {
		while (dirent *e = readdir(d)) {
			char p[300], t[64];
			snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
			ssize_t n = readlink(p, t, sizeof t - 1);
			unsigned long ino;
			if (n > 0 && (t[n] = 0, sscanf(t, "socket:[%lu]", &ino) == 1))
				inodes.push_back(ino);
		}
		closedir(d);
	}
	int count = 0;
	FILE *f = fopen("/proc/self/net/tcp", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		unsigned lport, rport, st;
		unsigned long ino;
		if (sscanf(line, " %*s %*8x:%x %*8x:%x %x %*s %*s %*s %*s %*s %lu", &lport, &rport, &st, &ino) != 4)
			continue;
		if (st == 1 && (lport == port || rport == port) &&
		    std::find(inodes.begin(), inodes.end(), ino) != inodes.end())
			count++;
	}
	if (f)
		fclose(f);
	return count;
}

uint16_t port_of(const rdm_ep &e)
{
	sockaddr_in s{};
	memcpy(&s, e.name.data(), std::min(e.name.size(), sizeof s));
	return ntohs(s.sin_port);
}

/* k endpoints, each driven by its own thread, all send to all at the same
 * moment, rounds times over with fresh endpoints: every pair dials from
 * both sides at once.  Each round must end with exactly one connection per
 * pair (two sockets of this process each: the dialer's and the accepted
 * one) and every message in order.  The rounds in which both sides of a
 * pair dialed (tcp's connect counter) show that the race ran. */
void all_to_all_rounds(int k, int rounds, int n)
{
	tcp_env env(FI_EP_RDM, FI_MSG | FI_TAGGED);
	int raced = 0;
	for (int round = 0; round < rounds; round++) {
		std::vector<std::unique_ptr<rdm_ep>> eps;
		for (int s = 0; s < k; s++)
			eps.push_back(std::make_unique<rdm_ep>(env));
		/* to[s][d]: d in s's AV; every AV lists every endpoint in order. */
		std::vector<std::vector<fi_addr_t>> to(k);
		for (int s = 0; s < k; s++)
			for (int d = 0; d < k; d++)
				to[s].push_back(eps[s]->insert(*eps[d]));
		uint64_t dials = get_stats().connects;
		std::atomic<int> ready{0};
		/* got[d][s][i]: message i from s to d (tag s). */
		std::vector<std::vector<std::vector<uint32_t>>> got(
			k, std::vector<std::vector<uint32_t>>(k, std::vector<uint32_t>(n, ~0u)));
		std::vector<std::string> err(k);
		auto run = [&](int s) {
			rdm_ep &e = *eps[s];
			for (int from = 0; from < k; from++)
				for (int i = 0; from != s && i < n; i++)
					if (fi_trecv(e.ep, &got[s][from][i], 4, nullptr, FI_ADDR_UNSPEC, uint64_t(from), 0,
						     nullptr)) {
						err[s] = "fi_trecv";
						return;
					}
			ready.fetch_add(1);
			while (ready.load() < k) {
			}
			for (uint32_t i = 0; i < uint32_t(n); i++)
				for (int d = 0; d < k; d++)
					if (d != s && fi_tinject(e.ep, &i, 4, to[s][d], uint64_t(s))) {
						err[s] = "fi_tinject";
						return;
					}
			fi_cq_tagged_entry c;
			for (int i = 0; i < n * (k - 1); i++)
				if (wait_one(e.rx, c, nullptr, {e.tx}) != 1) {
					err[s] = "receive " + std::to_string(i) + " did not complete";
					return;
				}
		};
		std::vector<std::thread> th;
		for (int s = 0; s < k; s++)
			th.emplace_back(run, s);
		for (auto &t : th)
			t.join();
		raced += get_stats().connects - dials > uint64_t(k * (k - 1) / 2);
		for (int s = 0; s < k; s++)
			ASSERT_EQ(err[s], "") << "round " << round << " endpoint " << s;
		for (int d = 0; d < k; d++)
			for (int s = 0; s < k; s++)
				for (int i = 0; s != d && i < n; i++)
					ASSERT_EQ(got[d][s][i], uint32_t(i)) << "round " << round << ", " << s << " to " << d;
		/* Counted once every message is in: a dialer that lost the
		 * tie-break closes its connection.  Under load the loser's close
		 * can still be in flight then, so progress runs (CQ reads) for up
		 * to 5 s until the count settles; a duplicate kept open fails. */
		auto count = [&] {
			int n = 0;
			for (auto &e : eps)
				n += established_with_port(port_of(*e));
			return n;
		};
		int socks = count();
		for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		     socks != k * (k - 1) && std::chrono::steady_clock::now() < until; socks = count()) {
			fi_cq_tagged_entry c;
			for (auto &e : eps) {
				fi_cq_read(e->rx, &c, 1);
				fi_cq_read(e->tx, &c, 1);
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
		/* A connection is two sockets here, each with the acceptor's
		 * listening port at one end. */
		EXPECT_EQ(socks, k * (k - 1)) << "round " << round << ": a pair holds more than one connection";
	}
	EXPECT_GT(raced, 0) << "no round had both sides of a pair dialing: the race was never run";
}

TEST(tcp_simultaneous_connect, one_connection_per_pair_and_every_message_in_order)
{
	all_to_all_rounds(2, 40, 16);
}

TEST(tcp_simultaneous_connect, six_endpoints_all_to_all)
{
	all_to_all_rounds(6, 10, 8);
}
