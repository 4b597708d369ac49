/* SPDX-License-Identifier: BSD-3-Clause */
/* NIC discovery: the OS view (getifaddrs, sysfs, verbs) matched to hwloc's
 * I/O objects, ordered by locality.  See nic.h for the seams. */
#include "config.h"

#include "getinfo/nic.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <type_traits>

#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netdb.h>
#include <netpacket/packet.h>
#include <unistd.h>

#ifdef WU_HAVE_VERBS
#include <dirent.h>
#include <dlfcn.h>
#include <endian.h>
#include <infiniband/verbs.h>
#endif

#include "core/fd.h"
#include "core/info.h"
#include "core/log.h"
#include "core/owned.h"

namespace wu::nics {
namespace {

struct bitmap_deleter {
	void operator()(hwloc_bitmap_s *b) const noexcept { hwloc_bitmap_free(b); }
};
using bitmap_ptr = std::unique_ptr<hwloc_bitmap_s, bitmap_deleter>;

bitmap_ptr bitmap_new()
{
	bitmap_ptr b(hwloc_bitmap_alloc());
	if (!b)
		throw std::bad_alloc();
	return b;
}

/* First line of a small sysfs file, without the newline; "" on error. */
std::string read_line(const std::string &path)
{
	unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return {};
	char buf[256];
	ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
	fd.reset();
	if (n <= 0)
		return {};
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Last path component of a symlink's target ("" if not a link). */
std::string link_basename(const std::string &path)
{
	char buf[PATH_MAX];
	ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
	if (n <= 0)
		return {};
	buf[n] = '\0';
	const char *slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

/* The PCI device a sysfs device sits on: the last PCI-looking component of
 * its resolved path, so virtio and USB NICs resolve to their PCI function
 * (as hwloc does). */
pci_addr pci_of_device(std::string_view p)
{
	pci_addr found;
	size_t start = 0;
	while (start < p.size()) {
		size_t end = p.find('/', start);
		if (end == std::string_view::npos)
			end = p.size();
		pci_addr a = pci_addr::parse(p.substr(start, end - start));
		if (a.valid)
			found = a;
		start = end + 1;
	}
	return found;
}

/* Fills PCI address, ids and driver from the sysfs "device" link of a
 * net or infiniband class device; hwloc may later override the ids. */
void fill_from_sysfs_device(nic_info &n, const std::string &class_dir)
{
	std::string dev = class_dir + "/device";
	if (char *real = ::realpath(dev.c_str(), nullptr)) {
		n.device_path = real;
		free(real);
	}
	n.driver = link_basename(dev + "/driver");
	n.pci = pci_of_device(n.device_path);
	if (n.pci.valid) {
		std::string pdir = "/sys/bus/pci/devices/" + n.pci.str();
		n.vendor_id = read_line(pdir + "/vendor");
		n.device_id = read_line(pdir + "/device");
	}
}

const char *arphrd_name(unsigned type) noexcept
{
	switch (type) {
	case ARPHRD_ETHER:
		return "Ethernet";
	case ARPHRD_INFINIBAND:
		return "InfiniBand";
	case ARPHRD_LOOPBACK:
		return "Loopback";
	default:
		return "Unknown";
	}
}

std::string hex_bytes(const unsigned char *p, size_t len)
{
	std::string s;
	char b[4];
	for (size_t i = 0; i < len; i++) {
		snprintf(b, sizeof(b), i ? ":%02x" : "%02x", p[i]);
		s += b;
	}
	return s;
}

unsigned prefix_len(const sockaddr *mask) noexcept
{
	if (!mask)
		return 0;
	const unsigned char *p = nullptr;
	size_t len = 0;
	if (mask->sa_family == AF_INET) {
		p = reinterpret_cast<const unsigned char *>(
			&reinterpret_cast<const sockaddr_in *>(mask)->sin_addr);
		len = 4;
	} else if (mask->sa_family == AF_INET6) {
		p = reinterpret_cast<const unsigned char *>(
			&reinterpret_cast<const sockaddr_in6 *>(mask)->sin6_addr);
		len = 16;
	}
	unsigned bits = 0;
	for (size_t i = 0; i < len; i++)
		bits += __builtin_popcount(p[i]);
	return bits;
}

fi_link_state state_from_sysfs(const std::string &oper, unsigned flags) noexcept
{
	if (oper == "up")
		return FI_LINK_UP;
	if (oper == "down" || oper == "lowerlayerdown" || oper == "notpresent" ||
	    oper == "dormant" || oper == "testing")
		return FI_LINK_DOWN;
	/* "unknown" (loopback, many virtual devices): trust the flags. */
	return (flags & IFF_UP) && (flags & IFF_RUNNING) ? FI_LINK_UP : FI_LINK_DOWN;
}

std::string hex_id(unsigned v)
{
	char b[8];
	snprintf(b, sizeof(b), "0x%04x", v & 0xffff);
	return b;
}

/* Walks from an OS device up to its PCI function, if any. */
hwloc_obj_t pci_parent(hwloc_obj_t o) noexcept
{
	for (; o && o->type != HWLOC_OBJ_PCI_DEVICE; o = o->parent)
		if (o->type != HWLOC_OBJ_OS_DEVICE)
			return nullptr;
	return o;
}

hwloc_obj_t find_osdev(hwloc_topology_t topo, const nic_info &n) noexcept
{
	hwloc_obj_osdev_type_t want = n.is_verbs ? HWLOC_OBJ_OSDEV_OPENFABRICS
						 : HWLOC_OBJ_OSDEV_NETWORK;
	for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o;
	     o = hwloc_get_next_osdev(topo, o))
		if (o->attr->osdev.type == want && o->name && n.name == o->name)
			return o;
	return nullptr;
}

/* Matches n to the topology, fills what hwloc knows, and returns its
 * locality (the nearest normal object), or nullptr. */
hwloc_obj_t match(hwloc_topology_t topo, nic_info &n)
{
	hwloc_obj_t os = find_osdev(topo, n);
	hwloc_obj_t pci = os ? pci_parent(os) : nullptr;
	if (!pci && n.pci.valid)
		pci = hwloc_get_pcidev_by_busid(topo, n.pci.domain, n.pci.bus, n.pci.dev,
						n.pci.func);
	if (os && n.link.address.empty()) {
		const char *a = hwloc_obj_get_info_by_name(
			os, n.is_verbs ? "NodeGUID" : "Address");
		if (a)
			n.link.address = a;
	}
	if (pci) {
		const auto &p = pci->attr->pcidev;
		n.pci = {static_cast<uint16_t>(p.domain), p.bus, p.dev, p.func, true};
		n.vendor_id = hex_id(p.vendor_id);
		n.device_id = hex_id(p.device_id);
	}
	hwloc_obj_t anchor = pci ? pci : os;
	if (!anchor)
		return nullptr;
	hwloc_obj_t where = hwloc_get_non_io_ancestor_obj(topo, anchor);
	if (!where || !where->cpuset)
		return nullptr;
	char *s = nullptr;
	if (hwloc_bitmap_list_asprintf(&s, where->cpuset) >= 0 && s)
		n.local_cpus = s;
	free(s);
	if (where->nodeset && hwloc_bitmap_weight(where->nodeset) == 1)
		n.numa_node = hwloc_bitmap_first(where->nodeset);
	return where;
}

/* A device's locality as the kernel reports it, for a table without hwloc:
 * local_cpulist and numa_node of the nearest ancestor that has them (a
 * virtio or USB NIC's PCI function), else the whole machine, which is where
 * hwloc's Linux backend attaches such an OS device.  False for a NIC
 * without a device (virtual ones, which hwloc does not list either). */
bool sysfs_locate(nic_info &n)
{
	if (n.device_path.empty())
		return false;
	constexpr std::string_view root = "/sys/devices";
	std::string dir = n.device_path;
	while (dir.size() > root.size() && dir.starts_with(root)) {
		std::string cpus = read_line(dir + "/local_cpulist");
		if (!cpus.empty()) {
			n.local_cpus = std::move(cpus);
			std::string node = read_line(dir + "/numa_node");
			n.numa_node = node.empty() ? -1 : atoi(node.c_str());
			break;
		}
		dir.erase(dir.rfind('/'));
	}
	if (n.local_cpus.empty())
		n.local_cpus = read_line("/sys/devices/system/cpu/online");
	/* -1 (no affinity) on a one-node machine: hwloc gives that node. */
	if (n.numa_node < 0) {
		std::string nodes = read_line("/sys/devices/system/node/online");
		if (!nodes.empty() && nodes.find_first_of(",-") == std::string::npos)
			n.numa_node = atoi(nodes.c_str());
	}
	return true;
}

/* Base order: PCI NICs by address, then the rest by name. */
bool base_less(const nic_info &a, const nic_info &b) noexcept
{
	if (a.pci.valid != b.pci.valid)
		return a.pci.valid;
	if (a.pci != b.pci)
		return a.pci < b.pci;
	return a.name < b.name;
}

bool dup_opt(char **dst, const std::string &s) noexcept
{
	*dst = nullptr;
	if (s.empty())
		return true;
	*dst = strdup(s.c_str());
	return *dst != nullptr;
}

} // namespace

std::string pci_addr::str() const
{
	if (!valid)
		return {};
	char b[16];
	snprintf(b, sizeof(b), "%04x:%02x:%02x.%x", domain, bus, dev, func);
	return b;
}

pci_addr pci_addr::parse(std::string_view s) noexcept
{
	/* Strict "dddd:bb:dd.f" or "bb:dd.f": hex fields of exact width, so
	 * "pci0000:00" or USB "1-1:1.0" do not match. */
	auto hex = [](std::string_view f, unsigned &out) {
		if (f.empty())
			return false;
		out = 0;
		for (char c : f) {
			int v = (c >= '0' && c <= '9')	 ? c - '0'
				: (c >= 'a' && c <= 'f') ? c - 'a' + 10
				: (c >= 'A' && c <= 'F') ? c - 'A' + 10
							 : -1;
			if (v < 0)
				return false;
			out = out * 16 + static_cast<unsigned>(v);
		}
		return true;
	};
	unsigned dom = 0, bus, dev, fn;
	if (s.size() == 12) {
		if (s[4] != ':' || !hex(s.substr(0, 4), dom))
			return {};
		s.remove_prefix(5);
	}
	if (s.size() != 7 || s[2] != ':' || s[5] != '.' || !hex(s.substr(0, 2), bus) ||
	    !hex(s.substr(3, 2), dev) || !hex(s.substr(6, 1), fn) || dev > 0x1f || fn > 7)
		return {};
	return {static_cast<uint16_t>(dom), static_cast<uint8_t>(bus), static_cast<uint8_t>(dev),
		static_cast<uint8_t>(fn), true};
}

topology_source topology_source::machine()
{
	return topology_source(kind::machine, {});
}

topology_source topology_source::xml_file(std::string path)
{
	return topology_source(kind::file, std::move(path));
}

topology_source topology_source::xml_buffer(std::string xml)
{
	return topology_source(kind::buffer, std::move(xml));
}

topology_source topology_source::sysfs()
{
	return topology_source(kind::sysfs, {});
}

topology_ptr topology_source::load() const
{
	if (kind_ == kind::sysfs)
		return nullptr;
	hwloc_topology_t raw = nullptr;
	if (hwloc_topology_init(&raw) != 0) {
		WU_WARN(&core_prov, FI_LOG_CORE,
			"hwloc_topology_init failed (%s); NICs will not be ordered by locality\n",
			strerror(errno));
		return nullptr;
	}
	topology_ptr t(raw);
	int ret = 0;
	const char *what = "the machine";
	errno = 0;
	switch (kind_) {
	case kind::machine:
		/* Only the network and OpenFabrics OS devices are needed.
		 * PCI functions and bridges stay out: discovering them reads
		 * every device's config space (most of the load time, ~15 ms
		 * in a VM).  Without them hwloc attaches each OS device to the
		 * same normal object, found from its PCI bus id's local_cpus
		 * (hwloc_linuxfs_find_osdev_parent), so locality is unchanged;
		 * PCI address and ids come from sysfs (fill_from_sysfs_device). */
		ret = hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
		if (!ret)
			ret = hwloc_topology_set_type_filter(raw, HWLOC_OBJ_OS_DEVICE,
							     HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
		/* GPU and display plugins add no NICs, and "gl" probes X
		 * displays over sockets.  Components this hwloc lacks are
		 * refused with EINVAL, which is fine. */
#if HWLOC_API_VERSION >= 0x00020100
		for (const char *c : {"gl", "opencl", "cuda", "nvml", "rsmi", "levelzero"})
			(void)hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
#endif
		break;
	case kind::file:
		what = arg_.c_str();
		ret = hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
		if (!ret)
			ret = hwloc_topology_set_xml(raw, arg_.c_str());
		break;
	case kind::sysfs:
		break;
	case kind::buffer:
		what = "an XML buffer";
		ret = hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
		if (!ret)
			ret = hwloc_topology_set_xmlbuffer(raw, arg_.data(),
							   static_cast<int>(arg_.size()));
		break;
	}
	if (!ret)
		ret = hwloc_topology_load(raw);
	if (ret) {
		/* hwloc does not always set errno (XML parse errors). */
		int err = errno;
		WU_WARN(&core_prov, FI_LOG_CORE,
			"hwloc could not load the topology of %s%s%s%s; NICs will not be "
			"ordered by locality (check HWLOC_* environment variables or the XML)\n",
			what, err ? " (" : "", err ? strerror(err) : "", err ? ")" : "");
		return nullptr;
	}
	return t;
}

std::vector<nic_info> scan_interfaces()
{
	ifaddrs *head = nullptr;
	if (getifaddrs(&head) != 0) {
		WU_WARN(&core_prov, FI_LOG_CORE, "getifaddrs failed: %s; no network interfaces listed\n",
			strerror(errno));
		return {};
	}
	std::unique_ptr<ifaddrs, void (*)(ifaddrs *)> guard(head, freeifaddrs);

	std::vector<nic_info> out;
	std::vector<unsigned> flags;
	std::map<std::string, size_t, std::less<>> index;
	for (ifaddrs *ifa = head; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_name)
			continue;
		auto [it, fresh] = index.try_emplace(ifa->ifa_name, out.size());
		if (fresh) {
			out.emplace_back();
			out.back().name = ifa->ifa_name;
			flags.push_back(0);
		}
		nic_info &n = out[it->second];
		flags[it->second] |= ifa->ifa_flags;
		n.is_loopback = n.is_loopback || (ifa->ifa_flags & IFF_LOOPBACK);
		const sockaddr *sa = ifa->ifa_addr;
		if (!sa)
			continue;
		if (sa->sa_family == AF_PACKET) {
			const auto *ll = reinterpret_cast<const sockaddr_ll *>(sa);
			size_t len = std::min<size_t>(ll->sll_halen, sizeof(ll->sll_addr));
			n.link.address = hex_bytes(ll->sll_addr, len);
			n.link.network_type = arphrd_name(ll->sll_hatype);
		} else if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
			if_address a;
			a.family = sa->sa_family;
			socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in)
								 : sizeof(sockaddr_in6);
			memcpy(&a.addr, sa, len);
			a.prefix_len = prefix_len(ifa->ifa_netmask);
			char host[NI_MAXHOST];
			if (getnameinfo(sa, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) == 0)
				a.text = host;
			n.addresses.push_back(std::move(a));
		}
	}
	for (size_t i = 0; i < out.size(); i++) {
		nic_info &n = out[i];
		std::string dir = "/sys/class/net/" + n.name;
		n.link.mtu = strtoull(read_line(dir + "/mtu").c_str(), nullptr, 10);
		/* Mb/s; "-1" or EINVAL for virtual and down links: unknown. */
		long long mbps = strtoll(read_line(dir + "/speed").c_str(), nullptr, 10);
		n.link.speed = mbps > 0 ? static_cast<size_t>(mbps) * 1000000u : 0;
		n.link.state = state_from_sysfs(read_line(dir + "/operstate"), flags[i]);
		if (n.link.network_type.empty()) {
			std::string t = read_line(dir + "/type");
			if (!t.empty())
				n.link.network_type = arphrd_name(strtoul(t.c_str(), nullptr, 10));
		}
		if (n.is_loopback)
			n.link.network_type = "Loopback";
		fill_from_sysfs_device(n, dir);
	}
	return out;
}

