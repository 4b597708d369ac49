/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm provider's addresses (src/prov/shm/shm_addr.h): names computed
 * from a job and a rank, generated names, fi_getinfo's placement of
 * fi_shm:// addresses, AV insertion of FI_ADDR_STR names (packed, as
 * libfabric's shm takes them, and as a char * array); transfers larger
 * than a bounce buffer with and without the single copy (FI_SHM_CMA); and
 * a peer killed while operations wait on it. */
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "prov/shm/shm_addr.h"
#include "../common/prov_fixture.h"

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
	/* Like Debian's shm, a source address even without a node ... */
	ASSERT_NE(i->src_addr, nullptr);
	EXPECT_GT(wu::shm::addr_len(i->src_addr, i->src_addrlen), 0);
	fi_freeinfo(i);
	/* A node alone is only checked to be this host (issue 28). */
	i = shm_info("127.0.0.1", FI_SOURCE, &r);
	EXPECT_EQ(r, 0);
	fi_freeinfo(i);
	EXPECT_EQ(shm_info("198.51.100.7", FI_SOURCE, &r), nullptr);
	EXPECT_EQ(r, -FI_ENODATA);
	std::string mine = "fi_shm://wu-test-given-" + std::to_string(getpid());
	i = shm_info(mine.c_str(), FI_SOURCE, &r);
	ASSERT_EQ(r, 0);
	ASSERT_NE(i->src_addr, nullptr);
	EXPECT_STREQ(static_cast<char *>(i->src_addr), mine.c_str());
	EXPECT_EQ(i->src_addrlen, mine.size() + 1);
	fi_freeinfo(i);

	/* ... but the endpoints opened with it each get a name of their own. */
	prov_env env("shm", FI_EP_RDM);
	ASSERT_NE(env.info, nullptr);
	{
		rdm_ep x(env), y(env);
		EXPECT_NE(std::string(x.name.data()), std::string(y.name.data()));
	}
	/* An endpoint opened with a name of the application's is known by it. */
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

TEST(shm_addr, av_takes_names_packed_and_gives_them_back)
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
	/* A good name then a bad one: the good one goes in. */
	const char mixed[] = "fi_shm://three\0not an address";
	fi_addr_t fb[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	EXPECT_EQ(fi_av_insert(av, mixed, 2, fb, 0, nullptr), 1);
	EXPECT_NE(fb[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fb[1], FI_ADDR_NOTAVAIL);
	/* An array of char * is not read through (issue 32: the guess at it
	 * crashed on other blobs): its bytes are not a name. */
	struct {
		const char *ptrs[2] = {"fi_shm://four", "fi_shm://five"};
		char pad[wu::shm::addr_max] = {};
	} arr;
	fi_addr_t fd[2] = {0, 0};
	EXPECT_EQ(fi_av_insert(av, &arr, 2, fd, 0, nullptr), 0);
	EXPECT_EQ(fd[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fd[1], FI_ADDR_NOTAVAIL);
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
	fi_addr_t fc = 0;
	EXPECT_EQ(fi_av_insert(av, too_long.c_str(), 1, &fc, 0, nullptr), 0);
	EXPECT_EQ(fc, FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

/* A peer whose address is known before it exists (a computed rank name):
 * sends are -FI_EAGAIN until it enables its endpoint, then go through. */
TEST(shm_addr, a_peer_that_does_not_exist_yet_is_eagain_until_it_does)
{
	char later[wu::shm::addr_max];
	std::string job = "later" + std::to_string(getpid());
	ASSERT_GT(wu::shm::rank_addr(job.c_str(), 1, later, sizeof later), 0);
	prov_env env("shm", FI_EP_RDM);
	rdm_ep a(env);
	fi_addr_t to = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(a.av, later, 1, &to, 0, nullptr), 1);
	int v = 3, w = 0;
	EXPECT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, to, nullptr), -FI_EAGAIN);
	fi_info *with = fi_dupinfo(env.info);
	free(with->src_addr);
	with->src_addr = strdup(later);
	with->src_addrlen = strlen(later) + 1;
	rdm_ep b(env, with);
	fi_freeinfo(with);
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, to, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	EXPECT_EQ(w, 3);
}

/* Data moves while the application only sleeps in fi_cq_sread: with
 * FI_PROGRESS_AUTO (the endpoint's thread), and with manual progress
 * (sread drives it, or the endpoint switches to its thread). */
struct shm_progress : ::testing::TestWithParam<fi_progress> {};

TEST_P(shm_progress, sread_waits_for_data_without_reads)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG, GetParam());
	ASSERT_NE(env.domain, nullptr);
	rdm_ep a(env, nullptr, FI_WAIT_UNSPEC), b(env, nullptr, FI_WAIT_UNSPEC);
	fi_addr_t to = a.insert(b);
	b.insert(a);
	std::vector<char> out(100000, 'p'), in(100000);
	ASSERT_EQ(fi_recv(b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, out.data(), out.size(), nullptr, to, nullptr), 0);
	std::thread sender([&] {
		fi_cq_tagged_entry t;
		EXPECT_EQ(fi_cq_sread(a.tx, &t, 1, nullptr, 10000), 1);
	});
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_sread(b.rx, &e, 1, nullptr, 10000), 1);
	EXPECT_EQ(e.len, out.size());
	sender.join();
	EXPECT_EQ(in, out);
}

