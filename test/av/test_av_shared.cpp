/* SPDX-License-Identifier: BSD-3-Clause */
/* Named AVs shared through shm by real processes (fork), including a
 * writer killed in the middle of an insert. */
#include "test/av/av_fixture.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "av/arena.h"
#include "core/log.h"

using namespace wu::test;

namespace {

std::string unique_name(const char *tag)
{
	return std::string("test-") + tag + "-" + std::to_string(getpid());
}

fid_av *open_named(tcp_domain &d, const std::string &name, uint64_t flags = 0, int expect = 0,
		   void **map_addr = nullptr)
{
	fi_av_attr a{};
	a.type = FI_AV_TABLE;
	a.name = name.c_str();
	a.flags = flags;
	fid_av *av = nullptr;
	int r = fi_av_open(d.domain, &a, &av, nullptr);
	EXPECT_EQ(r, expect);
	if (map_addr)
		*map_addr = a.map_addr;
	return r ? nullptr : av;
}

/* Runs fn in a child process; returns its exit status (0 = all good). */
template <class F>
int in_child(F fn, uint32_t addr_format = FI_SOCKADDR_IN)
{
	pid_t p = fork();
	if (p == 0) {
		int rc = 1;
		{
			tcp_domain d(addr_format);
			rc = fn(d);
		}
		_exit(rc);
	}
	int st = 0;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

} // namespace

/* Several cases check that a refusal's log line names the object: the
 * per-call-site rate limit (FI_LOG_INTERVAL) would hide the later ones. */
static const int no_log_limit = setenv("FI_LOG_INTERVAL", "0", 1);

TEST(AvShared, ReadOnlyNeedsAnExistingAv)
{
	tcp_domain d;
	std::string name = unique_name("ro");
	open_named(d, name, FI_READ, -FI_ENOENT);
}

TEST(AvShared, FiAddrsAreValidInEveryProcess)
{
	tcp_domain d;
	std::string name = unique_name("share");
	void *map = nullptr;
	fid_av *av = open_named(d, name, 0, 0, &map);
	ASSERT_NE(av, nullptr);
	EXPECT_NE(map, nullptr);
	sockaddr_in s = v4("20.0.0.1", 1);
	fi_addr_t mine;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &mine, 0, nullptr), 1);
	/* Each child inserts its own addresses and checks the parent's. */
	for (int c = 0; c < 3; c++) {
		int rc = in_child([&](tcp_domain &cd) {
			fid_av *cav = open_named(cd, name);
			if (!cav || lookup_str(cav, mine) != "20.0.0.1:1")
				return 2;
			std::vector<sockaddr_in> v;
			for (int i = 0; i < 100; i++)
				v.push_back(v4("21.0.0.0", uint16_t(c * 1000 + i)));
			std::vector<fi_addr_t> fa(100);
			if (fi_av_insert(cav, v.data(), 100, fa.data(), 0, nullptr) != 100)
				return 3;
			if (wu::av::reverse(cav, &s, sizeof s) != mine)
				return 4;
			return fi_close(&cav->fid) == 0 ? 0 : 5;
		});
		EXPECT_EQ(rc, 0) << "child " << c;
	}
	/* Every child's entries are visible here, at distinct indices. */
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 100; i += 33) {
			sockaddr_in q = v4("21.0.0.0", uint16_t(c * 1000 + i));
			fi_addr_t f = wu::av::reverse(av, &q, sizeof q);
			ASSERT_NE(f, FI_ADDR_NOTAVAIL);
			EXPECT_EQ(lookup_str(av, f), "21.0.0.0:" + std::to_string(c * 1000 + i));
		}
	/* A read-only opener sees them and cannot insert. */
	int rc = in_child([&](tcp_domain &cd) {
		fid_av *ro = open_named(cd, name, FI_READ);
		if (!ro || lookup_str(ro, mine) != "20.0.0.1:1")
			return 2;
		if (fi_av_insert(ro, &s, 1, nullptr, 0, nullptr) != -FI_EACCES)
			return 3;
		return fi_close(&ro->fid);
	});
	EXPECT_EQ(rc, 0);
	close_av(av);
}

