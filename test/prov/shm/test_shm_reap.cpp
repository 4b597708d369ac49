/* SPDX-License-Identifier: BSD-3-Clause */
/* Regions of processes killed by a signal (issue 30): a process killed with
 * SIGKILL cannot unlink its region; the first endpoint of a later process of
 * the user removes it once it is FI_SHM_REAP_AGE seconds old, and leaves
 * alone what is not a dead region of ours (a live owner's, another pid
 * namespace's, a file that is no region).  Each case runs in a private
 * /dev/shm (a mount namespace with its own tmpfs), so that it neither sweeps
 * nor is swept by other tests running beside it; SKIP when none can be made. */
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "prov/shm/region_impl.h"
#include "shm_proc.h"

using namespace wu::test::shm;

namespace {

bool write_file(const char *path, const std::string &s)
{
	std::ofstream f(path);
	f << s;
	return bool(f.flush());
}

/* This process gets a /dev/shm of its own: as root a mount namespace,
 * else a user namespace too.  "" or why not. */
std::string private_dev_shm()
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWNS) != 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
			return std::string("unshare(CLONE_NEWNS), also in a user namespace: ") + strerror(errno);
		if (!write_file("/proc/self/setgroups", "deny") ||
		    !write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
		    !write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
			return "cannot map our ids in a user namespace";
	}
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
		return std::string("mount --make-rprivate /: ") + strerror(errno);
	if (mount("wu-reap", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
		return std::string("mount tmpfs /dev/shm: ") + strerror(errno);
	return "";
}

bool exists(const std::string &path)
{
	struct stat sb{};
	return stat(path.c_str(), &sb) == 0;
}

/* A process with one shm endpoint: its region's path comes back through
 * the pipe; it then waits to be killed (hold) or exits normally.  age:
 * FI_SHM_REAP_AGE for it (nullptr: the default). */
pid_t spawn_ep(bool hold, const char *age, std::string *path)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		alarm(60);
		if (age)
			setenv("FI_SHM_REAP_AGE", age, 1);
		else
			unsetenv("FI_SHM_REAP_AGE");
		env v;
		ep e(v);
		std::string r = v.error || e.error ? "" : region_path(e.name);
		put_blob(p[1], std::vector<char>(r.begin(), r.end()));
		if (r.empty())
			_exit(2);
		if (hold)
			pause();
		exit(0); /* normal exit: the region goes at exit */
	}
	close(p[1]);
	std::vector<char> b;
	if (pid > 0 && get_blob(p[0], b, 30000))
		path->assign(b.begin(), b.end());
	close(p[0]);
	return pid;
}

/* A copy of a dead region under another name, with hdr changed by edit. */
bool copy_region(const std::string &from, const std::string &name, void (*edit)(wu::shm_tp::region_hdr &))
{
	int in = open(from.c_str(), O_RDONLY);
	int out = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
	struct stat sb{};
	bool ok = in >= 0 && out >= 0 && fchmod(out, 0600) == 0 && fstat(in, &sb) == 0 &&
		  ftruncate(out, sb.st_size) == 0;
	void *m = ok ? mmap(nullptr, size_t(sb.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, out, 0) : MAP_FAILED;
	if (m != MAP_FAILED) {
		ok = pread(in, m, size_t(sb.st_size), 0) == sb.st_size;
		auto *h = static_cast<wu::shm_tp::region_hdr *>(m);
		snprintf(h->name, sizeof h->name, "%s", name.c_str());
		edit(*h);
		munmap(m, size_t(sb.st_size));
	} else {
		ok = false;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

/* The case, in the private /dev/shm: "" when all held, else what did not. */
std::string reap_case()
{
	std::string why;
	auto expect = [&](bool c, const std::string &what) {
		if (!c && why.empty())
			why = what;
	};
	std::string killed, live, young_sweeper, sweeper;
	pid_t k = spawn_ep(true, nullptr, &killed);
	if (k <= 0 || killed.empty())
		return "the endpoint of the process to kill did not open";
	kill(k, SIGKILL);
	reap(k, 30000);
	expect(exists(killed), "SIGKILL left no region (" + killed + "): nothing to test");

	std::string uid = std::to_string(geteuid());
	/* Not regions, or not ours to judge: they stay. */
	std::string note = "wu" + uid + ".xjob.7", foreign = "wu" + uid + ".foreignns";
	int fd = shm_open(note.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
	expect(fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, std::string(256, '\1').data(), 256) == 256,
	       "cannot make a note-like object");
	if (fd >= 0)
		close(fd);
	expect(copy_region(killed, foreign, [](wu::shm_tp::region_hdr &h) { h.owner_pidns ^= 1; }),
	       "cannot copy the dead region");

	pid_t l = spawn_ep(true, nullptr, &live);
	expect(l > 0 && !live.empty(), "the live endpoint did not open");

	/* The default age (60 s): the dead region is younger; it stays. */
	pid_t y = spawn_ep(false, nullptr, &young_sweeper);
	expect(reap(y, 30000) == 0, "the endpoint with the default FI_SHM_REAP_AGE failed");
	expect(exists(killed), "a region younger than FI_SHM_REAP_AGE was removed");
	expect(!young_sweeper.empty() && !exists(young_sweeper), "a normal exit left its region");

	/* Age 0: the next endpoint removes the dead region, and only it. */
	pid_t s = spawn_ep(false, "0", &sweeper);
	expect(reap(s, 30000) == 0, "the sweeping endpoint failed");
	expect(!exists(killed), "the region of the killed process is still there after a later endpoint opened");
	expect(exists(live), "the region of a live process was removed");
	expect(exists("/dev/shm/" + note), "an object that is not a region was removed");
	expect(exists("/dev/shm/" + foreign), "a region of another pid namespace was removed");
	if (l > 0) {
		kill(l, SIGKILL);
		reap(l, 30000);
	}
	/* Nothing else of ours is left but what this case made itself. */
	std::set<std::string> left;
	if (DIR *d = opendir("/dev/shm")) {
		while (dirent *e = readdir(d))
			if (e->d_name[0] != '.')
				left.insert(e->d_name);
		closedir(d);
	}
	std::set<std::string> want = {note, foreign, live.substr(strlen("/dev/shm/"))};
	expect(left == want, "/dev/shm holds " + std::to_string(left.size()) + " objects, not the 3 expected");
	return why;
}

TEST(shm_reap, region_of_a_killed_process_goes_with_the_next_endpoint)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		alarm(120);
		std::string why = private_dev_shm();
		std::string out = why.empty() ? reap_case() : "SKIP: " + why;
		put_blob(p[1], std::vector<char>(out.begin(), out.end()));
		_exit(0);
	}
	close(p[1]);
	std::vector<char> b;
	bool got = get_blob(p[0], b, 110000);
	close(p[0]);
	EXPECT_EQ(reap(pid, 10000), 0);
	ASSERT_TRUE(got) << "the case process said nothing";
	std::string out(b.begin(), b.end());
	if (out.rfind("SKIP: ", 0) == 0)
		GTEST_SKIP() << out.substr(6);
	EXPECT_EQ(out, "");
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	if (int r = skip_without_provider(argv[0]))
		return r;
	return RUN_ALL_TESTS();
}
