/* The shm provider's addresses (src/prov/shm/shm_addr.h): names computed
 * from a job and a rank, generated names, fi_getinfo's placement of
 * fi_shm:// addresses, AV insertion of FI_ADDR_STR names (packed, as
 * libfabric's shm takes them, and as a char * array); and transfers larger
 * than a bounce buffer with and without the single copy (FI_SHM_CMA). */
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "prov/shm/shm_addr.h"
#include "prov_fixture.h"

using namespace wu::test;

namespace {

TEST(shm_addr, rank_addresses_are_computed_alike_and_differ_by_rank_and_job)
{
	char a[wu::shm::addr_max], b[wu::shm::addr_max], c[wu::shm::addr_max];
	long n = wu::shm::rank_addr("job1", 3, a, sizeof a);
	ASSERT_GT(n, 0);
	EXPECT_EQ(size_t(n), strlen(a) + 1);
	EXPECT_EQ(wu::shm::addr_len(a, sizeof a), n);
	EXPECT_EQ(strncmp(a, "fi_shm://", 9), 0);
	ASSERT_GT(wu::shm::rank_addr("job1", 3, b, sizeof b), 0);
	EXPECT_STREQ(a, b);
	ASSERT_GT(wu::shm::rank_addr("job1", 4, c, sizeof c), 0);
	EXPECT_STRNE(a, c);
	ASSERT_GT(wu::shm::rank_addr("job2", 3, c, sizeof c), 0);
	EXPECT_STRNE(a, c);
	/* A PMIx namespace (long, with characters no name may hold) is hashed. */
	const char *ns = "prterun-some-very-long-host-name-123456@1";
	ASSERT_GT(wu::shm::rank_addr(ns, 4294967295u, c, sizeof c), 0);
	EXPECT_GT(wu::shm::addr_len(c, sizeof c), 0) << c;
	EXPECT_EQ(wu::shm::rank_addr(nullptr, 0, c, sizeof c), -FI_EINVAL);
	EXPECT_EQ(wu::shm::rank_addr("", 0, c, sizeof c), -FI_EINVAL);
	EXPECT_EQ(wu::shm::rank_addr("job1", 3, c, 10), -FI_ETOOSMALL);
}

TEST(shm_addr, names_are_checked)
{
	EXPECT_TRUE(wu::shm::valid_name("a.b-c_9", 7));
	EXPECT_FALSE(wu::shm::valid_name("a/b", 3));
	EXPECT_FALSE(wu::shm::valid_name(".hidden", 7));
	EXPECT_FALSE(wu::shm::valid_name("", 0));
	std::string longest(wu::shm::name_max, 'x');
	EXPECT_TRUE(wu::shm::valid_name(longest.c_str(), longest.size()));
	EXPECT_FALSE(wu::shm::valid_name((longest + "x").c_str(), longest.size() + 1));
	EXPECT_LT(wu::shm::addr_len("fi_shm://", 10), 0);
	EXPECT_LT(wu::shm::addr_len("fi_sockaddr_in://1.2.3.4:5", 27), 0);
	EXPECT_LT(wu::shm::addr_len("fi_shm://abc", 12), 0); /* no NUL within the bytes given */
	EXPECT_EQ(wu::shm::addr_len("fi_shm://abc", 13), 13);
}

TEST(shm_addr, a_rank_under_a_job_takes_the_computed_name)
{
	setenv("FI_SHM_JOB", "jobx", 1);
	setenv("PMIX_RANK", "7", 1);
	std::string named = wu::shm::generate_name(true);
	std::string later = wu::shm::generate_name(false);
	unsetenv("FI_SHM_JOB");
	std::string alone = wu::shm::generate_name(true);
	unsetenv("PMIX_RANK");
	char want[wu::shm::addr_max];
	ASSERT_GT(wu::shm::rank_addr("jobx", 7, want, sizeof want), 0);
	EXPECT_EQ(named, std::string(want + wu::shm::scheme_len));
	std::string pid = "." + std::to_string(getpid()) + ".";
	EXPECT_NE(later.find(pid), std::string::npos) << later;
	EXPECT_NE(alone.find(pid), std::string::npos) << alone;
	EXPECT_NE(later, alone);
}

fi_info *shm_info(const char *node, uint64_t flags, int *ret)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("shm");
	hints->ep_attr->type = FI_EP_RDM;
	fi_info *got = nullptr;
	*ret = fi_getinfo(FI_VERSION(1, 17), node, nullptr, flags, hints, &got);
	fi_freeinfo(hints);
	return got;
}

