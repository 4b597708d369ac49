/* The wireup provider's own behaviour (issue 15): it is the first fi_info
 * for RDM, routes a peer on this host through shm and one with another
 * host id through tcp (counted by the endpoint's route_stats), merges both
 * transports in one matching engine (wildcard receives, per-source order,
 * FI_SOURCE), re-routes after fi_av_remove, and refuses corrupt addresses
 * and peers it cannot reach. */
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include <rdma/fi_tagged.h>

#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_addr.h"
#include "prov_fixture.h"

namespace {

using namespace wu::test;
using wu::wireup::route_stats;

route_stats stats(const rdm_ep &e)
{
	route_stats s;
	EXPECT_EQ(wu::wireup::stats_of(e.ep, &s), 0);
	return s;
}

/* ep's name with another host id: peers must reach it through tcp. */
std::vector<char> other_host(const rdm_ep &e, bool keep_tcp = true)
{
	wu::wireup::parts p;
	EXPECT_GT(wu::wireup::decode(e.name.data(), e.name.size(), &p), 0);
	p.host ^= 0x5a5a5a5a5a5a5a5aULL;
	if (!keep_tcp) {
		p.tcp = nullptr;
		p.tcp_len = 0;
	}
	std::vector<char> out(wu::wireup::addr_max);
	long n = wu::wireup::encode(p, out.data(), out.size());
	EXPECT_GT(n, 0);
	out.resize(n > 0 ? size_t(n) : 0);
	return out;
}

fi_addr_t insert_raw(rdm_ep &e, const std::vector<char> &a)
{
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(fi_av_insert(e.av, a.data(), 1, &fa, 0, nullptr), 1);
	return fa;
}

struct wireup_env : ::testing::Test {
	prov_env env{"wireup", FI_EP_RDM, FI_TAGGED | FI_MSG | FI_SOURCE | FI_DIRECTED_RECV};
};

TEST(wireup_getinfo, first_for_rdm_requests)
{
	fi_info *got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &got), 0);
	ASSERT_NE(got, nullptr);
	EXPECT_STREQ(got->fabric_attr->prov_name, "wireup");
	EXPECT_EQ(got->ep_attr->type, FI_EP_RDM);
	EXPECT_EQ(got->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM), FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi_freeinfo(got);

	fi_info *h = fi_allocinfo();
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM;
	got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), 0);
	EXPECT_STREQ(got->fabric_attr->prov_name, "wireup");
	EXPECT_LE(got->tx_attr->inject_size, 64u); /* the stricter of tcp's and shm's */
	fi_freeinfo(got);

	/* A provider asked by name still answers alone. */
	h->fabric_attr->prov_name = strdup("tcp");
	got = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), 0);
	for (fi_info *i = got; i; i = i->next)
		EXPECT_STREQ(i->fabric_attr->prov_name, "tcp");
	fi_freeinfo(got);

	/* MSG endpoints are not wireup's. */
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("wireup");
	h->ep_attr->type = FI_EP_MSG;
	got = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &got), -FI_ENODATA);
	fi_freeinfo(h);
}

TEST_F(wireup_env, routes_this_host_through_shm_and_another_host_through_tcp)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t via_shm = a.insert(b);
	fi_addr_t via_tcp = insert_raw(a, other_host(b));
	b.insert(a);
	uint64_t x = 1, y = 2, r1 = 0, r2 = 0;
	ASSERT_EQ(fi_trecv(b.ep, &r1, sizeof r1, nullptr, FI_ADDR_UNSPEC, 7, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(b.ep, &r2, sizeof r2, nullptr, FI_ADDR_UNSPEC, 8, 0, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &x, sizeof x, nullptr, via_shm, 7, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &y, sizeof y, nullptr, via_tcp, 8, nullptr), 0);
	fi_cq_tagged_entry e;
	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
		ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx, a.rx, b.tx}), 1);
	}
	EXPECT_EQ(r1, 1u);
	EXPECT_EQ(r2, 2u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u);
	EXPECT_NE(s.shm_ep, nullptr);
	EXPECT_NE(s.tcp_ep, nullptr);
}

TEST_F(wireup_env, wildcard_receives_merge_both_transports_in_per_source_order_with_source)
{
	rdm_ep a(env), b(env), c(env);
	ASSERT_TRUE(a.ep && b.ep && c.ep);
	fi_addr_t a_to_c = a.insert(c);                    /* shm */
	fi_addr_t b_to_c = insert_raw(b, other_host(c));  /* tcp */
	fi_addr_t c_from_a = c.insert(a), c_from_b = c.insert(b);
	constexpr int n = 40;
	std::vector<uint64_t> in(2 * n);
	for (auto &v : in)
		ASSERT_EQ(fi_trecv(c.ep, &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, &v), 0);
	std::vector<uint64_t> out(2 * n);
	for (int i = 0; i < n; i++) {
		out[2 * i] = 1000 + i;
		out[2 * i + 1] = 2000 + i;
		ASSERT_EQ(fi_tsend(a.ep, &out[2 * i], 8, nullptr, a_to_c, 1, nullptr), 0);
		ASSERT_EQ(fi_tsend(b.ep, &out[2 * i + 1], 8, nullptr, b_to_c, 2, nullptr), 0);
	}
	std::map<fi_addr_t, std::vector<uint64_t>> got;
	for (int k = 0; k < 2 * n; k++) {
		fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(wait_one(c.rx, e, nullptr, {a.tx, b.tx, a.rx, b.rx, c.tx}, &src), 1);
		got[src].push_back(*static_cast<uint64_t *>(e.op_context));
		EXPECT_EQ(e.tag, src == c_from_a ? 1u : 2u);
	}
	ASSERT_EQ(got[c_from_a].size(), size_t(n));
	ASSERT_EQ(got[c_from_b].size(), size_t(n));
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(got[c_from_a][i], uint64_t(1000 + i));
		EXPECT_EQ(got[c_from_b][i], uint64_t(2000 + i));
	}
	EXPECT_EQ(stats(a).shm, 1u);
	EXPECT_EQ(stats(b).tcp, 1u);
	spin({a.tx, b.tx}, 200);
}

