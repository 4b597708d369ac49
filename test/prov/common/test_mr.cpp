/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_mr(3) on the shared memory-region code, on real tcp domains (mr_mode
 * as tcp reports it, and edited before fi_domain to exercise other modes). */
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "cq_fixture.h"

using namespace wu::test;

namespace {

void virt_prov_key(fi_info *i)
{
	i->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_LOCAL;
}
void rma_event(fi_info *i)
{
	i->domain_attr->mr_mode = FI_MR_RMA_EVENT;
}
void endpoint_mode(fi_info *i)
{
	i->domain_attr->mr_mode = FI_MR_ENDPOINT;
}
void small_keys_iov(fi_info *i)
{
	i->domain_attr->mr_key_size = 2;
	i->domain_attr->mr_iov_limit = 4;
}
void basic(fi_info *i)
{
	i->domain_attr->mr_mode = FI_MR_BASIC;
}

constexpr uint64_t rw = FI_REMOTE_READ | FI_REMOTE_WRITE;

} // namespace

/* ---- fi_mr_reg / fi_mr_key / fi_mr_desc ---- */

/* Suites run over every provider (prov_fixture.h). */
WU_PROVIDER_TEST_SUITE(mr_reg)
WU_PROVIDER_TEST_SUITE(mr_check)
WU_PROVIDER_TEST_SUITE(mr_bind)
WU_PROVIDER_TEST_SUITE(mr_control)
WU_PROVIDER_TEST_SUITE(mr_threads)

TEST_P(mr_reg, requested_keys_are_unique_per_domain)
{
	cq_domain d{prov()}, other{prov()};
	char buf[64];
	fid_mr *a = nullptr, *b = nullptr, *c = nullptr;
	int ctx;
	ASSERT_EQ(d.reg(buf, sizeof buf, rw, 0, 0x42, 0, &a, &ctx), 0);
	mr_ptr ha(a);
	EXPECT_EQ(fi_mr_key(a), 0x42u);
	EXPECT_NE(fi_mr_desc(a), nullptr);
	EXPECT_EQ(a->fid.context, &ctx);
	EXPECT_TRUE(wu::mr::is_mr(&a->fid));
	EXPECT_EQ(d.reg(buf, 8, rw, 0, 0x42, 0, &b, nullptr), -FI_ENOKEY);
	EXPECT_EQ(b, nullptr);
	ASSERT_EQ(other.reg(buf, 8, rw, 0, 0x42, 0, &c, nullptr), 0); /* another domain */
	mr_ptr hc(c);
	ha.reset(); /* a region in use by nothing closes at once; its key is free */
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 0x42, 0, &b, nullptr), 0);
	mr_ptr hb(b);
}

TEST_P(mr_reg, prov_key_mode_picks_distinct_keys)
{
	cq_domain d(prov(), FI_VERSION(2, 0), virt_prov_key);
	char buf[16];
	std::vector<mr_ptr> mrs;
	std::vector<uint64_t> keys;
	for (int i = 0; i < 100; i++) {
		fid_mr *m = nullptr;
		ASSERT_EQ(d.reg(buf, sizeof buf, rw, 0, 7 /* ignored */, 0, &m), 0);
		mrs.emplace_back(m);
		keys.push_back(fi_mr_key(m));
	}
	std::sort(keys.begin(), keys.end());
	EXPECT_EQ(std::unique(keys.begin(), keys.end()), keys.end());
}

TEST_P(mr_reg, basic_means_virt_addr_and_prov_key)
{
	cq_domain d(prov(), FI_VERSION(2, 0), basic);
	char buf[16];
	fid_mr *a = nullptr, *b = nullptr;
	ASSERT_EQ(d.reg(buf, sizeof buf, rw, 0, 1, 0, &a), 0);
	mr_ptr ha(a);
	ASSERT_EQ(d.reg(buf, sizeof buf, rw, 0, 1, 0, &b), 0); /* requested key ignored */
	mr_ptr hb(b);
	EXPECT_NE(fi_mr_key(a), fi_mr_key(b));
	EXPECT_EQ(wu::mr::check(d.dom(), fi_mr_key(a), reinterpret_cast<uintptr_t>(buf + 3), 1,
				FI_REMOTE_READ),
		  buf + 3);
}

