/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider, FI_EP_RDM: what the application already counts as sent is
 * delivered even when its endpoint is closed at once (MPI_Bsend or an
 * injected send, then MPI_Finalize).  The receiver is a fork()ed process
 * that reports over a pipe what it got. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "../common/tcp_fixture.h"

using namespace wu::test;

namespace {

constexpr int msgs = 10;

/* Child: an endpoint that writes its name to `out`, then receives up to
 * `want` tagged messages (the tag is the index, the payload index * 7 + 1
 * as 10 ints), writes how many arrived intact, and exits. */
[[noreturn]] void receiver(int out, int want, useconds_t delay_us)
{
	alarm(60); /* never outlive a failed parent */
	int got = 0;
	{
		tcp_env env{FI_EP_RDM, FI_TAGGED};
		rdm_ep ep{env};
		uint32_t n = uint32_t(ep.name.size());
		if (write(out, &n, 4) != 4 || write(out, ep.name.data(), n) != ssize_t(n))
			_exit(1);
		/* The sender's socket holds what we have not read yet. */
		if (delay_us)
			usleep(delay_us);
		std::vector<std::vector<int>> bufs(size_t(want), std::vector<int>(10, -1));
		for (int i = 0; i < want; i++)
			if (fi_trecv(ep.ep, bufs[size_t(i)].data(), 10 * sizeof(int), nullptr, FI_ADDR_UNSPEC,
				     uint64_t(i), 0, nullptr))
				_exit(1);
		for (int i = 0; i < want; i++) {
			fi_cq_tagged_entry e;
			if (wait_one(ep.rx, e) != 1)
				break;
		}
		for (int i = 0; i < want; i++) {
			bool ok = true;
			for (int k = 0; k < 10; k++)
				ok &= bufs[size_t(i)][size_t(k)] == i * 7 + 1;
			got += ok;
		}
	}
	_exit(write(out, &got, sizeof got) == sizeof got ? 0 : 1);
}

struct forked_receiver {
	int p[2] = {-1, -1};
	pid_t pid = -1;
	std::vector<char> name;