INSTANTIATE_TEST_SUITE_P(modes, shm_progress, ::testing::Values(FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL));

/* The endpoint remembers which peer an fi_addr names, until fi_av_remove. */
TEST(shm_addr, a_removed_av_entry_is_no_destination_any_more)
{
	rdm_pair p("shm", FI_MSG);
	ASSERT_NE(p.a.ep, nullptr);
	int v = 5, w = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(p.b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, &v, sizeof v, nullptr, p.a_to_b, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(w, 5);
	ASSERT_EQ(fi_av_remove(p.a.av, &p.a_to_b, 1, 0), 0);
	EXPECT_EQ(fi_send(p.a.ep, &v, sizeof v, nullptr, p.a_to_b, nullptr), -FI_EINVAL);
}

/* A receiver whose queue is full (FI_SHM_QUEUE_CELLS=16) and whose bounce
 * buffers are taken (FI_SHM_BOUNCE_SLOTS=2): the sender keeps the rest
 * queued and retries in progress; every message arrives, in order. */
TEST(shm_flow, a_full_queue_holds_sends_back_and_loses_none)
{
	setenv("FI_SHM_QUEUE_CELLS", "16", 1);
	setenv("FI_SHM_BOUNCE_SLOTS", "2", 1);
	rdm_pair p("shm", FI_MSG | FI_TAGGED);
	unsetenv("FI_SHM_QUEUE_CELLS");
	unsetenv("FI_SHM_BOUNCE_SLOTS");
	ASSERT_NE(p.a.ep, nullptr);
	const int n = 300;
	std::vector<char> msg(100);
	for (int i = 0; i < n; i++) {
		std::fill(msg.begin(), msg.end(), char(i));
		/* Small (inline) and medium (bounce) ones, interleaved. */
		size_t len = i % 2 ? msg.size() : 8;
		ASSERT_EQ(fi_tsend(p.a.ep, msg.data(), len, nullptr, p.a_to_b, uint64_t(i), nullptr), 0) << i;
	}
	fi_cq_tagged_entry e;
	std::vector<char> in(100);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(fi_trecv(p.b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t(0), nullptr), 0);
		ASSERT_EQ(p.wait_rx(p.b, e), 1) << i;
		EXPECT_EQ(e.tag, uint64_t(i));
		EXPECT_EQ(e.len, i % 2 ? msg.size() : 8u);
		EXPECT_EQ(in[0], char(i));
	}
	for (int i = 0; i < n; i++)
		ASSERT_EQ(p.wait_tx(p.a, e), 1) << i;
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

/* A sender that closes its endpoint in the middle of a pulled large
 * message (FI_SHM_CMA=0): its process lives on, so only its goodbye tells
 * the receiver, whose receive fails instead of waiting forever. */
TEST(shm_peer, a_receive_pulling_from_a_closed_endpoint_fails)
{
	setenv("FI_SHM_CMA", "0", 1);
	rdm_pair p("shm", FI_MSG);
	unsetenv("FI_SHM_CMA");
	ASSERT_NE(p.a.ep, nullptr);
	int v = 1, w = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(p.b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(p.a.ep, &v, sizeof v, nullptr, p.a_to_b, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	ASSERT_EQ(p.wait_tx(p.a, e), 1);
	std::vector<char> src(8 << 20, 's'), dst(8 << 20);
	int ctx;
	ASSERT_EQ(fi_recv(p.b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	ASSERT_EQ(fi_send(p.a.ep, src.data(), src.size(), nullptr, p.a_to_b, nullptr), 0);
	spin({p.b.rx}, 50); /* b takes it and asks for the bytes */
	p.a.close();
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(p.b.rx, e, &err), -FI_EAVAIL) << "a receive from a closed endpoint never completed";
	EXPECT_EQ(err.err, FI_EHOSTDOWN);
	EXPECT_EQ(err.op_context, &ctx);
}

/* A large message still queued (unexpected) when its sender's endpoint
 * closed: a new endpoint that takes the same name is another sender, so
 * the receive that later takes the old message fails rather than read
 * wherever the old buffer was; the new endpoint's messages go through. */
TEST(shm_peer, a_large_message_of_a_closed_sender_is_not_read_from_its_successor)
{
	prov_env env("shm", FI_EP_RDM);
	ASSERT_NE(env.domain, nullptr);
	std::string mine = "fi_shm://wu-test-reborn-" + std::to_string(getpid());
	fi_info *with = fi_dupinfo(env.info);
	free(with->src_addr);
	with->src_addr = strdup(mine.c_str());
	with->src_addrlen = mine.size() + 1;
	rdm_ep b(env);
	std::vector<char> src(1 << 20, 'o'), dst(1 << 20, 0);
	fi_cq_tagged_entry e;
	{
		rdm_ep a(env, with);
		fi_addr_t to = a.insert(b);
		b.insert(a);
		ASSERT_EQ(fi_send(a.ep, src.data(), src.size(), nullptr, to, nullptr), 0);
		spin({b.rx, a.tx}, 200); /* b queues it: no receive yet */
	}
	spin({b.rx}, 50); /* b hears the goodbye */
	rdm_ep a2(env, with);
	fi_freeinfo(with);
	fi_addr_t to = a2.insert(b);
	int v = 42, w = 0;
	ASSERT_EQ(fi_send(a2.ep, &v, sizeof v, nullptr, to, nullptr), 0);
	spin({b.rx, a2.tx}, 200); /* b hears the new endpoint: the name is alive again */
	ASSERT_EQ(fi_recv(b.ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(b.rx, e, &err, {a2.tx}), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_EHOSTDOWN);
	EXPECT_EQ(dst[0], 0);
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a2.tx}), 1);
	EXPECT_EQ(w, 42);
}

/* A peer that took a large message (unexpected: no receive) and then
 * stopped, killed with SIGKILL: the large send, waiting for the peer's
 * answer, fails with FI_EHOSTDOWN instead of hanging; later sends to it
 * fail at once. */
TEST(shm_peer, operations_waiting_on_a_killed_peer_fail)
{
	int names[2], stop[2];
	ASSERT_EQ(pipe(names), 0);
	ASSERT_EQ(pipe(stop), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(names[0]);
		::close(stop[1]);
		alarm(30); /* never outlive a failed parent */
		prov_env env("shm", FI_EP_RDM);
		rdm_ep ep{env};
		uint32_t n = uint32_t(ep.name.size());
		if (write(names[1], &n, 4) != 4 || write(names[1], ep.name.data(), n) != ssize_t(n))
			_exit(1);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		char c;
		while (read(stop[0], &c, 1) != 1)
			spin({ep.rx, ep.tx}, 10);
		pause();
		_exit(0);
	}
	::close(names[1]);
	::close(stop[0]);
	uint32_t n = 0;
	ASSERT_EQ(read(names[0], &n, 4), 4);
	std::vector<char> name(n);
	ASSERT_EQ(read(names[0], name.data(), n), ssize_t(n));
	setenv("FI_SHM_DEAD_PEER_MS", "50", 1);
	prov_env env("shm", FI_EP_RDM);
	rdm_ep me{env};
	unsetenv("FI_SHM_DEAD_PEER_MS");
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(me.av, name.data(), 1, &peer, 0, nullptr), 1);
	/* A small send completes once the peer answered the first cell. */
	int v = 1;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_send(me.ep, &v, sizeof v, nullptr, peer, nullptr), 0);
	ASSERT_EQ(wait_one(me.tx, e), 1);
	std::vector<char> big(1 << 20, 'b');
	int ctx;
	ASSERT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, &ctx), 0);
	spin({me.tx}, 200);
	ASSERT_EQ(write(stop[1], "s", 1), 1);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(me.tx, e, &err), -FI_EAVAIL) << "a send to a dead peer never completed";
	EXPECT_EQ(err.err, FI_EHOSTDOWN);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(fi_send(me.ep, big.data(), big.size(), nullptr, peer, &ctx), -FI_EHOSTDOWN);
	/* The killed process could not unlink its region. */
	shm_unlink(("/" + std::string(name.data() + wu::shm::scheme_len)).c_str());
	::close(names[0]);
	::close(stop[1]);
}

} // namespace

/* Endpoints whose bounce buffers differ in size (FI_SHM_BOUNCE_SIZE read
 * at open): a medium message is held to its sender's slot size, not the
 * receiver's, so it arrives whole instead of being dropped as malformed. */
TEST(shm_flow, a_sender_with_larger_bounce_buffers_is_understood)
{
	prov_env env("shm", FI_EP_RDM, FI_MSG | FI_TAGGED);
	setenv("FI_SHM_BOUNCE_SIZE", "65536", 1);
	rdm_ep a(env);
	unsetenv("FI_SHM_BOUNCE_SIZE");
	rdm_ep b(env);
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	fi_addr_t to_b = a.insert(b);
	const size_t n = 40000; /* above the receiver's 16 KiB slots, within the sender's */
	std::vector<char> out(n), in(n, 0);
	for (size_t i = 0; i < n; i++)
		out[i] = char(i * 7 + 3);
	ASSERT_EQ(fi_recv(b.ep, in.data(), n, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, out.data(), n, nullptr, to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	EXPECT_EQ(e.len, n);
	EXPECT_EQ(in, out);
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
}