TEST_P(mr_reg, rejects_bad_arguments)
{
	cq_domain d{prov()};
	char buf[16];
	fid_mr *m = nullptr;
	EXPECT_EQ(d.reg(buf, 16, rw, 0, 1, FI_RMA_PMEM, &m), -FI_EBADFLAGS);
	EXPECT_EQ(d.reg(buf, 16, 1ULL << 40, 0, 1, 0, &m), -FI_EINVAL);
	iovec v[2] = {{buf, 8}, {buf + 8, 8}};
	EXPECT_EQ(wu::mr::ops.regv(&d.domain->fid, v, 2, rw, 0, 1, 0, &m, nullptr), -FI_EINVAL)
		<< "tcp allows one buffer per region";
	EXPECT_EQ(wu::mr::ops.regv(&d.domain->fid, v, 0, rw, 0, 1, 0, &m, nullptr), -FI_EINVAL);
	fi_mr_attr a{};
	a.mr_iov = v;
	a.iov_count = 1;
	a.access = rw;
	a.iface = FI_HMEM_CUDA;
	EXPECT_EQ(wu::mr::ops.regattr(&d.domain->fid, &a, 0, &m), -FI_ENOSYS);
	a.iface = FI_HMEM_SYSTEM;
	uint8_t ak[4] = {};
	a.auth_key = ak;
	a.auth_key_size = sizeof ak;
	EXPECT_EQ(wu::mr::ops.regattr(&d.domain->fid, &a, 0, &m), -FI_EINVAL);
	EXPECT_EQ(m, nullptr);
	EXPECT_EQ(wu::mr::ops.reg(nullptr, buf, 16, rw, 0, 1, 0, &m, nullptr), -FI_EINVAL);
}

TEST_P(mr_reg, key_must_fit_the_key_size)
{
	cq_domain d(prov(), FI_VERSION(2, 0), small_keys_iov);
	char buf[16];
	fid_mr *m = nullptr;
	EXPECT_EQ(d.reg(buf, 16, rw, 0, 0x10000, 0, &m), -FI_EKEYREJECTED);
	ASSERT_EQ(d.reg(buf, 16, rw, 0, 0xffff, 0, &m), 0);
	mr_ptr h(m);
}

TEST_P(mr_reg, holds_the_domain)
{
	cq_domain d{prov()};
	char buf[8];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 1, 0, &m), 0);
	EXPECT_EQ(fi_close(&d.domain->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&m->fid), 0);
}

/* ---- RMA target checks (mr::check) ---- */

TEST_P(mr_check, offset_mode_addresses_from_the_offset)
{
	cq_domain d{prov()}; /* tcp: mr_mode 0 */
	char buf[100];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, sizeof buf, FI_REMOTE_WRITE, 1000, 9, 0, &m), 0);
	mr_ptr h(m);
	auto *dom = d.dom();
	EXPECT_EQ(wu::mr::check(dom, 9, 1000, 100, FI_REMOTE_WRITE), buf);
	EXPECT_EQ(wu::mr::check(dom, 9, 1010, 5, FI_REMOTE_WRITE), buf + 10);
	EXPECT_EQ(wu::mr::check(dom, 9, 1100, 0, FI_REMOTE_WRITE), buf + 100);
	EXPECT_EQ(wu::mr::check(dom, 9, 1099, 2, FI_REMOTE_WRITE), nullptr); /* past the end */
	EXPECT_EQ(wu::mr::check(dom, 9, 999, 1, FI_REMOTE_WRITE), nullptr);  /* before */
	EXPECT_EQ(wu::mr::check(dom, 9, 1000, 1, FI_REMOTE_READ), nullptr);  /* no access */
	EXPECT_EQ(wu::mr::check(dom, 8, 1000, 1, FI_REMOTE_WRITE), nullptr); /* no key */
	EXPECT_EQ(wu::mr::check(dom, 9, reinterpret_cast<uintptr_t>(buf), 1, FI_REMOTE_WRITE),
		  nullptr);
}

