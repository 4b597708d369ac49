/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo(3): the exported entry points, fi_allocinfo/fi_dupinfo/
 * fi_freeinfo, and the FABRIC_1.3 old-layout compatibility copies. */
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <rdma/fabric.h>

#include "../util/fake_provider.h"
#include "../util/leak_check.h"

extern "C" int fi_getinfo_1_3(uint32_t, const char *, const char *, uint64_t,
			      const struct fi_info *, struct fi_info **);
extern "C" struct fi_info *fi_dupinfo_1_3(const struct fi_info *);
extern "C" int fi_getinfo_1_8(uint32_t, const char *, const char *, uint64_t,
			      const struct fi_info *, struct fi_info **);
extern "C" int fi_getinfo_1_0(uint32_t, const char *, const char *, uint64_t,
			      const struct fi_info *, struct fi_info **);
extern "C" struct fi_info *fi_dupinfo_1_0(const struct fi_info *);
extern "C" void fi_freeinfo_1_0(struct fi_info *);

namespace {

struct info_deleter {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using info_ptr = std::unique_ptr<fi_info, info_deleter>;

fi_info *populated()
{
	fi_info *i = fi_allocinfo();
	i->caps = FI_MSG | FI_TAGGED;
	i->mode = FI_CONTEXT;
	i->addr_format = FI_SOCKADDR_IN;
	i->src_addrlen = 16;
	i->src_addr = calloc(1, 16);
	memset(i->src_addr, 0xab, 16);
	i->dest_addrlen = 8;
	i->dest_addr = calloc(1, 8);
	memset(i->dest_addr, 0xcd, 8);
	i->tx_attr->size = 11;
	i->rx_attr->size = 12;
	i->ep_attr->type = FI_EP_RDM;
	i->ep_attr->auth_key_size = 4;
	i->ep_attr->auth_key = static_cast<uint8_t *>(malloc(4));
	memcpy(i->ep_attr->auth_key, "key1", 4);
	i->domain_attr->name = strdup("dom0");
	i->domain_attr->auth_key_size = 3;
	i->domain_attr->auth_key = static_cast<uint8_t *>(malloc(3));
	memcpy(i->domain_attr->auth_key, "dak", 3);
	i->domain_attr->max_group_id = 99;
	i->fabric_attr->name = strdup("fab0");
	i->fabric_attr->prov_name = strdup("prov0");
	i->nic = wu::nic_alloc();
	i->nic->device_attr->name = strdup("eth0");
	i->nic->device_attr->driver = strdup("virtio_net");
	i->nic->bus_attr->bus_type = FI_BUS_PCI;
	i->nic->bus_attr->attr.pci.bus_id = 3;
	i->nic->link_attr->address = strdup("52:54:00:12:34:56");
	i->nic->link_attr->mtu = 1500;
	return i;
}

} // namespace

TEST(fi_getinfo_alloc, allocinfo_has_all_five_attrs_zeroed)
{
	info_ptr i(fi_allocinfo());
	ASSERT_TRUE(i);
	ASSERT_TRUE(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr && i->fabric_attr);
	EXPECT_EQ(i->next, nullptr);
	EXPECT_EQ(i->nic, nullptr);
	EXPECT_EQ(i->caps, 0u);
	EXPECT_EQ(i->domain_attr->max_group_id, 0u);
	EXPECT_EQ(i->fabric_attr->prov_name, nullptr);
}

TEST(fi_getinfo_alloc, dupinfo_null_is_allocinfo)
{
	info_ptr i(fi_dupinfo(nullptr));
	ASSERT_TRUE(i);
	EXPECT_TRUE(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr && i->fabric_attr);
}

TEST(fi_getinfo_alloc, dupinfo_is_a_deep_copy)
{
	info_ptr src(populated());
	info_ptr dup(fi_dupinfo(src.get()));
	ASSERT_TRUE(dup);
	EXPECT_EQ(dup->caps, src->caps);
	EXPECT_NE(dup->src_addr, src->src_addr);
	EXPECT_EQ(0, memcmp(dup->src_addr, src->src_addr, 16));
	EXPECT_NE(dup->dest_addr, src->dest_addr);
	EXPECT_EQ(0, memcmp(dup->dest_addr, src->dest_addr, 8));
	EXPECT_NE(dup->tx_attr, src->tx_attr);
	EXPECT_EQ(dup->tx_attr->size, 11u);
	EXPECT_EQ(dup->rx_attr->size, 12u);
	EXPECT_NE(dup->ep_attr->auth_key, src->ep_attr->auth_key);
	EXPECT_EQ(0, memcmp(dup->ep_attr->auth_key, "key1", 4));
	EXPECT_NE(dup->domain_attr->name, src->domain_attr->name);
	EXPECT_STREQ(dup->domain_attr->name, "dom0");
	EXPECT_EQ(0, memcmp(dup->domain_attr->auth_key, "dak", 3));
	EXPECT_EQ(dup->domain_attr->max_group_id, 99u);
	EXPECT_STREQ(dup->fabric_attr->name, "fab0");
	EXPECT_STREQ(dup->fabric_attr->prov_name, "prov0");
	ASSERT_TRUE(dup->nic);
	EXPECT_NE(dup->nic, src->nic);
	EXPECT_STREQ(dup->nic->device_attr->name, "eth0");
	EXPECT_STREQ(dup->nic->device_attr->driver, "virtio_net");
	EXPECT_EQ(dup->nic->bus_attr->attr.pci.bus_id, 3);
	EXPECT_STREQ(dup->nic->link_attr->address, "52:54:00:12:34:56");
	EXPECT_EQ(dup->nic->link_attr->mtu, 1500u);
	/* Freeing the source must leave the copy intact. */
	src.reset();
	EXPECT_STREQ(dup->domain_attr->name, "dom0");
}

TEST(fi_getinfo_alloc, dupinfo_copies_one_entry_not_the_list)
{
	info_ptr a(fi_allocinfo());
	a->next = fi_allocinfo();
	info_ptr d(fi_dupinfo(a.get()));
	EXPECT_EQ(d->next, nullptr);
}

namespace {

/* Counts the closes of the NICs fi_freeinfo releases (the one thing each
 * list entry owns that can be seen going away without a leak checker). */
int nic_closes;
int (*nic_close_real)(fid *);
int counting_nic_close(fid *f)
{
	nic_closes++;
	return nic_close_real(f);
}

void count_nic_closes(fi_info *i, fi_ops *ops)
{
	ASSERT_TRUE(i->nic);
	*ops = *i->nic->fid.ops;
	nic_close_real = ops->close;
	ops->close = counting_nic_close;
	i->nic->fid.ops = ops;
}

} // namespace

TEST(fi_getinfo_alloc, freeinfo_frees_whole_list_and_accepts_null)
{
	ASSERT_FALSE(wu::test::leaks_now()) << "leaks from before this test";
	fi_freeinfo(nullptr);
	fi_info *head = populated();
	head->next = fi_allocinfo();
	head->next->next = populated();
	fi_ops ops[2];
	count_nic_closes(head, &ops[0]);
	count_nic_closes(head->next->next, &ops[1]);
	nic_closes = 0;
	fi_freeinfo(head);
	EXPECT_EQ(nic_closes, 2) << "every entry of the list is released, the last one too";
	EXPECT_FALSE(wu::test::leaks_now()) << "fi_freeinfo left memory behind (LeakSanitizer builds)";
}

TEST(fi_getinfo_alloc, nic_close_through_its_fid)
{
	fid_nic *nic = wu::nic_alloc();
	ASSERT_TRUE(nic);
	EXPECT_EQ(nic->fid.fclass, (size_t)FI_CLASS_NIC);
	EXPECT_EQ(fi_close(&nic->fid), 0);
}

TEST(fi_getinfo_args, null_info_pointer_is_einval)
{
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, nullptr), -FI_EINVAL);
}

