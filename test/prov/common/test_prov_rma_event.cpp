/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 28 over every provider (prov_fixture.h): RMA ordering (what
 * fi_getinfo answers to FI_ORDER_RAW/WAR/WAW hints, and that two RMA
 * operations posted back to back on one peer's memory take effect in
 * that order) and FI_RMA_EVENT (counters bound to a region or to the
 * target endpoint count each remote write and read once, after the data
 * is in place). */
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "prov_fixture.h"

using namespace wu::test;

namespace {

constexpr uint64_t rma_caps = FI_MSG | FI_RMA | FI_SOURCE;

/* fi_getinfo(prov, no node) with caps FI_RMA and tx/rx msg_order `order`;
 * max sets the max_order_*_size hint of that order. */
int getinfo_order(const std::string &prov, uint64_t order, size_t max, fi_info **out)
{
	fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(prov.c_str());
	h->caps = FI_RMA;
	h->tx_attr->msg_order = order;
	h->rx_attr->msg_order = order;
	(order == FI_ORDER_RAW	 ? h->ep_attr->max_order_raw_size
	 : order == FI_ORDER_WAR ? h->ep_attr->max_order_war_size
				 : h->ep_attr->max_order_waw_size) = max;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, out);
	fi_freeinfo(h);
	return r;
}

size_t order_size(const fi_info *i, uint64_t order)
{
	return order == FI_ORDER_RAW   ? i->ep_attr->max_order_raw_size
	       : order == FI_ORDER_WAR ? i->ep_attr->max_order_war_size
				       : i->ep_attr->max_order_waw_size;
}

/* Does prov's RDM fi_getinfo offer `order` for RMA?  For one that does not
 * (ucx: RMA is unordered), the test is that the hint finds nothing. */
bool offers_order(const std::string &prov, uint64_t order)
{
	fi_info *got = nullptr;
	int r = getinfo_order(prov, order, 0, &got);
	fi_freeinfo(got);
	if (prov == "ucx") {
		EXPECT_EQ(r, -FI_ENODATA) << "ucx does not order RMA";
		return false;
	}
	EXPECT_EQ(r, 0) << prov << " finds nothing for RMA ordering 0x" << std::hex << order;
	return r == 0;
}

struct rma_order : provider_test, rdm_pair {
	rma_order() : rdm_pair(prov(), rma_caps) {}
	/* Registers target, returns its key and the base of its addresses. */
	fid_mr *reg(std::vector<char> &target, uint64_t access, uint64_t flags, uint64_t &key, uint64_t &base,
		    uint64_t req_key)
	{
		fid_mr *mr = nullptr;
		EXPECT_EQ(fi_mr_reg(env.domain, target.data(), target.size(), access, 0, req_key, flags, &mr,
				    nullptr),
			  0);
		if (!mr)
			return nullptr;
		key = fi_mr_key(mr);
		base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
		return mr;
	}
	enum class rw { read, write };
	/* Posts `first` then `second` (buffers b1, b2) on n bytes at base of
	 * key, with no wait in between, then waits for both. */
	void back_to_back(rw first, char *b1, rw second, char *b2, size_t n, uint64_t base, uint64_t key)
	{
		const rw ops[2] = {first, second};
		char *bufs[2] = {b1, b2};
		int ctx[2];
		for (int k = 0; k < 2; k++) {
			ssize_t r = ops[k] == rw::write ? fi_write(a.ep, bufs[k], n, nullptr, a_to_b, base, key, &ctx[k])
							: fi_read(a.ep, bufs[k], n, nullptr, a_to_b, base, key, &ctx[k]);
			ASSERT_EQ(r, 0);
		}
		complete(2);
	}
	/* Waits for n transmit completions of a. */
	void complete(int n)
	{
		fi_cq_tagged_entry e;
		for (int i = 0; i < n; i++)
			ASSERT_EQ(wait_tx(a, e), 1);
	}
	/* A completion counter of the domain (nullptr after a recorded failure). */
	fid_cntr *counter()
	{
		fi_cntr_attr ca{};
		ca.events = FI_CNTR_EVENTS_COMP;
		fid_cntr *c = nullptr;
		EXPECT_EQ(fi_cntr_open(env.domain, &ca, &c, nullptr), 0);
		return c;
	}
	/* Drives progress on all four CQs until c counts n (or the wait limit). */
	uint64_t count_reaches(fid_cntr *c, uint64_t n)
	{
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (fi_cntr_read(c) < n && std::chrono::steady_clock::now() < until)
			spin({a.tx, a.rx, b.tx, b.rx}, 10);
		return fi_cntr_read(c);
	}
};
struct rma_event : rma_order {};

/* Small (one request) and large (a transfer split into parts or done with
 * a single cross-memory copy). */
const size_t sizes[] = {64, size_t(1) << 20};

} // namespace

WU_PROVIDER_SUITE(rma_order)
WU_PROVIDER_SUITE(rma_event)

