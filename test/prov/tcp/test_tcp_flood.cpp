/* SPDX-License-Identifier: BSD-3-Clause */
/* Pre-authentication descriptor exhaustion (issue 32): a forked process
 * (the user `wireup-outsider` when we are root and can make it, else
 * ourselves) opens hundreds of connections to an RDM endpoint and a
 * passive endpoint and never answers their CHALLENGE, opening them again
 * in waves as they are closed.  The endpoints' process keeps its
 * descriptor count bounded (FI_TCP_AUTH_PENDING), and a peer with the key
 * still connects and exchanges messages with each during the flood. */
#include "../common/tcp_fixture.h"
#include "prov/tcp/tcp_impl.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace wu::test;

namespace {

constexpr int per_target = 300;

uid_t flood_uid = 0;
gid_t flood_gid = 0;
bool as_other = false;

size_t open_fds()
{
	size_t n = 0;
	if (DIR *d = opendir("/proc/self/fd")) {
		while (readdir(d))
			n++;
		closedir(d);
	}
	return n;
}

int dial(const sockaddr_in &to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr *>(&to), sizeof to) && errno != EINPROGRESS) {
		::close(fd);
		return -1;
	}
	return fd;
}

/* The flooding process: per_target idle connections to each target,
 * those closed dialed again every 200 ms, until `quit` has EOF. */
[[noreturn]] void flood(const std::vector<sockaddr_in> &targets, int quit)
{
	std::vector<pollfd> p;
	std::vector<size_t> to;
	for (size_t t = 0; t < targets.size(); t++)
		for (int i = 0; i < per_target; i++) {
			p.push_back({dial(targets[t]), POLLIN, 0});
			to.push_back(t);
		}
	p.push_back({quit, POLLIN, 0});
	auto wave = std::chrono::steady_clock::now();
	for (;;) {
		if (poll(p.data(), p.size(), 20) < 0 && errno != EINTR)
			_exit(2);
		if (p.back().revents)
			_exit(0);
		for (size_t i = 0; i + 1 < p.size(); i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char buf[256];
			if (recv(p[i].fd, buf, sizeof buf, MSG_DONTWAIT) == 0 || (p[i].revents & (POLLERR | POLLHUP))) {
				::close(p[i].fd);
				p[i].fd = -1;
			}
		}
		if (std::chrono::steady_clock::now() - wave > std::chrono::milliseconds(200)) {
			wave = std::chrono::steady_clock::now();
			for (size_t i = 0; i + 1 < p.size(); i++)
				if (p[i].fd < 0)
					p[i].fd = dial(targets[to[i]]);
		}
	}
}

struct flooder {
	pid_t pid = -1;
	int quit = -1;
	explicit flooder(const std::vector<sockaddr_in> &targets)
	{
		int q[2];
		EXPECT_EQ(pipe(q), 0);
		pid = fork();
		EXPECT_GE(pid, 0);
		if (pid == 0) {
			::close(q[1]);
			alarm(60); /* never outlive a failed parent */
			if (as_other && (setgroups(0, nullptr) || setgid(flood_gid) || setuid(flood_uid)))
				_exit(3);
			flood(targets, q[0]);
		}
		::close(q[0]);
		quit = q[1];
	}
	~flooder() { stop(); }
	/* Ends the flood; its exit status (0: it ran to the end). */
	int stop()
	{
		if (pid < 0)
			return 0;
		::close(quit);
		int status = 0;
		waitpid(pid, &status, 0);
		pid = -1;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	}
};

/* Drives eps for about ms milliseconds. */
void drive(std::initializer_list<fid_cq *> cqs, int ms)
{
	auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
	while (std::chrono::steady_clock::now() < until) {
		spin(cqs, 10);
		usleep(1000);
	}
}

/* m.connect, dialing again while the client's EQ reports FI_ECONNREFUSED
 * (for up to 30 s); any other outcome fails. */
void connect_retrying(msg_pair &m, tcp_env &env)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
	for (int attempt = 1;; attempt++) {
		ASSERT_NO_FATAL_FAILURE(m.client.open(env, env.info, env.eq));
		ASSERT_EQ(fi_connect(m.client.ep, m.l.addr, nullptr, 0), 0);
		cm_buf ev;
		uint32_t event = 0;
		ssize_t r = -FI_EAGAIN;
		while (r == -FI_EAGAIN && std::chrono::steady_clock::now() < end) {
			r = fi_eq_read(m.l.eq, &event, &ev.entry, sizeof ev.raw, 0);
			if (r != -FI_EAGAIN)
				break;
			fi_eq_err_entry err{};
			uint32_t cev = 0;
			fi_eq_cm_entry ce{};
			ssize_t c = fi_eq_read(env.eq, &cev, &ce, sizeof ce, 0);
			if (c == -FI_EAVAIL) {
				ASSERT_GT(fi_eq_readerr(env.eq, &err, 0), 0);
				ASSERT_EQ(err.err, FI_ECONNREFUSED) << fi_strerror(err.err);
				break; /* refused: dial again */
			}
			ASSERT_EQ(c, -FI_EAGAIN) << "client event " << cev << " before its request was reported";
			usleep(1000);
		}
		if (r >= ssize_t(sizeof(fi_eq_cm_entry))) {
			ASSERT_EQ(event, uint32_t(FI_CONNREQ));
			printf("MSG client connected at attempt %d\n", attempt);
			ASSERT_NO_FATAL_FAILURE(m.accept(env, ev.entry.info));
			return;
		}
		ASSERT_EQ(r, -FI_EAGAIN) << fi_strerror(int(-r));
		ASSERT_LT(std::chrono::steady_clock::now(), end) << "no connection in 30 s of " << attempt << " attempts";
		m.client.close_ep();
		m.client.close_cq();
	}
}

} // namespace