TEST(fi_getinfo_args, newer_version_is_enosys)
{
	fi_info *out = reinterpret_cast<fi_info *>(0x1);
	EXPECT_EQ(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION + 1), nullptr, nullptr, 0,
			     nullptr, &out),
		  -FI_ENOSYS);
	EXPECT_EQ(out, nullptr);
	EXPECT_EQ(fi_getinfo(FI_VERSION(3, 0), nullptr, nullptr, 0, nullptr, &out), -FI_ENOSYS);
}

/* libfabric refuses only versions newer than its own; MPICH 4.0 asks 0.0. */
TEST(fi_getinfo_args, version_zero_is_accepted)
{
	fi_info *out = nullptr;
	EXPECT_EQ(fi_getinfo(0, nullptr, nullptr, 0, nullptr, &out), 0);
	EXPECT_NE(out, nullptr);
	fi_freeinfo(out);
}

TEST(fi_getinfo_args, unknown_provider_is_enodata)
{
	info_ptr hints(fi_allocinfo());
	hints->fabric_attr->prov_name = strdup("no-such-provider");
	fi_info *out = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints.get(), &out), -FI_ENODATA);
	EXPECT_EQ(out, nullptr);
}

TEST(fi_getinfo_dispatch, fake_provider_entry_comes_back_named)
{
	wu::test::scoped_provider fake("fakeprov");
	info_ptr hints(fi_allocinfo());
	hints->fabric_attr->prov_name = strdup("fakeprov");
	fi_info *out = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints.get(), &out), 0);
	info_ptr res(out);
	EXPECT_STREQ(res->fabric_attr->prov_name, "fakeprov");
	EXPECT_EQ(res->fabric_attr->prov_version, FI_VERSION(1, 0));
	EXPECT_EQ(res->fabric_attr->api_version, FI_VERSION(1, 17));
	EXPECT_EQ(res->domain_attr->max_group_id, 7u);
}