TEST(shm_addr, getinfo_places_fi_shm_names_and_the_endpoint_takes_them)
{
	int r;
	fi_info *i = shm_info(nullptr, 0, &r);
	ASSERT_EQ(r, 0);
	ASSERT_NE(i, nullptr);
	EXPECT_EQ(i->addr_format, uint32_t(FI_ADDR_STR));
	EXPECT_EQ(i->caps & FI_REMOTE_COMM, 0u);
	EXPECT_NE(i->caps & FI_LOCAL_COMM, 0u);
	fi_freeinfo(i);
	EXPECT_EQ(shm_info("127.0.0.1", FI_SOURCE, &r), nullptr);
	EXPECT_EQ(r, -FI_ENODATA);
	std::string mine = "fi_shm://wu-test-given-" + std::to_string(getpid());
	i = shm_info(mine.c_str(), FI_SOURCE, &r);
	ASSERT_EQ(r, 0);
	ASSERT_NE(i->src_addr, nullptr);
	EXPECT_STREQ(static_cast<char *>(i->src_addr), mine.c_str());
	EXPECT_EQ(i->src_addrlen, mine.size() + 1);
	fi_freeinfo(i);

	/* An endpoint opened with it is known by it. */
	prov_env env("shm", FI_EP_RDM);
	ASSERT_NE(env.info, nullptr);
	fi_info *with = fi_dupinfo(env.info);
	free(with->src_addr);
	with->src_addr = strdup(mine.c_str());
	with->src_addrlen = mine.size() + 1;
	{
		rdm_ep a(env, with);
		EXPECT_STREQ(a.name.data(), mine.c_str());
		EXPECT_EQ(access(("/dev/shm/" + mine.substr(9)).c_str(), F_OK), 0);
		/* A second endpoint cannot take a name a live one holds. */
		fid_ep *ep2 = nullptr;
		ASSERT_EQ(fi_endpoint(env.domain, with, &ep2, nullptr), 0);
		EXPECT_EQ(fi_ep_bind(ep2, &a.av->fid, 0), 0);
		EXPECT_LT(fi_enable(ep2), 0);
		EXPECT_EQ(fi_close(&ep2->fid), 0);
	}
	EXPECT_NE(access(("/dev/shm/" + mine.substr(9)).c_str(), F_OK), 0); /* unlinked at close */
	fi_freeinfo(with);
}

TEST(shm_addr, av_takes_names_packed_or_as_pointers_and_gives_them_back)
{
	prov_env env("shm", FI_EP_RDM);
	ASSERT_NE(env.domain, nullptr);
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	ASSERT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	/* Back to back, NUL separated (libfabric's shm, fabtests). */
	const char packed[] = "fi_shm://one\0fi_shm://two";
	fi_addr_t fa[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	ASSERT_EQ(fi_av_insert(av, packed, 2, fa, 0, nullptr), 2);
	/* An array of char * (fi_av(3)). */
	const char *ptrs[2] = {"fi_shm://three", "not an address"};
	fi_addr_t fb[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	EXPECT_EQ(fi_av_insert(av, ptrs, 2, fb, 0, nullptr), 1);
	EXPECT_NE(fb[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fb[1], FI_ADDR_NOTAVAIL);
	char buf[64];
	size_t len = sizeof buf;
	ASSERT_EQ(fi_av_lookup(av, fa[1], buf, &len), 0);
	EXPECT_STREQ(buf, "fi_shm://two");
	EXPECT_EQ(len, strlen("fi_shm://two") + 1);
	len = sizeof buf;
	ASSERT_EQ(fi_av_lookup(av, fb[0], buf, &len), 0);
	EXPECT_STREQ(buf, "fi_shm://three");
	len = sizeof buf;
	EXPECT_STREQ(fi_av_straddr(av, "fi_shm://one", buf, &len), "fi_shm://one");
	/* Too long for a name. */
	std::string too_long = "fi_shm://" + std::string(wu::shm::name_max + 1, 'y');
	const char *p = too_long.c_str();
	fi_addr_t fc = 0;
	EXPECT_EQ(fi_av_insert(av, &p, 1, &fc, 0, nullptr), 0);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

/* RMA and messages larger than a bounce buffer: the target's single copy,
 * and with FI_SHM_CMA=0 the slot-sized parts / pipelined pull. */
struct shm_large : ::testing::TestWithParam<bool> {};

TEST_P(shm_large, rma_and_messages_above_the_bounce_size_with_and_without_single_copy)
{
	if (!GetParam())
		setenv("FI_SHM_CMA", "0", 1);
	rdm_pair p("shm", FI_MSG | FI_RMA);
	unsetenv("FI_SHM_CMA");
	ASSERT_NE(p.a.ep, nullptr);
	const size_t n = 300000; /* many bounce slots' worth, not a multiple of one */
	std::vector<char> target(n + 64, 0), local(n), back(n);
	for (size_t i = 0; i < n; i++)
		local[i] = char(i * 13 + 1);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(p.env.domain, target.data(), target.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 9, 0,
			    &mr, nullptr),
		  0);
	uint64_t key = fi_mr_key(mr);
	uint64_t base = (p.env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_write(p.a.ep, local.data(), n, nullptr, p.a_to_b, base + 7, key, nullptr), 0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(memcmp(target.data() + 7, local.data(), n), 0);
	ASSERT_EQ(fi_read(p.a.ep, back.data(), n, nullptr, p.a_to_b, base + 7, key, nullptr), 0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	EXPECT_EQ(back, local);
	EXPECT_EQ(fi_close(&mr->fid), 0);
	/* A message, truncated into a smaller buffer. */
	std::fill(back.begin(), back.end(), 0);
	ASSERT_EQ(fi_recv(p.b.ep, back.data(), n - 5, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, local.data(), n, nullptr, p.a_to_b, nullptr), 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(p.wait_rx(p.b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.olen, 5u);
	EXPECT_EQ(memcmp(back.data(), local.data(), n - 5), 0);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
}

INSTANTIATE_TEST_SUITE_P(cma, shm_large, ::testing::Values(true, false));

} // namespace
