/* SPDX-License-Identifier: BSD-3-Clause */
/* Another local user against our shm endpoint (issue 14: "A process of
 * another user cannot attach or write a region"): run as root (CI does),
 * it creates the user `wireup-outsider` with useradd if needed and forks a
 * process as that user.  The outsider opens our endpoint's region file
 * directly (read-write and read-only) and sends us 8 B, 8 KiB and 1 MiB
 * through its own shm endpoint: it opens nothing, completes no send, and
 * none of its messages is delivered to our posted receives.
 *
 * Name squatting (issue 32): before we open anything, the outsider
 * creates in /dev/shm every name our next endpoints could get as far as
 * it can predict them (the generated names of this pid and the next 200,
 * the unkeyed rank names of our job) and, as if it had learnt it, the
 * rank name we compute: our endpoints still enable and talk, and the
 * squatted rank name is reported and routed around.  Not root, or no
 * useradd: SKIP (77). */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "prov/shm/shm_addr.h"

using namespace wu::test::shm;

namespace {

const char *const outsider = outsider_name;
uid_t out_uid;
gid_t out_gid;
constexpr size_t sizes[] = {8, 8192, 1 << 20};
constexpr int bound_ms = 30000;

/* What the outsider managed, reported through a pipe. */
struct verdict {
	int opened = 0;     /* opens of our region file that worked */
	int tried_open = 0; /* 0 when our address names no /dev/shm file we know of */
	int setup = 0;      /* its own endpoint: 0 or the failing fi errno */
	int inserted = 0;   /* fi_av_insert of our address worked */
	int sends = 0;      /* sends attempted */
	int refused = 0;    /* refused at once by fi_tsend */
	int completed = 0;  /* completed without error */
	int failed = 0;     /* error completions */
	int hung = 0;       /* neither within the bound */
};

verdict attack(const std::vector<char> &name)
{
	verdict v;
	std::string path = region_path(name);
	if (!path.empty()) {
		v.tried_open = 1;
		for (int mode : {O_RDWR, O_RDONLY}) {
			int fd = open(path.c_str(), mode);
			if (fd >= 0) {
				v.opened++;
				::close(fd);
			}
		}
	}
	env e(FI_TAGGED);
	if (e.error) {
		v.setup = e.error;
		return v;
	}
	ep me(e);
	if (me.error) {
		v.setup = me.error;
		return v;
	}
	fi_addr_t to = e.insert(name);
	if (to == FI_ADDR_NOTAVAIL)
		return v;
	v.inserted = 1;
	for (size_t len : sizes) {
		std::vector<unsigned char> buf(len, 0x42);
		fi_context2 ctx;
		v.sends++;
		ssize_t s;
		auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
		fi_cq_tagged_entry ce;
		fi_cq_err_entry err;
		while ((s = fi_tsend(me.e, buf.data(), len, nullptr, to, 5, &ctx)) == -FI_EAGAIN &&
		       clock::now() < deadline)
			fi_cq_read(me.tx, &ce, 0);
		if (s) {
			v.refused++;
			continue;
		}
		int r = wait_cq(me.tx, &ce, &err, deadline);
		if (r == 1)
			v.completed++;
		else if (r == -1)
			v.failed++;
		else
			v.hung++;
	}
	return v;
}

/* Forks a process that becomes the outsider, with pipes down to it and up
 * from it: its pid, 0 in it (the outsider already), -1 on failure. */
pid_t fork_outsider(int (&down)[2], int (&up)[2])
{
	if (pipe(down) || pipe(up))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		::close(down[1]);
		::close(up[0]);
		alarm(300); /* never outlive a failed parent */
		if (setgroups(0, nullptr) || setgid(out_gid) || setuid(out_uid) || getuid() != out_uid)
			_exit(3);
		return 0;
	}
	if (pid > 0) {
		::close(down[0]);
		::close(up[1]);
	}
	return pid;
}

} // namespace