/* The defaults must let every rank of a 16 x 16 job dial one endpoint at
 * once (240 pending, 16 from each node, more with simultaneous dials): a
 * cap of 64 / 16 closed legitimate handshakes there until connects timed out. */
TEST(tcp_auth_limits, defaults_hold_a_whole_16x16_job_dialing_at_once)
{
	using wu::tcp::detail::auth_limits;
	auth_limits z;
	z.pending = z.per_addr = 0;
	auth_limits d = z.resolve(1024);
	EXPECT_GE(d.pending, 240u);
	EXPECT_GE(d.per_addr, 32u);
	EXPECT_LE(d.pending, 1024u / 4) << "unauthenticated connections may take at most a quarter of the descriptors";
	EXPECT_EQ(z.resolve(100).pending, 64u);
	EXPECT_EQ(z.resolve(1u << 30).pending, 4096u);
	auth_limits set;
	set.pending = 8;
	set.per_addr = 100;
	EXPECT_EQ(set.resolve(1024).per_addr, 8u) << "per address never exceeds the total";
	/* Every default is resolved, including the one read from FI_TCP_*. */
	auth_limits p = auth_limits::from_params();
	EXPECT_GT(p.pending, 0u);
	EXPECT_GT(p.per_addr, 0u);
	EXPECT_GE(p.timeout_ms, 10000) << "a handshake on a loaded node takes seconds";
}

TEST(tcp_flood, idle_connections_take_no_more_than_the_cap_and_peers_are_still_served)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	rdm_ep a{env}, b{env};
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t b_to_a = b.insert(a), a_to_b = a.insert(b);
	tcp_env menv{FI_EP_MSG};
	msg_pair m{menv};
	ASSERT_TRUE(m.l.ok());
	size_t before = open_fds();

	sockaddr_in ra{}, rp{};
	memcpy(&ra, a.name.data(), sizeof ra);
	memcpy(&rp, m.l.addr, sizeof rp);
	flooder f({ra, rp});
	drive({a.tx, a.rx}, 500);
	/* Each endpoint holds at most FI_TCP_AUTH_PENDING (64) of them; the
	 * flood comes from one address (FI_TCP_AUTH_PENDING_PER_ADDR, 16). */
	size_t during = open_fds();
	EXPECT_LE(during, before + 2 * 64 + 8) << "the flood holds " << during - before << " of our descriptors";

	/* b connects to a and they talk, both ways, several times. */
	for (int i = 0; i < 5; i++) {
		uint64_t v = 100 + i, got = 0, back = 0;
		ASSERT_EQ(fi_recv(a.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
		fi_cq_tagged_entry e;
		fi_cq_err_entry err{};
		ASSERT_EQ(wait_one(a.rx, e, &err, {b.tx, b.rx, a.tx}), 1) << fi_strerror(err.err);
		ASSERT_EQ(wait_one(b.tx, e, &err, {a.rx, b.rx, a.tx}), 1) << fi_strerror(err.err);
		EXPECT_EQ(got, v);
		ASSERT_EQ(fi_recv(b.ep, &back, sizeof back, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
		ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
		ASSERT_EQ(wait_one(b.rx, e, &err, {a.tx, a.rx, b.tx}), 1) << fi_strerror(err.err);
		ASSERT_EQ(wait_one(a.tx, e, &err, {b.rx, b.tx, a.rx}), 1) << fi_strerror(err.err);
		EXPECT_EQ(back, v);
		drive({a.tx, a.rx, b.tx, b.rx}, 50);
	}

	/* An MSG client connects to the flooded passive endpoint and talks.  The
	 * flood comes from the client's own address: on a loaded machine it can
	 * close the request before the server reads it, and the client, told
	 * FI_ECONNREFUSED, connects again (fi_wireup_security(7)). */
	ASSERT_NO_FATAL_FAILURE(connect_retrying(m, menv));
	uint64_t v = 42, got = 0;
	ASSERT_EQ(fi_recv(m.server.ep, &got, sizeof got, nullptr, 0, nullptr), 0);
	ASSERT_EQ(fi_send(m.client.ep, &v, sizeof v, nullptr, 0, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(m.server.cq, e, nullptr, {m.client.cq, a.rx}), 1);
	EXPECT_EQ(got, 42u);

	drive({a.tx, a.rx}, 300);
	size_t late = open_fds();
	EXPECT_LE(late, before + 2 * 64 + 16) << "the flood holds " << late - before << " of our descriptors";
	EXPECT_EQ(f.stop(), 0) << "the flooding process failed";
}

int main(int argc, char **argv)
{
	/* Another user when we can make one: then the flood cannot hold the key. */
	const char *const outsider = "wireup-outsider";
	if (geteuid() == 0) {
		if (!getpwnam(outsider))
			(void)!system((std::string("useradd -M -r -s /usr/sbin/nologin ") + outsider + " >/dev/null 2>&1").c_str());
		if (passwd *pw = getpwnam(outsider)) {
			flood_uid = pw->pw_uid;
			flood_gid = pw->pw_gid;
			as_other = true;
		}
	}
	printf("flooding as %s\n", as_other ? outsider : "this user");
	/* The caps this test counts against, whatever the descriptor limit. */
	setenv("FI_TCP_AUTH_PENDING", "64", 1);
	setenv("FI_TCP_AUTH_PENDING_PER_ADDR", "16", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
