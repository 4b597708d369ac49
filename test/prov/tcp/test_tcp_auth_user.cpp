/* SPDX-License-Identifier: BSD-3-Clause */
/* Another local user against a job's RDM endpoint (issue 12): run as root
 * (CI does), it creates the user `wireup-outsider` with useradd if needed
 * and forks a process as that user.  The outsider tries the library with
 * its own default key and with every key it could compute about us (the
 * old per-uid default), and tries to read our key file: it completes no
 * handshake, reads and writes none of our registered memory, and none of
 * its messages is delivered.  It also relays a handshake between two of our
 * endpoints (issue 32) and gets no connection out of it.  Not root, or no
 * useradd: SKIP (77). */
#include "../common/tcp_fixture.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace wu::test;

namespace {

const char *const outsider = "wireup-outsider";
uid_t out_uid;
gid_t out_gid;

/* What the outsider managed, reported through a pipe. */
struct verdict {
	int attempts = 0;
	int completed = 0;    /* operations that completed without error */
	int key_file_read = 0; /* it could open our key file */
};

/* The outsider's attempts against name (the target's address). */
verdict attack(const std::vector<char> &name, uint64_t mr_key, const std::string &our_key_file)
{
	verdict v;
	if (FILE *f = fopen(our_key_file.c_str(), "r")) {
		v.key_file_read = 1;
		fclose(f);
	}
	/* Its own default, then keys it could know about us. */
	const char *guesses[] = {nullptr, "wireup-job-uid-0", "0", ""};
	for (const char *g : guesses) {
		if (g)
			setenv("FI_TCP_JOB_KEY", g, 1);
		else
			unsetenv("FI_TCP_JOB_KEY");
		tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
		rdm_ep ep{env};
		if (!ep.ep)
			continue;
		fi_addr_t to;
		if (fi_av_insert(ep.av, name.data(), 1, &to, 0, nullptr) != 1)
			continue;
		uint64_t word = 0x4242424242424242ull, back = 0;
		for (int op = 0; op < 3; op++) {
			ssize_t r = op == 0   ? fi_send(ep.ep, &word, sizeof word, nullptr, to, nullptr)
				    : op == 1 ? fi_write(ep.ep, &word, sizeof word, nullptr, to, 0, mr_key, nullptr)
					      : fi_read(ep.ep, &back, sizeof back, nullptr, to, 0, mr_key, nullptr);
			v.attempts++;
			if (r)
				continue;
			fi_cq_tagged_entry e;
			fi_cq_err_entry err{};
			if (wait_one(ep.tx, e, &err, {ep.rx}) == 1)
				v.completed++;
		}
	}
	return v;
}

bool make_outsider()
{
	if (!getpwnam(outsider) &&
	    system((std::string("useradd -M -r -s /usr/sbin/nologin ") + outsider + " >/dev/null 2>&1").c_str()) != 0)
		return false;
	passwd *pw = getpwnam(outsider);
	if (!pw)
		return false;
	out_uid = pw->pw_uid;
	out_gid = pw->pw_gid;
	return true;
}

} // namespace

TEST(tcp_auth_user, another_user_gets_nowhere)
{
	/* Our key: the default per-user file (no FI_TCP_JOB_KEY, no PMIx). */
	unsetenv("FI_TCP_JOB_KEY");
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
	rdm_ep a{env};
	ASSERT_NE(a.ep, nullptr);
	std::vector<uint64_t> target(4, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, target.data(), target.size() * 8, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7, 0,
			    &mr, nullptr),
		  0);
	uint64_t got[4] = {};
	for (auto &g : got)
		ASSERT_EQ(fi_recv(a.ep, &g, sizeof g, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	uint64_t refused = wu::tcp::get_stats().refused_handshakes;

	char home[] = "/tmp/wireup-outsider-XXXXXX";
	ASSERT_NE(mkdtemp(home), nullptr);
	ASSERT_EQ(chown(home, out_uid, out_gid), 0);
	std::string our_key_file = wu::tcp::auth::key_file_path();
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(p[0]);
		alarm(120); /* never outlive a failed parent */
		if (setgroups(0, nullptr) || setgid(out_gid) || setuid(out_uid) || getuid() != out_uid)
			_exit(3);
		setenv("HOME", home, 1);
		unsetenv("XDG_CONFIG_HOME");
		unsetenv("FI_TCP_JOB_KEY_FILE");
		setenv("FI_TCP_CONN_TIMEOUT", "3000", 1);
		verdict v = attack(a.name, fi_mr_key(mr), our_key_file);
		_exit(write(p[1], &v, sizeof v) == ssize_t(sizeof v) ? 0 : 4);
	}
	::close(p[1]);
	/* Our side: keep making progress while the outsider tries. */
	int status = 0;
	while (waitpid(pid, &status, WNOHANG) == 0)
		spin({a.rx, a.tx}, 10);
	verdict v;
	ASSERT_EQ(read(p[0], &v, sizeof v), ssize_t(sizeof v));
	::close(p[0]);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
	(void)!system((std::string("rm -rf ") + home).c_str());

	EXPECT_EQ(v.attempts, 12);
	EXPECT_EQ(v.completed, 0) << "the outsider completed operations against our endpoint";
	EXPECT_EQ(v.key_file_read, 0) << "the outsider could open " << our_key_file;
	EXPECT_GE(wu::tcp::get_stats().refused_handshakes, refused + 4);
	/* Nothing delivered, nothing written. */
	spin({a.rx, a.tx}, 100);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(a.rx, &e, 1), -FI_EAGAIN);
	for (uint64_t w : target)
		EXPECT_EQ(w, 0u);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* Issue 32's relay, run by the outsider (no key): it listens where our
 * endpoint a dials, relays that connection to our endpoint b, then speaks
 * RMA to b on the connection it holds.  a's send fails, b delivers
 * nothing, and b's memory is neither written nor read. */