/* Runs f with our stderr (the log) going to a file; what was written. */
template <class F>
std::string logged(F &&f)
{
	char path[] = "/tmp/wu-squat-log-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return "";
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	f();
	fflush(stderr);
	dup2(saved, 2);
	::close(saved);
	::close(fd);
	std::ifstream in(path);
	std::stringstream ss;
	ss << in.rdbuf();
	unlink(path);
	return ss.str();
}

/* A small tagged message from a to b (b's fi_addr_t in a's AV is to). */
::testing::AssertionResult talk(ep &a, fi_addr_t to, ep &b, uint64_t tag)
{
	uint64_t out = tag * 7, in = 0;
	fi_context2 sc, rc;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	if (ssize_t r = fi_trecv(b.e, &in, sizeof in, nullptr, FI_ADDR_UNSPEC, tag, 0, &rc))
		return ::testing::AssertionFailure() << "fi_trecv: " << fi_strerror(int(-r));
	ssize_t s;
	fi_cq_tagged_entry ce;
	while ((s = fi_tsend(a.e, &out, sizeof out, nullptr, to, tag, &sc)) == -FI_EAGAIN && clock::now() < deadline)
		fi_cq_read(a.tx, &ce, 0);
	if (s)
		return ::testing::AssertionFailure() << "fi_tsend: " << fi_strerror(int(-s));
	bool sent = false, got = false;
	while ((!sent || !got) && clock::now() < deadline) {
		if (!sent && fi_cq_read(a.tx, &ce, 1) == 1)
			sent = true;
		if (!got && fi_cq_read(b.rx, &ce, 1) == 1)
			got = true;
	}
	if (!sent || !got || in != out)
		return ::testing::AssertionFailure() << "sent " << sent << " received " << got << " value " << in;
	return ::testing::AssertionSuccess();
}

/* First in the file: only the first endpoint of a process tries the rank
 * name (run alone, with --gtest_filter, it is first too). */