/* fi_getinfo(3): a provider that keeps RAW/WAR/WAW sets the order bit and a
 * max_order_*_size above 0; a hint at most that size still finds it. */
TEST_P(rma_order, getinfo_answers_rma_ordering_hints)
{
	for (uint64_t order : {FI_ORDER_RAW, FI_ORDER_WAR, FI_ORDER_WAW}) {
		SCOPED_TRACE(order);
		if (!offers_order(prov(), order))
			continue;
		fi_info *got = nullptr;
		ASSERT_EQ(getinfo_order(prov(), order, 0, &got), 0);
		size_t max = order_size(got, order);
		for (fi_info *i = got; i; i = i->next) {
			EXPECT_TRUE(i->tx_attr->msg_order & order);
			EXPECT_TRUE(i->rx_attr->msg_order & order);
			EXPECT_GT(order_size(i, order), 0u);
		}
		fi_freeinfo(got);
		got = nullptr;
		ASSERT_EQ(getinfo_order(prov(), order, max - 1, &got), 0);
		EXPECT_GE(order_size(got, order), max - 1);
		fi_freeinfo(got);
	}
}

/* RAW: a read posted right after a write of the same bytes (no wait in
 * between) returns what the write put there. */
TEST_P(rma_order, read_after_write_sees_the_write)
{
	if (!offers_order(prov(), FI_ORDER_RAW))
		return;
	for (size_t n : sizes) {
		std::vector<char> target(n, 'o'), out(n), back(n, 0);
		for (size_t i = 0; i < n; i++)
			out[i] = char(i * 7 + 1);
		uint64_t key, base;
		fid_mr *mr = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, key, base, 11);
		ASSERT_NE(mr, nullptr);
		back_to_back(rw::write, out.data(), rw::read, back.data(), n, base, key);
		EXPECT_EQ(memcmp(back.data(), out.data(), n), 0) << n << " bytes";
		EXPECT_EQ(fi_close(&mr->fid), 0);
	}
}

/* WAR: a write posted right after a read of the same bytes does not
 * change what the read returns. */
TEST_P(rma_order, write_after_read_leaves_the_read_alone)
{
	if (!offers_order(prov(), FI_ORDER_WAR))
		return;
	for (size_t n : sizes) {
		std::vector<char> target(n, 'o'), out(n, 'N'), back(n, 0);
		uint64_t key, base;
		fid_mr *mr = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, key, base, 12);
		ASSERT_NE(mr, nullptr);
		back_to_back(rw::read, back.data(), rw::write, out.data(), n, base, key);
		EXPECT_EQ(back, std::vector<char>(n, 'o')) << n << " bytes";
		EXPECT_EQ(target, out);
		EXPECT_EQ(fi_close(&mr->fid), 0);
	}
}

/* WAW: of two writes posted back to back, the second one's bytes stay. */
TEST_P(rma_order, write_after_write_lands_last)
{
	if (!offers_order(prov(), FI_ORDER_WAW))
		return;
	for (size_t n : sizes) {
		std::vector<char> target(n, 'o'), first(n, '1'), second(n, '2');
		uint64_t key, base;
		fid_mr *mr = reg(target, FI_REMOTE_WRITE, 0, key, base, 13);
		ASSERT_NE(mr, nullptr);
		back_to_back(rw::write, first.data(), rw::write, second.data(), n, base, key);
		EXPECT_EQ(target, second) << n << " bytes";
		EXPECT_EQ(fi_close(&mr->fid), 0);
	}
}

/* Counters bound to a region with fi_mr_bind count each remote write and
 * read of it once, by kind, and never before the written bytes are there. */
TEST_P(rma_event, region_counters_count_each_remote_access_once)
{
	WU_NEEDS(FI_RMA_EVENT);
	ASSERT_TRUE(env.info->caps & FI_RMA_EVENT);
	fid_cntr *wr = counter(), *rd = counter();
	ASSERT_TRUE(wr && rd);
	const size_t n = sizes[1];
	std::vector<char> target(n, 'o'), out(n, 'w'), back(n);
	uint64_t key, base;
	fid_mr *mr = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, FI_RMA_EVENT, key, base, 14);
	ASSERT_NE(mr, nullptr);
	ASSERT_EQ(fi_mr_bind(mr, &wr->fid, FI_REMOTE_WRITE), 0);
	ASSERT_EQ(fi_mr_bind(mr, &rd->fid, FI_REMOTE_READ), 0);
	ASSERT_EQ(fi_mr_enable(mr), 0);
	int ctx;
	for (size_t len : sizes) {
		uint64_t w0 = fi_cntr_read(wr);
		ASSERT_EQ(fi_write(a.ep, out.data(), len, nullptr, a_to_b, base, key, &ctx), 0);
		ASSERT_EQ(count_reaches(wr, w0 + 1), w0 + 1) << len << " bytes";
		EXPECT_EQ(memcmp(target.data(), out.data(), len), 0) << "counted before the data was in place";
		complete(1);
		uint64_t r0 = fi_cntr_read(rd);
		ASSERT_EQ(fi_read(a.ep, back.data(), len, nullptr, a_to_b, base, key, &ctx), 0);
		complete(1);
		EXPECT_EQ(count_reaches(rd, r0 + 1), r0 + 1) << len << " bytes";
	}
	spin({a.tx, a.rx, b.tx, b.rx}, 200);
	EXPECT_EQ(fi_cntr_read(wr), 2u) << "once per write";
	EXPECT_EQ(fi_cntr_read(rd), 2u) << "once per read";
	EXPECT_EQ(fi_cntr_readerr(wr), 0u);
	EXPECT_EQ(fi_close(&mr->fid), 0);
	EXPECT_EQ(fi_close(&wr->fid), 0);
	EXPECT_EQ(fi_close(&rd->fid), 0);
}

