/* SPDX-License-Identifier: BSD-3-Clause */
/* PMIx wire-up against the in-memory PMIx (fake_client): every mode, the
 * zero-code "pmix:" AV, bad data, layouts, and a simulated job of 16,384
 * nodes x 64 ranks.  Launcher runs are in test_wireup_launch.cpp. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <rdma/fi_ext_wireup.h>

#include "../av/av_fixture.h"
#include "pmix_glue/fake_client.h"
#include "pmix_glue/layout.h"
#include "pmix_glue/wire.h"
#include "pmix_glue/session.h"

/* The fake job's local peers leave no cards: its node blob must not wait
   the 60 s a modex leader waits for real ones. */
[[maybe_unused]] static const int card_wait_short = setenv("FI_PMIX_CARD_WAIT", "200", 0);

namespace {

using namespace wu::pmix;
using wu::test::close_av;
using wu::test::ip_port;
using wu::test::lookup_str;

class Wireup : public ::testing::Test {
protected:
	wu::test::tcp_domain dom;
	fake_client *fake = nullptr;

	void SetUp() override
	{
		for (const char *v : {"FI_PMIX_MODE", "FI_PMIX_PORT_BASE", "FI_PMIX_SYM_NODE_ADDR",
				      "FI_PMIX_DIRECT_MIN", "FI_PMIX_DIRECT_RETRIES"})
			unsetenv(v);
		setenv("FI_PMIX_DIRECT_RETRIES", "2", 1);
	}
	void TearDown() override
	{
		close();
		use_client_for_tests(nullptr);
	}
	fake_client &job(uint32_t nodes, uint32_t ppn, uint32_t me = 0, bool cyclic = false)
	{
		fake_job j;
		j.nodes = nodes;
		j.ppn = ppn;
		j.me = me;
		j.cyclic = cyclic;
		auto c = std::make_unique<fake_client>(j);
		fake = c.get();
		use_client_for_tests(std::move(c));
		return *fake;
	}
	std::string want(uint32_t r) { return ip_port(fake->addr_of(r).data()); }
	int pub(uint64_t flags = 0)
	{
		auto a = fake->addr_of(fake->job.me);
		return publish(FI_SOCKADDR_IN, a.data(), a.size(), flags);
	}
	fid_av *open_av(bool sym = false)
	{
		return dom.open_type(FI_AV_TABLE, sym ? FI_SYMMETRIC : 0);
	}
	void expect_all(fid_av *av, fi_addr_t base = 0)
	{
		uint32_t n = fake->size();
		for (uint32_t r = 0; r < n; r += (n > 4096 ? 997 : 1))
			ASSERT_EQ(lookup_str(av, base + r), want(r)) << "rank " << r;
		ASSERT_EQ(lookup_str(av, base + n - 1), want(n - 1));
	}
	static fi_wireup_info info_out()
	{
		fi_wireup_info i{};
		i.size = sizeof i;
		return i;
	}
	/* Publishes in mode m, opens an AV and fills it; the counters. */
	fi_wireup_info pub_fill(fid_av *&av, int m = FI_WIREUP_MODEX)
	{
		fi_wireup_info i = info_out();
		EXPECT_EQ(pub(FI_WIREUP_FLAGS(m)), 0);
		av = open_av();
		EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
		return i;
	}
};

TEST_F(Wireup, OpsOpenGivesTheTable)
{
	fi_ops_wireup_pmix *ops = nullptr;
	ASSERT_EQ(domain_ops_open(&dom.domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&ops, nullptr), 0);
	ASSERT_NE(ops, nullptr);
	EXPECT_EQ(ops->size, sizeof(fi_ops_wireup_pmix));
	EXPECT_EQ(domain_ops_open(&dom.domain->fid, "other", 0, (void **)&ops, nullptr), -FI_ENOSYS);
	job(2, 4, 5);
	fi_wireup_info i = info_out();
	ASSERT_EQ(ops->job_info(dom.domain, nullptr, &i), 0);
	EXPECT_EQ(i.rank, 5u);
	EXPECT_EQ(i.job_size, 8u);
	EXPECT_EQ(i.local_size, 4u);
	EXPECT_EQ(i.local_rank, 1u);
	EXPECT_EQ(i.num_nodes, 2u);
	ASSERT_NE(i.local_peers, nullptr);
	EXPECT_EQ(i.local_peers[0], 4u);
	EXPECT_EQ(i.local_peers[3], 7u);
	EXPECT_EQ(ops->is_local(dom.domain, 6), 1);
	EXPECT_EQ(ops->is_local(dom.domain, 3), 0);
	EXPECT_STREQ(i.nspace, "wu-fake-job");
}

TEST_F(Wireup, ModexOneFenceOneInsert)
{
	job(4, 8, 3);
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_MODEX)), 0);
	fid_av *av = open_av();
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_MODEX);
	EXPECT_EQ(i.base, 0u);
	EXPECT_EQ(i.fences, 1u);
	EXPECT_EQ(i.gets, 4u); /* one node blob per node */
	EXPECT_EQ(i.bytes_put, sizeof(wire::ep_hdr) + sizeof(sockaddr_in));
	EXPECT_EQ(fake->fence_calls, 1u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, AutoPicksModexForSmallJobs)
{
	job(1, 4);
	ASSERT_EQ(pub(), 0);
	fid_av *av = open_av();
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_MODEX);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, DirectResolvesOnFirstUse)
{
	job(4, 4, 2);
	setenv("FI_PMIX_DIRECT_MIN", "16", 1);
	ASSERT_EQ(pub(), 0);
	fid_av *av = open_av();
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_DIRECT);
	EXPECT_EQ(i.fences, 0u);
	uint64_t gets0 = fake->get_calls;
	EXPECT_EQ(lookup_str(av, 9), want(9));
	EXPECT_EQ(fake->get_calls, gets0 + 1);
	EXPECT_EQ(lookup_str(av, 9), want(9)); /* resolved once */
	EXPECT_EQ(fake->get_calls, gets0 + 1);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, DirectSilentRankFailsThatEntryOnly)
{
	job(1, 4, 0).silent.insert(2);
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_DIRECT)), 0);
	fid_av *av = open_av();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, FI_WIREUP_FLAGS(FI_WIREUP_DIRECT), nullptr), 0);
	EXPECT_EQ(lookup_str(av, 1), want(1));
	fi_ops_wireup_pmix *ops = nullptr;
	ASSERT_EQ(domain_ops_open(&dom.domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&ops, nullptr), 0);
	fi_wireup_info i = info_out();
	ASSERT_EQ(ops->job_info(dom.domain, nullptr, &i), 0);
	EXPECT_EQ(i.gets_again, 0u);
	uint64_t gets0 = i.gets;
	EXPECT_NE(lookup_str(av, 2), want(2));
	/* FI_PMIX_DIRECT_RETRIES=2: asked twice, the second counted as again. */
	ASSERT_EQ(ops->job_info(dom.domain, nullptr, &i), 0);
	EXPECT_EQ(i.gets, gets0 + 2);
	EXPECT_EQ(i.gets_again, 1u);
	EXPECT_EQ(lookup_str(av, 3), want(3));
	close_av(av);
}

