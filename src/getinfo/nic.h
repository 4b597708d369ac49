/* SPDX-License-Identifier: BSD-3-Clause */
/* NIC discovery for fi_getinfo: network interfaces (getifaddrs + sysfs) and
 * verbs devices, matched to hwloc's PCI and OS devices, ordered by locality
 * to the calling thread.
 *
 * Two seams make this testable without hardware: the topology comes from a
 * topology_source (the machine, or an hwloc XML file/buffer) and the OS view
 * of interfaces is a plain std::vector<nic_info> (scan_system() on the real
 * machine, a hand-made list in tests).
 *
 * Hot path for the getinfo engine:
 *     const nics::nic_table &t = nics::system_table();   // built once
 *     for (const nics::ranked &r : t.order_for_thread()) // microseconds
 *             fid_nic *n = nics::to_fid_nic(*r.nic);      // owned by fi_info
 */
#ifndef WU_GETINFO_NIC_H
#define WU_GETINFO_NIC_H

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <hwloc.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdma/fabric.h>

namespace wu {

namespace nics {

struct pci_addr {
	uint16_t domain = 0;
	uint8_t bus = 0;
	uint8_t dev = 0;
	uint8_t func = 0;
	bool valid = false;

	/* Order used for ties: domain, bus, device, function. */
	auto operator<=>(const pci_addr &) const = default;
	/* "dddd:bb:dd.f", or "" when not valid. */
	std::string str() const;
	/* Parses "dddd:bb:dd.f" (domain optional); bad input gives valid=false. */
	static pci_addr parse(std::string_view s) noexcept;
};

/* One address of an interface, as getifaddrs reported it. */
struct if_address {
	int family = AF_UNSPEC; /* AF_INET or AF_INET6 */
	sockaddr_storage addr{};
	unsigned prefix_len = 0; /* from the netmask */
	std::string text;	 /* numeric form, e.g. "10.0.0.1" or "fe80::1%eth0" */
};

} // namespace nics

/* Everything known about one NIC.  Strings are empty when unknown. */
struct nic_info {
	std::string name;			 /* ifname ("eth0") or verbs device ("mlx5_0") */
	std::vector<nics::if_address> addresses; /* IPv4/IPv6, netdevs only */
	nics::pci_addr pci;
	std::string vendor_id; /* "0x8086" */
	std::string device_id; /* "0x1572" */
	std::string driver;    /* kernel driver, e.g. "mlx5_core" */
	std::string device_path; /* resolved sysfs "device" link; "" for virtual NICs */
	struct {
		std::string address; /* MAC ("aa:bb:..") or node GUID for verbs */
		size_t mtu = 0;
		size_t speed = 0; /* bits/s; 0 when unknown */
		fi_link_state state = FI_LINK_UNKNOWN;
		std::string network_type; /* "Ethernet", "InfiniBand", "Loopback", ... */
	} link;
	bool is_verbs = false;
	bool is_loopback = false;
	/* Filled by nic_table from hwloc (or sysfs, see topology_source::sysfs):
	 * the cpus near the NIC (list syntax, "" when unknown) and its NUMA
	 * node (os index, -1 unknown). */
	std::string local_cpus;
	int numa_node = -1;
	/* Filled by nic_table::ordered(): levels the caller must climb from its
	 * binding to reach an object that also holds the NIC (0 = attached at
	 * or below the binding); no_distance when locality is unknown. */
	static constexpr int no_distance = -1;
	int distance = no_distance;
};

namespace nics {

/* Owns a loaded hwloc topology; destroying it is the only cleanup. */
struct topology_deleter {
	void operator()(hwloc_topology *t) const noexcept { hwloc_topology_destroy(t); }
};
using topology_ptr = std::unique_ptr<hwloc_topology, topology_deleter>;

/* Where the hwloc topology comes from.  Cheap to copy. */
class topology_source {
public:
	static topology_source machine();
	static topology_source xml_file(std::string path);
	static topology_source xml_buffer(std::string xml);
	/* No hwloc at all: each NIC's locality is read from sysfs and every
	 * located NIC is at distance 0.  Exact only where one NIC per group
	 * (PCI, non-PCI) has a device, so no binding can change an order:
	 * see locality_matters(). */
	static topology_source sysfs();

