/* SPDX-License-Identifier: BSD-3-Clause */
/* NIC discovery and locality order.  Ordering runs against hand-written
 * hwloc XML topologies (the .xml files next to this one) and a fake interface list, so
 * it is checked without the hardware; a few tests touch the real machine. */
#include "getinfo/nic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "core/info.h"

namespace {

using wu::nic_info;
using namespace wu::nics;

std::string fixture(const char *name)
{
	const char *dir = std::getenv("top_srcdir");
	std::string base = dir && *dir ? dir : WU_TEST_SRCDIR;
	return base + "/test/getinfo/" + name;
}

std::string slurp(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

struct nic_closer {
	void operator()(fid_nic *n) const { EXPECT_EQ(fi_close(&n->fid), 0); }
};
using nic_ptr = std::unique_ptr<fid_nic, nic_closer>;

struct bitmap_free {
	void operator()(hwloc_bitmap_s *b) const { hwloc_bitmap_free(b); }
};
using cpuset = std::unique_ptr<hwloc_bitmap_s, bitmap_free>;

/* "0-1", "2", "0,4" ... in hwloc list syntax. */
cpuset cpus(const char *list)
{
	cpuset s(hwloc_bitmap_alloc());
	hwloc_bitmap_list_sscanf(s.get(), list);
	return s;
}

nic_info netdev(const char *name, const char *mac, size_t mtu, size_t speed, fi_link_state st,
		const char *type = "Ethernet", const char *driver = "")
{
	nic_info n;
	n.name = name;
	n.link.address = mac;
	n.link.mtu = mtu;
	n.link.speed = speed;
	n.link.state = st;
	n.link.network_type = type;
	n.driver = driver;
	return n;
}

/* What scan_system() might report on the two-package machine, in an order
 * unrelated to the expected result. */
std::vector<nic_info> two_package_os_view()
{
	std::vector<nic_info> v;
	nic_info lo = netdev("lo", "00:00:00:00:00:00", 65536, 0, FI_LINK_UP, "Loopback");
	lo.is_loopback = true;
	v.push_back(lo);
	v.push_back(netdev("ib0", "", 2044, 100000000000ull, FI_LINK_UP, "InfiniBand",
			   "mlx5_core"));
	v.push_back(netdev("veth0", "aa:bb:cc:dd:ee:ff", 1500, 10000000000ull, FI_LINK_UP));
	v.push_back(netdev("eth2", "3c:fd:fe:00:00:02", 9000, 0, FI_LINK_DOWN, "Ethernet", "i40e"));
	v.push_back(netdev("eth1", "3c:fd:fe:00:00:01", 9000, 40000000000ull, FI_LINK_UP,
			   "Ethernet", "i40e"));
	nic_info mlx;
	mlx.name = "mlx5_0";
	mlx.is_verbs = true; /* address left empty: hwloc's NodeGUID fills it */
	mlx.driver = "mlx5_core";
	mlx.link.mtu = 4096;
	mlx.link.state = FI_LINK_UP;
	mlx.link.network_type = "InfiniBand";
	v.push_back(mlx);
	return v;
}

std::vector<std::string> names(const std::vector<ranked> &r)
{
	std::vector<std::string> out;
	for (const ranked &x : r)
		out.push_back(x.nic->name);
	return out;
}

using strings = std::vector<std::string>;

class TwoPackages : public ::testing::Test {
protected:
	TwoPackages() : table(topology_source::xml_file(fixture("nic_two_packages.xml")),
			      two_package_os_view())
	{
	}
	nic_table table;
};

/* Defined first so it races the real first use (gtest runs suites in
 * definition order). */
TEST(FirstUse, ConcurrentCallersSeeOneTable)
{
	const nic_table *seen[4] = {};
	std::vector<std::thread> ts;
	for (auto &s : seen)
		ts.emplace_back([&s] {
			s = &system_table();
			(void)s->order_for_thread();
		});
	for (auto &t : ts)
		t.join();
	for (auto *s : seen)
		EXPECT_EQ(s, &system_table());
}

TEST(PciAddr, ParseFormatAndOrder)
{
	pci_addr a = pci_addr::parse("0000:81:00.1");
	ASSERT_TRUE(a.valid);
	EXPECT_EQ(a.domain, 0);
	EXPECT_EQ(a.bus, 0x81);
	EXPECT_EQ(a.dev, 0);
	EXPECT_EQ(a.func, 1);
	EXPECT_EQ(a.str(), "0000:81:00.1");
	EXPECT_TRUE(pci_addr::parse("03:1f.7").valid);
	EXPECT_EQ(pci_addr::parse("abcd:03:1f.7").domain, 0xabcd);
	/* sysfs path components that are not PCI functions */
	for (const char *bad : {"pci0000:00", "1-1:1.0", "virtio2", "0000:00:20.0", "0000:00:03.8",
				"0000:0:03.0", "", "0000:00:03.0x"})
		EXPECT_FALSE(pci_addr::parse(bad).valid) << bad;
	EXPECT_LT(pci_addr::parse("0000:03:00.1"), pci_addr::parse("0000:81:00.0"));
	EXPECT_LT(pci_addr::parse("0000:ff:00.0"), pci_addr::parse("0001:00:00.0"));
	EXPECT_EQ(pci_addr{}.str(), "");
}

TEST_F(TwoPackages, LoadsAndFillsFromHwloc)
{
	ASSERT_TRUE(table.has_topology());
	ASSERT_EQ(table.all().size(), 6u);
	const nic_info *eth1 = table.find("eth1");
	ASSERT_NE(eth1, nullptr);
	EXPECT_EQ(eth1->pci.str(), "0000:03:00.0");
	EXPECT_EQ(eth1->vendor_id, "0x8086");
	EXPECT_EQ(eth1->device_id, "0x1572");
	EXPECT_EQ(eth1->driver, "i40e"); /* from the OS view, hwloc has no driver */
	EXPECT_EQ(eth1->local_cpus, "0-1");
	EXPECT_EQ(eth1->numa_node, 0);

	const nic_info *mlx = table.find("mlx5_0");
	ASSERT_NE(mlx, nullptr);
	EXPECT_TRUE(mlx->is_verbs);
	EXPECT_EQ(mlx->pci.str(), "0000:81:00.0"); /* via the OpenFabrics OS device */
	EXPECT_EQ(mlx->vendor_id, "0x15b3");
	EXPECT_EQ(mlx->link.address, "9803:9b03:00aa:bbcc");
	EXPECT_EQ(mlx->local_cpus, "2-3");
	EXPECT_EQ(mlx->numa_node, 1);

	const nic_info *lo = table.find("lo");
	ASSERT_NE(lo, nullptr);
	EXPECT_FALSE(lo->pci.valid);
	EXPECT_EQ(lo->local_cpus, "");
	EXPECT_EQ(lo->numa_node, -1);
	EXPECT_EQ(table.find("nope"), nullptr);
}

TEST_F(TwoPackages, BaseOrderIsPciThenNonPciByName)
{
	strings want = {"eth1", "eth2", "ib0", "mlx5_0", "lo", "veth0"};
	strings got;
	for (const nic_info &n : table.all())
		got.push_back(n.name);
	EXPECT_EQ(got, want);
	/* Unbound callers (no set, empty set, every CPU) get the same order. */
	EXPECT_EQ(names(table.order(nullptr)), want);
	EXPECT_EQ(names(table.order(cpus("").get())), want);
	EXPECT_EQ(names(table.order(cpus("0-3").get())), want);
	/* XML topologies are not this machine: the thread's binding is
	 * meaningless there, so the base order is used. */
	EXPECT_EQ(names(table.order_for_thread()), want);
}

TEST_F(TwoPackages, CallerInPackage1GetsItsNicFirst)
{
	auto r = table.order(cpus("2").get());
	EXPECT_EQ(names(r), (strings{"ib0", "mlx5_0", "eth1", "eth2", "lo", "veth0"}));
	/* PU 2 is all of core 2 (depth 2): one level up to package 1, two
	 * to the machine. */
	EXPECT_EQ(r[0].distance, 1);
	EXPECT_EQ(r[1].distance, 1);
	EXPECT_EQ(r[2].distance, 2);
	EXPECT_EQ(r[4].distance, nic_info::no_distance);

	/* Bound to the whole package: its NICs are at distance 0. */
	auto p = table.order(cpus("2-3").get());
	EXPECT_EQ(names(p), (strings{"ib0", "mlx5_0", "eth1", "eth2", "lo", "veth0"}));
	EXPECT_EQ(p[0].distance, 0);
	EXPECT_EQ(p[2].distance, 1);
}

TEST_F(TwoPackages, CallerInPackage0GetsItsNicsFirstInPciOrder)
{
	EXPECT_EQ(names(table.order(cpus("1").get())),
		  (strings{"eth1", "eth2", "ib0", "mlx5_0", "lo", "veth0"}));
}

TEST_F(TwoPackages, CallerSpanningPackagesTiesByPci)
{
	EXPECT_EQ(names(table.order(cpus("1-2").get())),
		  (strings{"eth1", "eth2", "ib0", "mlx5_0", "lo", "veth0"}));
}

TEST_F(TwoPackages, UnknownCpusAreIgnored)
{
	/* PUs 2 and 40: 40 is not in the topology (offline, other cgroup). */
	EXPECT_EQ(names(table.order(cpus("2,40").get()))[0], "ib0");
	/* Nothing known at all: unbound. */
	EXPECT_EQ(names(table.order(cpus("40-41").get()))[0], "eth1");
}

TEST_F(TwoPackages, OrderedCopiesCarryDistance)
{
	auto v = table.ordered(cpus("3").get());
	ASSERT_EQ(v.size(), 6u);
	EXPECT_EQ(v[0].name, "ib0");
	EXPECT_EQ(v[0].distance, 1);
	EXPECT_EQ(v[5].name, "veth0");
	EXPECT_EQ(v[5].distance, nic_info::no_distance);
	/* The table itself is unchanged. */
	EXPECT_EQ(table.find("ib0")->distance, nic_info::no_distance);
}

TEST_F(TwoPackages, FidNicContents)
{
	nic_ptr ib(to_fid_nic(*table.find("ib0")));
	ASSERT_TRUE(ib);
	EXPECT_EQ(ib->fid.fclass, FI_CLASS_NIC);
	EXPECT_STREQ(ib->device_attr->name, "ib0");
	EXPECT_STREQ(ib->device_attr->vendor_id, "0x15b3");
	EXPECT_STREQ(ib->device_attr->device_id, "0x1017");
	EXPECT_STREQ(ib->device_attr->driver, "mlx5_core");
	EXPECT_EQ(ib->device_attr->firmware, nullptr);
	EXPECT_EQ(ib->bus_attr->bus_type, FI_BUS_PCI);
	EXPECT_EQ(ib->bus_attr->attr.pci.domain_id, 0);
	EXPECT_EQ(ib->bus_attr->attr.pci.bus_id, 0x81);
	EXPECT_EQ(ib->bus_attr->attr.pci.device_id, 0);
	EXPECT_EQ(ib->bus_attr->attr.pci.function_id, 0);
	/* The OS view had no address for ib0: hwloc's Address is used. */
	EXPECT_STREQ(ib->link_attr->address,
		     "00:00:10:87:fe:80:00:00:00:00:00:00:98:03:9b:03:00:aa:bb:cc");
	EXPECT_EQ(ib->link_attr->mtu, 2044u);
	EXPECT_EQ(ib->link_attr->speed, 100000000000ull);
	EXPECT_EQ(ib->link_attr->state, FI_LINK_UP);
	EXPECT_STREQ(ib->link_attr->network_type, "InfiniBand");

	nic_ptr eth2(to_fid_nic(*table.find("eth2")));
	ASSERT_TRUE(eth2);
	EXPECT_EQ(eth2->bus_attr->attr.pci.function_id, 1);
	EXPECT_STREQ(eth2->link_attr->address, "3c:fd:fe:00:00:02");
	EXPECT_EQ(eth2->link_attr->state, FI_LINK_DOWN);
	EXPECT_EQ(eth2->link_attr->speed, 0u);

	nic_ptr lo(to_fid_nic(*table.find("lo")));
	ASSERT_TRUE(lo);
	EXPECT_EQ(lo->bus_attr->bus_type, FI_BUS_UNKNOWN);
	EXPECT_EQ(lo->device_attr->vendor_id, nullptr); /* unknown stays NULL, not "" */
	EXPECT_EQ(lo->device_attr->driver, nullptr);
	EXPECT_STREQ(lo->link_attr->network_type, "Loopback");
	EXPECT_EQ(lo->link_attr->mtu, 65536u);

	/* The fid_nic is a regular one: the core can deep-copy it. */
	nic_ptr copy(wu::nic_dup(ib.get()));
	ASSERT_TRUE(copy);
	EXPECT_STREQ(copy->device_attr->name, "ib0");
	EXPECT_EQ(copy->bus_attr->attr.pci.bus_id, 0x81);
	EXPECT_STREQ(copy->link_attr->address, ib->link_attr->address);
}

TEST_F(TwoPackages, XmlBufferMatchesXmlFile)
{
	nic_table from_buf(topology_source::xml_buffer(slurp(fixture("nic_two_packages.xml"))),
			   two_package_os_view());
	ASSERT_TRUE(from_buf.has_topology());
	for (const char *set : {"0", "2", "0-3"})
		EXPECT_EQ(names(from_buf.order(cpus(set).get())), names(table.order(cpus(set).get())))
			<< set;
}

TEST(NicTable, MatchesByPciAddressWhenHwlocHasNoSuchName)
{
	/* The kernel renamed the netdev; sysfs still gave us its PCI function. */
	nic_info n = netdev("enp3s0f0", "3c:fd:fe:00:00:01", 1500, 0, FI_LINK_UP);
	n.pci = pci_addr::parse("0000:81:00.0");
	nic_info other = netdev("enp2s0", "", 1500, 0, FI_LINK_UP);
	other.pci = pci_addr::parse("0000:03:00.1");
	nic_table t(topology_source::xml_file(fixture("nic_two_packages.xml")), {n, other});
	const nic_info *m = t.find("enp3s0f0");
	ASSERT_NE(m, nullptr);
	EXPECT_EQ(m->vendor_id, "0x15b3");
	EXPECT_EQ(m->local_cpus, "2-3");
	EXPECT_EQ(names(t.order(cpus("2").get())), (strings{"enp3s0f0", "enp2s0"}));
	EXPECT_EQ(names(t.order(cpus("0").get())), (strings{"enp2s0", "enp3s0f0"}));
}

TEST(NicTable, PciNicUnknownToHwlocComesAfterLocatedOnes)
{
	nic_info ghost = netdev("ghost0", "", 1500, 0, FI_LINK_UP);
	ghost.pci = pci_addr::parse("0000:01:00.0"); /* not in the topology */
	nic_info eth2 = netdev("eth2", "", 1500, 0, FI_LINK_UP);
	nic_info lo = netdev("lo", "", 65536, 0, FI_LINK_UP, "Loopback");
	nic_table t(topology_source::xml_file(fixture("nic_two_packages.xml")), {lo, eth2, ghost});
	/* Base order is by PCI address... */
	EXPECT_EQ(t.all()[0].name, "ghost0");
	/* ...but a caller-relative order puts the unplaced NIC after. */
	auto r = t.order(cpus("2").get());
	EXPECT_EQ(names(r), (strings{"eth2", "ghost0", "lo"}));
	EXPECT_EQ(r[1].distance, nic_info::no_distance);
}

TEST(NicTable, BrokenTopologyStillListsNics)
{
	nic_table t(topology_source::xml_buffer("<topology version=\"2.0\"><oops"),
		    two_package_os_view());
	EXPECT_FALSE(t.has_topology());
	EXPECT_EQ(t.all().size(), 6u);
	/* Without hwloc nothing has a PCI address here, so names decide. */
	EXPECT_EQ(names(t.order(cpus("2").get())),
		  (strings{"eth1", "eth2", "ib0", "lo", "mlx5_0", "veth0"}));
	nic_table missing(topology_source::xml_file(fixture("no_such_file.xml")), {});
	EXPECT_FALSE(missing.has_topology());
	EXPECT_TRUE(missing.order(nullptr).empty());
}

class Groups : public ::testing::Test {
protected:
	static std::vector<nic_info> os_view()
	{
		std::vector<nic_info> v;
		for (const char *n : {"ens4", "ens3", "ens2", "ens1"})
			v.push_back(netdev(n, "", 1500, 0, FI_LINK_UP));
		return v;
	}
	nic_table table{topology_source::xml_file(fixture("nic_groups.xml")), os_view()};
};

TEST_F(Groups, NearestGroupThenPackageThenPciOrder)
{
	ASSERT_TRUE(table.has_topology());
	/* PU 2 is in group 1 of package 0. */
	auto r = table.order(cpus("2").get());
	EXPECT_EQ(names(r), (strings{"ens2", "ens1", "ens4", "ens3"}));
	EXPECT_LT(r[0].distance, r[1].distance);
	EXPECT_LT(r[1].distance, r[2].distance);
	EXPECT_EQ(r[2].distance, r[3].distance);
}

TEST_F(Groups, WholePackageTiesItsGroupsByPci)
{
	auto r = table.order(cpus("0-3").get());
	EXPECT_EQ(names(r), (strings{"ens1", "ens2", "ens4", "ens3"}));
	EXPECT_EQ(r[0].distance, 0);
	EXPECT_EQ(r[1].distance, 0);
}

TEST_F(Groups, OtherPackageAndMachineLevelNic)
{
	/* Package 1's NIC first even though its bus number is lowest but one;
	 * the machine-level NIC ties with package 0's and wins on bus. */
	EXPECT_EQ(names(table.order(cpus("5").get())), (strings{"ens3", "ens4", "ens1", "ens2"}));
	EXPECT_EQ(names(table.order(cpus("1,4").get())), (strings{"ens4", "ens3", "ens1", "ens2"}));
	EXPECT_EQ(table.find("ens4")->local_cpus, "0-7");
	EXPECT_EQ(table.find("ens4")->numa_node, -1); /* spans both nodes */
}

/* ---- the real machine ---- */

TEST(RealMachine, LoopbackIsListed)
{
	auto ifs = scan_interfaces();
	auto lo = std::find_if(ifs.begin(), ifs.end(), [](const nic_info &n) { return n.name == "lo"; });
	ASSERT_NE(lo, ifs.end());
	EXPECT_TRUE(lo->is_loopback);
	EXPECT_EQ(lo->link.network_type, "Loopback");
	EXPECT_EQ(lo->link.state, FI_LINK_UP);
	EXPECT_GT(lo->link.mtu, 0u);
	EXPECT_FALSE(lo->pci.valid);
	EXPECT_FALSE(lo->is_verbs);
	bool has_127 = std::any_of(lo->addresses.begin(), lo->addresses.end(), [](const auto &a) {
		return a.family == AF_INET && a.text == "127.0.0.1" && a.prefix_len == 8;
	});
	EXPECT_TRUE(has_127);
}

TEST(RealMachine, VerbsScanIsSafeWithoutDevices)
{
	for (const nic_info &n : scan_verbs()) {
		EXPECT_TRUE(n.is_verbs);
		EXPECT_FALSE(n.name.empty());
	}
}

TEST(RealMachine, SystemTableIsCachedAndConsistent)
{
	const nic_table &a = system_table();
	const nic_table &b = system_table();
	EXPECT_EQ(&a, &b);
	/* hwloc only where a binding could change an order. */
	EXPECT_EQ(a.has_topology(), locality_matters(scan_system()));
	ASSERT_NE(a.find("lo"), nullptr);
	auto r = a.order_for_thread();
	ASSERT_EQ(r.size(), a.all().size());
	/* Non-PCI NICs (lo among them) come after every PCI one. */
	bool seen_non_pci = false;
	for (const ranked &x : r) {
		if (!x.nic->pci.valid)
			seen_non_pci = true;
		else
			EXPECT_FALSE(seen_non_pci) << x.nic->name;
		nic_ptr n(to_fid_nic(*x.nic));
		ASSERT_TRUE(n);
		EXPECT_STREQ(n->device_attr->name, x.nic->name.c_str());
	}
	for (const nic_info &n : a.all()) {
		if (n.pci.valid && !n.local_cpus.empty()) {
			EXPECT_EQ(n.vendor_id.size(), 6u) << n.name;
		}
	}
}

TEST(RealMachine, ThreadBindingIsFollowed)
{
	const nic_table t(topology_source::machine(), scan_system());
	hwloc_topology_t topo = t.topology();
	ASSERT_NE(topo, nullptr);
	cpuset old(hwloc_bitmap_alloc());
	if (hwloc_get_cpubind(topo, old.get(), HWLOC_CPUBIND_THREAD) != 0)
		GTEST_SKIP() << "thread binding not readable here";
	hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, 0);
	ASSERT_NE(pu, nullptr);
	if (hwloc_set_cpubind(topo, pu->cpuset, HWLOC_CPUBIND_THREAD) != 0)
		GTEST_SKIP() << "cannot bind the thread here";
	auto bound = t.order_for_thread();
	auto direct = t.order(pu->cpuset);
	hwloc_set_cpubind(topo, old.get(), HWLOC_CPUBIND_THREAD);
	ASSERT_EQ(bound.size(), direct.size());
	for (size_t i = 0; i < bound.size(); i++) {
		EXPECT_EQ(bound[i].nic, direct[i].nic);
		EXPECT_EQ(bound[i].distance, direct[i].distance);
	}
}

/* Without hwloc (one NIC with a device per group) the table must order and
 * locate exactly as with the machine's topology, bound or not. */
TEST(RealMachine, SysfsLocalityMatchesHwlocWhereItCannotMatter)
{
	std::vector<nic_info> os = scan_system();
	if (locality_matters(os))
		GTEST_SKIP() << "this machine has several NICs with devices in a group; "
				"the system table loads hwloc here";
	const nic_table hw(topology_source::machine(), os);
	const nic_table fs(topology_source::sysfs(), os);
	ASSERT_TRUE(hw.has_topology());
	EXPECT_FALSE(fs.has_topology());
	hwloc_obj_t pu = hwloc_get_obj_by_type(hw.topology(), HWLOC_OBJ_PU, 0);
	ASSERT_NE(pu, nullptr);
	for (hwloc_const_cpuset_t caller : {static_cast<hwloc_const_cpuset_t>(nullptr),
					    static_cast<hwloc_const_cpuset_t>(pu->cpuset)}) {
		auto a = hw.order(caller), b = fs.order(caller);
		ASSERT_EQ(a.size(), b.size());
		for (size_t i = 0; i < a.size(); i++) {
			EXPECT_EQ(a[i].nic->name, b[i].nic->name);
			EXPECT_EQ(a[i].distance == nic_info::no_distance,
				  b[i].distance == nic_info::no_distance)
				<< a[i].nic->name;
		}
	}
	int located = 0;
	for (const nic_info &n : hw.all()) {
		const nic_info *m = fs.find(n.name);
		ASSERT_NE(m, nullptr) << n.name;
		EXPECT_EQ(n.local_cpus.empty(), m->local_cpus.empty()) << n.name;
		EXPECT_EQ(n.numa_node, m->numa_node) << n.name;
		EXPECT_EQ(n.pci, m->pci) << n.name;
		located += !m->local_cpus.empty();
	}
	/* A machine whose only NICs are virtual checks less: say so. */
	if (located == 0)
		std::cout << "note: no NIC with a device here; only virtual NICs compared\n";
}

TEST(Locality, MattersOnlyWithTwoDevicesInAGroup)
{
	auto nic = [](const char *name, bool device, bool pci) {
		nic_info n;
		n.name = name;
		if (device)
			n.device_path = std::string("/sys/devices/x/") + name;
		n.pci.valid = pci;
		return n;
	};
	EXPECT_FALSE(locality_matters({}));
	EXPECT_FALSE(locality_matters({nic("lo", false, false), nic("veth0", false, false)}));
	EXPECT_FALSE(locality_matters({nic("eth0", true, true), nic("lo", false, false)}));
	EXPECT_FALSE(locality_matters({nic("eth0", true, true), nic("usb0", true, false)}));
	EXPECT_TRUE(locality_matters({nic("eth0", true, true), nic("eth1", true, true)}));
	EXPECT_TRUE(locality_matters({nic("usb0", true, false), nic("usb1", true, false)}));
	/* A PCI address alone counts as a device (verbs from a scan). */
	EXPECT_TRUE(locality_matters({nic("mlx5_0", false, true), nic("eth0", true, true)}));
}

/* How fast a warm lookup is: contrib/bench/nic_bench.sh (no timing here). */

} // namespace