TEST_F(Wireup, SymmetricLeaderBlock)
{
	job(4, 8, 0);
	setenv("FI_PMIX_PORT_BASE", "30000", 1);
	ASSERT_EQ(pub(), 0);
	EXPECT_EQ(fake->put_calls, 0u); /* the leader puts in av_fill */
	fid_av *av = open_av(true);
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_SYMMETRIC);
	EXPECT_EQ(i.fences, 1u);
	/* 3 probes for launcher data, 7 local peers, 4 node records. */
	EXPECT_EQ(i.gets, 3u + 7u + 4u);
	EXPECT_EQ(i.bytes_put, sizeof(wire::node_hdr) + sizeof(sockaddr_in));
	EXPECT_EQ(i.deviants, 0u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, SymmetricNonLeaderPutsOneSmallRecord)
{
	job(4, 8, 13);
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_SYMMETRIC)), 0);
	EXPECT_EQ(fake->put_calls, 1u);
	fid_av *av = open_av(true);
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_SYMMETRIC);
	EXPECT_EQ(i.bytes_put, sizeof(wire::ep_hdr) + sizeof(sockaddr_in));
	EXPECT_EQ(i.gets, 4u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, SymmetricCyclicMapping)
{
	job(4, 8, 0, true);
	setenv("FI_PMIX_PORT_BASE", "30000", 1);
	ASSERT_EQ(pub(), 0);
	fid_av *av = open_av(true);
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_SYMMETRIC);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, SymmetricDeviantsFallBackForThemselvesOnly)
{
	fake_client &f = job(4, 8, 0);
	f.deviants = {0, 5, 6, 17, 31};
	setenv("FI_PMIX_PORT_BASE", "30000", 1);
	ASSERT_EQ(pub(), 0);
	fid_av *av = open_av(true);
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_SYMMETRIC);
	EXPECT_EQ(i.deviants, 5u);
	EXPECT_EQ(i.fences, 1u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, SymmetricScatteredNodeAddresses)
{
	fake_client &f = job(3, 4, 0);
	f.job.ip_step = 7; /* not consecutive: one generator per node */
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_SYMMETRIC)), 0);
	fid_av *av = open_av(true);
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, nullptr), 0);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, SymmetricDeclinesForOtherFormats)
{
	job(1, 2, 0);
	sockaddr_in6 a{};
	a.sin6_family = AF_INET6;
	/* No port layout for FI_ADDR_STR-like formats: falls back to modex. */
	EXPECT_EQ(publish(FI_SOCKADDR_IN6, &a, sizeof a, FI_WIREUP_FLAGS(FI_WIREUP_SYMMETRIC)), 0);
}