TEST_P(mr_check, virt_addr_mode_uses_virtual_addresses)
{
	cq_domain d(prov(), FI_VERSION(2, 0), virt_prov_key);
	char buf[100];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, sizeof buf, rw | FI_SEND, 1000, 0, 0, &m), 0);
	mr_ptr h(m);
	uint64_t k = fi_mr_key(m);
	auto a = reinterpret_cast<uintptr_t>(buf);
	EXPECT_EQ(wu::mr::check(d.dom(), k, a + 50, 50, FI_REMOTE_READ), buf + 50);
	EXPECT_EQ(wu::mr::check(d.dom(), k, a + 50, 51, FI_REMOTE_READ), nullptr);
	EXPECT_EQ(wu::mr::check(d.dom(), k, 1000, 1, FI_REMOTE_READ), nullptr);
	/* FI_MR_LOCAL: the desc names the region */
	EXPECT_TRUE(wu::mr::check_desc(d.dom(), fi_mr_desc(m), buf + 10, 90, FI_SEND));
	EXPECT_FALSE(wu::mr::check_desc(d.dom(), fi_mr_desc(m), buf + 10, 91, FI_SEND));
	EXPECT_FALSE(wu::mr::check_desc(d.dom(), fi_mr_desc(m), buf, 1, FI_RECV));
	int junk;
	EXPECT_FALSE(wu::mr::check_desc(d.dom(), &junk, buf, 1, FI_SEND));
}

TEST_P(mr_check, regions_of_several_buffers)
{
	cq_domain d(prov(), FI_VERSION(2, 0), small_keys_iov);
	char a[10], b[20];
	iovec v[2] = {{a, sizeof a}, {b, sizeof b}};
	fid_mr *m = nullptr;
	ASSERT_EQ(wu::mr::ops.regv(&d.domain->fid, v, 2, rw, 0, 5, 0, &m, nullptr), 0);
	mr_ptr h(m);
	EXPECT_EQ(wu::mr::check(d.dom(), 5, 3, 7, FI_REMOTE_READ), a + 3);
	EXPECT_EQ(wu::mr::check(d.dom(), 5, 12, 18, FI_REMOTE_READ), b + 2);
	EXPECT_EQ(wu::mr::check(d.dom(), 5, 8, 4, FI_REMOTE_READ), nullptr); /* spans both */
}

/* ---- fi_mr_bind / fi_mr_enable / remote access events ---- */

TEST_P(mr_bind, counter_counts_remote_writes)
{
	WU_NEEDS(FI_RMA_EVENT); /* fi_mr_bind to a counter counts remote accesses */
	cq_domain d{prov()};
	cntr_ptr c = d.cntr();
	char buf[8];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 3, 0, &m), 0);
	EXPECT_EQ(fi_mr_bind(m, &c->fid, 0), -FI_EBADFLAGS);
	EXPECT_EQ(fi_mr_bind(m, &c->fid, FI_SEND), -FI_EBADFLAGS);
	ASSERT_EQ(fi_mr_bind(m, &c->fid, FI_REMOTE_WRITE), 0);
	EXPECT_EQ(fi_mr_enable(m), 0);
	wu::mr::remote_access(d.dom(), 3, FI_REMOTE_WRITE);
	wu::mr::remote_access(d.dom(), 3, FI_REMOTE_READ); /* not asked for */
	EXPECT_EQ(fi_cntr_read(c.get()), 1u);
	EXPECT_EQ(fi_close(&c->fid), -FI_EBUSY); /* the region is bound to it */
	EXPECT_EQ(fi_close(&m->fid), 0);	       /* releases the binding */
	fid_cq *cq = nullptr;
	fi_cq_attr ca{};
	ASSERT_EQ(d.open_cq(ca, &cq), 0);
	cq_ptr hcq(cq);
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 3, 0, &m), 0);
	mr_ptr hm(m);
	EXPECT_EQ(fi_mr_bind(m, &cq->fid, FI_REMOTE_WRITE), -FI_EINVAL);
}

/* fi_mr_bind to a counter is FI_RMA_EVENT's: a domain whose fi_info does
 * not carry the capability refuses it. */
TEST_P(mr_bind, counter_needs_rma_event_in_the_domain_info)
{
	cq_domain d(prov(), FI_VERSION(2, 0), [](fi_info *i) { i->caps &= ~FI_RMA_EVENT; });
	cntr_ptr c = d.cntr();
	char buf[8];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 4, 0, &m), 0);
	mr_ptr hm(m);
	EXPECT_EQ(fi_mr_bind(m, &c->fid, FI_REMOTE_WRITE), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_mr_bind(m, &c->fid, FI_REMOTE_READ), -FI_EOPNOTSUPP);
}