#ifdef WU_HAVE_VERBS
namespace {

/* Per-lane data rate in Mb/s for ibv_port_attr::active_speed. */
size_t ib_lane_mbps(unsigned speed) noexcept
{
	switch (speed) {
	case 1: return 2500;	/* SDR */
	case 2: return 5000;	/* DDR */
	case 4: return 10000;	/* QDR */
	case 8: return 10000;	/* FDR10 */
	case 16: return 14000;	/* FDR */
	case 32: return 25000;	/* EDR */
	case 64: return 50000;	/* HDR */
	case 128: return 100000; /* NDR */
	default: return 0;
	}
}

size_t ib_lanes(unsigned width) noexcept
{
	switch (width) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

/* libibverbs, loaded when the machine has an RDMA device: loading it
 * (and libnl-3, libnl-route-3) costs every process 2-4 ms of CPU, which
 * 256 ranks starting on one node pay 256 times over in MPI_Init. */
struct verbs_api {
	decltype(&::ibv_get_device_list) get_device_list;
	decltype(&::ibv_free_device_list) free_device_list;
	decltype(&::ibv_get_device_name) get_device_name;
	decltype(&::ibv_get_device_guid) get_device_guid;
	decltype(&::ibv_open_device) open_device;
	decltype(&::ibv_close_device) close_device;
	decltype(&::ibv_query_port) query_port; /* the exported one: compat attr */
};

bool have_rdma_device() noexcept
{
	DIR *d = opendir("/sys/class/infiniband");
	if (!d)
		return false;
	bool any = false;
	while (dirent *e = readdir(d))
		if (e->d_name[0] != '.') {
			any = true;
			break;
		}
	closedir(d);
	return any;
}

const verbs_api *load_verbs() noexcept
{
	if (!have_rdma_device())
		return nullptr;
	/* Never closed: device lists and contexts point into it. */
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		WU_WARN(&core_prov, FI_LOG_CORE, "RDMA devices present, but libibverbs.so.1 does not load (%s); no verbs NICs\n",
			e ? e : "?");
		return nullptr;
	}
	static verbs_api api;
	bool ok = true;
	auto sym = [&](auto &fn, const char *name) {
		void *p = dlvsym(h, name, "IBVERBS_1.1");
		if (!p) {
			WU_WARN(&core_prov, FI_LOG_CORE, "libibverbs.so.1 has no %s@IBVERBS_1.1; no verbs NICs\n",
				name);
			ok = false;
		}
		fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
	};
	sym(api.get_device_list, "ibv_get_device_list");
	sym(api.free_device_list, "ibv_free_device_list");
	sym(api.get_device_name, "ibv_get_device_name");
	sym(api.get_device_guid, "ibv_get_device_guid");
	sym(api.open_device, "ibv_open_device");
	sym(api.close_device, "ibv_close_device");
	sym(api.query_port, "ibv_query_port");
	return ok ? &api : nullptr;
}

const verbs_api *verbs() noexcept
{
	static const verbs_api *api = load_verbs();
	return api;
}

void query_port(const verbs_api &v, ibv_device *dev, nic_info &n)
{
	ibv_context *ctx = v.open_device(dev);
	if (!ctx) {
		WU_DBG(&core_prov, FI_LOG_CORE, "verbs device %s: cannot open (%s); link unknown\n",
		       n.name.c_str(), strerror(errno));
		return;
	}
	ibv_port_attr pa{};
	/* Port 1 describes the device; multi-port HCAs are rare on hosts.
	 * What verbs.h's ibv_query_port does: the context's own op when it
	 * has one, else the exported call with the compat layout (a prefix). */
	verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	int qrc = vctx ? vctx->query_port(ctx, 1, &pa, sizeof pa)
		       : v.query_port(ctx, 1, reinterpret_cast<_compat_ibv_port_attr *>(&pa));
	if (qrc == 0) {
		n.link.state = pa.state == IBV_PORT_ACTIVE ? FI_LINK_UP : FI_LINK_DOWN;
		if (pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096)
			n.link.mtu = size_t{128} << pa.active_mtu;
		n.link.speed = ib_lane_mbps(pa.active_speed) * ib_lanes(pa.active_width) * 1000000u;
		n.link.network_type =
			pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
	}
	v.close_device(ctx);
}

} // namespace
#endif