TEST(fi_getinfo_compat, v1_3_hints_are_read_only_up_to_the_old_layout)
{
	wu::test::scoped_provider fake("fakeprov13");
	/* An old binary allocated exactly the 1.17-sized fi_domain_attr. */
	fi_info hints{};
	fi_fabric_attr fab{};
	fab.prov_name = const_cast<char *>("fakeprov13");
	void *old_dom = calloc(1, wu::layout_1_3.domain);
	auto *dom = static_cast<fi_domain_attr *>(old_dom);
	hints.fabric_attr = &fab;
	hints.domain_attr = dom;
	dom->mr_cnt = 5;
	wu::test::fake_last_max_group_id = ~0ull;
	fi_info *out = nullptr;
	ASSERT_EQ(fi_getinfo_1_3(FI_VERSION(1, 17), nullptr, nullptr, 0, &hints, &out), 0);
	EXPECT_EQ(wu::test::fake_last_max_group_id, 0u) << "appended members must read as zero";
	EXPECT_EQ(wu::test::fake_last_domain_mr_count, 5u) << "the old prefix is kept";
	EXPECT_NE(wu::test::fake_last_hints, &hints) << "the provider sees a widened copy";
	fi_freeinfo(out);
	free(old_dom);
}

TEST(fi_getinfo_compat, v1_3_dupinfo_copies_old_prefix)
{
	fi_info src{};
	void *old_dom = calloc(1, wu::layout_1_3.domain);
	auto *dom = static_cast<fi_domain_attr *>(old_dom);
	dom->cq_data_size = 4;
	src.domain_attr = dom;
	info_ptr d(fi_dupinfo_1_3(&src));
	ASSERT_TRUE(d);
	EXPECT_EQ(d->domain_attr->cq_data_size, 4u);
	EXPECT_EQ(d->domain_attr->max_group_id, 0u);
	free(old_dom);
}

/* An old caller's struct of `size` bytes inside a bigger block whose tail
 * is a guard pattern: the library must neither read (pointers there would
 * be followed or freed) nor write it. */
constexpr unsigned char guard_byte = 0xa5;
constexpr size_t guard_len = 64;

void *guarded(size_t size)
{
	auto *p = static_cast<unsigned char *>(calloc(1, size + guard_len));
	memset(p + size, guard_byte, guard_len);
	return p;
}

bool guard_intact(const void *block, size_t size)
{
	const auto *p = static_cast<const unsigned char *>(block) + size;
	for (size_t i = 0; i < guard_len; i++)
		if (p[i] != guard_byte)
			return false;
	return true;
}

TEST(fi_getinfo_compat, v1_8_hints_end_before_max_cntr_value)
{
	wu::test::scoped_provider fake("fakeprov18");
	fi_info hints{};
	fi_fabric_attr fab{};
	fab.prov_name = const_cast<char *>("fakeprov18");
	auto *dom = static_cast<fi_domain_attr *>(guarded(wu::layout_1_8.domain));
	dom->max_group_id = 3;
	hints.fabric_attr = &fab;
	hints.domain_attr = dom;
	wu::test::fake_last_max_cntr_value = 1;
	fi_info *out = nullptr;
	ASSERT_EQ(fi_getinfo_1_8(FI_VERSION(2, 0), nullptr, nullptr, 0, &hints, &out), 0);
	EXPECT_EQ(wu::test::fake_last_max_cntr_value, 0u) << "2.5's members read as zero";
	EXPECT_EQ(wu::test::fake_last_max_group_id, 3u);
	EXPECT_TRUE(guard_intact(dom, wu::layout_1_8.domain));
	fi_freeinfo(out);
	free(dom);
}

