/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for fi_tostr / fi_tostr_r (formats are checked against Debian's
// library in full by tostr_diff.sh; these pin the rules one by one).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_ext.h>

#include "core/info.h"

namespace wu {
/* Defined in src/core/tostr.cpp: fi_ops::tostr of our fid_nic objects. */
int nic_tostr(const struct fid *fid, char *buf, size_t len) noexcept;
} // namespace wu

namespace {

std::string S(const void *data, fi_type t)
{
	const char *s = fi_tostr(data, t);
	return s ? s : "<NULL>";
}

template <class T>
std::string V(T v, fi_type t)
{
	return S(&v, t);
}

struct Info {
	fi_info info{};
	fi_tx_attr tx{};
	fi_rx_attr rx{};
	fi_ep_attr ep{};
	fi_domain_attr dom{};
	fi_fabric_attr fab{};
	Info()
	{
		info.tx_attr = &tx;
		info.rx_attr = &rx;
		info.ep_attr = &ep;
		info.domain_attr = &dom;
		info.fabric_attr = &fab;
	}
};

TEST(Tostr, Enums)
{
	EXPECT_EQ(V<uint32_t>(FI_EP_RDM, FI_TYPE_EP_TYPE), "FI_EP_RDM");
	EXPECT_EQ(V<uint32_t>(6, FI_TYPE_EP_TYPE), "Unknown");
	EXPECT_EQ(V<uint32_t>(FI_THREAD_DOMAIN, FI_TYPE_THREADING), "FI_THREAD_DOMAIN");
	EXPECT_EQ(V<uint32_t>(FI_PROTO_XNET, FI_TYPE_PROTOCOL), "FI_PROTO_XNET");
	EXPECT_EQ(V<uint32_t>(FI_PROTO_MXM, FI_TYPE_PROTOCOL), "Unknown");
	EXPECT_EQ(V<uint32_t>(FI_PROV_SPECIFIC | 3, FI_TYPE_PROTOCOL), "Provider specific");
	EXPECT_EQ(V<uint32_t>(FI_PROV_SPECIFIC, FI_TYPE_ADDR_FORMAT), "Provider specific");
	EXPECT_EQ(V<uint32_t>(FI_PROV_SPECIFIC, FI_TYPE_EP_TYPE), "Unknown");
	EXPECT_EQ(V<uint32_t>(FI_ADDR_CXI, FI_TYPE_ADDR_FORMAT), "FI_ADDR_CXI");
	EXPECT_EQ(V<uint32_t>(FI_MSWAP, FI_TYPE_ATOMIC_OP), "FI_MSWAP");
	EXPECT_EQ(V<uint32_t>(FI_UINT128, FI_TYPE_ATOMIC_TYPE), "FI_UINT128");
	EXPECT_EQ(V<uint32_t>(FI_JOIN_COMPLETE, FI_TYPE_EQ_EVENT), "FI_JOIN_COMPLETE");
	EXPECT_EQ(V<uint32_t>(FI_CQ_FORMAT_TAGGED, FI_TYPE_CQ_FORMAT), "FI_CQ_FORMAT_TAGGED");
	EXPECT_EQ(V<uint32_t>(FI_HMEM_ZE, FI_TYPE_HMEM_IFACE), "FI_HMEM_ZE");
	EXPECT_EQ(V<uint32_t>(FI_GATHER, FI_TYPE_COLLECTIVE_OP), "FI_GATHER");
	EXPECT_EQ(V<uint32_t>(FI_LOG_WARN, FI_TYPE_LOG_LEVEL), "warn");
	EXPECT_EQ(V<uint32_t>(FI_LOG_EP_DATA, FI_TYPE_LOG_SUBSYS), "ep_data");
	// Enums are 32 bits wide: the upper half of a 64-bit word is ignored.
	EXPECT_EQ(V<uint64_t>(0x100000003ULL, FI_TYPE_EP_TYPE), "FI_EP_RDM");
}

TEST(Tostr, FlagLists)
{
	EXPECT_EQ(V<uint64_t>(0, FI_TYPE_CAPS), "");
	EXPECT_EQ(V<uint64_t>(FI_MSG | FI_TAGGED | FI_HMEM, FI_TYPE_CAPS),
		  "FI_MSG, FI_TAGGED, FI_HMEM");
	// Table order, not bit order.
	EXPECT_EQ(V<uint64_t>(FI_CLAIM | FI_DISCARD, FI_TYPE_OP_FLAGS), "FI_CLAIM, FI_DISCARD");
	EXPECT_EQ(V<uint64_t>(FI_SEND | FI_MSG, FI_TYPE_CQ_EVENT_FLAGS), "FI_SEND, FI_MSG");
	EXPECT_EQ(V<uint64_t>(FI_CONTEXT | FI_CONTEXT2, FI_TYPE_MODE), "FI_CONTEXT, FI_CONTEXT2");
	EXPECT_EQ(V<uint64_t>(FI_ORDER_SAS | FI_ORDER_RMA_RAR, FI_TYPE_MSG_ORDER),
		  "FI_ORDER_SAS, FI_ORDER_RMA_RAR");
	EXPECT_EQ(V<int>(FI_MR_LOCAL | FI_MR_PROV_KEY, FI_TYPE_MR_MODE),
		  "FI_MR_LOCAL, FI_MR_PROV_KEY");
	// Bits without a name in a set print nothing.
	EXPECT_EQ(V<uint64_t>(1ULL << 63, FI_TYPE_CAPS), "");
	EXPECT_EQ(V<uint64_t>(FI_MSG, FI_TYPE_OP_FLAGS), "");
}

TEST(Tostr, NewCapsAndVersion)
{
#ifdef FI_AV_USER_ID
	EXPECT_EQ(V<uint64_t>(FI_AV_USER_ID, FI_TYPE_CAPS), "FI_AV_USER_ID");
#endif
#ifdef FI_TAGGED_MULTI_RECV
	EXPECT_EQ(V<uint64_t>(FI_TAGGED_MULTI_RECV, FI_TYPE_CAPS), "FI_TAGGED_MULTI_RECV");
#endif
	uint32_t ignored = 0;
	std::string want = std::to_string(FI_MAJOR_VERSION) + "." +
			   std::to_string(FI_MINOR_VERSION) + "." + std::to_string(FI_REVISION_VERSION);
	EXPECT_EQ(S(&ignored, FI_TYPE_VERSION), want);
}

TEST(Tostr, InfoLayout)
{
	Info i;
	i.info.caps = FI_MSG | FI_RMA;
	i.info.addr_format = FI_SOCKADDR_IN;
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(4242);
	inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);
	i.info.src_addr = &sin;
	i.info.src_addrlen = sizeof sin;
	i.ep.type = FI_EP_RDM;
	i.ep.mem_tag_format = 0xabc;
	i.dom.name = const_cast<char *>("dom0");
	i.fab.prov_version = FI_VERSION(117, 3);
	std::string s = S(&i.info, FI_TYPE_INFO);
	EXPECT_EQ(s.rfind("fi_info:\n    caps: [ FI_MSG, FI_RMA ]\n    mode: [  ]\n", 0), 0u) << s;
	EXPECT_NE(s.find("    src_addr: fi_sockaddr_in://10.1.2.3:4242\n    dest_addr: (null)\n"
			 "    handle: (nil)\n    fi_tx_attr:\n"),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find("        comp_order: [ FI_ORDER_NONE ]\n"), std::string::npos);
	EXPECT_NE(s.find("        mem_tag_format: 0x0000000000000abc\n"), std::string::npos);
	EXPECT_NE(s.find("        domain: 0x0\n        name: dom0\n"), std::string::npos);
	EXPECT_NE(s.find("        prov_version: 117.3\n"), std::string::npos);
	EXPECT_EQ(s.substr(s.size() - 15), "    nic: (nil)\n");

	fi_info bare{};
	s = S(&bare, FI_TYPE_INFO);
	EXPECT_NE(s.find("    fi_tx_attr: (null)\n    fi_rx_attr: (null)\n"), std::string::npos);
}

// 2.0 headers append fields to fi_domain_attr; 1.17's do not.
template <class A>
concept has_group_id = requires(A a) { a.max_group_id; };

TEST(Tostr, AttrsAtTopLevel)
{
	Info i;
	i.tx.comp_order = FI_ORDER_STRICT | FI_ORDER_DATA;
	std::string s = S(&i.tx, FI_TYPE_TX_ATTR);
	EXPECT_EQ(s.rfind("fi_tx_attr:\n    caps: [  ]\n", 0), 0u) << s;
	EXPECT_NE(s.find("    comp_order: [ FI_ORDER_STRICT, FI_ORDER_DATA ]\n"), std::string::npos);
	s = S(&i.dom, FI_TYPE_DOMAIN_ATTR);
	EXPECT_NE(s.find("    tclass: 0x0\n"), std::string::npos);
	if constexpr (has_group_id<fi_domain_attr>) {
		EXPECT_NE(s.find("    max_ep_auth_key: 0\n    max_group_id: 0\n"), std::string::npos)
			<< s;
	}
}

TEST(Tostr, Nic)
{
	Info i;
	fi_device_attr dev{};
	dev.name = const_cast<char *>("eth9");
	fi_bus_attr bus{};
	bus.bus_type = FI_BUS_PCI;
	bus.attr.pci.bus_id = 0x3b;
	fi_link_attr link{};
	link.state = FI_LINK_UP;
	fid_nic nic{};
	nic.fid.fclass = FI_CLASS_NIC;
	nic.device_attr = &dev;
	nic.bus_attr = &bus;
	nic.link_attr = &link;
	i.info.nic = &nic;
	std::string s = S(&i.info, FI_TYPE_INFO);
	EXPECT_NE(s.find("    nic:\n        fi_device_attr:\n            name: eth9\n"
			 "            device_id: (null)\n"),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find("            bus_type: FI_BUS_PCI\n            fi_pci_attr:\n"
			 "                domain_id: 0\n                bus_id: 59\n"),
		  std::string::npos);
	EXPECT_NE(s.find("            state: FI_LINK_UP\n"), std::string::npos);
}

TEST(Tostr, NicTostrAppends)
{
	fi_device_attr dev{};
	dev.name = const_cast<char *>("eth9");
	fi_bus_attr bus{};
	fi_link_attr link{};
	fid_nic nic{};
	nic.fid.fclass = FI_CLASS_NIC;
	nic.device_attr = &dev;
	nic.bus_attr = &bus;
	nic.link_attr = &link;
	char buf[512] = "before\n";
	ASSERT_EQ(wu::nic_tostr(&nic.fid, buf, sizeof buf), 0);
	EXPECT_EQ(std::string(buf).rfind("before\n    nic:\n        fi_device_attr:\n"
					  "            name: eth9\n",
					  0),
		  0u)
		<< buf;
	EXPECT_NE(std::string(buf).find("            bus_type: FI_BUS_UNKNOWN\n"), std::string::npos);
	// At most len-2 characters in all, counting what was there.
	char small[16] = "abc";
	ASSERT_EQ(wu::nic_tostr(&nic.fid, small, sizeof small), 0);
	EXPECT_STREQ(small, "abc    nic:\n  "); // 14 = 16 - 2
}

// NICs our fi_getinfo/fi_dupinfo hand out must print like Debian's: fi_info
// shows whatever their fi_ops::tostr writes.
TEST(Tostr, OurNicObjectsPrintTheDebianLayout)
{
	fid_nic *nic = wu::nic_alloc();
	ASSERT_NE(nic, nullptr);
	nic->bus_attr->bus_type = FI_BUS_PCI;
	nic->bus_attr->attr.pci.function_id = 3;
	Info i;
	i.info.nic = nic;
	std::string s = S(&i.info, FI_TYPE_INFO);
	EXPECT_NE(s.find("    fi_fabric_attr:\n"), std::string::npos);
	EXPECT_NE(s.find("        prov_version: 0.0\n        api_version: 0.0\n    nic:\n"
			 "        fi_device_attr:\n            name: (null)\n"),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find("                function_id: 3\n"), std::string::npos) << s;
	EXPECT_EQ(S(&nic->fid, FI_TYPE_FID).rfind("    nic:\n        fi_device_attr:\n", 0), 0u);
	fi_close(&nic->fid);
}

int plain_tostr(const fid *, char *buf, size_t len)
{
	return snprintf(buf, len, "custom");
}

TEST(Tostr, FidUsesOwnTostr)
{
	fi_ops ops{};
	ops.size = sizeof ops;
	ops.tostr = plain_tostr;
	fid f{FI_CLASS_EP, nullptr, &ops};
	EXPECT_EQ(S(&f, FI_TYPE_FID), "custom");
	fid g{FI_CLASS_EP, nullptr, nullptr};
	EXPECT_EQ(S(&g, FI_TYPE_FID).rfind("fid: 0x", 0), 0u);
	// The handle's text goes after what is already there.
	Info i;
	i.info.handle = &f;
	std::string s = S(&i.info, FI_TYPE_INFO);
	EXPECT_NE(s.find("    dest_addr: (null)\ncustom    fi_tx_attr:\n"), std::string::npos) << s;
}

TEST(Tostr, NullAndUnknown)
{
	for (int t = FI_TYPE_INFO; t <= FI_TYPE_LOG_SUBSYS; t++)
		EXPECT_EQ(fi_tostr(nullptr, static_cast<fi_type>(t)), nullptr) << t;
	uint64_t x = 0;
	EXPECT_EQ(S(&x, static_cast<fi_type>(1000)), "Unknown type");
	EXPECT_EQ(S(&x, static_cast<fi_type>(-1)), "Unknown type");

	char buf[8] = "keep";
	EXPECT_EQ(fi_tostr_r(buf, sizeof buf, nullptr, FI_TYPE_CAPS), nullptr);
	EXPECT_STREQ(buf, "keep");
	EXPECT_EQ(fi_tostr_r(buf, 0, &x, FI_TYPE_CAPS), nullptr);
	EXPECT_STREQ(buf, "keep");
	EXPECT_EQ(fi_tostr_r(nullptr, 8, &x, FI_TYPE_CAPS), nullptr);
}

TEST(Tostr, TruncationKeepsTwoBytes)
{
	uint64_t caps = FI_MSG | FI_RMA | FI_TAGGED;
	// What the list writes before its trailing ", " is removed.
	const std::string full = "FI_MSG, FI_RMA, FI_TAGGED, ";
	char buf[64];
	for (size_t len = 1; len < 40; len++) { // e.g. len 28 gives "...FI_TAGGED,"
		std::memset(buf, '#', sizeof buf);
		ASSERT_EQ(fi_tostr_r(buf, len, &caps, FI_TYPE_CAPS), buf);
		std::string got = buf;
		// At most len-2 characters, and nothing written at buf[len-1].
		std::string want = full.substr(0, len >= 2 ? len - 2 : 0);
		// A list's trailing ", " is dropped only when both bytes fit.
		if (want.size() >= 2 && want.compare(want.size() - 2, 2, ", ") == 0)
			want.resize(want.size() - 2);
		EXPECT_EQ(got, want) << "len " << len;
		if (len >= 2) {
			EXPECT_EQ(buf[len - 1], '#') << "len " << len;
		}
	}
	std::memset(buf, '#', sizeof buf);
	uint32_t ep = FI_EP_RDM;
	fi_tostr_r(buf, 5, &ep, FI_TYPE_EP_TYPE);
	EXPECT_STREQ(buf, "FI_");
}

TEST(Tostr, TruncatedInfoListClosesBracket)
{
	// Trimming ", " from a cut list frees room for " ]" of the next piece.
	Info i;
	i.info.caps = FI_MSG | FI_RMA;
	char full[4096];
	ASSERT_NE(fi_tostr_r(full, sizeof full, &i.info, FI_TYPE_INFO), nullptr);
	std::string f = full;
	size_t cut = f.find("FI_RMA"); // "fi_info:\n    caps: [ FI_MSG, " fits exactly
	char buf[4096];
	ASSERT_NE(fi_tostr_r(buf, cut + 2, &i.info, FI_TYPE_INFO), nullptr);
	EXPECT_EQ(std::string(buf), "fi_info:\n    caps: [ FI_MSG ]");
}

TEST(Tostr, LongOutputIsCutAt8190)
{
	std::string name(12000, 'n');
	fi_fabric_attr fab{};
	fab.name = name.data();
	EXPECT_EQ(std::strlen(fi_tostr(&fab, FI_TYPE_FABRIC_ATTR)), 8190u);
}

TEST(Tostr, BufferPerThread)
{
	uint64_t caps = FI_MSG;
	char *mine = fi_tostr(&caps, FI_TYPE_CAPS);
	EXPECT_EQ(mine, fi_tostr(&caps, FI_TYPE_MODE)) << "one buffer per thread";

	// Concurrent callers never see each other's text.
	constexpr int threads = 8, rounds = 2000;
	std::vector<std::thread> pool;
	std::vector<int> bad(threads, 0);
	std::vector<char *> bufs(threads);
	for (int t = 0; t < threads; t++)
		pool.emplace_back([t, &bad, &bufs] {
			uint32_t v = static_cast<uint32_t>(t % 4);
			static const char *names[] = {"FI_AV_UNSPEC", "FI_AV_MAP", "FI_AV_TABLE",
						      "Unknown"};
			for (int r = 0; r < rounds; r++) {
				char *s = fi_tostr(&v, FI_TYPE_AV_TYPE);
				bufs[t] = s;
				if (std::strcmp(s, names[v]) != 0)
					bad[t]++;
			}
		});
	for (auto &th : pool)
		th.join();
	for (int t = 0; t < threads; t++)
		EXPECT_EQ(bad[t], 0) << "thread " << t;
	std::set<char *> distinct(bufs.begin(), bufs.end());
	EXPECT_EQ(distinct.size(), static_cast<size_t>(threads));
}

} // namespace