	/* Loads with I/O objects kept (PCI, network and OpenFabrics OS
	 * devices); nullptr after logging a warning on failure. */
	topology_ptr load() const;
	bool is_machine() const noexcept { return kind_ == kind::machine; }
	bool is_sysfs() const noexcept { return kind_ == kind::sysfs; }

private:
	enum class kind { machine, file, buffer, sysfs };
	topology_source(kind k, std::string s) : kind_(k), arg_(std::move(s)) {}
	kind kind_;
	std::string arg_;
};

/* The OS view: every interface from getifaddrs with sysfs details, plus
 * verbs devices when built with rdma-core.  No hwloc involved. */
std::vector<nic_info> scan_system();
std::vector<nic_info> scan_interfaces();
std::vector<nic_info> scan_verbs(); /* empty without WU_HAVE_VERBS or devices */

/* Whether a topology could order these NICs differently for different
 * bindings: more than one NIC with a device in the PCI group or in the
 * non-PCI group.  When it cannot, system_table() loads no topology (hwloc's
 * plugins and discovery cost a process ~3-10 ms of CPU). */
bool locality_matters(const std::vector<nic_info> &nics) noexcept;

/* A NIC's place in one caller-specific order. */
struct ranked {
	const nic_info *nic; /* points into the table */
	int distance;	     /* as nic_info::distance */
};

/* NICs matched to a topology.  Immutable after construction, so const
 * members are safe to call from any number of threads. */
class nic_table {
public:
	/* Matches each entry of os_nics to hwloc (OS device by name, else PCI
	 * bus id) and fills PCI address, ids and locality from it.  A topology
	 * that fails to load leaves every NIC without locality. */
	nic_table(const topology_source &src, std::vector<nic_info> os_nics);
	~nic_table();
	nic_table(const nic_table &) = delete;
	nic_table &operator=(const nic_table &) = delete;

	bool has_topology() const noexcept { return topo_ != nullptr; }
	hwloc_topology_t topology() const noexcept { return topo_.get(); }
	/* Base order: PCI NICs by PCI address, then non-PCI by name. */
	const std::vector<nic_info> &all() const noexcept { return nics_; }
	const nic_info *find(std::string_view name) const noexcept;

	/* Nearest first relative to caller (nullptr or empty = unbound, which
	 * gives the base order): smaller distance, then PCI address, then
	 * non-PCI NICs by name. */
	std::vector<ranked> order(hwloc_const_cpuset_t caller) const;
	/* Same, for the calling thread's binding (falls back to the CPU it last
	 * ran on when the binding cannot be read).  Only meaningful for a
	 * machine topology; otherwise the base order. */
	std::vector<ranked> order_for_thread() const;
	/* Copies of order(caller) with nic_info::distance filled. */
	std::vector<nic_info> ordered(hwloc_const_cpuset_t caller) const;

private:
	topology_ptr topo_;
	bool machine_;
	std::vector<nic_info> nics_;
	std::vector<hwloc_obj_t> where_; /* parallel to nics_: non-I/O ancestor or nullptr */
	std::vector<char> located_;	 /* parallel to nics_: locality known (hwloc or sysfs) */
};

/* The process-wide table for the real machine: discovered on first use
 * (thread-safe), reused afterwards, never destroyed (fi_getinfo may run
 * from atexit handlers).  Its topology is the machine's when
 * locality_matters(), else topology_source::sysfs(). */
const nic_table &system_table();

/* discover() of the brief: topology + scan_system(), ordered for the
 * calling thread. */
std::vector<nic_info> discover(const topology_source &src);

/* A new fid_nic (wu::nic_alloc) describing info; the caller releases it
 * with fi_close(&nic->fid).  nullptr on ENOMEM. */
fid_nic *to_fid_nic(const nic_info &info) noexcept;

} // namespace nics
} // namespace wu

#endif