TEST(shm_user, squatted_names_neither_stop_endpoints_nor_hide_a_rank)
{
	/* Our job and rank: the first endpoint tries the rank's name. */
	std::string job = "sq" + std::to_string(getpid());
	setenv("FI_SHM_JOB", job.c_str(), 1);
	setenv("PMIX_RANK", "0", 1);
	char rank0[wu::shm::addr_max];
	ASSERT_GT(wu::shm::rank_addr(job.c_str(), 0, rank0, sizeof rank0), 0);
	std::string uid = std::to_string(getuid());
	std::vector<std::string> names;
	for (pid_t p = getpid(); p <= getpid() + 200; p++)
		for (int n = 0; n < (p == getpid() ? 16 : 4); n++)
			names.push_back("wu" + uid + "." + std::to_string(p) + "." + std::to_string(n));
	for (int r = 0; r < 2; r++)
		names.push_back("wu" + uid + ".j" + job + "." + std::to_string(r));
	if (std::find(names.begin(), names.end(), rank0 + wu::shm::scheme_len) == names.end())
		names.push_back(rank0 + wu::shm::scheme_len); /* keyed: not among the above */
	std::vector<std::vector<char>> lists(1);
	for (auto &n : names) {
		if (lists.back().size() + n.size() + 1 > 4096)
			lists.emplace_back();
		lists.back().insert(lists.back().end(), n.begin(), n.end());
		lists.back().push_back('\n');
	}
	lists.emplace_back();

	int down[2], up[2];
	pid_t pid = fork_outsider(down, up);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int made = 0;
		std::vector<char> blob; /* names, a line each, in blobs; an empty one ends */
		do {
			if (!get_blob(down[0], blob, 60000))
				_exit(4);
			std::stringstream in(std::string(blob.begin(), blob.end()));
			for (std::string n; std::getline(in, n);) {
				int fd = shm_open(n.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
				if (fd >= 0) {
					made++;
					::close(fd);
				}
			}
		} while (!blob.empty());
		_exit(put(up[1], &made, sizeof made) ? 0 : 5);
	}
	int made = -1;
	bool reported = true;
	for (auto &l : lists)
		reported = reported && put_blob(down[1], l);
	reported = reported && get(up[0], &made, sizeof made, 60000);
	int status = reap(pid, 60000);
	::close(up[0]);
	::close(down[1]);
	struct cleanup {
		std::vector<std::string> &n;
		~cleanup()
		{
			for (auto &x : n)
				shm_unlink(x.c_str()); /* root may remove the outsider's */
		}
	} gone{names};
	ASSERT_TRUE(reported) << "the outsider reported nothing (status " << status << ")";
	ASSERT_EQ(WEXITSTATUS(status), 0) << "the outsider could not become " << outsider;
	ASSERT_EQ(made, int(names.size())) << "the outsider could not create every name";

	env v(FI_TAGGED);
	ASSERT_EQ(v.error, 0) << v.what;
	std::unique_ptr<ep> a;
	std::string log = logged([&] { a = std::make_unique<ep>(v); });
	ASSERT_EQ(a->error, 0) << "the rank's endpoint did not enable: " << a->what << "\n" << log;
	/* The rank name is someone else's: reported, and not ours. */
	EXPECT_STRNE(printable(a->name).c_str(), rank0);
	EXPECT_NE(log.find("rank name " + std::string(rank0 + wu::shm::scheme_len)), std::string::npos) << log;
	ep b(v);
	ASSERT_EQ(b.error, 0) << "a second endpoint did not enable: " << b.what;
	fi_addr_t ab = v.insert(b.name), ba = v.insert(a->name);
	ASSERT_NE(ab, FI_ADDR_NOTAVAIL);
	ASSERT_NE(ba, FI_ADDR_NOTAVAIL);
	EXPECT_TRUE(talk(*a, ab, b, 1));
	EXPECT_TRUE(talk(b, ba, *a, 2));

	/* A process of one of the next pids enables and reaches us too. */
	peer_proc ch;
	ASSERT_TRUE(fork_peer(ch, [&](int in, int out) {
		env cv(FI_TAGGED);
		ep c(cv);
		if (cv.error || c.error)
			_exit(10);
		fi_addr_t to = meet_parent(cv, c, in, out, 30000);
		if (to == FI_ADDR_NOTAVAIL)
			_exit(11);
		uint64_t x = 42;
		fi_context2 ctx;
		auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
		ssize_t s;
		fi_cq_tagged_entry ce;
		fi_cq_err_entry err;
		while ((s = fi_tsend(c.e, &x, sizeof x, nullptr, to, 3, &ctx)) == -FI_EAGAIN &&
		       clock::now() < deadline)
			fi_cq_read(c.tx, &ce, 0);
		_exit(s == 0 && wait_cq(c.tx, &ce, &err, deadline) == 1 ? 0 : 12);
	}));
	ASSERT_NE(meet_child(ch, v, b, 30000), FI_ADDR_NOTAVAIL) << "the child's endpoint did not enable";
	uint64_t x = 0;
	fi_context2 rc;
	ASSERT_EQ(fi_trecv(b.e, &x, sizeof x, nullptr, FI_ADDR_UNSPEC, 3, 0, &rc), 0);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	EXPECT_EQ(wait_cq(b.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms)), 1);
	EXPECT_EQ(x, 42u);
	int cst = reap(ch.pid, 60000);
	ch.pid = -1;
	EXPECT_TRUE(WIFEXITED(cst) && WEXITSTATUS(cst) == 0) << "child status " << cst;

	/* Whoever computes the rank's address finds the squatter's object
	 * refused, at once: an error, not a send that hangs or lands there. */
	std::vector<char> r0(rank0, rank0 + strlen(rank0) + 1);
	fi_addr_t sq = v.insert(r0);
	if (sq != FI_ADDR_NOTAVAIL) {
		uint64_t y = 1;
		fi_context2 sc;
		auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
		ssize_t s;
		while ((s = fi_tsend(b.e, &y, sizeof y, nullptr, sq, 4, &sc)) == -FI_EAGAIN && clock::now() < deadline)
			fi_cq_read(b.tx, &ce, 0);
		if (s == 0) {
			EXPECT_EQ(wait_cq(b.tx, &ce, &err, deadline), -1) << "a send to the squatted rank name did not fail";
		}
	}
	unsetenv("FI_SHM_JOB");
	unsetenv("PMIX_RANK");
}