TEST(AvShared, ConcurrentWritersGetDistinctIndices)
{
	tcp_domain d;
	std::string name = unique_name("conc");
	fid_av *av = open_named(d, name);
	const int kids = 4, per = 2000;
	std::vector<pid_t> pids;
	for (int c = 0; c < kids; c++) {
		pid_t p = fork();
		if (p == 0) {
			int bad = 0;
			{
				tcp_domain cd;
				fid_av *cav = open_named(cd, name);
				for (int i = 0; i < per && cav; i++) {
					sockaddr_in s = v4("22.0.0.0", uint16_t(i));
					s.sin_addr.s_addr = htonl(0x16000000u + uint32_t(c));
					if (fi_av_insert(cav, &s, 1, nullptr, 0, nullptr) != 1)
						bad++;
				}
				if (cav)
					fi_close(&cav->fid);
			}
			_exit(bad ? 1 : 0);
		}
		pids.push_back(p);
	}
	for (pid_t p : pids) {
		int st;
		waitpid(p, &st, 0);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int c = 0; c < kids; c++)
		for (int i = 0; i < per; i += 97) {
			sockaddr_in q = v4("22.0.0.0", uint16_t(i));
			q.sin_addr.s_addr = htonl(0x16000000u + uint32_t(c));
			EXPECT_NE(wu::av::reverse(av, &q, sizeof q), FI_ADDR_NOTAVAIL);
		}
	char buf[32];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, kids * per - 1, buf, &len), 0);
	len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, kids * per, buf, &len), -FI_EINVAL);
	close_av(av);
}

static void die_now(int point)
{
	if (point == 1)
		_exit(42); /* blob written, record not: holding the lock */
}

TEST(AvShared, WriterDyingMidInsertIsHarmless)
{
	tcp_domain d(FI_SOCKADDR_IN6); /* IPv6: entries have blobs, the torn case */
	std::string name = unique_name("crash");
	fid_av *av = open_named(d, name);
	sockaddr_in6 first = v6("2001:db8::1", 1);
	ASSERT_EQ(fi_av_insert(av, &first, 1, nullptr, 0, nullptr), 1);
	int rc = in_child([&](tcp_domain &cd) {
		fid_av *cav = open_named(cd, name);
		if (!cav)
			return 6;
		std::vector<sockaddr_in6> v(10, v6("2001:db8::2", 2));
		wu::av::test_crash_hook = die_now;
		fi_av_insert(cav, v.data(), v.size(), nullptr, 0, nullptr);
		return cav ? 0 : 7; /* not reached */
	}, FI_SOCKADDR_IN6);
	EXPECT_EQ(rc, 42);
	/* The next writer recovers: the dead writer's half entry never shows. */
	uint64_t rec0 = wu::av::get_stats().recoveries;
	sockaddr_in6 next = v6("2001:db8::3", 3);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &next, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(wu::av::get_stats().recoveries, rec0 + 1);
	EXPECT_EQ(fa, 1u);
	EXPECT_EQ(lookup_str(av, 1), "[2001:db8::3]:3");
	char buf[64];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, 2, buf, &len), -FI_EINVAL);
	close_av(av);
	shm_unlink(("/wireup-av-" + name).c_str());
}