/* fi_cntr(3), manual progress: waiting on a counter bound only to a
 * region (no endpoint, no CQ read) still makes the domain's endpoints
 * progress, so the target applies the write (fabtests' fi_multi_mr). */
TEST_P(rma_event, waiting_on_a_region_counter_alone_drives_progress)
{
	WU_NEEDS(FI_RMA_EVENT);
	fid_cntr *wr = counter();
	ASSERT_TRUE(wr);
	std::vector<char> target(sizes[1], 'o'), out(sizes[1], 'w');
	uint64_t key, base;
	fid_mr *mr = reg(target, FI_REMOTE_WRITE, FI_RMA_EVENT, key, base, 15);
	ASSERT_NE(mr, nullptr);
	ASSERT_EQ(fi_mr_bind(mr, &wr->fid, FI_REMOTE_WRITE), 0);
	ASSERT_EQ(fi_mr_enable(mr), 0);
	int ctx;
	for (size_t len : sizes) {
		const uint64_t want = fi_cntr_read(wr) + 1;
		ASSERT_EQ(fi_write(a.ep, out.data(), len, nullptr, a_to_b, base, key, &ctx), 0);
		EXPECT_EQ(fi_cntr_wait(wr, want, 10000), 0) << len << " bytes: only CQ reads drove progress";
		EXPECT_EQ(memcmp(target.data(), out.data(), len), 0);
		complete(1);
	}
	EXPECT_EQ(fi_close(&mr->fid), 0);
	EXPECT_EQ(fi_close(&wr->fid), 0);
}

/* fi_endpoint(3) counters of FI_REMOTE_WRITE / FI_REMOTE_READ on the
 * target endpoint (what fabtests' fi_rdm_rma_event waits on): one each. */
TEST_P(rma_event, target_endpoint_counters_count_remote_writes_and_reads)
{
	WU_NEEDS(FI_RMA_EVENT);
	fid_cntr *rw = counter(), *rr = counter();
	ASSERT_TRUE(rw && rr);
	/* b again, now with the counters (bound before fi_enable). */
	b.close();
	fi_cq_attr qa{};
	qa.format = FI_CQ_FORMAT_TAGGED;
	ASSERT_EQ(fi_cq_open(env.domain, &qa, &b.tx, nullptr), 0);
	ASSERT_EQ(fi_cq_open(env.domain, &qa, &b.rx, nullptr), 0);
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	ASSERT_EQ(fi_av_open(env.domain, &aa, &b.av, nullptr), 0);
	ASSERT_EQ(fi_endpoint(env.domain, env.info, &b.ep, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &b.tx->fid, FI_TRANSMIT), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &b.rx->fid, FI_RECV), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &b.av->fid, 0), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &rw->fid, FI_REMOTE_WRITE), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &rr->fid, FI_REMOTE_READ), 0);
	ASSERT_EQ(fi_enable(b.ep), 0);
	size_t len = 256;
	b.name.assign(len, 0);
	ASSERT_EQ(fi_getname(&b.ep->fid, b.name.data(), &len), 0);
	b.name.resize(len);
	fi_addr_t to_b = a.insert(b);
	std::vector<char> target(64, 'o'), out(64, 'w'), back(64);
	uint64_t key, base;
	fid_mr *mr = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, key, base, 15);
	ASSERT_NE(mr, nullptr);
	int ctx;
	ASSERT_EQ(fi_write(a.ep, out.data(), out.size(), nullptr, to_b, base, key, &ctx), 0);
	complete(1);
	EXPECT_EQ(count_reaches(rw, 1), 1u);
	EXPECT_EQ(target, out);
	ASSERT_EQ(fi_read(a.ep, back.data(), back.size(), nullptr, to_b, base, key, &ctx), 0);
	complete(1);
	EXPECT_EQ(count_reaches(rr, 1), 1u);
	spin({a.tx, a.rx, b.tx, b.rx}, 200);
	EXPECT_EQ(fi_cntr_read(rw), 1u);
	EXPECT_EQ(fi_cntr_read(rr), 1u);
	EXPECT_EQ(fi_close(&mr->fid), 0);
	b.close();
	EXPECT_EQ(fi_close(&rw->fid), 0);
	EXPECT_EQ(fi_close(&rr->fid), 0);
}