TEST(tcp_auth_user, an_outsider_relaying_our_handshake_gets_nowhere)
{
	unsetenv("FI_TCP_JOB_KEY");
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
	rdm_ep a{env}, b{env};
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	relay_target tb(env, b, 8);

	struct relay_verdict {
		int listening = 0, relayed = 0, target_closed = 0, read_secret = 0;
		size_t to_target = 0;
	};
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	uint64_t key = fi_mr_key(tb.mr);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(p[0]);
		alarm(60);
		if (setgroups(0, nullptr) || setgid(out_gid) || setuid(out_uid) || getuid() != out_uid)
			_exit(3);
		relay_verdict v;
		relay r(b.name);
		v.listening = r.lfd >= 0;
		if (write(p[1], &r.addr, sizeof r.addr) != ssize_t(sizeof r.addr))
			_exit(4);
		std::atomic<bool> stop{true}; /* relay until quiet */
		v.relayed = r.run(stop);
		r.attack(key, tb.base + 8, tb.base);
		v.to_target = r.to_target;
		v.target_closed = r.target_closed;
		v.read_secret = relay_target::leaked(r.after);
		_exit(write(p[1], &v, sizeof v) == ssize_t(sizeof v) ? 0 : 4);
	}
	::close(p[1]);
	sockaddr_in where{};
	ASSERT_EQ(read(p[0], &where, sizeof where), ssize_t(sizeof where));
	fi_addr_t absent;
	ASSERT_EQ(fi_av_insert(a.av, &where, 1, &absent, 0, nullptr), 1);
	uint64_t word = 0x4242;
	int ctx;
	ASSERT_EQ(fi_send(a.ep, &word, sizeof word, nullptr, absent, &ctx), 0);
	int status = 0;
	int sent = 0;
	fi_cq_err_entry err{};
	while (waitpid(pid, &status, WNOHANG) == 0) {
		spin({b.rx, b.tx, a.rx}, 5);
		fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(a.tx, &e, 1);
		if (n == 1)
			sent = 1;
		else if (n == -FI_EAVAIL && fi_cq_readerr(a.tx, &err, 0) == 1)
			sent = -1;
	}
	relay_verdict v;
	ASSERT_EQ(read(p[0], &v, sizeof v), ssize_t(sizeof v));
	::close(p[0]);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
	EXPECT_TRUE(v.listening && v.relayed) << "the relay did not run";
	EXPECT_GT(v.to_target, 0u);
	EXPECT_NE(sent, 1) << "a's send through the relay completed";
	if (sent == -1) {
		EXPECT_EQ(err.err, FI_ECONNREFUSED);
	}
	spin({b.rx, b.tx}, 100);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN) << "b delivered a relayed message";
	EXPECT_EQ(tb.got, 0u);
	EXPECT_EQ(tb.mem[0], relay_target::secret);
	EXPECT_EQ(tb.mem[1], 0u) << "the outsider wrote b's memory";
	EXPECT_EQ(v.read_secret, 0) << "the outsider read b's memory";
	EXPECT_EQ(v.target_closed, 1);
}

int main(int argc, char **argv)
{
	if (geteuid() != 0) {
		printf("SKIP: test_tcp_auth_user needs root to create and become a second user\n");
		return 77;
	}
	if (!make_outsider()) {
		printf("SKIP: could not create the user %s with useradd\n", outsider);
		return 77;
	}
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