TEST_F(Wireup, LauncherPerNodeNoExchange)
{
	fake_client &f = job(8, 16, 77);
	f.launcher_nodes = true;
	ASSERT_EQ(pub(), 0);
	fid_av *av = open_av(true);
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_LAUNCHER);
	EXPECT_EQ(i.bytes_put, 0u);
	EXPECT_EQ(i.fences, 0u);
	EXPECT_EQ(f.put_calls + f.commit_calls + f.fence_calls, 0u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, LauncherPerRank)
{
	fake_client &f = job(2, 4, 1);
	f.launcher_ranks = true;
	fid_av *av = open_av();
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.mode, FI_WIREUP_LAUNCHER);
	EXPECT_EQ(f.put_calls + f.fence_calls, 0u);
	expect_all(av);
	close_av(av);
}

/* Bad data: a clear error and an empty AV. */
class WireupBad : public Wireup, public ::testing::WithParamInterface<int> {};

TEST_P(WireupBad, NothingInsertedHalfWay)
{
	fake_client &f = job(1, 8, 0);
	uint64_t jid = wire::job_id(f.job.nspace);
	auto a = f.addr_of(6);
	std::vector<uint8_t> rec;
	switch (GetParam()) {
	case 0: /* too short */
		rec = wire::encode_ep(FI_SOCKADDR_IN, jid, 6, a.data(), a.size());
		rec.resize(30);
		break;
	case 1: /* wrong format */
		rec = wire::encode_ep(FI_SOCKADDR_IN6, jid, 6, a.data(), a.size());
		break;
	case 2: /* another job */
		rec = wire::encode_ep(FI_SOCKADDR_IN, wire::job_id("another"), 6, a.data(), a.size());
		break;
	case 3: /* not ours at all */
		rec.assign(40, 0x5a);
		break;
	case 4: /* another rank's record */
		rec = wire::encode_ep(FI_SOCKADDR_IN, jid, 5, a.data(), a.size());
		break;
	case 5: /* right header, name of the wrong family */
		a[0] = AF_INET6;
		rec = wire::encode_ep(FI_SOCKADDR_IN, jid, 6, a.data(), a.size());
		break;
	}
	f.store[{6, wire::key_ep}] = rec;
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_MODEX)), 0);
	fid_av *av = open_av();
	EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_NE(lookup_str(av, 0).rfind("error", 0), std::string::npos) << "AV is not empty";
	close_av(av);
}
INSTANTIATE_TEST_SUITE_P(Corrupt, WireupBad, ::testing::Range(0, 6));

TEST_F(Wireup, CorruptNodeRecordInsertsNothing)
{
	fake_client &f = job(4, 2, 0);
	f.store[{4, wire::key_node}] = std::vector<uint8_t>(20, 1);
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_SYMMETRIC)), 0);
	fid_av *av = open_av(true);
	EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_NE(lookup_str(av, 0).rfind("error", 0), std::string::npos);
	close_av(av);
}

TEST_F(Wireup, ModexMissingRankInsertsNothing)
{
	job(1, 4, 0).silent.insert(3);
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_MODEX)), 0);
	fid_av *av = open_av();
	EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, nullptr), -FI_ENODATA);
	EXPECT_NE(lookup_str(av, 0).rfind("error", 0), std::string::npos);
	close_av(av);
}

TEST_F(Wireup, PublishRejectsBadNames)
{
	job(1, 1);
	uint8_t junk[7] = {};
	EXPECT_EQ(publish(FI_SOCKADDR_IN, junk, sizeof junk, 0), -FI_EINVAL);
	EXPECT_EQ(publish(FI_SOCKADDR_IN, nullptr, 16, 0), -FI_EINVAL);
	EXPECT_EQ(pub(99), -FI_EINVAL);
}

TEST_F(Wireup, ZeroCodeNamedAvIsDirectByDefault)
{
	job(2, 4, 1);
	fi_av_attr attr{};
	attr.type = FI_AV_TABLE;
	attr.name = (char *)FI_WIREUP_AV_PREFIX;
	fid_av *av = dom.open(attr);
	ASSERT_NE(av, nullptr);
	/* Nothing published yet by this process: its own entry waits for the
	 * endpoint (a provider calls endpoint_named when it is enabled). */
	EXPECT_EQ(lookup_str(av, 0), want(0));
	EXPECT_NE(lookup_str(av, 1), want(1));
	auto a = fake->addr_of(1);
	endpoint_named(a.data(), a.size(), FI_SOCKADDR_IN);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, ZeroCodeNamedAvWithNamespaceAndLauncherData)
{
	fake_client &f = job(4, 4, 0);
	f.launcher_nodes = true;
	fi_av_attr attr{};
	attr.type = FI_AV_TABLE;
	std::string name = std::string(FI_WIREUP_AV_PREFIX) + "wu-fake-job";
	attr.name = name.data();
	fid_av *av = dom.open(attr);
	ASSERT_NE(av, nullptr);
	expect_all(av);
	EXPECT_EQ(f.put_calls + f.fence_calls, 0u);
	close_av(av);
	attr.name = (char *)"pmix:no-such-namespace";
	dom.open(attr, -FI_ENODATA);
}

