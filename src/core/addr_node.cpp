/* SPDX-License-Identifier: BSD-3-Clause */
/* Address text from a node and service (parse_node_service, getaddrinfo
 * for names) and counting node names and services up (insertsym). */
#include "core/addr.h"
#include "core/addr_impl.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>

#include "core/log.h"

namespace wu::addr {

namespace detail {

/* Fills p from a sockaddr; service text already placed by the caller. */
void set_sockaddr(parsed_addr &p, const sockaddr *sa, socklen_t len) noexcept
{
	memcpy(&p.bin.ss, sa, len);
	p.len = std::uint32_t(len);
	p.format = sa->sa_family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
}

void set_port(parsed_addr &p, std::uint16_t port) noexcept
{
	if (p.bin.ss.ss_family == AF_INET)
		reinterpret_cast<sockaddr_in *>(&p.bin.ss)->sin_port = htons(port);
	else if (p.bin.ss.ss_family == AF_INET6)
		reinterpret_cast<sockaddr_in6 *>(&p.bin.ss)->sin6_port = htons(port);
}

/* Service: decimal port or a name from the services database. */
int service_port(const char *service, int family, std::uint16_t &port) noexcept
{
	std::string_view s(service, strnlen(service, 64));
	if (s.size() >= 64)
		return reject(s, "service longer than 63 characters");
	if (!s.empty() && is_digit(s[0])) {
		if (parse_port(s, port))
			return reject(s, "service is not a port 0..65535");
		return 0;
	}
	if (s.empty())
		return reject(s, "empty service");
	for (char c : s)
		if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
			return reject(s, "service is neither a port number nor a service name");
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = family;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
	int rc = getaddrinfo(nullptr, service, &hints, &res);
	if (rc || !res)
		return reject(s, "unknown service name (use a port number or a name from /etc/services)");
	if (res->ai_family == AF_INET)
		port = ntohs(reinterpret_cast<sockaddr_in *>(res->ai_addr)->sin_port);
	else
		port = ntohs(reinterpret_cast<sockaddr_in6 *>(res->ai_addr)->sin6_port);
	freeaddrinfo(res);
	return 0;
}

int family_for(std::uint32_t format) noexcept
{
	if (format == FI_SOCKADDR_IN)
		return AF_INET;
	if (format == FI_SOCKADDR_IN6)
		return AF_INET6;
	return AF_UNSPEC;
}

/* Copies node and service into p.text for later reference. */
int keep_text(parsed_addr &p, std::string_view node, std::string_view service) noexcept
{
	if (node.size() + service.size() + 2 > sizeof p.text)
		return reject(node, "node and service longer than %zu characters", max_str_len);
	if (!node.empty())
		memcpy(p.text, node.data(), node.size());
	p.text[node.size()] = '\0';
	if (!service.empty())
		memcpy(p.text + node.size() + 1, service.data(), service.size());
	p.text[node.size() + 1 + service.size()] = '\0';
	p.node_s = {0, std::uint16_t(node.size())};
	p.service_s = {std::uint16_t(node.size() + 1), std::uint16_t(service.size())};
	return 0;
}

int next_ipv4(char *buf, size_t cap) noexcept
{
	in_addr a;
	if (inet_pton(AF_INET, buf, &a) != 1)
		return 1;
	std::uint32_t v = ntohl(a.s_addr);
	if (v == UINT32_MAX)
		return overflow(buf, "no IPv4 address after 255.255.255.255");
	a.s_addr = htonl(v + 1);
	char out[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a, out, sizeof out);
	if (strlen(out) + 1 > cap)
		return -FI_ETOOSMALL;
	strcpy(buf, out);
	return 0;
}

int next_ipv6(char *buf, size_t cap) noexcept
{
	size_t len = strnlen(buf, cap);
	const char *pct = static_cast<const char *>(memchr(buf, '%', len));
	size_t alen = pct ? size_t(pct - buf) : len;
	char tmp[INET6_ADDRSTRLEN];
	if (alen >= sizeof tmp)
		return 1;
	memcpy(tmp, buf, alen);
	tmp[alen] = '\0';
	in6_addr a;
	if (inet_pton(AF_INET6, tmp, &a) != 1)
		return 1;
	int i = 15;
	while (i >= 0 && a.s6_addr[i] == 0xff)
		i--;
	if (i < 0)
		return overflow(buf, "no IPv6 address after ffff:...:ffff");
	a.s6_addr[i]++;
	for (int j = i + 1; j < 16; j++)
		a.s6_addr[j] = 0;
	char out[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, &a, out, sizeof out);
	size_t olen = strlen(out), slen = len - alen; /* scope with its '%' */
	if (olen + slen + 1 > cap)
		return -FI_ETOOSMALL;
	memmove(buf + olen, buf + alen, slen + 1);
	memcpy(buf, out, olen);
	return 0;
}

} // namespace detail

using namespace detail;

int parse_node_service(const char *node, const char *service, std::uint64_t flags,
		       std::uint32_t addr_format, parsed_addr &out) noexcept
{
	parsed_addr p;
	if (!node && !service)
		return reject("", "neither node nor service given");
	switch (addr_format) {
	case FI_FORMAT_UNSPEC:
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
	case FI_ADDR_STR:
		break;
	default:
		if (!node || !strstr(node, "://")) {
			WU_WARN(&core_prov, FI_LOG_CORE,
				"address format %u takes no node/service pair; give node as an FI_ADDR_STR string (scheme://...)\n",
				addr_format);
			return -FI_ENOSYS;
		}
	}
	const int family = family_for(addr_format);
	std::string_view nodev = node ? std::string_view(node, strnlen(node, max_str_len + 1))
				      : std::string_view();
	if (nodev.size() > max_str_len)
		return reject(nodev.substr(0, 64), "node longer than %zu characters", max_str_len);

	std::uint16_t port = 0;
	if (service)
		if (int r = service_port(service, family, port))
			return r;
	std::string_view servv = service ? std::string_view(service, strlen(service)) : std::string_view();

	/* An FI_ADDR_STR string given as node. */
	if (nodev.find("://") != std::string_view::npos) {
		if (int r = parse_str(nodev, p))
			return r;
		bool ip = p.format == FI_SOCKADDR || p.format == FI_SOCKADDR_IN ||
			  p.format == FI_SOCKADDR_IN6;
		bool fits = addr_format == FI_FORMAT_UNSPEC || addr_format == FI_ADDR_STR ||
			    addr_format == p.format ||
			    (ip && (addr_format == FI_SOCKADDR ||
				    family_for(addr_format) == p.bin.ss.ss_family));
		if (!fits) {
			char esc[128];
			escape(nodev, esc, sizeof esc);
			WU_WARN(&core_prov, FI_LOG_CORE,
				"node \"%s\" is a %s address, which does not match the requested address format %u\n",
				esc, scheme_name(p.format) ? scheme_name(p.format) : "FI_ADDR_STR", addr_format);
			return -FI_ENODATA;
		}
		if (service) {
			if (!ip)
				return reject(nodev, "a service was given with a non-IP address string");
			if (p.has_port)
				return reject(nodev, "port given both in the address string and as service \"%.32s\"",
					      service);
			set_port(p, port);
			p.has_port = true;
		}
		out = p;
		return 0;
	}

	if (int r = keep_text(p, nodev, servv))
		return r;
	p.has_port = service != nullptr;

	if (!node) {
		/* getaddrinfo's rule: passive gets the wildcard, active loopback. */
		if (family == AF_INET6) {
			sockaddr_in6 sin6{};
			sin6.sin6_family = AF_INET6;
			sin6.sin6_port = htons(port);
			sin6.sin6_addr = (flags & FI_SOURCE) ? in6addr_any : in6addr_loopback;
			set_sockaddr(p, reinterpret_cast<sockaddr *>(&sin6), sizeof sin6);
		} else {
			sockaddr_in sin{};
			sin.sin_family = AF_INET;
			sin.sin_port = htons(port);
			sin.sin_addr.s_addr = htonl((flags & FI_SOURCE) ? INADDR_ANY : INADDR_LOOPBACK);
			set_sockaddr(p, reinterpret_cast<sockaddr *>(&sin), sizeof sin);
		}
		out = p;
		return 0;
	}

	if (nodev.empty())
		return reject(nodev, "empty node");

	in_addr a4;
	if (pton4(nodev, a4)) {
		if (family == AF_INET6) {
			WU_WARN(&core_prov, FI_LOG_CORE,
				"node \"%.64s\" is IPv4 but FI_SOCKADDR_IN6 was requested\n", node);
			return -FI_ENODATA;
		}
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sin.sin_addr = a4;
		set_sockaddr(p, reinterpret_cast<sockaddr *>(&sin), sizeof sin);
		out = p;
		return 0;
	}

	size_t pct = nodev.find('%');
	sockaddr_in6 sin6{};
	if (pton6(nodev.substr(0, pct), sin6.sin6_addr)) {
		if (family == AF_INET) {
			WU_WARN(&core_prov, FI_LOG_CORE,
				"node \"%.64s\" is IPv6 but FI_SOCKADDR_IN was requested\n", node);
			return -FI_ENODATA;
		}
		if (pct != std::string_view::npos &&
		    !parse_scope(nodev.substr(pct + 1), sin6.sin6_scope_id))
			return reject(nodev, "unknown IPv6 scope (use an interface name or index)");
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(port);
		set_sockaddr(p, reinterpret_cast<sockaddr *>(&sin6), sizeof sin6);
		out = p;
		return 0;
	}

	if (flags & FI_NUMERICHOST)
		return reject(nodev, "FI_NUMERICHOST is set but the node is not a numeric IPv4/IPv6 address");
	if (!valid_host_name(nodev))
		return reject(nodev, "not a valid host name or numeric address");

	addrinfo hints{}, *res = nullptr;
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM; /* one entry per address, not per socket type */
	int rc = getaddrinfo(node, nullptr, &hints, &res);
	if (rc || !res) {
		char esc[128];
		escape(nodev, esc, sizeof esc);
		WU_WARN(&core_prov, FI_LOG_CORE, "node \"%s\" does not resolve: %s\n", esc,
			gai_strerror(rc ? rc : EAI_NONAME));
		return -FI_ENODATA;
	}
	int ret = -FI_ENODATA;
	for (addrinfo *ai = res; ai; ai = ai->ai_next) {
		if ((ai->ai_family == AF_INET && ai->ai_addrlen == sizeof(sockaddr_in)) ||
		    (ai->ai_family == AF_INET6 && ai->ai_addrlen == sizeof(sockaddr_in6))) {
			set_sockaddr(p, ai->ai_addr, ai->ai_addrlen);
			set_port(p, port);
			ret = 0;
			break;
		}
	}
	freeaddrinfo(res);
	if (ret) {
		WU_WARN(&core_prov, FI_LOG_CORE, "node \"%.64s\" has no IPv4/IPv6 address\n", node);
		return ret;
	}
	out = p;
	return 0;
}
int next_node(char *buf, std::size_t cap) noexcept
{
	size_t len = strnlen(buf, cap);
	if (len == cap)
		return reject(std::string_view(buf, cap > 64 ? 64 : cap), "node is not NUL-terminated");
	if (!len)
		return reject("", "empty node");
	if (int r = next_ipv4(buf, cap); r <= 0)
		return r;
	if (memchr(buf, ':', len))
		if (int r = next_ipv6(buf, cap); r <= 0)
			return r;
	/* Host name: count up the trailing digits, keeping their width. */
	size_t end = len, start = len;
	while (start > 0 && is_digit(buf[start - 1]))
		start--;
	if (start == end)
		return reject(std::string_view(buf, len),
			      "a node count above 1 needs a numeric suffix to count up (like node01)");
	size_t i = end;
	while (i > start && buf[i - 1] == '9') {
		buf[i - 1] = '0';
		i--;
	}
	if (i > start) {
		buf[i - 1]++;
		return 0;
	}
	/* All nines: widen ("host99" -> "host100"). */
	if (len + 2 > cap) {
		for (size_t j = start; j < end; j++) /* restore */
			buf[j] = '9';
		return -FI_ETOOSMALL;
	}
	memmove(buf + start + 1, buf + start, len - start + 1);
	buf[start] = '1';
	return 0;
}

int next_node(std::string &name_or_ip) noexcept
{
	try {
		/* Room to widen by one digit or to grow an IP's text. */
		std::string tmp = name_or_ip;
		if (tmp.find('\0') != std::string::npos)
			return reject(tmp, "embedded NUL byte");
		tmp.resize(tmp.size() + INET6_ADDRSTRLEN + 2, '\0');
		if (int r = next_node(tmp.data(), tmp.size()))
			return r;
		tmp.resize(strlen(tmp.c_str()));
		name_or_ip.swap(tmp);
		return 0;
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	}
}

int next_service(std::string &service) noexcept
{
	std::uint16_t port;
	if (parse_port(service, port))
		return reject(service, "service is not a decimal port 0..65535");
	if (port == 65535)
		return overflow(service, "no port after 65535");
	try {
		/* Keep the width of a zero-padded service, like host names. */
		std::string next = std::to_string(port + 1);
		if (next.size() < service.size())
			next.insert(0, service.size() - next.size(), '0');
		service.swap(next);
		return 0;
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	}
}
} // namespace wu::addr