TEST(AvShared, KilledWriterLeavesOnlyWholeEntries)
{
	tcp_domain d(FI_SOCKADDR_IN6);
	std::string name = unique_name("kill");
	fid_av *av = open_named(d, name);
	for (int round = 0; round < 5; round++) {
		pid_t p = fork();
		if (p == 0) {
			tcp_domain cd(FI_SOCKADDR_IN6);
			fid_av *cav = open_named(cd, name);
			std::vector<sockaddr_in6> v(64);
			for (uint32_t i = 0;; i++) {
				for (size_t k = 0; k < v.size(); k++) {
					v[k] = v6("2001:db8::", uint16_t(k));
					v[k].sin6_addr.s6_addr[12] = uint8_t(i);
					v[k].sin6_addr.s6_addr[15] = 0x5a; /* pattern checked below */
				}
				/* Bounded, so that five rounds never fill the AV on a fast
				 * machine; then it waits to be killed. */
				if (i == 1500)
					for (;;)
						pause();
				fi_av_insert(cav, v.data(), v.size(), nullptr, 0, nullptr);
			}
		}
		usleep(20000 + 7000 * round);
		kill(p, SIGKILL);
		int st;
		waitpid(p, &st, 0);
		sockaddr_in6 mine = v6("2001:db8::77", 7);
		ASSERT_GE(fi_av_insert(av, &mine, 1, nullptr, 0, nullptr), 1);
	}
	/* Every visible entry is one a writer meant to write. */
	size_t seen = 0;
	for (fi_addr_t f = 0;; f++) {
		sockaddr_in6 s{};
		size_t len = sizeof s;
		int r = fi_av_lookup(av, f, &s, &len);
		if (r) {
			if (f > 100000)
				break;
			continue;
		}
		seen++;
		ASSERT_EQ(len, sizeof s);
		ASSERT_EQ(s.sin6_family, AF_INET6);
		ASSERT_TRUE(s.sin6_addr.s6_addr[15] == 0x5a || s.sin6_addr.s6_addr[15] == 0x77)
			<< ip_port(&s);
	}
	EXPECT_GE(seen, 5u);
	close_av(av);
	shm_unlink(("/wireup-av-" + name).c_str()); /* the killed writers never detached */
}

TEST(AvShared, SymmetricRangesAreShared)
{
	tcp_domain d;
	std::string name = unique_name("sym");
	fi_av_attr a{};
	a.type = FI_AV_TABLE;
	a.name = name.c_str();
	a.flags = FI_SYMMETRIC;
	fid_av *av = nullptr;
	ASSERT_EQ(fi_av_open(d.domain, &a, &av, nullptr), 0);
	ASSERT_EQ(fi_av_insertsym(av, "10.8.0.0", 64, "100", 16, nullptr, 0, nullptr), 1024);
	int rc = in_child([&](tcp_domain &cd) {
		fid_av *cav = open_named(cd, name, FI_READ);
		bool ok = cav && lookup_str(cav, 17) == "10.8.0.1:101";
		if (cav)
			fi_close(&cav->fid);
		return ok ? 0 : 1;
	});
	EXPECT_EQ(rc, 0);
	close_av(av);
}

/* ---- the shm object must be ours before it is trusted ---- */

namespace {

std::string shm_of(const std::string &name)
{
	return "/wireup-av-" + name;
}

/* Runs fn with library logging at level into a string (stderr). */
template <class F>
std::string logged(const char *level, F fn)
{
	setenv("FI_LOG_LEVEL", level, 1);
	wu::log_reset_for_tests();
	testing::internal::CaptureStderr();
	fn();
	std::string err = testing::internal::GetCapturedStderr();
	unsetenv("FI_LOG_LEVEL");
	wu::log_reset_for_tests();
	return err;
}

} // namespace

/* Another user creates the name first (as root, CI acts as that user):
 * the opener refuses the object instead of sharing entries (and its key)
 * with a stranger, and leaves it where it is. */
TEST(AvShared, AnotherUsersObjectIsRefused)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to create the object as a second user (CI runs as root)";
	const passwd *pw = getpwnam("nobody");
	if (!pw || pw->pw_uid == 0)
		GTEST_SKIP() << "no unprivileged user \"nobody\" to act as the second user";
	const uid_t other = pw->pw_uid;
	const gid_t other_gid = pw->pw_gid;
	std::string name = unique_name("owner");
	std::string sn = shm_of(name);
	/* The stranger's object looks like a real AV: the one a creator would
	 * have made, with its mode opened up. */
	pid_t p = fork();
	if (p == 0) {
		if (setgid(other_gid) != 0 || setuid(other) != 0)
			_exit(2);
		int rc = 1;
		{
			tcp_domain d;
			fi_av_attr a{};
			a.type = FI_AV_TABLE;
			a.name = name.c_str();
			fid_av *av = nullptr;
			if (fi_av_open(d.domain, &a, &av, nullptr) == 0) {
				int fd = shm_open(sn.c_str(), O_RDWR, 0);
				if (fd >= 0 && fchmod(fd, 0666) == 0)
					rc = 0;
				/* Leave it behind: the process dies without closing. */
				_exit(rc);
			}
		}
		_exit(3);
	}
	int st = 0;
	waitpid(p, &st, 0);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
	tcp_domain d;
	std::string err = logged("warn", [&] {
		open_named(d, name, 0, -FI_EACCES);
		open_named(d, name, FI_READ, -FI_EACCES);
	});
	EXPECT_NE(err.find(sn), std::string::npos) << err;
	EXPECT_NE(err.find("belongs to uid " + std::to_string(other)), std::string::npos) << err;
	struct stat sb{};
	ASSERT_EQ(stat(("/dev/shm" + sn).c_str(), &sb), 0) << "the stranger's object was removed";
	EXPECT_EQ(sb.st_uid, other);
	shm_unlink(sn.c_str());
}