TEST_F(Wireup, SymmetricByHostNameNeedsNoExchange)
{
	fake_client &f = job(1, 4, 2);
	f.job.ip0 = 0x7f000001; /* node00000 must resolve: use localhost */
	setenv("FI_PMIX_PORT_BASE", "30000", 1);
	setenv("FI_PMIX_SYM_NODE_ADDR", "hostname", 1);
	/* Host names node00000.. do not resolve here: the fill must say so. */
	ASSERT_NE(pub(), 0);
	unsetenv("FI_PMIX_SYM_NODE_ADDR");
}

TEST(WireupLayout, BlockCyclicAndDeclines)
{
	node_map m;
	m.nodes = {"a", "b"};
	m.ranks = {{2, 3}, {0, 1}};
	layout l;
	std::string why;
	ASSERT_TRUE(analyze(m, 4, 3, l, why)) << why;
	EXPECT_FALSE(l.cyclic);
	EXPECT_EQ(l.pos_of_node[0], 1u);
	EXPECT_EQ(l.hosts[0], "b");
	EXPECT_EQ(l.my_pos, 1u);
	EXPECT_EQ(l.my_slot, 1u);
	m.ranks = {{0, 2}, {1, 3}};
	ASSERT_TRUE(analyze(m, 4, 3, l, why)) << why;
	EXPECT_TRUE(l.cyclic);
	EXPECT_EQ(l.rank_at(1, 1), 3u);
	m.ranks = {{0, 3}, {1, 2}};
	EXPECT_FALSE(analyze(m, 4, 0, l, why));
	EXPECT_NE(why.find("neither"), std::string::npos) << why;
	m.ranks = {{0, 1, 2}, {3}};
	EXPECT_FALSE(analyze(m, 4, 0, l, why));
	EXPECT_NE(why.find("not the same number"), std::string::npos) << why;
}

/* 16,384 nodes x 64 ranks: 1,048,576 ranks from synthetic job data. */
class WireupMillion : public Wireup {
protected:
	void SetUp() override
	{
		Wireup::SetUp();
		job(16384, 64, 64 * 100 + 5);
	}
	size_t fill(uint64_t flags, bool sym, fi_wireup_info &i)
	{
		fid_av *av = open_av(sym);
		fi_av_attr a{};
		(void)a;
		EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, flags, &i), 0);
		expect_all(av);
		size_t bytes = wu::av::resident_bytes(av);
		close_av(av);
		return bytes;
	}
};

TEST_F(WireupMillion, SymmetricFitsIn64KiB)
{
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_SYMMETRIC)), 0);
	fi_wireup_info i = info_out();
	size_t bytes = fill(0, true, i);
	EXPECT_EQ(i.mode, FI_WIREUP_SYMMETRIC);
	EXPECT_LE(bytes, 64u * 1024) << "AV bytes for 1M ranks";
	EXPECT_LE(i.bytes_put, 64u);
	EXPECT_EQ(i.gets, 16384u);
}

TEST_F(WireupMillion, LauncherFitsIn64KiB)
{
	fake->launcher_nodes = true;
	fi_wireup_info i = info_out();
	size_t bytes = fill(0, true, i);
	EXPECT_EQ(i.mode, FI_WIREUP_LAUNCHER);
	EXPECT_LE(bytes, 64u * 1024);
	EXPECT_EQ(i.bytes_put, 0u);
}

TEST_F(WireupMillion, DirectCostsOneWordPerRankUntilUsed)
{
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_DIRECT)), 0);
	fid_av *av = open_av();
	fi_wireup_info i = info_out();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, &i), 0);
	EXPECT_EQ(i.gets, 0u);
	EXPECT_LE(wu::av::resident_bytes(av), 9u * 1048576);
	EXPECT_EQ(lookup_str(av, 1048575), want(1048575));
	close_av(av);
}

/* ---- node blobs (issue 30): one record per node in modex and direct ---- */

std::vector<wire::blob_name> sample_names(const fake_client &f, uint32_t pos)
{
	std::vector<wire::blob_name> v;
	for (uint32_t s = 0; s < f.job.ppn; s++) {
		uint32_t r = f.rank_at(pos, s);
		v.push_back({r, f.addr_of(r)});
	}
	std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) { return a.rank < b.rank; });
	return v;
}

