/* Named AVs shared through shm by real processes (fork), including a
 * writer killed in the middle of an insert. */
#include "test/av/av_fixture.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

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