TEST_P(mr_bind, rma_event_regions_start_disabled)
{
	WU_NEEDS(FI_RMA_EVENT); /* fi_mr_bind to a counter counts remote accesses */
	cq_domain d(prov(), FI_VERSION(2, 0), rma_event);
	cntr_ptr c = d.cntr();
	char buf[8];
	fid_mr *m = nullptr, *plain = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 1, FI_RMA_EVENT, &m), 0);
	mr_ptr hm(m);
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 2, 0, &plain), 0);
	mr_ptr hp(plain);
	EXPECT_EQ(fi_mr_bind(plain, &c->fid, FI_REMOTE_WRITE), -FI_EINVAL) << "needs FI_RMA_EVENT";
	EXPECT_EQ(wu::mr::check(d.dom(), 1, 0, 8, FI_REMOTE_WRITE), nullptr); /* disabled */
	EXPECT_EQ(wu::mr::check(d.dom(), 2, 0, 8, FI_REMOTE_WRITE), buf);
	ASSERT_EQ(fi_mr_bind(m, &c->fid, FI_REMOTE_WRITE), 0);
	ASSERT_EQ(fi_mr_enable(m), 0);
	EXPECT_EQ(wu::mr::check(d.dom(), 1, 0, 8, FI_REMOTE_WRITE), buf);
	EXPECT_EQ(fi_mr_bind(m, &c->fid, FI_REMOTE_READ), -FI_EINVAL) << "bound after enable";
}

TEST_P(mr_bind, endpoint_mode_needs_an_endpoint)
{
	cq_domain d(prov(), FI_VERSION(2, 0), endpoint_mode);
	char buf[8];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 0, 1, 0, &m), 0);
	mr_ptr hm(m);
	EXPECT_EQ(fi_mr_enable(m), -FI_EINVAL);
	fid fake_ep{};
	fake_ep.fclass = FI_CLASS_EP;
	EXPECT_EQ(fi_mr_bind(m, &fake_ep, FI_REMOTE_WRITE), -FI_EBADFLAGS);
	ASSERT_EQ(fi_mr_bind(m, &fake_ep, 0), 0);
	EXPECT_EQ(fi_mr_enable(m), 0);
	EXPECT_EQ(wu::mr::check(d.dom(), 1, 0, 8, FI_REMOTE_WRITE), buf);
}

/* ---- fi_mr_refresh / fi_mr_raw_attr ---- */

TEST_P(mr_control, refresh_and_raw_attr)
{
	cq_domain d{prov()};
	char buf[8];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, 8, rw, 64, 0x1234, 0, &m), 0);
	mr_ptr hm(m);
	iovec v{buf, 8};
	EXPECT_EQ(fi_mr_refresh(m, &v, 1, 0), 0);
	uint64_t base = 0;
	uint8_t raw[8];
	size_t ks = 4;
	EXPECT_EQ(fi_mr_raw_attr(m, &base, raw, &ks, 0), -FI_ETOOSMALL);
	EXPECT_EQ(ks, 8u);
	ASSERT_EQ(fi_mr_raw_attr(m, &base, raw, &ks, 0), 0);
	uint64_t k;
	memcpy(&k, raw, 8);
	EXPECT_EQ(k, 0x1234u);
	EXPECT_EQ(base, 64u);
	EXPECT_EQ(fi_control(&m->fid, FI_GETWAIT, &k), -FI_ENOSYS);
}

/* ---- concurrency (TSan) ---- */

TEST_P(mr_threads, checks_while_registering)
{
	cq_domain d{prov()};
	static char buf[4096];
	fid_mr *m = nullptr;
	ASSERT_EQ(d.reg(buf, sizeof buf, rw, 0, 1, 0, &m), 0);
	mr_ptr hm(m);
	std::atomic<bool> stop{false};
	std::thread checker([&] {
		while (!stop)
			ASSERT_EQ(wu::mr::check(d.dom(), 1, 10, 10, FI_REMOTE_READ), buf + 10);
	});
	for (int i = 0; i < 2000; i++) {
		fid_mr *t = nullptr;
		ASSERT_EQ(d.reg(buf, 16, rw, 0, 100 + i, 0, &t), 0);
		ASSERT_EQ(fi_close(&t->fid), 0);
	}
	stop = true;
	checker.join();
}