TEST(WireBlob, RoundTripAndSharedBytesAreNotRepeated)
{
	const uint64_t jid = wire::job_id("ns");
	/* 64-byte names alike but for a few bytes, zero-padded (wireup's). */
	std::vector<wire::blob_name> in;
	for (uint32_t r : {4u, 5u, 9u, 200u}) {
		std::vector<uint8_t> n(64, 0);
		for (int i = 0; i < 24; i++)
			n[i] = uint8_t(0x40 + i);
		n[18] = uint8_t(r);
		n[30] = uint8_t(r * 3);
		in.push_back({r, n});
	}
	in.push_back({201, {1, 0, 0, 7}}); /* another length, too */
	auto blob = wire::encode_blob(0, jid, 4, 1, in);
	EXPECT_LT(blob.size(), sizeof(wire::blob_hdr) + 5 * 64) << "nothing was shared";
	std::vector<wire::blob_name> out;
	std::string why;
	ASSERT_EQ(wire::parse_blob(blob, 0, jid, 4, 1000, out, why), 0) << why;
	ASSERT_EQ(out.size(), in.size());
	for (size_t i = 0; i < in.size(); i++) {
		EXPECT_EQ(out[i].rank, in[i].rank);
		EXPECT_EQ(out[i].name, in[i].name) << "entry " << i;
	}
	/* sockaddr_in names of a fake node, too. */
	fake_job j;
	j.nodes = 3;
	j.ppn = 5;
	fake_client f(j);
	auto names = sample_names(f, 2);
	blob = wire::encode_blob(FI_SOCKADDR_IN, jid, names[0].rank, 2, names);
	ASSERT_EQ(wire::parse_blob(blob, FI_SOCKADDR_IN, jid, names[0].rank, 15, out, why), 0) << why;
	ASSERT_EQ(out.size(), 5u);
	EXPECT_EQ(out[4].name, names[4].name);
}

TEST(WireBlob, CorruptOrHostileBlobsAreRefused)
{
	const uint64_t jid = wire::job_id("ns");
	fake_job j;
	j.nodes = 2;
	j.ppn = 4;
	fake_client f(j);
	auto names = sample_names(f, 1); /* ranks 4-7 */
	const auto good = wire::encode_blob(FI_SOCKADDR_IN, jid, 4, 1, names);
	std::vector<wire::blob_name> out;
	std::string why;
	ASSERT_EQ(wire::parse_blob(good, FI_SOCKADDR_IN, jid, 4, 8, out, why), 0) << why;
	auto refused = [&](const std::vector<uint8_t> &b, uint32_t leader = 4, uint32_t size = 8,
			   uint32_t fmt = FI_SOCKADDR_IN, uint64_t job = 0) {
		out.assign(1, {});
		why.clear();
		int r = wire::parse_blob(b, fmt, job ? job : jid, leader, size, out, why);
		return r == -FI_EINVAL && out.empty() && !why.empty();
	};
	/* Every truncation, and a byte more. */
	for (size_t n = 0; n < good.size(); n++)
		EXPECT_TRUE(refused(std::vector<uint8_t>(good.begin(), good.begin() + n))) << n << " bytes";
	auto longer = good;
	longer.push_back(0);
	EXPECT_TRUE(refused(longer));
	/* Header fields: magic, version, flags, format, another job or leader. */
	EXPECT_TRUE(refused(good, 5));
	EXPECT_TRUE(refused(good, 4, 8, FI_SOCKADDR_IN6));
	EXPECT_TRUE(refused(good, 4, 8, FI_SOCKADDR_IN, wire::job_id("other")));
	EXPECT_TRUE(refused(good, 4, 7)) << "rank 7 is past a job of 7";
	auto at = [&](size_t off, uint8_t v) {
		auto b = good;
		b[off] = v;
		return b;
	};
	EXPECT_TRUE(refused(at(0, 0))) << "magic";
	EXPECT_TRUE(refused(at(4, 2))) << "version";
	EXPECT_TRUE(refused(at(6, 1))) << "flags";
	/* count: a lie past what the bytes can hold, then one too many. */
	EXPECT_TRUE(refused(at(15, 0xff)));
	EXPECT_TRUE(refused(at(12, 5)));
	/* Entries: ranks not ascending, keep past the previous name, a pad. */
	const size_t e0 = sizeof(wire::blob_hdr);
	EXPECT_TRUE(refused(at(e0, 9))) << "rank 9 of 8";
	auto dup = names;
	dup[1].rank = dup[0].rank;
	EXPECT_TRUE(refused(wire::encode_blob(FI_SOCKADDR_IN, jid, 4, 1, dup)));
	EXPECT_TRUE(refused(at(e0 + 4, 1))) << "the first entry keeps bytes of nothing";
	EXPECT_TRUE(refused(at(e0 + 6, 60))) << "name longer than 64 bytes";
	EXPECT_TRUE(refused(at(e0 + 7, 1))) << "pad";
	/* A name of the wrong family. */
	auto fam = names;
	fam[2].name[0] = AF_INET6;
	EXPECT_TRUE(refused(wire::encode_blob(FI_SOCKADDR_IN, jid, 4, 1, fam)));
	/* Random bytes behind a good header never crash and are refused or,
	 * by chance, well-formed. */
	srand(30);
	for (int t = 0; t < 2000; t++) {
		auto b = good;
		for (int k = 0; k < 4; k++)
			b[sizeof(wire::blob_hdr) + size_t(rand()) % (b.size() - sizeof(wire::blob_hdr))] =
				uint8_t(rand());
		int r = wire::parse_blob(b, FI_SOCKADDR_IN, jid, 4, 8, out, why);
		EXPECT_TRUE(r == 0 || (r == -FI_EINVAL && out.empty()));
	}
}