TEST(fi_getinfo_compat, v1_0_dupinfo_reads_and_writes_only_the_1_0_structs)
{
	const wu::info_layout &l = wu::layout_1_0;
	auto *info = static_cast<fi_info *>(guarded(l.info));
	auto *tx = static_cast<fi_tx_attr *>(guarded(l.tx));
	auto *ep = static_cast<fi_ep_attr *>(guarded(l.ep));
	auto *dom = static_cast<fi_domain_attr *>(guarded(l.domain));
	auto *fab = static_cast<fi_fabric_attr *>(guarded(l.fabric));
	info->caps = FI_MSG;
	info->tx_attr = tx;
	info->ep_attr = ep;
	info->domain_attr = dom;
	info->fabric_attr = fab;
	tx->inject_size = 64;
	ep->max_msg_size = 1024;
	dom->max_ep_srx_ctx = 2;
	dom->name = const_cast<char *>("dom");
	fab->prov_version = 5;
	info_ptr d(fi_dupinfo_1_0(info));
	ASSERT_TRUE(d);
	EXPECT_EQ(d->caps, FI_MSG);
	EXPECT_EQ(d->nic, nullptr);
	EXPECT_EQ(d->tx_attr->inject_size, 64u);
	EXPECT_EQ(d->tx_attr->tclass, 0u);
	EXPECT_EQ(d->ep_attr->max_msg_size, 1024u);
	EXPECT_EQ(d->ep_attr->auth_key, nullptr);
	EXPECT_EQ(d->ep_attr->auth_key_size, 0u);
	EXPECT_EQ(d->domain_attr->max_ep_srx_ctx, 2u);
	EXPECT_STREQ(d->domain_attr->name, "dom");
	EXPECT_EQ(d->domain_attr->cntr_cnt, 0u);
	EXPECT_EQ(d->domain_attr->auth_key, nullptr);
	EXPECT_EQ(d->fabric_attr->prov_version, 5u);
	EXPECT_EQ(d->fabric_attr->api_version, 0u);
	EXPECT_TRUE(guard_intact(info, l.info));
	EXPECT_TRUE(guard_intact(tx, l.tx));
	EXPECT_TRUE(guard_intact(ep, l.ep));
	EXPECT_TRUE(guard_intact(dom, l.domain));
	EXPECT_TRUE(guard_intact(fab, l.fabric));
	for (void *p : {(void *)info, (void *)tx, (void *)ep, (void *)dom, (void *)fab})
		free(p);
}

TEST(fi_getinfo_compat, v1_0_freeinfo_reads_only_the_1_0_structs)
{
	/* A 1.0 caller swapped in its own 80-byte fi_ep_attr and 120-byte
	 * fi_domain_attr; what follows them is not theirs (here: pointers that
	 * free() would abort on). */
	fi_info *i = fi_dupinfo_1_0(nullptr);
	ASSERT_TRUE(i);
	free(i->ep_attr);
	free(i->domain_attr);
	i->ep_attr = static_cast<fi_ep_attr *>(guarded(wu::layout_1_0.ep));
	i->domain_attr = static_cast<fi_domain_attr *>(guarded(wu::layout_1_0.domain));
	fi_freeinfo_1_0(i);
}

TEST(fi_getinfo_compat, v1_0_results_carry_nothing_its_freeinfo_cannot_free)
{
	wu::test::scoped_provider fake("fakeprov10");
	fi_info *out = nullptr;
	ASSERT_EQ(fi_getinfo_1_0(FI_VERSION(1, 4), nullptr, nullptr, 0, nullptr, &out), 0);
	for (fi_info *i = out; i; i = i->next) {
		EXPECT_EQ(i->nic, nullptr);
		EXPECT_EQ(i->ep_attr->auth_key, nullptr);
		EXPECT_EQ(i->domain_attr->auth_key, nullptr);
	}
	fi_freeinfo_1_0(out);
}

TEST(fi_getinfo_threads, concurrent_calls)
{
	wu::test::scoped_provider fake("fakeprovmt");
	std::vector<std::thread> ts;
	std::atomic<int> bad{0};
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&] {
			for (int i = 0; i < 200; i++) {
				fi_info *out = nullptr;
				if (fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &out) != 0)
					bad++;
				fi_freeinfo(out);
			}
		});
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(bad.load(), 0);
}