std::vector<nic_info> scan_verbs()
{
	std::vector<nic_info> out;
#ifdef WU_HAVE_VERBS
	const verbs_api *v = verbs();
	if (!v)
		return out;
	int count = 0;
	ibv_device **list = v->get_device_list(&count);
	if (!list) {
		/* ENOSYS: no kernel support; nothing to list. */
		WU_DBG(&core_prov, FI_LOG_CORE, "ibv_get_device_list: %s; no verbs NICs\n",
		       strerror(errno));
		return out;
	}
	std::unique_ptr<ibv_device *, void (*)(ibv_device **)> guard(list, v->free_device_list);
	for (int i = 0; i < count; i++) {
		ibv_device *dev = list[i];
		nic_info n;
		n.is_verbs = true;
		n.name = v->get_device_name(dev);
		uint64_t guid = be64toh(v->get_device_guid(dev));
		char g[24];
		snprintf(g, sizeof(g), "%04x:%04x:%04x:%04x", unsigned(guid >> 48) & 0xffff,
			 unsigned(guid >> 32) & 0xffff, unsigned(guid >> 16) & 0xffff,
			 unsigned(guid) & 0xffff);
		n.link.address = g;
		if (dev->transport_type == IBV_TRANSPORT_IWARP)
			n.link.network_type = "Ethernet";
		else if (dev->transport_type == IBV_TRANSPORT_IB)
			n.link.network_type = "InfiniBand";
		fill_from_sysfs_device(n, dev->ibdev_path);
		query_port(*v, dev, n);
		out.push_back(std::move(n));
	}
#endif
	return out;
}