/* Version 2: a node of M ranks on its port rule costs the same bytes for
 * any M; ranks off the rule, lacking ranks and strided (cyclic) rank sets
 * come back exactly. */
std::vector<uint8_t> sa_in(uint32_t ip, uint16_t port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(ip);
	a.sin_port = htons(port);
	const auto *p = reinterpret_cast<const uint8_t *>(&a);
	return {p, p + sizeof a};
}

TEST(WireBlob2, SizeDoesNotGrowWithTheNodesRanks)
{
	const uint64_t jid = wire::job_id("ns");
	auto blob_of = [&](uint32_t m, uint32_t first, uint32_t stride) {
		std::vector<uint32_t> ranks;
		std::vector<std::vector<uint8_t>> views;
		for (uint32_t s = 0; s < m; s++) {
			ranks.push_back(first + s * stride);
			views.push_back(sa_in(0x0a000001, uint16_t(21000 + s)));
		}
		return wire::encode_blob2(FI_SOCKADDR_IN, jid, first, 1, ranks, views, 2);
	};
	const size_t small = blob_of(2, 4, 1).size();
	EXPECT_EQ(blob_of(16, 16, 1).size(), small);
	EXPECT_EQ(blob_of(256, 256, 1).size(), small);
	EXPECT_EQ(blob_of(256, 3, 16).size(), small) << "cyclic: one strided range";
	EXPECT_LE(small, sizeof(wire::blob2_hdr) + 16 + sizeof(wire::blob_range));
	wire::blob_view v;
	std::string why;
	ASSERT_EQ(wire::parse_blob_view(blob_of(256, 3, 16), FI_SOCKADDR_IN, jid, 3, 4096, v, why), 0)
		<< why;
	std::vector<uint8_t> nm;
	for (uint32_t s = 0; s < 256; s++) {
		ASSERT_EQ(v.name_of(3 + 16 * s, nm), 0) << s;
		EXPECT_EQ(nm, sa_in(0x0a000001, uint16_t(21000 + s)));
	}
	EXPECT_EQ(v.name_of(4, nm), -FI_ENODATA) << "rank 4 is on another node";
}

TEST(WireBlob2, ExceptionsAndLackingRanksAreExact)
{
	const uint64_t jid = wire::job_id("ns");
	std::vector<uint32_t> ranks = {8, 9, 10, 11, 12, 20};
	std::vector<std::vector<uint8_t>> views;
	for (uint32_t s = 0; s < ranks.size(); s++)
		views.push_back(sa_in(0x0a000002, uint16_t(30000 + s)));
	views[2] = sa_in(0x0a000002, 45123); /* its rule port was taken */
	views[3].clear();		     /* no card in time */
	views[5] = sa_in(0x0a000009, 30005); /* another interface */
	auto b = wire::encode_blob2(FI_SOCKADDR_IN, jid, 8, 2, ranks, views, 2);
	wire::blob_view v;
	std::string why;
	ASSERT_EQ(wire::parse_blob_view(b, FI_SOCKADDR_IN, jid, 8, 64, v, why), 0) << why;
	EXPECT_EQ(v.exc.size(), 3u);
	for (size_t i = 0; i < ranks.size(); i++) {
		std::vector<uint8_t> nm;
		int r = v.name_of(ranks[i], nm);
		if (views[i].empty()) {
			EXPECT_EQ(r, -FI_ENODATA) << "rank " << ranks[i];
			continue;
		}
		ASSERT_EQ(r, 0) << "rank " << ranks[i];
		EXPECT_EQ(nm, views[i]) << "rank " << ranks[i];
	}
	/* No port rule (a format without one): every rank an exception. */
	b = wire::encode_blob2(FI_SOCKADDR_IN, jid, 8, 2, ranks, views, wire::no_port);
	ASSERT_EQ(wire::parse_blob_view(b, FI_SOCKADDR_IN, jid, 8, 64, v, why), 0) << why;
	EXPECT_TRUE(v.tmpl.empty());
	EXPECT_EQ(v.exc.size(), ranks.size());
	std::vector<uint8_t> nm;
	ASSERT_EQ(v.name_of(9, nm), 0);
	EXPECT_EQ(nm, views[1]);
	/* Version 1 is still read. */
	std::vector<wire::blob_name> v1 = {{8, views[0]}, {9, views[1]}};
	ASSERT_EQ(wire::parse_blob_view(wire::encode_blob(FI_SOCKADDR_IN, jid, 8, 2, v1), FI_SOCKADDR_IN,
					jid, 8, 64, v, why),
		  0)
		<< why;
	ASSERT_EQ(v.name_of(9, nm), 0);
	EXPECT_EQ(nm, views[1]);
}