	forked_receiver(int want, useconds_t delay_us = 0)
	{
		EXPECT_EQ(pipe(p), 0);
		pid = fork();
		EXPECT_GE(pid, 0);
		if (pid == 0) {
			::close(p[0]);
			receiver(p[1], want, delay_us);
		}
		::close(p[1]);
		uint32_t n = 0;
		EXPECT_EQ(read(p[0], &n, 4), 4);
		name.resize(n);
		EXPECT_EQ(read(p[0], name.data(), n), ssize_t(n));
	}
	/* How many messages the receiver got (it gives up after wait_limit). */
	int result()
	{
		int got = -1;
		EXPECT_EQ(read(p[0], &got, sizeof got), ssize_t(sizeof got));
		int st = 0;
		EXPECT_EQ(waitpid(pid, &st, 0), pid);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		::close(p[0]);
		return got;
	}
};

/* The first messages to a peer wait for the connection's handshake; an
 * endpoint closed before it ends still delivers them (they were injected:
 * the application has no other way to know they are not gone yet). */
TEST(tcp_linger, injects_to_a_peer_not_yet_connected_survive_close)
{
	forked_receiver r(msgs);
	{
		tcp_env env{FI_EP_RDM, FI_TAGGED};
		rdm_ep me{env};
		fi_addr_t peer = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(fi_av_insert(me.av, r.name.data(), 1, &peer, 0, nullptr), 1);
		for (int i = 0; i < msgs; i++) {
			std::vector<int> v(10, i * 7 + 1);
			ASSERT_EQ(fi_tinject(me.ep, v.data(), v.size() * sizeof(int), peer, uint64_t(i)), 0);
		}
		me.close(); /* at once: no progress call since the injects */
	}
	EXPECT_EQ(r.result(), msgs) << "injected messages lost when the sender closed its endpoint";
}

/* fi_close lingers (FI_TCP_LINGER) while a peer that stopped reading
 * holds our bytes; meanwhile another thread's reads of a CQ this endpoint
 * shares with a second one progress both, and must not wait on the
 * closing endpoint's lock: the second endpoint's ping-pong goes on during
 * the close, no round stalled for anything near the linger.  (The linger
 * used to hold the lock while waiting for the peer's acknowledgements.) */
TEST(tcp_linger, close_does_not_stall_a_shared_cq)
{
	tcp_env env{FI_EP_RDM, FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	fid_cq *shared = nullptr;
	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	ASSERT_EQ(fi_cq_open(env.domain, &ca, &shared, nullptr), 0);
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	ASSERT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	setenv("FI_TCP_LINGER", "6000", 1);
	fid_ep *a = nullptr, *c = nullptr;
	for (fid_ep **e : {&a, &c}) {
		ASSERT_EQ(fi_endpoint(env.domain, env.info, e, nullptr), 0);
		ASSERT_EQ(fi_ep_bind(*e, &shared->fid, FI_TRANSMIT | FI_RECV), 0);
		ASSERT_EQ(fi_ep_bind(*e, &av->fid, 0), 0);
		ASSERT_EQ(fi_enable(*e), 0);
	}
	unsetenv("FI_TCP_LINGER");
	rdm_ep d{env}, r{env};
	std::vector<char> cname(d.name.size());
	size_t len = cname.size();
	ASSERT_EQ(fi_getname(&c->fid, cname.data(), &len), 0);
	fi_addr_t to_r = FI_ADDR_NOTAVAIL, to_d = FI_ADDR_NOTAVAIL, d_to_c = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(av, r.name.data(), 1, &to_r, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(av, d.name.data(), 1, &to_d, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(d.av, cname.data(), 1, &d_to_c, 0, nullptr), 1);
	fi_cq_tagged_entry e;
	/* a reaches r once (the handshake needs r's progress), then r stops reading. */
	int one = 1, got = 0;
	ASSERT_EQ(fi_trecv(r.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
	ASSERT_EQ(fi_tinject(a, &one, sizeof one, to_r, 1), 0);
	ASSERT_EQ(wait_one(r.rx, e, nullptr, {shared}), 1);
	/* More than r's and our socket buffers hold: the close lingers. */
	std::vector<char> big(65536, 'x');
	for (int i = 0; i < 256; i++)
		ASSERT_EQ(fi_tsend(a, big.data(), big.size(), nullptr, to_r, 2, nullptr), 0);

	/* c <-> d ping-pong, this thread reading the CQ shared with a. */
	std::atomic<bool> stop{false}, closing{false}, failed{false};
	std::atomic<int> rounds{0}, during_close{0};
	std::atomic<long> longest_ms{0}; /* the longest round while a closed */
	struct joined {
		std::atomic<bool> &stop;
		std::thread t;
		~joined()
		{
			stop = true;
			if (t.joinable())
				t.join();
		}
	};
	joined pp{stop, std::thread([&] {
		uint64_t v = 0, in = 0, back = 0;
		int cctx, rctx;
		auto started = std::chrono::steady_clock::now();
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
		while (!stop && !failed && std::chrono::steady_clock::now() < until) {
			if (fi_trecv(c, &back, 8, nullptr, FI_ADDR_UNSPEC, 4, 0, &rctx) ||
			    fi_trecv(d.ep, &in, 8, nullptr, FI_ADDR_UNSPEC, 3, 0, nullptr) ||
			    fi_tsend(c, &v, 8, nullptr, to_d, 3, &cctx)) {
				failed = true;
				break;
			}
			bool sent = false, answered = false, bounced = false;
			while (!(sent && answered) && !stop && std::chrono::steady_clock::now() < until) {
				ssize_t n = fi_cq_read(shared, &e, 1);
				if (n == 1 && e.op_context == &cctx)
					sent = true;
				else if (n == 1 && e.op_context == &rctx)
					answered = true;
				else if (n == -FI_EAVAIL) {
					fi_cq_err_entry err{};
					(void)fi_cq_readerr(shared, &err, 0); /* a's sends, dropped at its close */
				}
				if (!bounced && fi_cq_read(d.rx, &e, 1) == 1) {
					bounced = true;
					if (fi_tinject(d.ep, &in, 8, d_to_c, 4)) {
						failed = true;
						return;
					}
				}
			}
			if (stop)
				break;
			if (!(sent && answered) || back != v) {
				failed = true;
				break;
			}
			v++;
			rounds++;
			auto now = std::chrono::steady_clock::now();
			if (closing) {
				during_close++;
				long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count());
				if (ms > longest_ms)
					longest_ms = ms;
			}
			started = now;
		}
	})};
	auto t0 = std::chrono::steady_clock::now();
	while (rounds < 50 && !failed && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ASSERT_FALSE(failed);
	closing = true;
	EXPECT_EQ(fi_close(&a->fid), 0);
	closing = false;
	stop = true;
	pp.t.join();
	EXPECT_FALSE(failed);
	/* Blocked on the closing endpoint's lock, the ping-pong would stop
	 * for the whole linger (6 s); a round takes milliseconds. */
	EXPECT_GE(during_close.load(), 10) << rounds << " rounds in all";
	EXPECT_LT(longest_ms.load(), 3000) << "the ping-pong sharing the closing endpoint's CQ stalled during its linger";
	EXPECT_EQ(fi_close(&c->fid), 0);
	r.close();
	d.close();
	EXPECT_EQ(fi_close(&av->fid), 0);
	EXPECT_EQ(fi_close(&shared->fid), 0);
}

} // namespace
