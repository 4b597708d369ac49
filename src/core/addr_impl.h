/* SPDX-License-Identifier: BSD-3-Clause */
/* What the address text files share (src/core/addr*.cpp): character
 * classes, logging of rejected input, the format table's types and the
 * number and host parsers.  Internal to them; everyone else uses addr.h. */
#ifndef WU_CORE_ADDR_IMPL_H
#define WU_CORE_ADDR_IMPL_H

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string_view>

#include "core/addr.h"

namespace wu::addr::detail {

/* ---- small character helpers (locale independent) ---- */

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_alnum(char c) noexcept { return is_digit(c) || is_alpha(c); }
constexpr int hex_val(char c) noexcept
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
constexpr char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

inline bool iequals(std::string_view a, std::string_view b) noexcept
{
	if (a.size() != b.size())
		return false;
	for (size_t i = 0; i < a.size(); i++)
		if (lower(a[i]) != lower(b[i]))
			return false;
	return true;
}

/* Characters allowed in query keys/values and generic paths: URI
 * unreserved plus a few sub-delims; never '&', '=', '?', '#', '/'. */
constexpr bool is_query_char(char c) noexcept
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':' ||
	       c == '@' || c == '!' || c == '$' || c == '\'' || c == '(' || c == ')' ||
	       c == '*' || c == '+' || c == ',' || c == ';' || c == '%';
}
constexpr bool is_path_char(char c) noexcept { return is_query_char(c) || c == '/' || c == '='; }

/* ---- logging of rejected input (addr.cpp) ---- */

__attribute__((format(printf, 4, 5))) int reject_at(const char *func, int line, std::string_view in,
						       const char *fmt, ...) noexcept;

/* Logs where the decision is made: the caller's function and line. */
#define reject(in, ...) reject_at(__func__, __LINE__, in, __VA_ARGS__)

int overflow(std::string_view in, const char *why) noexcept;

/* ---- the format table ---- */

enum class kind : std::uint8_t {
	sin,	 /* fi_sockaddr_in */
	sin6,	 /* fi_sockaddr_in6 */
	sa,	 /* fi_sockaddr (either) */
	sib,	 /* fi_sockaddr_ib */
	words,	 /* u64 hex words, ':' separated */
	opx,	 /* one u64, %016 */
	cxi,	 /* u32, 0x%08x */
	efa,	 /* [gid]:qpn:qkey */
	ib_ud,	 /* gid:qpn/lid/pkey/sl */
	hexraw,	 /* hex bytes */
};

struct scheme_info {
	const char *name;
	std::uint32_t format;
	kind k;
	std::uint8_t min_words; /* for kind::words */
	std::uint8_t max_words;
	const char *expect; /* for log lines: the form that would be accepted */
};

const scheme_info *find_format(std::uint32_t format) noexcept;

/* ---- number and host parsing (addr.cpp) ---- */

bool pton4(std::string_view s, in_addr &a) noexcept;
bool pton6(std::string_view s, in6_addr &a) noexcept;
bool parse_scope(std::string_view s, std::uint32_t &scope) noexcept;
bool valid_host_name(std::string_view s) noexcept;

inline std::uint64_t be64(std::uint64_t v) noexcept
{
	return (std::uint64_t(htonl(std::uint32_t(v))) << 32) | htonl(std::uint32_t(v >> 32));
}

} // namespace wu::addr::detail

#endif
