/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm transport against another user (issue 14): a region owned by
 * another uid is refused on attach, and a process of another user can
 * neither attach our region nor take its name.  Needs root (to chown and
 * to become uid 65534): SKIP (77) otherwise. */
#include <gtest/gtest.h>

#include <grp.h>

#include <rdma/fi_errno.h>

#include "prov/shm/region_impl.h"
#include "shm_test_util.h"

using namespace wu::shm_tp;
using wu::test::reap;
using wu::test::shm_exists;
using wu::test::shm_name;

namespace {

constexpr uid_t other_uid = 65534; /* nobody */
constexpr gid_t other_gid = 65534;

TEST(shm_region_user, region_of_another_uid_refused)
{
	std::string n = shm_name("uid");
	region *r = nullptr;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r), 0);
	std::string path = "/dev/shm/" + n;
	ASSERT_EQ(chown(path.c_str(), other_uid, other_gid), 0);
	peer *p = nullptr;
	testing::internal::CaptureStderr();
	EXPECT_EQ(peer::attach(n.c_str(), &p), -FI_EACCES);
	std::string log = testing::internal::GetCapturedStderr();
	EXPECT_NE(log.find(n), std::string::npos) << log;
	EXPECT_EQ(p, nullptr);
	ASSERT_EQ(chown(path.c_str(), 0, 0), 0);
	ASSERT_EQ(peer::attach(n.c_str(), &p), 0);
	delete p;
	delete r;
}

TEST(shm_region_user, another_user_cannot_attach_or_take_our_region)
{
	std::string n = shm_name("outsider");
	region *r = nullptr;
	ASSERT_EQ(region::create(n.c_str(), layout{}, &r), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(60);
		if (setgroups(0, nullptr) || setgid(other_gid) || setuid(other_uid) || getuid() != other_uid)
			_exit(10);
		peer *p = nullptr;
		if (peer::attach(n.c_str(), &p) != -FI_EACCES)
			_exit(11);
		region *mine = nullptr;
		if (region::create(n.c_str(), layout{}, &mine) == 0)
			_exit(12);
		_exit(0);
	}
	EXPECT_EQ(reap(pid), 0) << "10: setuid failed, 11: it attached, 12: it took the name";
	EXPECT_TRUE(shm_exists(n));
	/* Ours still works. */
	peer *p = nullptr;
	ASSERT_EQ(peer::attach(n.c_str(), &p), 0);
	cell c{};
	c.kind = 1;
	EXPECT_EQ(p->push(c), 0);
	EXPECT_TRUE(r->pop(&c));
	delete p;
	delete r;
}

} // namespace

int main(int argc, char **argv)
{
	if (geteuid() != 0) {
		printf("SKIP: test_shm_region_user needs root to chown a region and become another user\n");
		return 77;
	}
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
