/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_tostr / fi_tostr_r: text rendering of fabric types.
 *
 * The output must match Debian's libfabric 1.17 byte for byte (fi_info and
 * user scripts parse it), including how fi_tostr_r truncates: every piece is
 * appended with at most len-2 characters in total, and a flag list drops its
 * trailing ", " *after* truncation.  Names are kept in per-type tables so a
 * new value is one line. */
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_trigger.h>

#include "core/export.h"
#include "core/shim.h"

#ifndef FI_REVISION_VERSION
#define FI_REVISION_VERSION 0
#endif

namespace wu::tostr {
namespace {

/* ---- output sink with fi_tostr_r's truncation rules ---------------------- */

class Sink {
public:
	Sink(char *buf, size_t len) noexcept
		: buf_(buf), len_(len), max_(len >= 2 ? len - 2 : 0)
	{
		buf_[0] = '\0';
	}

	void put(std::string_view s) noexcept
	{
		if (used_ >= max_)
			return;
		size_t n = std::min(s.size(), max_ - used_);
		std::memcpy(buf_ + used_, s.data(), n);
		used_ += n;
		buf_[used_] = '\0';
	}

	/* A converted address may use one byte more than other pieces (up
	 * to len-1 characters) and also zeroes the buffer's last byte, as in
	 * 1.17; both only show when truncating or in bytes past the string. */
	void put_wide(std::string_view s) noexcept
	{
		if (s.empty())
			return;
		if (used_ + 1 < len_) {
			size_t n = std::min(s.size(), len_ - 1 - used_);
			std::memcpy(buf_ + used_, s.data(), n);
			used_ += n;
			buf_[used_] = '\0';
		}
		buf_[len_ - 1] = '\0';
	}

	/* Flag lists end in ", "; it is removed from whatever the buffer holds
	 * now, truncated or not (that is what frees room for the " ]"). */
	void trim_comma() noexcept
	{
		if (used_ >= 2 && buf_[used_ - 2] == ',' && buf_[used_ - 1] == ' ') {
			used_ -= 2;
			buf_[used_] = '\0';
		}
	}

