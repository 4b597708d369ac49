/* Another local user against our shm endpoint (issue 14: "A process of
 * another user cannot attach or write a region"): run as root (CI does),
 * it creates the user `wireup-outsider` with useradd if needed and forks a
 * process as that user.  The outsider opens our endpoint's region file
 * directly (read-write and read-only) and sends us 8 B, 8 KiB and 1 MiB
 * through its own shm endpoint: it opens nothing, completes no send, and
 * none of its messages is delivered to our posted receives.  Not root, or
 * no useradd: SKIP (77). */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cstdlib>

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

} // namespace

TEST(shm_user, another_user_cannot_attach_or_deliver)
{
	int down[2], up[2];
	ASSERT_EQ(pipe(down), 0);
	ASSERT_EQ(pipe(up), 0);
	/* Forked before we open anything: the outsider inherits no mapping. */
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(down[1]);
		::close(up[0]);
		alarm(300); /* never outlive a failed parent */
		if (setgroups(0, nullptr) || setgid(out_gid) || setuid(out_uid) || getuid() != out_uid)
			_exit(3);
		std::vector<char> name;
		if (!get_blob(down[0], name, 60000))
			_exit(4);
		verdict v = attack(name);
		_exit(put(up[1], &v, sizeof v) ? 0 : 5);
	}
	::close(down[0]);
	::close(up[1]);

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