/* Our own object with more than 0600 is refused too: someone else may
 * have written it. */
TEST(AvShared, WrongModeIsRefused)
{
	tcp_domain d;
	std::string name = unique_name("mode");
	std::string sn = shm_of(name);
	fid_av *av = open_named(d, name);
	ASSERT_NE(av, nullptr);
	int fd = shm_open(sn.c_str(), O_RDWR, 0);
	ASSERT_GE(fd, 0);
	for (mode_t m : {0644, 0660, 0606, 0700, 0400}) {
		ASSERT_EQ(fchmod(fd, m), 0);
		std::string err = logged("warn", [&] {
			open_named(d, name, 0, -FI_EACCES);
			open_named(d, name, FI_READ, -FI_EACCES);
		});
		EXPECT_NE(err.find(sn), std::string::npos) << err;
		EXPECT_NE(err.find("not 0600"), std::string::npos) << err;
	}
	ASSERT_EQ(fchmod(fd, 0600), 0);
	fid_av *again = open_named(d, name);
	EXPECT_NE(again, nullptr);
	close_av(again);
	close(fd);
	close_av(av);
}

/* A creator's umask does not change the mode openers insist on. */
TEST(AvShared, CreatedWith0600WhateverTheUmask)
{
	tcp_domain d;
	std::string name = unique_name("umask");
	mode_t old = umask(0277);
	fid_av *av = open_named(d, name);
	umask(old);
	ASSERT_NE(av, nullptr);
	struct stat sb{};
	ASSERT_EQ(stat(("/dev/shm" + shm_of(name)).c_str(), &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0600u);
	close_av(av);
}

/* MPICH probes for a read-only AV at MPI_Init before anyone created it:
 * a normal run prints no warning, the answer is still -FI_ENOENT. */
TEST(AvShared, ReadOnlyProbeIsInfoNotWarning)
{
	tcp_domain d;
	std::string name = unique_name("probe");
	std::string warn = logged("warn", [&] { open_named(d, name, FI_READ, -FI_ENOENT); });
	EXPECT_EQ(warn, "");
	std::string info = logged("info", [&] { open_named(d, name, FI_READ, -FI_ENOENT); });
	EXPECT_NE(info.find("does not exist"), std::string::npos) << info;
}

/* Header fields used as sizes or indices are checked against the mapped
 * size before use: a corrupt object is refused with a log line naming it,
 * never a crash or a hang. */
namespace {

using wu::av::header;

struct header_case {
	const char *what;
	void (*edit)(header &h);
	int expect;
};

/* One valid symmetric range over entry 0, the base of the range cases. */
void one_range(header &h)
{
	h.nranges = 1;
	h.end = 1;
	h.ranges[0] = {};
	h.ranges[0].count = 1;
	h.ranges[0].nodecnt = 1;
	h.ranges[0].svccnt = 1;
	h.ranges[0].port0 = 1;
	h.ranges[0].family = AF_INET;
	h.ranges[0].ip_lo = 0x0a000001;
}

const header_case header_cases[] = {
	{"untouched", [](header &) {}, 0},
	{"valid_range", one_range, 0},
	{"version", [](header &h) { h.version = 99; }, -FI_EINVAL},
	{"total_bytes", [](header &h) { h.total_bytes += 4096; }, -FI_EINVAL},
	{"max_slots_huge", [](header &h) { h.max_slots = uint64_t{1} << 62; }, -FI_EINVAL},
	{"max_slots_zero", [](header &h) { h.max_slots = 0; }, -FI_EINVAL},
	{"max_slots_double", [](header &h) { h.max_slots *= 2; }, -FI_EINVAL},
	{"max_slots_all_ones", [](header &h) { h.max_slots = ~uint64_t{0}; }, -FI_EINVAL},
	{"blob_size", [](header &h) { h.blob_size = 8; }, -FI_EINVAL},
	{"av_type", [](header &h) { h.av_type = 77; }, -FI_EINVAL},
	{"end", [](header &h) { h.end = h.max_slots + 1; }, -FI_EINVAL},
	{"nfree", [](header &h) { h.nfree = h.end + 1; }, -FI_EINVAL},
	{"node_bump", [](header &h) { h.node_bump = ~uint64_t{0}; }, -FI_EINVAL},
	{"nranges", [](header &h) { h.nranges = 0xffffffffu; }, -FI_EINVAL},
	{"nranges_33", [](header &h) { h.nranges = 33; h.end = 0; }, -FI_EINVAL},
	{"range_count", [](header &h) { one_range(h); h.ranges[0].count = 5; }, -FI_EINVAL},
	{"range_svccnt", [](header &h) { one_range(h); h.ranges[0].svccnt = 0; h.ranges[0].count = 0; }, -FI_EINVAL},
	{"range_base", [](header &h) { one_range(h); h.ranges[0].base = ~uint64_t{0}; }, -FI_EINVAL},
	{"range_past_end", [](header &h) { one_range(h); h.ranges[0].nodecnt = 2; h.ranges[0].count = 2; }, -FI_EINVAL},
	{"range_ports", [](header &h) { one_range(h); h.ranges[0].port0 = 65535; h.ranges[0].svccnt = 2; h.ranges[0].count = 2; h.end = 2; }, -FI_EINVAL},
	{"range_family", [](header &h) { one_range(h); h.ranges[0].family = 0; }, -FI_EINVAL},
	{"range_by_name", [](header &h) { one_range(h); h.ranges[0].by_name = 7; }, -FI_EINVAL},
	{"range_node_off", [](header &h) { one_range(h); h.ranges[0].by_name = 1; h.ranges[0].node_off = uint64_t{1} << 60; }, -FI_EINVAL},
};

class AvSharedHeader : public ::testing::TestWithParam<header_case> {};

} // namespace

TEST_P(AvSharedHeader, CorruptFieldIsRefused)
{
	const header_case &c = GetParam();
	tcp_domain d;
	std::string name = unique_name(c.what);
	std::string sn = shm_of(name);
	fid_av *av = open_named(d, name); /* the creator keeps it alive */
	ASSERT_NE(av, nullptr);
	int fd = shm_open(sn.c_str(), O_RDWR, 0);
	ASSERT_GE(fd, 0);
	void *m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(m, MAP_FAILED);
	auto *h = static_cast<header *>(m);
	header saved;
	memcpy(static_cast<void *>(&saved), h, sizeof saved);
	c.edit(*h);
	fid_av *rw = nullptr, *ro = nullptr;
	std::string err = logged("warn", [&] {
		rw = open_named(d, name, 0, c.expect);
		ro = open_named(d, name, FI_READ, c.expect);
	});
	if (c.expect) {
		EXPECT_NE(err.find(sn), std::string::npos) << err;
	} else {
		EXPECT_EQ(err, "");
		EXPECT_EQ(lookup_str(ro, 7), "error " + std::to_string(-FI_EINVAL));
	}
	close_av(ro);
	close_av(rw);
	memcpy(static_cast<void *>(h), &saved, sizeof saved); /* so that the creator closes cleanly */
	munmap(m, 4096);
	close_av(av);
}

INSTANTIATE_TEST_SUITE_P(Fields, AvSharedHeader, ::testing::ValuesIn(header_cases),
			 [](const ::testing::TestParamInfo<header_case> &i) { return std::string(i.param.what); });