TEST_F(wireup_env, av_remove_and_reinsert_reroutes)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	b.insert(a);
	fi_addr_t p = a.insert(b);
	uint64_t v = 5, r = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_trecv(b.ep, &r, sizeof r, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, p, 3, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_EQ(stats(a).shm, 1u);
	ASSERT_EQ(fi_av_remove(a.av, &p, 1, 0), 0);
	fi_addr_t q = insert_raw(a, other_host(b));
	v = 6;
	ASSERT_EQ(fi_trecv(b.ep, &r, sizeof r, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, q, 3, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_EQ(r, 6u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u) << "fi_addr " << p << " then " << q;
	spin({a.tx, b.tx}, 200);
}

TEST_F(wireup_env, corrupt_and_unreachable_addresses)
{
	rdm_ep a(env), b(env);
	ASSERT_TRUE(a.ep && b.ep);
	std::vector<char> bad = b.name;
	bad[0] ^= 0xff; /* the magic */
	fi_addr_t fa = 0;
	EXPECT_EQ(fi_av_insert(a.av, bad.data(), 1, &fa, 0, nullptr), 0);
	EXPECT_EQ(fa, FI_ADDR_NOTAVAIL);
	/* On another host with only a shm name: nothing reaches it. */
	fi_addr_t far = insert_raw(a, other_host(b, false));
	uint64_t v = 1;
	EXPECT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, far, 1, nullptr), -FI_EHOSTUNREACH);
	EXPECT_EQ(fi_tinject(a.ep, &v, sizeof v, far, 1), -FI_EHOSTUNREACH);
	EXPECT_EQ(stats(a).unreachable, 1u);
	EXPECT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 1, nullptr), -FI_EINVAL);
}

TEST_F(wireup_env, getname_carries_our_host_and_both_parts)
{
	rdm_ep a(env);
	ASSERT_TRUE(a.ep);
	wu::wireup::parts p;
	ASSERT_GT(wu::wireup::decode(a.name.data(), a.name.size(), &p), 0);
	EXPECT_EQ(p.host, wu::wireup::host_id());
	EXPECT_GT(p.tcp_len, 0u);
	EXPECT_GT(p.shm_len, 0u);
	EXPECT_LE(a.name.size(), wu::wireup::addr_max);
}

/* FI_PROGRESS_AUTO: each sub-endpoint runs its own auto progress, both on
 * the wireup endpoint's one lock; a blocking read (fi_cq_sread) gets
 * messages of both transports without anyone polling. */
TEST(wireup_auto, both_transports_deliver_to_a_blocking_read)
{
	prov_env env{"wireup", FI_EP_RDM, FI_TAGGED, FI_PROGRESS_AUTO};
	ASSERT_NE(env.domain, nullptr);
	rdm_ep a(env, nullptr, FI_WAIT_UNSPEC), b(env, nullptr, FI_WAIT_UNSPEC);
	ASSERT_TRUE(a.ep && b.ep);
	fi_addr_t via_shm = a.insert(b);
	fi_addr_t via_tcp = insert_raw(a, other_host(b));
	uint64_t r[2] = {0, 0}, x = 11, y = 22;
	ASSERT_EQ(fi_trecv(b.ep, &r[0], 8, nullptr, FI_ADDR_UNSPEC, 1, 0, &r[0]), 0);
	ASSERT_EQ(fi_trecv(b.ep, &r[1], 8, nullptr, FI_ADDR_UNSPEC, 2, 0, &r[1]), 0);
	ASSERT_EQ(fi_tinject(a.ep, &x, 8, via_shm, 1), 0);
	ASSERT_EQ(fi_tinject(a.ep, &y, 8, via_tcp, 2), 0);
	for (int k = 0; k < 2; k++) {
		fi_cq_tagged_entry e;
		ASSERT_EQ(fi_cq_sread(b.rx, &e, 1, nullptr, 20000), 1);
	}
	EXPECT_EQ(r[0], 11u);
	EXPECT_EQ(r[1], 22u);
	route_stats s = stats(a);
	EXPECT_EQ(s.shm, 1u);
	EXPECT_EQ(s.tcp, 1u);
}

} // namespace