TEST(shm_user, another_user_cannot_attach_or_deliver)
{
	int down[2], up[2];
	/* Forked before we open anything: the outsider inherits no mapping. */
	pid_t pid = fork_outsider(down, up);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		std::vector<char> name;
		if (!get_blob(down[0], name, 60000))
			_exit(4);
		verdict v = attack(name);
		_exit(put(up[1], &v, sizeof v) ? 0 : 5);
	}

	env v(FI_TAGGED);
	ASSERT_EQ(v.error, 0) << v.what;
	ep me(v);
	ASSERT_EQ(me.error, 0) << me.what;
	/* Receives that would take any tag from anyone. */
	std::vector<std::vector<unsigned char>> bufs;
	fi_context2 ctx[3];
	for (int i = 0; i < 3; i++) {
		bufs.emplace_back(sizes[2], 0);
		ASSERT_EQ(fi_trecv(me.e, bufs[i].data(), bufs[i].size(), nullptr, FI_ADDR_UNSPEC, 0, ~0ull, &ctx[i]), 0);
	}
	std::string path = region_path(me.name);
	if (!path.empty()) {
		struct stat st;
		ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
		EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
		EXPECT_EQ(st.st_uid, geteuid()) << path;
	}
	ASSERT_TRUE(put_blob(down[1], me.name));

	/* Our side: keep making progress while the outsider tries. */
	verdict got;
	bool have = false;
	int deliveries = 0;
	auto deadline = clock::now() + std::chrono::seconds(240);
	while (!have && clock::now() < deadline) {
		fi_cq_tagged_entry ce;
		fi_cq_err_entry err;
		if (fi_cq_read(me.rx, &ce, 1) == 1)
			deliveries++;
		else if (fi_cq_readerr(me.rx, &err, 0) == 1)
			deliveries++;
		fi_cq_read(me.tx, &ce, 0);
		pollfd pf{up[0], POLLIN, 0};
		if (poll(&pf, 1, 1) == 1)
			have = get(up[0], &got, sizeof got, 1000);
	}
	int status = reap(pid, 60000);
	::close(up[0]);
	::close(down[1]);
	ASSERT_TRUE(have) << "the outsider reported nothing (status " << status << ")";
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0) << "the outsider could not become " << outsider;

	EXPECT_EQ(got.setup, 0) << "the outsider could not open its own shm endpoint: " << fi_strerror(-got.setup);
	if (got.tried_open)
		EXPECT_EQ(got.opened, 0) << "the outsider opened " << path;
	else
		printf("note: our address %s names no /dev/shm file; the direct open was not tried\n",
		       printable(me.name).c_str());
	EXPECT_EQ(got.completed, 0) << "the outsider's sends to our endpoint completed";
	EXPECT_EQ(got.hung, 0) << "the outsider's sends neither failed nor completed within the bound";
	printf("outsider: address inserted %s; %d sends: %d refused at once, %d error completions\n",
	       got.inserted ? "yes" : "no (refused)", got.sends, got.refused, got.failed);
	/* Nothing delivered. */
	for (int i = 0; i < 200; i++) {
		fi_cq_tagged_entry ce;
		if (fi_cq_read(me.rx, &ce, 1) == 1)
			deliveries++;
		usleep(1000);
	}
	EXPECT_EQ(deliveries, 0) << "a message of the outsider reached our receives";
	for (auto &b : bufs)
		for (unsigned char x : b)
			ASSERT_EQ(x, 0) << "our receive buffer was written";
}

int main(int argc, char **argv)
{
	if (geteuid() != 0) {
		printf("SKIP: test_shm_user needs root to create and become a second user\n");
		return 77;
	}
	if (int s = skip_without_provider("test_shm_user"))
		return s;
	if (!make_outsider(&out_uid, &out_gid)) {
		printf("SKIP: could not create the user %s with useradd\n", outsider);
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