	/* Hands the tail of the buffer to an object's own fi_ops::tostr. */
	void call(const struct fid *fid) noexcept
	{
		fid->ops->tostr(fid, buf_ + used_, len_ - used_);
		used_ += strnlen(buf_ + used_, len_ - used_ - 1);
	}

private:
	char *buf_;
	size_t len_;
	size_t max_;
	size_t used_ = 0;
};

/* ---- small formatting helpers ------------------------------------------- */

std::string dec(uint64_t v)
{
	char b[24];
	auto r = std::to_chars(b, b + sizeof b, v);
	return std::string(b, r.ptr);
}

std::string hex(uint64_t v, int width = 0)
{
	char b[24];
	auto r = std::to_chars(b, b + sizeof b, v, 16);
	std::string s(b, r.ptr);
	if (static_cast<int>(s.size()) < width)
		s.insert(0, static_cast<size_t>(width) - s.size(), '0');
	return s;
}

/* glibc's %p: "(nil)" or 0x-prefixed hex. */
std::string ptr(const void *p)
{
	return p ? "0x" + hex(reinterpret_cast<uintptr_t>(p)) : "(nil)";
}

const char *str(const char *s)
{
	return s ? s : "(null)";
}

std::string version(uint32_t v)
{
	return dec(FI_MAJOR(v)) + "." + dec(FI_MINOR(v));
}

/* ---- enum tables --------------------------------------------------------- */

struct EnumTable {
	const char *const *names;
	size_t count;
	bool prov_specific; /* FI_PROV_SPECIFIC values print as such */
};

template <size_t N>
constexpr EnumTable table(const std::array<const char *, N> &a, bool prov = false)
{
	return {a.data(), N, prov};
}

/* Index = value; nullptr = a retired value that prints as Unknown. */
constexpr std::array<const char *, 6> ep_type_names = {
	"FI_EP_UNSPEC", "FI_EP_MSG", "FI_EP_DGRAM", "FI_EP_RDM",
	"FI_EP_SOCK_STREAM", "FI_EP_SOCK_DGRAM",
};
constexpr std::array<const char *, 16> addr_format_names = {
	"FI_FORMAT_UNSPEC", "FI_SOCKADDR", "FI_SOCKADDR_IN", "FI_SOCKADDR_IN6",
	"FI_SOCKADDR_IB", "FI_ADDR_PSMX", "FI_ADDR_GNI", "FI_ADDR_BGQ",
	"FI_ADDR_MLX", "FI_ADDR_STR", "FI_ADDR_PSMX2", "FI_ADDR_IB_UD",
	"FI_ADDR_EFA", "FI_ADDR_PSMX3", "FI_ADDR_OPX", "FI_ADDR_CXI",
};
constexpr std::array<const char *, 6> threading_names = {
	"FI_THREAD_UNSPEC", "FI_THREAD_SAFE", "FI_THREAD_FID",
	"FI_THREAD_DOMAIN", "FI_THREAD_COMPLETION", "FI_THREAD_ENDPOINT",
};
constexpr std::array<const char *, 4> progress_names = {
	"FI_PROGRESS_UNSPEC", "FI_PROGRESS_AUTO", "FI_PROGRESS_MANUAL",
	"FI_PROGRESS_CONTROL_UNIFIED", /* 2.x; Debian prints Unknown */
};
constexpr std::array<const char *, 3> rm_names = {
	"FI_RM_UNSPEC", "FI_RM_DISABLED", "FI_RM_ENABLED",
};
constexpr std::array<const char *, 26> protocol_names = {
	"FI_PROTO_UNSPEC", "FI_PROTO_RDMA_CM_IB_RC", "FI_PROTO_IWARP",
	"FI_PROTO_IB_UD", "FI_PROTO_PSMX", "FI_PROTO_UDP", "FI_PROTO_SOCK_TCP",
	nullptr /* MXM */, "FI_PROTO_IWARP_RDM", "FI_PROTO_IB_RDM",
	"FI_PROTO_GNI", "FI_PROTO_RXM", "FI_PROTO_RXD", "FI_PROTO_MLX",
	"FI_PROTO_NETWORKDIRECT", "FI_PROTO_PSMX2", "FI_PROTO_SHM",
	nullptr /* MRAIL */, "FI_PROTO_RSTREAM", "FI_PROTO_RDMA_CM_IB_XRC",
	"FI_PROTO_EFA", "FI_PROTO_PSMX3", "FI_PROTO_RXM_TCP", "FI_PROTO_OPX",
	"FI_PROTO_CXI", "FI_PROTO_XNET",
};
constexpr std::array<const char *, 3> av_type_names = {
	"FI_AV_UNSPEC", "FI_AV_MAP", "FI_AV_TABLE",
};
constexpr std::array<const char *, 16> atomic_type_names = {
	"FI_INT8", "FI_UINT8", "FI_INT16", "FI_UINT16", "FI_INT32", "FI_UINT32",
	"FI_INT64", "FI_UINT64", "FI_FLOAT", "FI_DOUBLE", "FI_FLOAT_COMPLEX",
	"FI_DOUBLE_COMPLEX", "FI_LONG_DOUBLE", "FI_LONG_DOUBLE_COMPLEX",
	"FI_INT128", "FI_UINT128",
};
constexpr std::array<const char *, 19> atomic_op_names = {
	"FI_MIN", "FI_MAX", "FI_SUM", "FI_PROD", "FI_LOR", "FI_LAND", "FI_BOR",
	"FI_BAND", "FI_LXOR", "FI_BXOR", "FI_ATOMIC_READ", "FI_ATOMIC_WRITE",
	"FI_CSWAP", "FI_CSWAP_NE", "FI_CSWAP_LE", "FI_CSWAP_LT", "FI_CSWAP_GE",
	"FI_CSWAP_GT", "FI_MSWAP",
};
constexpr std::array<const char *, 7> eq_event_names = {
	"FI_NOTIFY", "FI_CONNREQ", "FI_CONNECTED", "FI_SHUTDOWN",
	"FI_MR_COMPLETE", "FI_AV_COMPLETE", "FI_JOIN_COMPLETE",
};
constexpr std::array<const char *, 11> op_type_names = {
	"FI_OP_RECV", "FI_OP_SEND", "FI_OP_TRECV", "FI_OP_TSEND", "FI_OP_READ",
	"FI_OP_WRITE", "FI_OP_ATOMIC", "FI_OP_FETCH_ATOMIC",
	"FI_OP_COMPARE_ATOMIC", "FI_OP_CNTR_SET", "FI_OP_CNTR_ADD",
};
constexpr std::array<const char *, 9> collective_op_names = {
	"FI_BARRIER", "FI_BROADCAST", "FI_ALLTOALL", "FI_ALLREDUCE",
	"FI_ALLGATHER", "FI_REDUCE_SCATTER", "FI_REDUCE", "FI_SCATTER",
	"FI_GATHER",
};
constexpr std::array<const char *, 6> hmem_iface_names = {
	"FI_HMEM_SYSTEM", "FI_HMEM_CUDA", "FI_HMEM_ROCR", "FI_HMEM_ZE",
	"FI_HMEM_NEURON", "FI_HMEM_SYNAPSEAI",
};
constexpr std::array<const char *, 5> cq_format_names = {
	"FI_CQ_FORMAT_UNSPEC", "FI_CQ_FORMAT_CONTEXT", "FI_CQ_FORMAT_MSG",
	"FI_CQ_FORMAT_DATA", "FI_CQ_FORMAT_TAGGED",
};
constexpr std::array<const char *, 4> log_level_names = {
	"warn", "trace", "info", "debug",
};
constexpr std::array<const char *, 10> log_subsys_names = {
	"core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq",
	"mr", "cntr",
};
constexpr std::array<const char *, 2> bus_type_names = {
	"FI_BUS_UNKNOWN", "FI_BUS_PCI",
};
constexpr std::array<const char *, 3> link_state_names = {
	"FI_LINK_UNKNOWN", "FI_LINK_DOWN", "FI_LINK_UP",
};

/* The tables above rely on these values; the headers are the authority. */
static_assert(FI_EP_SOCK_DGRAM == 5 && FI_ADDR_CXI == 15 && FI_THREAD_ENDPOINT == 5);
static_assert(FI_PROTO_XNET == 25 && FI_PROTO_MXM == 7 && FI_PROTO_MRAIL == 17);
static_assert(FI_UINT128 == 15 && FI_MSWAP == 18 && FI_JOIN_COMPLETE == 6);
static_assert(FI_OP_CNTR_ADD == 10 && FI_GATHER == 8 && FI_HMEM_SYNAPSEAI == 5);
static_assert(FI_CQ_FORMAT_TAGGED == 4 && FI_LOG_DEBUG == 3 && FI_LOG_CNTR == 9);
static_assert(FI_BUS_PCI == 1 && FI_LINK_UP == 2 && FI_RM_ENABLED == 2);

/* Enum fields are read as raw 32-bit integers: C callers store values the
 * C++ enum type cannot hold, and loading those as the enum is undefined. */
template <class E>
uint32_t raw(const E &e)
{
	static_assert(sizeof(E) == sizeof(uint32_t));
	uint32_t v;
	std::memcpy(&v, &e, sizeof v);
	return v;
}

/* Enums are read as 32 bits, as the C library does. */
std::string_view enum_name(const EnumTable &t, uint32_t v)
{
	if (t.prov_specific && (v & FI_PROV_SPECIFIC))
		return "Provider specific";
	if (v < t.count && t.names[v])
		return t.names[v];
	return "Unknown";
}

/* ---- flag tables (bit -> name, in printing order) ------------------------ */

struct Flag {
	uint64_t bit;
	const char *name;
};

#define WU_FLAG(f) Flag{f, #f}

constexpr Flag caps_flags[] = {
	WU_FLAG(FI_MSG), WU_FLAG(FI_RMA), WU_FLAG(FI_TAGGED), WU_FLAG(FI_ATOMIC),
	WU_FLAG(FI_MULTICAST), WU_FLAG(FI_COLLECTIVE), WU_FLAG(FI_READ),
	WU_FLAG(FI_WRITE), WU_FLAG(FI_RECV), WU_FLAG(FI_SEND),
	WU_FLAG(FI_REMOTE_READ), WU_FLAG(FI_REMOTE_WRITE),
	WU_FLAG(FI_MULTI_RECV), WU_FLAG(FI_REMOTE_CQ_DATA), WU_FLAG(FI_TRIGGER),
	WU_FLAG(FI_FENCE), WU_FLAG(FI_RMA_PMEM),
	WU_FLAG(FI_SOURCE_ERR), WU_FLAG(FI_LOCAL_COMM), WU_FLAG(FI_REMOTE_COMM),
	WU_FLAG(FI_SHARED_AV), WU_FLAG(FI_RMA_EVENT), WU_FLAG(FI_SOURCE),
	WU_FLAG(FI_NAMED_RX_CTX), WU_FLAG(FI_DIRECTED_RECV), WU_FLAG(FI_HMEM),
	/* Newer than 1.17's printer (Debian prints nothing for these bits). */
#ifdef FI_AV_USER_ID
	WU_FLAG(FI_AV_USER_ID),
#endif
#ifdef FI_PEER
	WU_FLAG(FI_PEER),
#endif
#ifdef FI_TAGGED_DIRECTED_RECV
	WU_FLAG(FI_TAGGED_DIRECTED_RECV),
#endif
#ifdef FI_TAGGED_MULTI_RECV
	WU_FLAG(FI_TAGGED_MULTI_RECV),
#endif
#ifdef FI_EXACT_DIRECTED_RECV
	WU_FLAG(FI_EXACT_DIRECTED_RECV),
#endif
};

constexpr Flag op_flags[] = {
	WU_FLAG(FI_MULTICAST), WU_FLAG(FI_MULTI_RECV),
	WU_FLAG(FI_REMOTE_CQ_DATA), WU_FLAG(FI_MORE), WU_FLAG(FI_PEEK),
	WU_FLAG(FI_TRIGGER), WU_FLAG(FI_FENCE), WU_FLAG(FI_COMPLETION),
	WU_FLAG(FI_INJECT), WU_FLAG(FI_INJECT_COMPLETE),
	WU_FLAG(FI_TRANSMIT_COMPLETE), WU_FLAG(FI_DELIVERY_COMPLETE),
	WU_FLAG(FI_MATCH_COMPLETE), WU_FLAG(FI_AFFINITY), WU_FLAG(FI_CLAIM),
	WU_FLAG(FI_DISCARD),
};

constexpr Flag mode_flags[] = {
	WU_FLAG(FI_CONTEXT), WU_FLAG(FI_MSG_PREFIX), WU_FLAG(FI_ASYNC_IOV),
	WU_FLAG(FI_RX_CQ_DATA), WU_FLAG(FI_LOCAL_MR),
	WU_FLAG(FI_NOTIFY_FLAGS_ONLY), WU_FLAG(FI_RESTRICTED_COMP),
	WU_FLAG(FI_CONTEXT2), WU_FLAG(FI_BUFFERED_RECV),
};

constexpr Flag msg_order_flags[] = {
	WU_FLAG(FI_ORDER_RAR), WU_FLAG(FI_ORDER_RAW), WU_FLAG(FI_ORDER_RAS),
	WU_FLAG(FI_ORDER_WAR), WU_FLAG(FI_ORDER_WAW), WU_FLAG(FI_ORDER_WAS),
	WU_FLAG(FI_ORDER_SAR), WU_FLAG(FI_ORDER_SAW), WU_FLAG(FI_ORDER_SAS),
	WU_FLAG(FI_ORDER_RMA_RAR), WU_FLAG(FI_ORDER_RMA_RAW),
	WU_FLAG(FI_ORDER_RMA_WAR), WU_FLAG(FI_ORDER_RMA_WAW),
	WU_FLAG(FI_ORDER_ATOMIC_RAR), WU_FLAG(FI_ORDER_ATOMIC_RAW),
	WU_FLAG(FI_ORDER_ATOMIC_WAR), WU_FLAG(FI_ORDER_ATOMIC_WAW),
};

constexpr Flag cq_event_flags[] = {
	WU_FLAG(FI_SEND), WU_FLAG(FI_RECV), WU_FLAG(FI_RMA), WU_FLAG(FI_ATOMIC),
	WU_FLAG(FI_MSG), WU_FLAG(FI_TAGGED), WU_FLAG(FI_READ), WU_FLAG(FI_WRITE),
	WU_FLAG(FI_REMOTE_READ), WU_FLAG(FI_REMOTE_WRITE),
	WU_FLAG(FI_REMOTE_CQ_DATA), WU_FLAG(FI_MULTI_RECV), WU_FLAG(FI_MORE),
	WU_FLAG(FI_CLAIM),
};

constexpr Flag mr_mode_flags[] = {
	WU_FLAG(FI_MR_BASIC), WU_FLAG(FI_MR_SCALABLE), WU_FLAG(FI_MR_LOCAL),
	WU_FLAG(FI_MR_RAW), WU_FLAG(FI_MR_VIRT_ADDR), WU_FLAG(FI_MR_ALLOCATED),
	WU_FLAG(FI_MR_PROV_KEY), WU_FLAG(FI_MR_MMU_NOTIFY),
	WU_FLAG(FI_MR_RMA_EVENT), WU_FLAG(FI_MR_ENDPOINT), WU_FLAG(FI_MR_HMEM),
	WU_FLAG(FI_MR_COLLECTIVE),
};

#undef WU_FLAG

template <size_t N>
void flags(Sink &out, uint64_t v, const Flag (&tab)[N])
{
	for (const Flag &f : tab)
		if (v & f.bit) {
			out.put(f.name);
			out.put(", ");
		}
	out.trim_comma();
}

/* comp_order is not a plain flag set: STRICT/NONE describe the low bits. */
void comp_order(Sink &out, uint64_t v)
{
	if ((v & FI_ORDER_STRICT) == FI_ORDER_STRICT)
		out.put("FI_ORDER_STRICT, ");
	else if ((v & FI_ORDER_STRICT) == 0)
		out.put("FI_ORDER_NONE, ");
	if (v & FI_ORDER_DATA)
		out.put("FI_ORDER_DATA, ");
	out.trim_comma();
}

/* ---- addresses ----------------------------------------------------------- */

template <class T>
T load(const void *p, size_t off)
{
	T v;
	std::memcpy(&v, static_cast<const char *>(p) + off, sizeof v);
	return v;
}

std::string ntop(int family, const void *src)
{
	char b[INET6_ADDRSTRLEN];
	return inet_ntop(family, src, b, sizeof b) ? b : std::string();
}

std::string gid(const void *p, size_t off)
{
	return ntop(AF_INET6, static_cast<const char *>(p) + off);
}

/* The family stored in the address decides how its bytes are read, even
 * when it contradicts the declared format; a failed conversion prints "". */
std::string sockaddr_in_str(const void *a)
{
	auto family = load<sa_family_t>(a, 0);
	std::string ip = ntop(family, static_cast<const char *>(a) + offsetof(sockaddr_in, sin_addr));
	if (ip.empty())
		return {};
	return "fi_sockaddr_in://" + ip + ":" + dec(ntohs(load<in_port_t>(a, 2)));
}

std::string sockaddr_in6_str(const void *a)
{
	auto family = load<sa_family_t>(a, 0);
	std::string ip = ntop(family, static_cast<const char *>(a) + offsetof(sockaddr_in6, sin6_addr));
	if (ip.empty())
		return {};
	return "fi_sockaddr_in6://[" + ip + "]:" + dec(ntohs(load<in_port_t>(a, 2)));
}

/* sockaddr_ib: family 0, pkey 2 (be16), gid 8, service id 24 (be64),
 * scope id 40; the port space is 12 bits of the sid. */
std::string sockaddr_ib_str(const void *a)
{
	uint16_t pkey = ntohs(load<uint16_t>(a, 2));
	uint64_t sid = be64toh(load<uint64_t>(a, 24));
	uint64_t scope = be64toh(load<uint64_t>(a, 40));
	return "fi_sockaddr_ib://[" + gid(a, 8) + "]:0x" + hex(pkey) + ":0x" +
	       hex((sid >> 16) & 0xfff) + ":0x" + hex(scope & 0xff);
}

std::string address(const void *a, uint32_t format)
{
	auto u64 = [a](size_t i) { return hex(load<uint64_t>(a, 8 * i)); };
	switch (format) {
	case FI_SOCKADDR:
		switch (load<sa_family_t>(a, 0)) {
		case AF_INET:
			return sockaddr_in_str(a);
		case AF_INET6:
			return sockaddr_in6_str(a);
		default:
			return {};
		}
	case FI_SOCKADDR_IN:
		return sockaddr_in_str(a);
	case FI_SOCKADDR_IN6:
		return sockaddr_in6_str(a);
	case FI_SOCKADDR_IB:
		return sockaddr_ib_str(a);
	case FI_ADDR_PSMX:
		return "fi_addr_psmx://" + u64(0);
	case FI_ADDR_PSMX2:
		return "fi_addr_psmx2://" + u64(0) + ":" + u64(1);
	case FI_ADDR_PSMX3:
		return "fi_addr_psmx3://" + u64(0) + ":" + u64(1) + ":" + u64(2) + ":" + u64(3);
	case FI_ADDR_GNI:
		return "fi_addr_gni://" + u64(0);
	case FI_ADDR_OPX:
		return "fi_addr_opx://" + hex(load<uint64_t>(a, 0), 16);
	case FI_ADDR_CXI:
		return "fi_addr_cxi://0x" + hex(load<uint32_t>(a, 0), 8);
	case FI_ADDR_BGQ: /* opaque: the pointer itself is shown */
		return "fi_addr_bgq://" + ptr(a);
	case FI_ADDR_MLX:
		return "fi_addr_mlx://" + ptr(a);
	case FI_ADDR_IB_UD: /* gid, qpn, lid, pkey, sl */
		return "fi_addr_ib_ud://" + gid(a, 0) + ":" + hex(load<uint32_t>(a, 16)) + "/" +
		       hex(load<uint16_t>(a, 20)) + "/" + hex(load<uint16_t>(a, 22)) + "/" +
		       hex(load<uint8_t>(a, 26));
	case FI_ADDR_EFA: /* gid, qpn, qkey */
		return "fi_addr_efa://[" + gid(a, 0) + "]:" + dec(load<uint16_t>(a, 16)) + ":" +
		       dec(load<uint32_t>(a, 20));
	case FI_ADDR_STR:
		return static_cast<const char *>(a);
	default: /* FI_FORMAT_UNSPEC, provider specific, unknown */
		return {};
	}
}

/* ---- fids ---------------------------------------------------------------- */

bool has_tostr(const struct fid *fid)
{
	return fid && FI_CHECK_OP(fid->ops, struct fi_ops, tostr);
}

void nic(Sink &out, const fid_nic *n);

/* An object's own tostr prints everything including its label.  A NIC
 * without one is rendered here (1.17 would print a bare pointer). */
void fid_field(Sink &out, const char *label, const struct fid *fid)
{
	if (has_tostr(fid)) {
		out.call(fid);
	} else if (fid && fid->fclass == FI_CLASS_NIC) {
		nic(out, reinterpret_cast<const fid_nic *>(fid));
	} else {
		out.put(label);
		out.put(ptr(fid));
		out.put("\n");
	}
}

/* ---- structures ---------------------------------------------------------- */

/* Writes "<indent><name>: <value>\n". */
struct Fields {
	Sink &out;
	std::string indent;