TEST(WireBlob2, CorruptOrHostileBlobsAreRefused)
{
	const uint64_t jid = wire::job_id("ns");
	std::vector<uint32_t> ranks = {4, 5, 6, 7};
	std::vector<std::vector<uint8_t>> views;
	for (uint32_t s = 0; s < 4; s++)
		views.push_back(sa_in(0x0a000001, uint16_t(65530 + s)));
	views[1] = sa_in(0x0a000001, 1000);
	const auto good = wire::encode_blob2(FI_SOCKADDR_IN, jid, 4, 1, ranks, views, 2);
	wire::blob_view v;
	std::string why;
	ASSERT_EQ(wire::parse_blob_view(good, FI_SOCKADDR_IN, jid, 4, 8, v, why), 0) << why;
	auto refused = [&](const std::vector<uint8_t> &b, uint32_t leader = 4, uint32_t size = 8,
			   uint32_t fmt = FI_SOCKADDR_IN, uint64_t job = 0) {
		why.clear();
		int r = wire::parse_blob_view(b, fmt, job ? job : jid, leader, size, v, why);
		return r == -FI_EINVAL && v.exc.empty() && v.ranges.empty() && v.tmpl.empty() &&
		       !why.empty();
	};
	for (size_t n = 0; n < good.size(); n++)
		EXPECT_TRUE(refused(std::vector<uint8_t>(good.begin(), good.begin() + n))) << n << " bytes";
	auto longer = good;
	longer.push_back(0);
	EXPECT_TRUE(refused(longer));
	EXPECT_TRUE(refused(good, 5)) << "leader";
	EXPECT_TRUE(refused(good, 4, 7)) << "rank 7 is past a job of 7";
	EXPECT_TRUE(refused(good, 4, 8, FI_SOCKADDR_IN6));
	EXPECT_TRUE(refused(good, 4, 8, FI_SOCKADDR_IN, wire::job_id("other")));
	auto at = [&](size_t off, uint8_t val) {
		auto b = good;
		b[off] = val;
		return b;
	};
	const size_t h = 0;
	EXPECT_TRUE(refused(at(h + 0, 0))) << "magic";
	EXPECT_TRUE(refused(at(h + 4, 3))) << "version";
	EXPECT_TRUE(refused(at(h + 6, 1))) << "flags";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, pad), 1))) << "pad";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, pad2), 1))) << "pad2";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, port_off), 15))) << "port past the template";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, port0) + 1, 0x01))) << "template's port differs";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, nranges), 9))) << "ranges past the bytes";
	EXPECT_TRUE(refused(at(offsetof(wire::blob2_hdr, nexc), 9))) << "exceptions past the bytes";
	/* Ranges: count 0, stride 0, past the job; slots whose port passes 65535. */
	wire::blob2_hdr hd;
	memcpy(&hd, good.data(), sizeof hd);
	const size_t r0 = sizeof hd + hd.tmpl_lit;
	EXPECT_TRUE(refused(at(r0 + 8, 0))) << "count 0";
	EXPECT_TRUE(refused(at(r0 + 4, 0))) << "stride 0";
	EXPECT_TRUE(refused(at(r0 + 8, 6))) << "6 ranks from 4 pass the job";
	EXPECT_FALSE(refused(at(r0 + 8, 3), 4, 64)) << "3 ranks: still fine";
	auto wide = good;
	wide[r0 + 8] = 7; /* 7 slots from 65530 */
	EXPECT_TRUE(refused(wide, 4, 64));
	/* An exception of a rank the ranges do not hold. */
	const size_t e0 = r0 + sizeof(wire::blob_range);
	EXPECT_TRUE(refused(at(e0, 3))) << "rank 3";
	/* No template, and a rank without an exception. */
	std::vector<std::vector<uint8_t>> two = {views[0], views[1]};
	auto nt = wire::encode_blob2(FI_SOCKADDR_IN, jid, 4, 1, {4, 5}, two, wire::no_port);
	ASSERT_EQ(wire::parse_blob_view(nt, FI_SOCKADDR_IN, jid, 4, 8, v, why), 0) << why;
	memcpy(&hd, nt.data(), sizeof hd);
	auto lack = nt;
	lack[sizeof hd + 8] = 3; /* the range covers 4-6; exceptions name 4, 5 */
	EXPECT_TRUE(refused(lack));
	/* Names of another family are refused, rule or not. */
	auto fam = views;
	for (auto &x : fam)
		x[0] = AF_INET6;
	auto bad = wire::encode_blob2(FI_SOCKADDR_IN, jid, 4, 1, ranks, fam, 2);
	EXPECT_TRUE(refused(bad));
}

