/* SPDX-License-Identifier: BSD-3-Clause */
/* Printing binary addresses as address text (format, sockaddr_text):
 * bounded output, every length checked. */
#include "core/addr.h"
#include "core/addr_impl.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdarg>
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
	kind k = si ? si->k : kind::hexraw;
	switch (addr_format == FI_ADDR_STR ? kind::hexraw : k) {
	case kind::sin: {
		if (addrlen < sizeof(sockaddr_in))
			return too_short(addr_format, addrlen, sizeof(sockaddr_in));
		auto sin = load<sockaddr_in>(addr, 0);
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
		w.putf("fi_sockaddr_in://%s:%u", ip, unsigned(ntohs(sin.sin_port)));
		break;
	}
	case kind::sin6: {
		if (addrlen < sizeof(sockaddr_in6))
			return too_short(addr_format, addrlen, sizeof(sockaddr_in6));
		auto sin6 = load<sockaddr_in6>(addr, 0);
		char ip[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, &sin6.sin6_addr, ip, sizeof ip);
		w.putf("fi_sockaddr_in6://[%s]:%u", ip, unsigned(ntohs(sin6.sin6_port)));
		break;
	}
	case kind::sa: /* resolved above */
		return -FI_EINVAL;
	case kind::sib: {
		if (addrlen < sockaddr_ib_len)
			return too_short(addr_format, addrlen, sockaddr_ib_len);
		char gid[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, static_cast<const unsigned char *>(addr) + 8, gid, sizeof gid);
		std::uint64_t sid = be64(load<std::uint64_t>(addr, 24));
		w.putf("fi_sockaddr_ib://[%s]:0x%x:0x%x:0x%" PRIx64, gid,
		       unsigned(ntohs(load<std::uint16_t>(addr, 2))), unsigned((sid >> 16) & 0xfff),
		       be64(load<std::uint64_t>(addr, 40)));
		break;
	}
	case kind::words: {
		size_t n = addrlen / 8;
		if (n < si->min_words)
			return too_short(addr_format, addrlen, 8 * size_t(si->min_words));
		if (n > si->max_words)
			n = si->max_words;
		w.put(si->name);
		w.put("://");
		for (size_t i = 0; i < n; i++)
			w.putf(i ? ":%" PRIx64 : "%" PRIx64, load<std::uint64_t>(addr, 8 * i));
		break;
	}
	case kind::opx:
		if (addrlen < 8)
			return too_short(addr_format, addrlen, 8);
		w.putf("fi_addr_opx://%016" PRIx64, load<std::uint64_t>(addr, 0));
		break;
	case kind::cxi:
		if (addrlen < 4)
			return too_short(addr_format, addrlen, 4);
		w.putf("fi_addr_cxi://0x%08x", unsigned(load<std::uint32_t>(addr, 0)));
		break;
	case kind::efa: {
		if (addrlen < efa_addr_len)
			return too_short(addr_format, addrlen, efa_addr_len);
		char gid[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, addr, gid, sizeof gid);
		w.putf("fi_addr_efa://[%s]:%u:%u", gid, unsigned(load<std::uint16_t>(addr, 16)),
		       unsigned(load<std::uint32_t>(addr, 20)));
		break;
	}
	case kind::ib_ud: {
		if (addrlen < ib_ud_addr_len)
			return too_short(addr_format, addrlen, ib_ud_addr_len);
		char gid[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, addr, gid, sizeof gid);
		w.putf("fi_addr_ib_ud://%s:%x/%x/%x/%x", gid, unsigned(load<std::uint32_t>(addr, 16)),
		       unsigned(load<std::uint16_t>(addr, 20)), unsigned(load<std::uint16_t>(addr, 22)),
		       unsigned(static_cast<const unsigned char *>(addr)[26]));
		break;
	}
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
	char ip[INET6_ADDRSTRLEN];
	sockaddr_storage ss{};
	if (!addr || len < sizeof(sa_family_t))
		return "?";
	std::memcpy(&ss, addr, std::min(len, sizeof ss)); /* aligned copy */
	unsigned port;
	if (ss.ss_family == AF_INET && len >= sizeof(sockaddr_in)) {
		const auto &s = reinterpret_cast<const sockaddr_in &>(ss);
		if (!inet_ntop(AF_INET, &s.sin_addr, ip, sizeof ip))
			return "?";
		if (!with_port)
			return ip;
		port = ntohs(s.sin_port);
		return std::string(ip) + ":" + std::to_string(port);
	}
	if (ss.ss_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
		const auto &s = reinterpret_cast<const sockaddr_in6 &>(ss);
		if (!inet_ntop(AF_INET6, &s.sin6_addr, ip, sizeof ip))
			return "?";
		if (!with_port)
			return ip;
		port = ntohs(s.sin6_port);
		return "[" + std::string(ip) + "]:" + std::to_string(port);
	}
	return "?";
}

} // namespace wu::addr