	void line(std::string_view name, std::string_view value)
	{
		out.put(indent);
		out.put(name);
		out.put(": ");
		out.put(value);
		out.put("\n");
	}
	void num(std::string_view name, uint64_t v) { line(name, dec(v)); }
	void addr(std::string_view name, const void *a, uint32_t format)
	{
		out.put(indent);
		out.put(name);
		out.put(": ");
		if (a)
			out.put_wide(address(a, format));
		else
			out.put("(null)");
		out.put("\n");
	}
	template <size_t N>
	void list(std::string_view name, uint64_t v, const Flag (&tab)[N])
	{
		out.put(indent);
		out.put(name);
		out.put(": [ ");
		flags(out, v, tab);
		out.put(" ]\n");
	}
	void order(std::string_view name, uint64_t v)
	{
		out.put(indent);
		out.put(name);
		out.put(": [ ");
		comp_order(out, v);
		out.put(" ]\n");
	}
	/* "<indent><title>:" then nested fields, or " (null)" for NULL. */
	bool open(std::string_view title, const void *p)
	{
		out.put(indent);
		out.put(title);
		out.put(p ? ":\n" : ": (null)\n");
		return p != nullptr;
	}
};

std::string more(const std::string &indent)
{
	return indent + "    ";
}

/* fi_tx_attr and fi_rx_attr open with the same five fields. */
template <class A>
void xfer_attr_head(Fields &g, const A *a)
{
	g.list("caps", a->caps, caps_flags);
	g.list("mode", a->mode, mode_flags);
	g.list("op_flags", a->op_flags, op_flags);
	g.list("msg_order", a->msg_order, msg_order_flags);
	g.order("comp_order", a->comp_order);
}

void tx_attr(Sink &out, const std::string &ind, const fi_tx_attr *a)
{
	Fields f{out, ind};
	if (!f.open("fi_tx_attr", a))
		return;
	Fields g{out, more(ind)};
	xfer_attr_head(g, a);
	g.num("inject_size", a->inject_size);
	g.num("size", a->size);
	g.num("iov_limit", a->iov_limit);
	g.num("rma_iov_limit", a->rma_iov_limit);
	g.line("tclass", "0x" + hex(a->tclass));
}

void rx_attr(Sink &out, const std::string &ind, const fi_rx_attr *a)
{
	Fields f{out, ind};
	if (!f.open("fi_rx_attr", a))
		return;
	Fields g{out, more(ind)};
	xfer_attr_head(g, a);
	g.num("total_buffered_recv", a->total_buffered_recv);
	g.num("size", a->size);
	g.num("iov_limit", a->iov_limit);
}

void ep_attr(Sink &out, const std::string &ind, const fi_ep_attr *a)
{
	Fields f{out, ind};
	if (!f.open("fi_ep_attr", a))
		return;
	Fields g{out, more(ind)};
	g.line("type", enum_name(table(ep_type_names), raw(a->type)));
	g.line("protocol", enum_name(table(protocol_names, true), a->protocol));
	g.num("protocol_version", a->protocol_version);
	g.num("max_msg_size", a->max_msg_size);
	g.num("msg_prefix_size", a->msg_prefix_size);
	g.num("max_order_raw_size", a->max_order_raw_size);
	g.num("max_order_war_size", a->max_order_war_size);
	g.num("max_order_waw_size", a->max_order_waw_size);
	g.line("mem_tag_format", "0x" + hex(a->mem_tag_format, 16));
	g.num("tx_ctx_cnt", a->tx_ctx_cnt);
	g.num("rx_ctx_cnt", a->rx_ctx_cnt);
	g.num("auth_key_size", a->auth_key_size); /* the key itself is never shown */
}

/* 2.0 appends these to fi_domain_attr; print them only when our headers
 * have them.  Callers built against 1.17 pass the shorter struct, as with
 * any 2.0 libfabric. */
template <class A>
void domain_attr_v2(Fields &g, const A *a)
{
	if constexpr (requires { a->max_ep_auth_key; })
		g.num("max_ep_auth_key", a->max_ep_auth_key);
	if constexpr (requires { a->max_group_id; })
		g.num("max_group_id", a->max_group_id);
}

void domain_attr(Sink &out, const std::string &ind, const fi_domain_attr *a)
{
	Fields f{out, ind};
	if (!f.open("fi_domain_attr", a))
		return;
	Fields g{out, more(ind)};
	/* 1.17 shows only the low 32 bits of the handle, as "0x%x". */
	g.line("domain", "0x" + hex(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a->domain))));
	g.line("name", str(a->name));
	g.line("threading", enum_name(table(threading_names), raw(a->threading)));
	g.line("control_progress", enum_name(table(progress_names), raw(a->control_progress)));
	g.line("data_progress", enum_name(table(progress_names), raw(a->data_progress)));
	g.line("resource_mgmt", enum_name(table(rm_names), raw(a->resource_mgmt)));
	g.line("av_type", enum_name(table(av_type_names), raw(a->av_type)));
	g.list("mr_mode", static_cast<uint32_t>(a->mr_mode), mr_mode_flags);
	g.num("mr_key_size", a->mr_key_size);
	g.num("cq_data_size", a->cq_data_size);
	g.num("cq_cnt", a->cq_cnt);
	g.num("ep_cnt", a->ep_cnt);
	g.num("tx_ctx_cnt", a->tx_ctx_cnt);
	g.num("rx_ctx_cnt", a->rx_ctx_cnt);
	g.num("max_ep_tx_ctx", a->max_ep_tx_ctx);
	g.num("max_ep_rx_ctx", a->max_ep_rx_ctx);
	g.num("max_ep_stx_ctx", a->max_ep_stx_ctx);
	g.num("max_ep_srx_ctx", a->max_ep_srx_ctx);
	g.num("cntr_cnt", a->cntr_cnt);
	g.num("mr_iov_limit", a->mr_iov_limit);
	g.list("caps", a->caps, caps_flags);
	g.list("mode", a->mode, mode_flags);
	g.num("auth_key_size", a->auth_key_size);
	g.num("max_err_data", a->max_err_data);
	g.num("mr_cnt", a->mr_cnt);
	g.line("tclass", "0x" + hex(a->tclass));
	domain_attr_v2(g, a);
}