TEST_F(Wireup, ModexFetchesOneBlobPerNode)
{
	job(4, 8, 3);
	fid_av *av;
	fi_wireup_info i = pub_fill(av);
	/* One get per node (its own too: sockaddrs have no local_format), each
	 * from the node's first rank. */
	EXPECT_EQ(i.gets, 4u);
	for (const auto &[r, n] : fake->gets_of)
		EXPECT_EQ(r % 8, 0u) << "rank " << r << " was asked " << n << " times";
	EXPECT_LT(i.bytes_got, 32u * (sizeof(wire::ep_hdr) + sizeof(sockaddr_in)));
	expect_all(av);
	close_av(av);
	/* FI_PMIX_NODE_RECORDS=0: every rank's record, as before. */
	setenv("FI_PMIX_NODE_RECORDS", "0", 1);
	job(4, 8, 3);
	i = pub_fill(av);
	unsetenv("FI_PMIX_NODE_RECORDS");
	EXPECT_EQ(i.gets, 32u);
	expect_all(av);
	close_av(av);
}

TEST_F(Wireup, DirectFetchesANodeBlobOnFirstUseOfItsNode)
{
	job(4, 4, 2);
	fid_av *av;
	EXPECT_EQ(pub_fill(av, FI_WIREUP_DIRECT).mode, FI_WIREUP_DIRECT);
	uint64_t g0 = fake->get_calls;
	for (uint32_t r = 8; r < 12; r++)
		EXPECT_EQ(lookup_str(av, r), want(r));
	EXPECT_EQ(fake->get_calls, g0 + 1) << "node 2's four ranks cost one get";
	EXPECT_EQ(fake->gets_of[8], 1u);
	EXPECT_EQ(lookup_str(av, 13), want(13));
	EXPECT_EQ(fake->get_calls, g0 + 2);
	expect_all(av);
	EXPECT_EQ(fake->get_calls, g0 + 4);
	close_av(av);
}

TEST_F(Wireup, RankABlobLacksIsFetchedAlone)
{
	fake_client &f = job(3, 4, 1);
	auto names = sample_names(f, 2);
	names.erase(names.begin() + 2); /* rank 10 left no card in time */
	f.store[{8, wire::key_blob}] =
		wire::encode_blob(FI_SOCKADDR_IN, wire::job_id(f.job.nspace), 8, 2, names);
	fid_av *av;
	fi_wireup_info i = pub_fill(av);
	EXPECT_EQ(i.gets, 3u + 1u);
	EXPECT_EQ(fake->gets_of[10], 1u);
	expect_all(av);
	close_av(av);
}

class WireupBadBlob : public Wireup, public ::testing::WithParamInterface<int> {};

TEST_P(WireupBadBlob, NothingInserted)
{
	auto names = sample_names(job(3, 4, 1), 2);
	const uint64_t jid = wire::job_id(fake->job.nspace);
	std::vector<uint8_t> b;
	switch (GetParam()) {
	case 0: b = wire::encode_blob(FI_SOCKADDR_IN, jid, 8, 2, names); b.resize(50); break;
	case 1: b.assign(64, 0x5a); break;
	case 2: b = wire::encode_blob(FI_SOCKADDR_IN, jid, 4, 2, names); break; /* from rank 4 */
	case 3: names[1].rank = 2; b = wire::encode_blob(FI_SOCKADDR_IN, jid, 8, 2, names); break;
	case 4: b = wire::encode_blob(FI_SOCKADDR_IN, wire::job_id("x"), 8, 2, names); break;
	}
	fake->store[{8, wire::key_blob}] = b;
	ASSERT_EQ(pub(FI_WIREUP_FLAGS(FI_WIREUP_MODEX)), 0);
	fid_av *av = open_av();
	EXPECT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_NE(lookup_str(av, 0).rfind("error", 0), std::string::npos) << "AV is not empty";
	close_av(av);
	/* Direct: that node's ranks fail, the others resolve. */
	av = open_av();
	ASSERT_EQ(av_fill(av, FI_SOCKADDR_IN, nullptr, FI_WIREUP_FLAGS(FI_WIREUP_DIRECT), nullptr), 0);
	EXPECT_EQ(lookup_str(av, 5), want(5));
	EXPECT_NE(lookup_str(av, 9), want(9));
	close_av(av);
}
INSTANTIATE_TEST_SUITE_P(Corrupt, WireupBadBlob, ::testing::Range(0, 5));


} // namespace
