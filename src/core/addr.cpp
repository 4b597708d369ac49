/* SPDX-License-Identifier: BSD-3-Clause */
/* Address text: see addr.h for the accepted forms.  Written to be strict
 * (every malformed input is rejected with a reason) and bounded (nothing
 * reads past the caller's length; every output is size-checked). */
#include "core/addr.h"
#include "core/addr_impl.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <new>

#include "core/log.h"

namespace wu::addr {

namespace detail {

/* ---- logging of rejected input ---- */

__attribute__((format(printf, 4, 5))) int reject_at(const char *func, int line, std::string_view in,
						       const char *fmt, ...) noexcept
{
	if (log_enabled(&core_prov, FI_LOG_WARN, FI_LOG_CORE)) {
		char esc[200];
		char why[200];
		escape(in, esc, sizeof esc);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, sizeof why, fmt, ap);
		va_end(ap);
		log_emit(&core_prov, FI_LOG_WARN, FI_LOG_CORE, func, line,
			 "address \"%s\" rejected: %s\n", esc, why);
	}
	return -FI_EINVAL;
}



/* The end of an address range: logged like a rejection, but its own code. */
int overflow(std::string_view in, const char *why) noexcept
{
	reject(in, "%s", why);
	return -FI_EOVERFLOW;
}

constexpr scheme_info schemes[] = {
	{"fi_sockaddr_in", FI_SOCKADDR_IN, kind::sin, 0, 0, "fi_sockaddr_in://A.B.C.D[:PORT]"},
	{"fi_sockaddr_in6", FI_SOCKADDR_IN6, kind::sin6, 0, 0,
	 "fi_sockaddr_in6://[IPV6[%SCOPE]][:PORT]"},
	{"fi_sockaddr", FI_SOCKADDR, kind::sa, 0, 0, "fi_sockaddr://A.B.C.D[:PORT] or fi_sockaddr://[IPV6][:PORT]"},
	{"fi_sockaddr_ib", FI_SOCKADDR_IB, kind::sib, 0, 0,
	 "fi_sockaddr_ib://[GID]:PKEY:PS:SCOPE[:PORT] (hex fields)"},
	{"fi_addr_psmx", FI_ADDR_PSMX, kind::words, 1, 1, "fi_addr_psmx://HEX"},
	{"fi_addr_psmx2", FI_ADDR_PSMX2, kind::words, 2, 2, "fi_addr_psmx2://HEX:HEX"},
	{"fi_addr_psmx3", FI_ADDR_PSMX3, kind::words, 4, 4, "fi_addr_psmx3://HEX:HEX:HEX:HEX"},
	{"fi_addr_gni", FI_ADDR_GNI, kind::words, 1, 8, "fi_addr_gni://HEX[:HEX...] (up to 8 words)"},
	{"fi_addr_opx", FI_ADDR_OPX, kind::opx, 0, 0, "fi_addr_opx://HEX (up to 16 digits)"},
	{"fi_addr_cxi", FI_ADDR_CXI, kind::cxi, 0, 0, "fi_addr_cxi://0xHEX (up to 8 digits)"},
	{"fi_addr_efa", FI_ADDR_EFA, kind::efa, 0, 0, "fi_addr_efa://[GID]:QPN:QKEY (decimal)"},
	{"fi_addr_ib_ud", FI_ADDR_IB_UD, kind::ib_ud, 0, 0, "fi_addr_ib_ud://GID:QPN/LID/PKEY/SL (hex)"},
	{"fi_addr_bgq", FI_ADDR_BGQ, kind::hexraw, 0, 0, "fi_addr_bgq://HEXBYTES"},
	{"fi_addr_mlx", FI_ADDR_MLX, kind::hexraw, 0, 0, "fi_addr_mlx://HEXBYTES"},
	{"fi_addr_ucx", FI_ADDR_UCX, kind::hexraw, 0, 0, "fi_addr_ucx://HEXBYTES"},
	{"fi_addr_unspec", FI_FORMAT_UNSPEC, kind::hexraw, 0, 0, "fi_addr_unspec://HEXBYTES"},
};

const scheme_info *find_scheme(std::string_view name) noexcept
{
	for (const auto &s : schemes)
		if (iequals(name, s.name))
			return &s;
	return nullptr;
}

const scheme_info *find_format(std::uint32_t format) noexcept
{
	for (const auto &s : schemes)
		if (s.format == format)
			return &s;
	return nullptr;
}

/* ---- number parsing ---- */

/* Up to max_digits hex digits, optional 0x when allow_0x. */
bool parse_hex(std::string_view s, bool allow_0x, size_t max_digits, std::uint64_t &v) noexcept
{
	if (allow_0x && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s.remove_prefix(2);
	if (s.empty() || s.size() > max_digits)
		return false;
	std::uint64_t r = 0;
	for (char c : s) {
		int h = hex_val(c);
		if (h < 0)
			return false;
		r = (r << 4) | unsigned(h);
	}
	v = r;
	return true;
}

/* Decimal, digits only, value <= max. */
bool parse_dec(std::string_view s, std::uint64_t max, std::uint64_t &v) noexcept
{
	if (s.empty() || s.size() > 20)
		return false;
	std::uint64_t r = 0;
	for (char c : s) {
		if (!is_digit(c))
			return false;
		unsigned d = unsigned(c - '0');
		if (r > (max - d) / 10)
			return false;
		r = r * 10 + d;
	}
	v = r;
	return true;
}

/* inet_pton needs a C string: copy through a bounded buffer. */
bool pton4(std::string_view s, in_addr &a) noexcept
{
	char tmp[INET_ADDRSTRLEN];
	if (s.empty() || s.size() >= sizeof tmp)
		return false;
	memcpy(tmp, s.data(), s.size());
	tmp[s.size()] = '\0';
	return inet_pton(AF_INET, tmp, &a) == 1;
}

bool pton6(std::string_view s, in6_addr &a) noexcept
{
	char tmp[INET6_ADDRSTRLEN];
	if (s.empty() || s.size() >= sizeof tmp)
		return false;
	memcpy(tmp, s.data(), s.size());
	tmp[s.size()] = '\0';
	return inet_pton(AF_INET6, tmp, &a) == 1;
}

/* "%SCOPE": a decimal index or an interface name. */
bool parse_scope(std::string_view s, std::uint32_t &scope) noexcept
{
	std::uint64_t v;
	if (parse_dec(s, UINT32_MAX, v)) {
		scope = std::uint32_t(v);
		return true;
	}
	char name[IF_NAMESIZE];
	if (s.empty() || s.size() >= sizeof name)
		return false;
	for (char c : s)
		if (!is_alnum(c) && c != '.' && c != '-' && c != '_' && c != '@' && c != ':')
			return false;
	memcpy(name, s.data(), s.size());
	name[s.size()] = '\0';
	unsigned idx = if_nametoindex(name);
	if (!idx)
		return false;
	scope = idx;
	return true;
}

/* Syntax of a DNS-style host name: labels of [A-Za-z0-9_-], 1..63 each,
 * 253 in all, optional final dot.  A dotted all-digit name must be IPv4. */
bool valid_host_name(std::string_view s) noexcept
{
	if (s.empty() || s.size() > 253)
		return false;
	size_t label = 0;
	bool all_digits_dots = true;
	for (size_t i = 0; i < s.size(); i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-' && c != '_')
			return false;
		if (!is_digit(c))
			all_digits_dots = false;
		if (++label > 63)
			return false;
	}
	if (all_digits_dots && s.find('.') != std::string_view::npos) {
		in_addr a;
		return pton4(s, a);
	}
	return true;
}

template <class T> void store(void *base, size_t off, T v) noexcept
{
	memcpy(static_cast<unsigned char *>(base) + off, &v, sizeof v);
}
/* ---- the parser ---- */

struct parser {
	std::string_view in; /* whole input, for log lines */
	parsed_addr &p;
	const scheme_info *si = nullptr;

	text_span span_of(std::string_view piece) const noexcept
	{
		return {std::uint16_t(piece.data() - p.text), std::uint16_t(piece.size())};
	}
	int bad(const char *why, int line = __builtin_LINE()) const noexcept
	{
		if (si)
			return reject_at("parse_str", line, in, "%s; expected %s", why, si->expect);
		return reject_at("parse_str", line, in, "%s", why);
	}

	/* "?k=v&k2=v2" (without the '?'). */
	int parse_query(std::string_view q) noexcept
	{
		p.query_s = span_of(q);
		if (q.empty())
			return bad("empty query after '?'");
		while (true) {
			size_t amp = q.find('&');
			std::string_view item = q.substr(0, amp);
			size_t eq = item.find('=');
			if (eq == std::string_view::npos)
				return bad("query parameter without '=' (use key=value)");
			std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
			if (key.empty())
				return bad("query parameter with an empty key");
			for (char c : key)
				if (!is_query_char(c))
					return bad("invalid character in a query key");
			for (char c : value)
				if (!is_query_char(c))
					return bad("invalid character in a query value");
			if (p.nparams >= max_params)
				return bad("too many query parameters (at most 16)");
			p.params[p.nparams++] = {span_of(key), span_of(value)};
			if (amp == std::string_view::npos)
				break;
			q.remove_prefix(amp + 1);
			if (q.empty())
				return bad("query ends in '&'");
		}
		return 0;
	}

	/* Splits "HOST[:PORT]" or "[V6][:PORT]"; host keeps no brackets. */
	int split_host_port(std::string_view rest, std::string_view &host, bool &bracketed,
			    std::string_view &port, bool &has_port) noexcept
	{
		has_port = false;
		bracketed = false;
		if (rest.empty())
			return bad("empty host");
		if (rest[0] == '[') {
			size_t close = rest.find(']');
			if (close == std::string_view::npos)
				return bad("'[' without ']'");
			host = rest.substr(1, close - 1);
			bracketed = true;
			rest.remove_prefix(close + 1);
			if (host.find('[') != std::string_view::npos)
				return bad("nested '['");
		} else {
			size_t colon = rest.find(':');
			host = rest.substr(0, colon);
			rest.remove_prefix(colon == std::string_view::npos ? rest.size() : colon);
			if (host.find(']') != std::string_view::npos)
				return bad("']' without '['");
		}
		if (host.empty())
			return bad("empty host");
		if (!rest.empty()) {
			if (rest[0] != ':')
				return bad("trailing characters after the host");
			port = rest.substr(1);
			has_port = true;
			if (port.empty())
				return bad("empty port after ':'");
		}
		return 0;
	}

	int port_value(std::string_view port, std::uint16_t &v) noexcept
	{
		std::uint64_t x;
		if (!parse_dec(port, 65535, x)) {
			char why[96];
			bool digits = !port.empty() && port.size() <= 20;
			for (char c : port)
				digits = digits && is_digit(c);
			snprintf(why, sizeof why, "%s",
				 digits ? "port is above 65535" : "port is not a decimal number");
			return bad(why);
		}
		v = std::uint16_t(x);
		return 0;
	}

	int ip(std::string_view rest, int family) noexcept
	{
		/* "::1" or "fe80::1:5" unbracketed: say what is wrong, not "empty host". */
		if (rest[0] != '[' && (family == AF_INET6 ||
				       (family == 0 && std::count(rest.begin(), rest.end(), ':') > 1)))
			return bad("an IPv6 address must be in brackets");
		if (rest.find('/') != std::string_view::npos)
			return bad("a path (/...) is not part of this format");
		std::string_view host, port;
		bool bracketed, has_port;
		if (int r = split_host_port(rest, host, bracketed, port, has_port))
			return r;
		std::uint16_t portv = 0;
		if (has_port)
			if (int r = port_value(port, portv))
				return r;
		if (family == 0)
			family = bracketed ? AF_INET6 : AF_INET;
		p.node_s = span_of(host);
		p.service_s = span_of(port);
		p.has_port = has_port;
		if (family == AF_INET) {
			if (bracketed)
				return bad("an IPv4 address takes no brackets");
			in_addr a;
			if (!pton4(host, a))
				return bad("not a numeric IPv4 address (four decimal octets 0..255)");
			sockaddr_in sin{};
			sin.sin_family = AF_INET;
			sin.sin_port = htons(portv);
			sin.sin_addr = a;
			memcpy(&p.bin.ss, &sin, sizeof sin);
			p.len = sizeof sin;
			return 0;
		}
		if (!bracketed)
			return bad("an IPv6 address must be in brackets");
		std::string_view a6 = host, scope;
		size_t pct = host.find('%');
		if (pct != std::string_view::npos) {
			a6 = host.substr(0, pct);
			scope = host.substr(pct + 1);
		}
		sockaddr_in6 sin6{};
		if (!pton6(a6, sin6.sin6_addr))
			return bad("not a numeric IPv6 address");
		if (pct != std::string_view::npos && !parse_scope(scope, sin6.sin6_scope_id))
			return bad("unknown IPv6 scope (use an interface name or index)");
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(portv);
		memcpy(&p.bin.ss, &sin6, sizeof sin6);
		p.len = sizeof sin6;
		return 0;
	}

	/* Fields separated by sep, exactly n of them (or min..n). */
	static size_t split(std::string_view s, char sep, std::string_view *out, size_t max) noexcept
	{
		size_t n = 0;
		while (true) {
			size_t k = s.find(sep);
			if (n == max)
				return max + 1;
			out[n++] = s.substr(0, k);
			if (k == std::string_view::npos)
				return n;
			s.remove_prefix(k + 1);
		}
	}

	int words(std::string_view rest) noexcept
	{
		std::string_view f[8];
		size_t n = split(rest, ':', f, si->max_words);
		if (n < si->min_words || n > si->max_words)
			return bad("wrong number of ':'-separated words");
		for (size_t i = 0; i < n; i++) {
			std::uint64_t v;
			if (!parse_hex(f[i], true, 16, v))
				return bad("a word is not 1..16 hex digits");
			store(p.bin.raw, 8 * i, v);
		}
		p.len = std::uint32_t(8 * n);
		return 0;
	}

	int opx(std::string_view rest) noexcept
	{
		std::uint64_t v;
		if (!parse_hex(rest, true, 16, v))
			return bad("not 1..16 hex digits");
		store(p.bin.raw, 0, v);
		p.len = 8;
		return 0;
	}

	int cxi(std::string_view rest) noexcept
	{
		std::uint64_t v;
		if (!parse_hex(rest, true, 8, v))
			return bad("not 1..8 hex digits");
		store(p.bin.raw, 0, std::uint32_t(v));
		p.len = 4;
		return 0;
	}

	int hexraw(std::string_view rest) noexcept
	{
		if (rest.empty() || rest.size() % 2 || rest.size() / 2 > max_raw_len)
			return bad("payload must be an even number of hex digits, at most 256");
		for (size_t i = 0; i < rest.size(); i += 2) {
			int hi = hex_val(rest[i]), lo = hex_val(rest[i + 1]);
			if (hi < 0 || lo < 0)
				return bad("payload has a non-hex character");
			p.bin.raw[i / 2] = static_cast<unsigned char>(hi << 4 | lo);
		}
		p.len = std::uint32_t(rest.size() / 2);
		return 0;
	}

	/* "[gid]" at the front of rest; advances rest. */
	int bracket_gid(std::string_view &rest, in6_addr &gid) noexcept
	{
		if (rest.empty() || rest[0] != '[')
			return bad("the GID must be in brackets");
		size_t close = rest.find(']');
		if (close == std::string_view::npos)
			return bad("'[' without ']'");
		if (!pton6(rest.substr(1, close - 1), gid))
			return bad("the GID is not an IPv6-style address");
		rest.remove_prefix(close + 1);
		return 0;
	}

	int efa(std::string_view rest) noexcept
	{
		in6_addr gid;
		if (int r = bracket_gid(rest, gid))
			return r;
		std::string_view f[3];
		if (rest.empty() || rest[0] != ':' || split(rest.substr(1), ':', f, 2) != 2)
			return bad("need :QPN:QKEY after the GID");
		std::uint64_t qpn, qkey;
		if (!parse_dec(f[0], 65535, qpn))
			return bad("QPN is not a decimal 0..65535");
		if (!parse_dec(f[1], UINT32_MAX, qkey))
			return bad("QKEY is not a decimal 0..4294967295");
		memcpy(p.bin.raw, &gid, 16);
		store(p.bin.raw, 16, std::uint16_t(qpn));
		store(p.bin.raw, 20, std::uint32_t(qkey));
		p.len = efa_addr_len;
		return 0;
	}

	int ib_ud(std::string_view rest) noexcept
	{
		std::string_view f[4];
		size_t slash = rest.find('/');
		if (slash == std::string_view::npos)
			return bad("need GID:QPN/LID/PKEY/SL");
		std::string_view gq = rest.substr(0, slash);
		size_t colon = gq.rfind(':');
		if (colon == std::string_view::npos || colon == 0)
			return bad("need GID:QPN before the first '/'");
		in6_addr gid;
		/* "fe80::" + ":5" leaves "fe80:::5": the GID keeps its "::". */
		std::string_view g = gq.substr(0, colon);
		if (!pton6(g, gid)) {
			return bad("the GID is not an IPv6-style address");
		}
		if (split(rest.substr(slash + 1), '/', f, 3) != 3)
			return bad("need exactly LID/PKEY/SL after QPN");
		std::uint64_t qpn, lid, pkey, sl;
		if (!parse_hex(gq.substr(colon + 1), true, 8, qpn) || !parse_hex(f[0], true, 4, lid) ||
		    !parse_hex(f[1], true, 4, pkey) || !parse_hex(f[2], true, 2, sl))
			return bad("QPN (8), LID (4), PKEY (4), SL (2) must be hex of at most that many digits");
		memcpy(p.bin.raw, &gid, 16);
		store(p.bin.raw, 16, std::uint32_t(qpn));
		store(p.bin.raw, 20, std::uint16_t(lid));
		store(p.bin.raw, 22, std::uint16_t(pkey));
		p.bin.raw[26] = std::uint8_t(sl);
		p.len = ib_ud_addr_len;
		return 0;
	}

	int sib(std::string_view rest) noexcept
	{
		in6_addr gid;
		if (int r = bracket_gid(rest, gid))
			return r;
		std::string_view f[4];
		if (rest.empty() || rest[0] != ':')
			return bad("need :PKEY:PS:SCOPE after the GID");
		size_t n = split(rest.substr(1), ':', f, 4);
		if (n < 3 || n > 4)
			return bad("need PKEY:PS:SCOPE[:PORT] after the GID");
		std::uint64_t pkey, ps, scope, port = 0;
		if (!parse_hex(f[0], true, 4, pkey) || !parse_hex(f[1], true, 4, ps) ||
		    !parse_hex(f[2], true, 16, scope) || (n == 4 && !parse_hex(f[3], true, 4, port)))
			return bad("PKEY, PS and PORT are up to 4 hex digits, SCOPE up to 16");
		store(p.bin.raw, 0, std::uint16_t(af_ib));
		store(p.bin.raw, 2, htons(std::uint16_t(pkey)));
		memcpy(p.bin.raw + 8, &gid, 16);
		std::uint64_t sid = (ps << 16) | port;
		/* The port space is always meaningful; the port only if given. */
		std::uint64_t mask = n == 4 ? ~std::uint64_t{0} : ~std::uint64_t{0xffff};
		store(p.bin.raw, 24, be64(sid));
		store(p.bin.raw, 32, be64(mask));
		store(p.bin.raw, 40, be64(scope));
		p.len = sockaddr_ib_len;
		return 0;
	}

	/* Unknown scheme: NODE[:SERVICE][/PATH], kept as text. */
	int generic(std::string_view rest) noexcept
	{
		size_t slash = rest.find('/');
		std::string_view hp = rest.substr(0, slash);
		if (slash != std::string_view::npos) {
			std::string_view path = rest.substr(slash + 1);
			p.path_s = span_of(path);
			for (char c : path)
				if (!is_path_char(c))
					return bad("invalid character in the path");
		}
		std::string_view host, port;
		bool bracketed, has_port;
		if (int r = split_host_port(hp, host, bracketed, port, has_port))
			return r;
		if (bracketed) {
			in6_addr a;
			std::string_view a6 = host.substr(0, host.find('%'));
			if (!pton6(a6, a))
				return bad("not a numeric IPv6 address in brackets");
			if (a6.size() != host.size()) {
				std::uint32_t scope;
				if (!parse_scope(host.substr(a6.size() + 1), scope))
					return bad("unknown IPv6 scope (use an interface name or index)");
			}
		} else if (!valid_host_name(host)) {
			return bad("not a valid host name or IPv4 address");
		}
		if (has_port) {
			if (port.size() > 32)
				return bad("service longer than 32 characters");
			for (char c : port)
				if (!is_alnum(c) && c != '-' && c != '_')
					return bad("service is not a port number or a name");
		}
		p.node_s = span_of(host);
		p.service_s = span_of(port);
		p.has_port = has_port;
		p.len = std::uint32_t(in.size() + 1);
		return 0;
	}

	int run() noexcept
	{
		if (in.size() > max_str_len)
			return reject(in.substr(0, 64), "longer than %zu characters", max_str_len);
		if (in.find('\0') != std::string_view::npos)
			return reject(in, "embedded NUL byte");
		if (!in.empty())
			memcpy(p.text, in.data(), in.size());
		p.text[in.size()] = '\0';
		std::string_view s(p.text, in.size());

		size_t sep = s.find("://");
		if (sep == std::string_view::npos)
			return bad("no \"://\" (expected SCHEME://ADDRESS, e.g. fi_sockaddr_in://10.0.0.1:7471)");
		std::string_view scheme = s.substr(0, sep);
		if (scheme.empty() || !is_alpha(scheme[0]))
			return bad("the scheme must start with a letter");
		for (char c : scheme)
			if (!is_alnum(c) && c != '_' && c != '+' && c != '-' && c != '.')
				return bad("invalid character in the scheme");
		p.scheme_s = span_of(scheme);
		si = find_scheme(scheme);
		p.format = si ? si->format : std::uint32_t(FI_ADDR_STR);

		std::string_view rest = s.substr(sep + 3);
		size_t q = rest.find('?');
		if (q != std::string_view::npos) {
			if (int r = parse_query(rest.substr(q + 1)))
				return r;
			rest = rest.substr(0, q);
		}
		if (rest.empty())
			return bad("empty address after \"://\"");
		if (rest.find('#') != std::string_view::npos)
			return bad("'#' is not allowed");
		if (!si)
			return generic(rest);
		switch (si->k) {
		case kind::sin:
			return ip(rest, AF_INET);
		case kind::sin6:
			return ip(rest, AF_INET6);
		case kind::sa:
			return ip(rest, 0);
		case kind::sib:
			return sib(rest);
		case kind::words:
			return words(rest);
		case kind::opx:
			return opx(rest);
		case kind::cxi:
			return cxi(rest);
		case kind::efa:
			return efa(rest);
		case kind::ib_ud:
			return ib_ud(rest);
		case kind::hexraw:
			return hexraw(rest);
		}
		return bad("internal: unhandled scheme");
	}
};

} // namespace detail

using namespace detail;

/* ---- public entry points ---- */

bool parsed_addr::find_param(std::string_view key, std::string_view &value) const noexcept
{
	for (size_t i = 0; i < nparams; i++)
		if (param_key(i) == key) {
			value = param_value(i);
			return true;
		}
	return false;
}

std::size_t escape(std::string_view in, char *buf, std::size_t buflen) noexcept
{
	if (!buflen)
		return 0;
	static const char digits[] = "0123456789abcdef";
	size_t n = 0;
	for (size_t i = 0; i < in.size(); i++) {
		unsigned char c = static_cast<unsigned char>(in[i]);
		char tmp[4];
		size_t k = 0;
		if (c == '"' || c == '\\') {
			tmp[k++] = '\\';
			tmp[k++] = char(c);
		} else if (c < 0x20 || c > 0x7e) {
			tmp[k++] = '\\';
			tmp[k++] = 'x';
			tmp[k++] = digits[c >> 4];
			tmp[k++] = digits[c & 15];
		} else {
			tmp[k++] = char(c);
		}
		/* Keep room for "..." and the NUL. */
		if (n + k + 4 > buflen) {
			for (const char *d = "..."; *d && n + 1 < buflen; d++)
				buf[n++] = *d;
			break;
		}
		memcpy(buf + n, tmp, k);
		n += k;
	}
	buf[n] = '\0';
	return n;
}

int parse_str(std::string_view in, parsed_addr &out) noexcept
{
	parsed_addr p;
	parser ps{in, p};
	if (int r = ps.run())
		return r;
	out = p;
	return 0;
}

const char *scheme_name(std::uint32_t addr_format) noexcept
{
	const scheme_info *si = find_format(addr_format);
	return si ? si->name : nullptr;
}

int parse_port(std::string_view s, std::uint16_t &port) noexcept
{
	std::uint64_t v;
	if (!parse_dec(s, 65535, v))
		return -FI_EINVAL;
	port = std::uint16_t(v);
	return 0;
}

} // namespace wu::addr