void fabric_attr(Sink &out, const std::string &ind, const fi_fabric_attr *a)
{
	Fields f{out, ind};
	if (!f.open("fi_fabric_attr", a))
		return;
	Fields g{out, more(ind)};
	g.line("name", str(a->name));
	g.line("prov_name", str(a->prov_name));
	g.line("prov_version", version(a->prov_version));
	g.line("api_version", version(a->api_version));
}

/* NIC layout, as the library's own fid_nic tostr renders it.  Used when a
 * nic has no tostr of its own (1.17 would print a bare pointer there). */
void nic(Sink &out, const fid_nic *n)
{
	const std::string ind = "    ";
	out.put(ind);
	out.put("nic:\n");
	Fields g{out, more(ind)};
	if (g.open("fi_device_attr", n->device_attr)) {
		const fi_device_attr *d = n->device_attr;
		Fields h{out, more(g.indent)};
		h.line("name", str(d->name));
		h.line("device_id", str(d->device_id));
		h.line("device_version", str(d->device_version));
		h.line("vendor_id", str(d->vendor_id));
		h.line("driver", str(d->driver));
		h.line("firmware", str(d->firmware));
	}
	if (g.open("fi_bus_attr", n->bus_attr)) {
		const fi_bus_attr *b = n->bus_attr;
		Fields h{out, more(g.indent)};
		h.line("bus_type", enum_name(table(bus_type_names), raw(b->bus_type)));
		if (raw(b->bus_type) == FI_BUS_PCI && h.open("fi_pci_attr", &b->attr.pci)) {
			Fields p{out, more(h.indent)};
			p.num("domain_id", b->attr.pci.domain_id);
			p.num("bus_id", b->attr.pci.bus_id);
			p.num("device_id", b->attr.pci.device_id);
			p.num("function_id", b->attr.pci.function_id);
		}
	}
	if (g.open("fi_link_attr", n->link_attr)) {
		const fi_link_attr *l = n->link_attr;
		Fields h{out, more(g.indent)};
		h.line("address", str(l->address));
		h.num("mtu", l->mtu);
		h.num("speed", l->speed);
		h.line("state", enum_name(table(link_state_names), raw(l->state)));
		h.line("network_type", str(l->network_type));
	}
}