std::vector<nic_info> scan_system()
{
	std::vector<nic_info> all = scan_interfaces();
	std::vector<nic_info> v = scan_verbs();
	all.insert(all.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
	return all;
}

nic_table::nic_table(const topology_source &src, std::vector<nic_info> os_nics)
	: topo_(src.load()), machine_(src.is_machine())
{
	struct entry {
		nic_info n;
		hwloc_obj_t where;
		bool located;
	};
	std::vector<entry> tmp;
	tmp.reserve(os_nics.size());
	for (nic_info &n : os_nics) {
		hwloc_obj_t where = topo_ ? match(topo_.get(), n) : nullptr;
		bool located = where || (src.is_sysfs() && sysfs_locate(n));
		tmp.push_back({std::move(n), where, located});
	}
	std::stable_sort(tmp.begin(), tmp.end(),
			 [](const entry &a, const entry &b) { return base_less(a.n, b.n); });
	nics_.reserve(tmp.size());
	where_.reserve(tmp.size());
	located_.reserve(tmp.size());
	for (entry &e : tmp) {
		nics_.push_back(std::move(e.n));
		where_.push_back(e.where);
		located_.push_back(e.located);
	}
}

bool locality_matters(const std::vector<nic_info> &nics) noexcept
{
	int with_device[2] = {0, 0};
	for (const nic_info &n : nics)
		if (!n.device_path.empty() || n.pci.valid)
			with_device[n.pci.valid ? 0 : 1]++;
	return with_device[0] > 1 || with_device[1] > 1;
}

nic_table::~nic_table() = default;

const nic_info *nic_table::find(std::string_view name) const noexcept
{
	for (const nic_info &n : nics_)
		if (n.name == name)
			return &n;
	return nullptr;
}

std::vector<ranked> nic_table::order(hwloc_const_cpuset_t caller) const
{
	hwloc_obj_t from = nullptr;
	if (topo_ && caller && !hwloc_bitmap_iszero(caller)) {
		/* Ignore CPUs hwloc does not know (offline, other cgroup). */
		bitmap_ptr known = bitmap_new();
		hwloc_bitmap_and(known.get(), caller, hwloc_topology_get_topology_cpuset(topo_.get()));
		if (!hwloc_bitmap_iszero(known.get()))
			from = hwloc_get_obj_covering_cpuset(topo_.get(), known.get());
		/* Start from the largest object that is exactly the binding
		 * (the core rather than its only PU, the machine when unbound
		 * on a one-package host), so distances count real levels. */
		while (from && from->parent && hwloc_bitmap_isequal(from->parent->cpuset, from->cpuset))
			from = from->parent;
	}
	std::vector<ranked> out;
	out.reserve(nics_.size());
	for (size_t i = 0; i < nics_.size(); i++) {
		int d = located_[i] ? 0 : nic_info::no_distance;
		if (where_[i]) {
			d = 0;
			if (from) {
				hwloc_obj_t common =
					hwloc_get_common_ancestor_obj(topo_.get(), from, where_[i]);
				d = common ? from->depth - common->depth : INT_MAX - 1;
			}
		}
		out.push_back({&nics_[i], d});
	}
	/* nics_ is already in PCI-then-name order, so a stable sort on
	 * (non-PCI last, distance, unknown locality last) keeps the ties. */
	auto key = [](const ranked &r) {
		return std::pair{!r.nic->pci.valid,
				 r.distance == nic_info::no_distance ? INT_MAX : r.distance};
	};
	std::stable_sort(out.begin(), out.end(),
			 [&](const ranked &a, const ranked &b) { return key(a) < key(b); });
	return out;
}

std::vector<ranked> nic_table::order_for_thread() const
{
	if (!topo_ || !machine_)
		return order(nullptr);
	bitmap_ptr set = bitmap_new();
	if (hwloc_get_cpubind(topo_.get(), set.get(), HWLOC_CPUBIND_THREAD) != 0 &&
	    hwloc_get_last_cpu_location(topo_.get(), set.get(), HWLOC_CPUBIND_THREAD) != 0)
		return order(nullptr);
	return order(set.get());
}

std::vector<nic_info> nic_table::ordered(hwloc_const_cpuset_t caller) const
{
	std::vector<nic_info> out;
	for (const ranked &r : order(caller)) {
		out.push_back(*r.nic);
		out.back().distance = r.distance;
	}
	return out;
}

const nic_table &system_table()
{
	/* Leaked on purpose: no destructor runs at exit, so fi_getinfo from
	 * another atexit handler still finds a live table. */
	static const nic_table &table = []() -> const nic_table & {
		std::vector<nic_info> os = scan_system();
		topology_source src = locality_matters(os) ? topology_source::machine()
							   : topology_source::sysfs();
		return make_immortal<nic_table>(src, std::move(os));
	}();
	return table;
}

std::vector<nic_info> discover(const topology_source &src)
{
	nic_table t(src, scan_system());
	std::vector<nic_info> out;
	for (const ranked &r : t.order_for_thread()) {
		out.push_back(*r.nic);
		out.back().distance = r.distance;
	}
	return out;
}

fid_nic *to_fid_nic(const nic_info &info) noexcept
{
	fid_nic *nic = nic_alloc();
	if (!nic)
		return nullptr;
	fi_device_attr *d = nic->device_attr;
	fi_link_attr *l = nic->link_attr;
	bool ok = dup_opt(&d->name, info.name) && dup_opt(&d->vendor_id, info.vendor_id) &&
		  dup_opt(&d->device_id, info.device_id) && dup_opt(&d->driver, info.driver) &&
		  dup_opt(&l->address, info.link.address) &&
		  dup_opt(&l->network_type, info.link.network_type);
	if (!ok) {
		fi_close(&nic->fid);
		return nullptr;
	}
	if (info.pci.valid) {
		nic->bus_attr->bus_type = FI_BUS_PCI;
		nic->bus_attr->attr.pci = {info.pci.domain, info.pci.bus, info.pci.dev, info.pci.func};
	} else {
		nic->bus_attr->bus_type = FI_BUS_UNKNOWN;
	}
	l->mtu = info.link.mtu;
	l->speed = info.link.speed;
	l->state = info.link.state;
	return nic;
}

} // namespace wu::nics
