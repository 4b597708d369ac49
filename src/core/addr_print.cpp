/* SPDX-License-Identifier: BSD-3-Clause */
/* Printing binary addresses as address text (format, sockaddr_text):
 * bounded output, every length checked. */
#include "core/addr.h"
#include "core/addr_impl.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <new>

#include "core/log.h"

namespace wu::addr {

namespace detail {

/* ---- bounded output ---- */

struct writer {
	char *buf;
	size_t cap;
	size_t n = 0; /* bytes wanted so far, without NUL */

	void put(char c) noexcept
	{
		if (n + 1 < cap)
			buf[n] = c;
		n++;
	}
	void put(std::string_view s) noexcept
	{
		for (char c : s)
			put(c);
	}
	__attribute__((format(printf, 2, 3))) void putf(const char *fmt, ...) noexcept
	{
		char tmp[192];
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
		va_end(ap);
		if (k > 0)
			put(std::string_view(tmp, size_t(k) < sizeof tmp ? size_t(k) : sizeof tmp - 1));
	}
	void hex_bytes(const unsigned char *p, size_t len) noexcept
	{
		static const char digits[] = "0123456789abcdef";
		for (size_t i = 0; i < len; i++) {
			put(digits[p[i] >> 4]);
			put(digits[p[i] & 15]);
		}
	}
	ssize_t finish() noexcept
	{
		if (cap)
			buf[n < cap ? n : cap - 1] = '\0';
		return ssize_t(n + 1);
	}
};

template <class T> T load(const void *base, size_t off) noexcept
{
	T v;
	memcpy(&v, static_cast<const unsigned char *>(base) + off, sizeof v);
	return v;
}
/* IPv4 and IPv6 sockaddrs differ only in these; an IPv6 host is bracketed before ":port". */
struct ip_kind {
	int af;
	size_t len;
	size_t addr_off;
	size_t port_off;
	bool bracket;
};
constexpr ip_kind ipv4{AF_INET, sizeof(sockaddr_in), offsetof(sockaddr_in, sin_addr),
		       offsetof(sockaddr_in, sin_port), false};
constexpr ip_kind ipv6{AF_INET6, sizeof(sockaddr_in6), offsetof(sockaddr_in6, sin6_addr),
		       offsetof(sockaddr_in6, sin6_port), true};

/* The host as text and the port of an address at least k.len long; false where inet_ntop fails. */
bool host_port(const ip_kind &k, const void *addr, char (&ip)[INET6_ADDRSTRLEN], unsigned &port) noexcept
{
	port = ntohs(load<in_port_t>(addr, k.port_off));
	const unsigned char *a = static_cast<const unsigned char *>(addr) + k.addr_off;
	return inet_ntop(k.af, a, ip, sizeof ip) != nullptr;
}

/* An IB GID (16 bytes at off) as IPv6 text. */
struct gid_text {
	char s[INET6_ADDRSTRLEN];
	gid_text(const void *addr, size_t off) noexcept
	{
		inet_ntop(AF_INET6, static_cast<const unsigned char *>(addr) + off, s, sizeof s);
	}
};

/* The fewest bytes a kind prints from (kind::words: its scheme's fewest words). */
size_t min_len(kind k, const scheme_info *si) noexcept
{
	switch (k) {
	case kind::sin:
		return sizeof(sockaddr_in);
	case kind::sin6:
		return sizeof(sockaddr_in6);
	case kind::sib:
		return sockaddr_ib_len;
	case kind::words:
		return 8 * size_t(si->min_words);
	case kind::opx:
		return 8;
	case kind::cxi:
		return 4;
	case kind::efa:
		return efa_addr_len;
	case kind::ib_ud:
		return ib_ud_addr_len;
	default: /* sa: resolved before; hexraw: checked where printed */
		return 0;
	}
}
} // namespace detail

using namespace detail;

ssize_t too_short(std::uint32_t addr_format, size_t addrlen, size_t need) noexcept
{
	WU_WARN(&core_prov, FI_LOG_CORE, "address of format %u is %zu bytes, needs at least %zu to print\n",
		addr_format, addrlen, need);
	return -FI_EINVAL;
}
ssize_t format(std::uint32_t addr_format, const void *addr, std::size_t addrlen, char *buf,
	       std::size_t buflen) noexcept
{
	writer w{buf, buf ? buflen : 0};
	if (!addr)
		return reject("", "NULL address given to format()");

	if (addr_format == FI_SOCKADDR) {
		if (addrlen < sizeof(sa_family_t))
			return reject("", "sockaddr of %zu bytes has no family", addrlen);
		sa_family_t fam = load<sa_family_t>(addr, 0);
		addr_format = fam == AF_INET	? FI_SOCKADDR_IN
			      : fam == AF_INET6 ? FI_SOCKADDR_IN6
			      : fam == af_ib	? FI_SOCKADDR_IB
						: FI_SOCKADDR;
		if (addr_format == FI_SOCKADDR) {
			WU_WARN(&core_prov, FI_LOG_CORE,
				"cannot print a sockaddr of family %u (IPv4, IPv6 and IB are known)\n",
				unsigned(fam));
			return -FI_EINVAL;
		}
	}
	const scheme_info *si = find_format(addr_format);
	kind k = addr_format == FI_ADDR_STR || !si ? kind::hexraw : si->k;
	if (size_t need = min_len(k, si); addrlen < need)
		return too_short(addr_format, addrlen, need);
	switch (k) {
	case kind::sin:
	case kind::sin6: {
		const ip_kind &ik = k == kind::sin ? ipv4 : ipv6;
		char ip[INET6_ADDRSTRLEN];
		unsigned port;
		host_port(ik, addr, ip, port);
		w.put(k == kind::sin ? "fi_sockaddr_in://" : "fi_sockaddr_in6://[");
		w.put(ip);
		w.putf(ik.bracket ? "]:%u" : ":%u", port);
		break;
	}
	case kind::sa: /* resolved above */
		return -FI_EINVAL;
	case kind::sib: {
		std::uint64_t sid = be64(load<std::uint64_t>(addr, 24));
		w.putf("fi_sockaddr_ib://[%s]:0x%x:0x%x:0x%" PRIx64, gid_text(addr, 8).s,
		       unsigned(ntohs(load<std::uint16_t>(addr, 2))), unsigned((sid >> 16) & 0xfff),
		       be64(load<std::uint64_t>(addr, 40)));
		break;
	}
	case kind::words: {
		size_t n = addrlen / 8;
		if (n > si->max_words)
			n = si->max_words;
		w.put(si->name);
		w.put("://");
		for (size_t i = 0; i < n; i++)
			w.putf(i ? ":%" PRIx64 : "%" PRIx64, load<std::uint64_t>(addr, 8 * i));
		break;
	}
	case kind::opx:
		w.putf("fi_addr_opx://%016" PRIx64, load<std::uint64_t>(addr, 0));
		break;
	case kind::cxi:
		w.putf("fi_addr_cxi://0x%08x", unsigned(load<std::uint32_t>(addr, 0)));
		break;
	case kind::efa:
		w.putf("fi_addr_efa://[%s]:%u:%u", gid_text(addr, 0).s,
		       unsigned(load<std::uint16_t>(addr, 16)), unsigned(load<std::uint32_t>(addr, 20)));
		break;
	case kind::ib_ud:
		w.putf("fi_addr_ib_ud://%s:%x/%x/%x/%x", gid_text(addr, 0).s,
		       unsigned(load<std::uint32_t>(addr, 16)), unsigned(load<std::uint16_t>(addr, 20)),
		       unsigned(load<std::uint16_t>(addr, 22)),
		       unsigned(static_cast<const unsigned char *>(addr)[26]));
		break;
	case kind::hexraw:
		if (addr_format == FI_ADDR_STR) {
			/* The string itself, up to its NUL or addrlen. */
			const char *s = static_cast<const char *>(addr);
			w.put(std::string_view(s, strnlen(s, addrlen)));
			break;
		}
		if (addrlen > max_raw_len) {
			WU_WARN(&core_prov, FI_LOG_CORE,
				"address of format %u is %zu bytes; printing the first %zu\n", addr_format,
				addrlen, max_raw_len);
			addrlen = max_raw_len;
		}
		if (!addrlen) {
			WU_WARN(&core_prov, FI_LOG_CORE, "address of format %u has no bytes to print\n",
				addr_format);
			return -FI_EINVAL;
		}
		w.put(si ? si->name : "fi_addr_unspec");
		w.put("://");
		w.hex_bytes(static_cast<const unsigned char *>(addr), addrlen);
		break;
	}
	return w.finish();
}
std::string sockaddr_text(const void *addr, std::size_t len, bool with_port)
{
	sockaddr_storage ss{};
	if (!addr || len < sizeof(sa_family_t))
		return "?";
	std::memcpy(&ss, addr, std::min(len, sizeof ss)); /* aligned copy */
	const ip_kind *ik = ss.ss_family == AF_INET ? &ipv4 : ss.ss_family == AF_INET6 ? &ipv6 : nullptr;
	char ip[INET6_ADDRSTRLEN];
	unsigned port;
	if (!ik || len < ik->len || !host_port(*ik, &ss, ip, port))
		return "?";
	if (!with_port)
		return ip;
	std::string host = ik->bracket ? "[" + std::string(ip) + "]" : std::string(ip);
	return host + ":" + std::to_string(port);
}

} // namespace wu::addr