/* Only the first entry of a list is printed, like 1.17. */
void info(Sink &out, const fi_info *i)
{
	out.put("fi_info:\n");
	const std::string ind = "    ";
	Fields f{out, ind};
	f.list("caps", i->caps, caps_flags);
	f.list("mode", i->mode, mode_flags);
	f.line("addr_format", enum_name(table(addr_format_names, true), i->addr_format));
	f.num("src_addrlen", i->src_addrlen);
	f.num("dest_addrlen", i->dest_addrlen);
	f.addr("src_addr", i->src_addr, i->addr_format);
	f.addr("dest_addr", i->dest_addr, i->addr_format);
	fid_field(out, "    handle: ", i->handle);
	tx_attr(out, ind, i->tx_attr);
	rx_attr(out, ind, i->rx_attr);
	ep_attr(out, ind, i->ep_attr);
	domain_attr(out, ind, i->domain_attr);
	fabric_attr(out, ind, i->fabric_attr);
	if (!i->nic)
		f.line("nic", "(nil)");
	else if (has_tostr(&i->nic->fid))
		out.call(&i->nic->fid);
	else /* whatever its fclass says, this slot holds a NIC */
		nic(out, i->nic);
}

void render(Sink &out, const void *data, int type)
{
	auto u32 = [data] { return load<uint32_t>(data, 0); };
	auto u64 = [data] { return load<uint64_t>(data, 0); };
	auto name = [&](const EnumTable &t) { out.put(enum_name(t, u32())); };

	switch (type) {
	case FI_TYPE_INFO:
		info(out, static_cast<const fi_info *>(data));
		break;
	case FI_TYPE_EP_TYPE:
		name(table(ep_type_names));
		break;
	case FI_TYPE_CAPS:
		flags(out, u64(), caps_flags);
		break;
	case FI_TYPE_OP_FLAGS:
		flags(out, u64(), op_flags);
		break;
	case FI_TYPE_ADDR_FORMAT:
		name(table(addr_format_names, true));
		break;
	case FI_TYPE_TX_ATTR:
		tx_attr(out, "", static_cast<const fi_tx_attr *>(data));
		break;
	case FI_TYPE_RX_ATTR:
		rx_attr(out, "", static_cast<const fi_rx_attr *>(data));
		break;
	case FI_TYPE_EP_ATTR:
		ep_attr(out, "", static_cast<const fi_ep_attr *>(data));
		break;
	case FI_TYPE_DOMAIN_ATTR:
		domain_attr(out, "", static_cast<const fi_domain_attr *>(data));
		break;
	case FI_TYPE_FABRIC_ATTR:
		fabric_attr(out, "", static_cast<const fi_fabric_attr *>(data));
		break;
	case FI_TYPE_THREADING:
		name(table(threading_names));
		break;
	case FI_TYPE_PROGRESS:
		name(table(progress_names));
		break;
	case FI_TYPE_PROTOCOL:
		name(table(protocol_names, true));
		break;
	case FI_TYPE_MSG_ORDER:
		flags(out, u64(), msg_order_flags);
		break;
	case FI_TYPE_MODE:
		flags(out, u64(), mode_flags);
		break;
	case FI_TYPE_AV_TYPE:
		name(table(av_type_names));
		break;
	case FI_TYPE_ATOMIC_TYPE:
		name(table(atomic_type_names));
		break;
	case FI_TYPE_ATOMIC_OP:
		name(table(atomic_op_names));
		break;
	case FI_TYPE_VERSION: /* the library's own version; data is ignored */
		out.put(dec(FI_MAJOR_VERSION) + "." + dec(FI_MINOR_VERSION) + "." +
			dec(FI_REVISION_VERSION));
		break;
	case FI_TYPE_EQ_EVENT:
		name(table(eq_event_names));
		break;
	case FI_TYPE_CQ_EVENT_FLAGS:
		flags(out, u64(), cq_event_flags);
		break;
	case FI_TYPE_MR_MODE:
		flags(out, u32(), mr_mode_flags);
		break;
	case FI_TYPE_OP_TYPE:
		name(table(op_type_names));
		break;
	case FI_TYPE_FID:
		fid_field(out, "fid: ", static_cast<const struct fid *>(data));
		break;
	case FI_TYPE_COLLECTIVE_OP:
		name(table(collective_op_names));
		break;
	case FI_TYPE_HMEM_IFACE:
		name(table(hmem_iface_names));
		break;
	case FI_TYPE_CQ_FORMAT:
		name(table(cq_format_names));
		break;
	case FI_TYPE_LOG_LEVEL:
		name(table(log_level_names));
		break;
	case FI_TYPE_LOG_SUBSYS:
		name(table(log_subsys_names));
		break;
	default:
		out.put("Unknown type");
		break;
	}
}

/* Same size as 1.17's buffer, so long output is cut at the same place. */
constexpr size_t static_len = 8192;

} // namespace
} // namespace wu::tostr

namespace wu {

/* fi_ops::tostr for our fid_nic objects (src/core/info.cpp): appends the
 * NIC block after what buf already holds, at most len-2 characters in all,
 * as 1.17's NIC objects do; fi_info prints whatever this writes. */
int nic_tostr(const struct fid *fid, char *buf, size_t len) noexcept
{
	return guard(__func__, [&]() -> int {
		if (!fid || !buf || !len)
			return -FI_EINVAL;
		size_t used = strnlen(buf, len);
		if (used == len)
			return -FI_ETOOSMALL;
		tostr::Sink out(buf + used, len - used);
		tostr::nic(out, reinterpret_cast<const fid_nic *>(fid));
		return 0;
	});
}

} // namespace wu

extern "C" {

WU_EXPORT char *fi_tostr_r(char *buf, size_t len, const void *data, enum fi_type datatype)
{
	return wu::guard_or(__func__, static_cast<char *>(nullptr), [&]() -> char * {
		if (!buf || !len || !data)
			return nullptr;
		wu::tostr::Sink out(buf, len);
		/* raw(): callers pass values outside the C++ enum's range. */
		wu::tostr::render(out, data, static_cast<int>(wu::tostr::raw(datatype)));
		return buf;
	});
}

/* One buffer per thread (1.17 shares one process-wide, which races). */
WU_EXPORT char *fi_tostr(const void *data, enum fi_type datatype)
{
	static thread_local char buf[wu::tostr::static_len];
	return fi_tostr_r(buf, sizeof buf, data, datatype);
}

} // extern "C"
