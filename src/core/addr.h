/* SPDX-License-Identifier: BSD-3-Clause */
/* Fabric addresses as text: strict FI_ADDR_STR parsing, node/service
 * resolution for fi_getinfo and fi_av_insertsvc, fi_av_straddr-style
 * printing, and the address arithmetic behind fi_av_insertsym.
 *
 * Every function is noexcept and returns 0 (or a length) on success and a
 * negative FI_E* code on failure; a rejected input is logged once, at the
 * place the decision is made, with the (escaped) input and the reason.
 * Outputs are written only on success.  Parsing and printing never
 * allocate; only the std::string conveniences and host-name resolution
 * (getaddrinfo) do.
 *
 * Accepted FI_ADDR_STR forms (scheme matched case-insensitively):
 *   fi_sockaddr_in://A.B.C.D[:PORT]            numeric IPv4 only
 *   fi_sockaddr_in6://[IPV6[%SCOPE]][:PORT]     brackets required
 *   fi_sockaddr://A.B.C.D[:PORT] | [IPV6][:PORT]
 *   fi_sockaddr_ib://[GID]:PKEY:PS:SCOPE[:PORT] hex fields
 *   fi_addr_psmx://W  fi_addr_psmx2://W:W  fi_addr_psmx3://W:W:W:W
 *   fi_addr_gni://W[:W...]  fi_addr_opx://W     W = u64 in hex
 *   fi_addr_cxi://0xHHHHHHHH                    u32
 *   fi_addr_efa://[GID]:QPN:QKEY                decimal
 *   fi_addr_ib_ud://GID:QPN/LID/PKEY/SL         hex
 *   fi_addr_bgq://, fi_addr_mlx://, fi_addr_ucx://, fi_addr_unspec://
 *                                               payload as hex bytes
 *   any-other-scheme://NODE[:SERVICE][/PATH]    kept as FI_ADDR_STR text;
 *                                               NODE is a host name, IPv4
 *                                               or [IPv6]
 * each optionally followed by ?key=value[&key=value...].
 */
#ifndef WU_CORE_ADDR_H
#define WU_CORE_ADDR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <sys/types.h>

#include <rdma/fabric.h>

namespace wu::addr {

/* Longest accepted address string, without its NUL. */
inline constexpr std::size_t max_str_len = 1024;
/* Largest binary payload a text form may decode to. */
inline constexpr std::size_t max_raw_len = 128;
/* Most ?key=value pairs kept. */
inline constexpr std::size_t max_params = 16;

/* AF_IB from rdma_cm; not every libc names it. */
inline constexpr int af_ib = 27;
/* Binary layouts of the non-IP formats we decode (libfabric's). */
inline constexpr std::size_t sockaddr_ib_len = 48;
inline constexpr std::size_t efa_addr_len = 24;
inline constexpr std::size_t ib_ud_addr_len = 32;

/* Position of a piece of parsed_addr::text. */
struct text_span {
	std::uint16_t off = 0;
	std::uint16_t len = 0;
};

/* Result of parse_str / parse_node_service.  Self-contained (no pointers
 * into the caller's input), so it can be copied and kept. */
struct parsed_addr {
	/* FI_SOCKADDR, FI_SOCKADDR_IN(6), FI_SOCKADDR_IB, FI_ADDR_* for the
	 * binary forms, FI_FORMAT_UNSPEC for fi_addr_unspec://, FI_ADDR_STR
	 * for a scheme we do not decode. */
	std::uint32_t format = FI_FORMAT_UNSPEC;
	/* Bytes valid in bin (or, for FI_ADDR_STR, strlen(text) + 1). */
	std::uint32_t len = 0;
	union {
		sockaddr_storage ss;
		unsigned char raw[max_raw_len];
	} bin{};
	/* Copy of the input (or of node and service, NUL separated). */
	char text[max_str_len + 1] = {};
	text_span scheme_s, node_s, service_s, path_s, query_s;
	struct param_span {
		text_span key, value;
	} params[max_params];
	std::uint8_t nparams = 0;
	bool has_port = false; /* a :PORT/:SERVICE was given */

	/* The address to hand to an AV or to put in fi_info: binary bytes,
	 * or the NUL-terminated text for FI_ADDR_STR. */
	const void *data() const noexcept
	{
		return format == FI_ADDR_STR ? static_cast<const void *>(text)
					     : static_cast<const void *>(bin.raw);
	}
	std::size_t size() const noexcept { return len; }

	std::string_view piece(text_span s) const noexcept { return {text + s.off, s.len}; }
	std::string_view scheme() const noexcept { return piece(scheme_s); }
	/* Host part without brackets (keeps an IPv6 %scope). */
	std::string_view node() const noexcept { return piece(node_s); }
	std::string_view service() const noexcept { return piece(service_s); }
	std::string_view path() const noexcept { return piece(path_s); } /* without '/' */
	std::string_view query() const noexcept { return piece(query_s); } /* without '?' */
	std::size_t param_count() const noexcept { return nparams; }
	std::string_view param_key(std::size_t i) const noexcept { return piece(params[i].key); }
	std::string_view param_value(std::size_t i) const noexcept { return piece(params[i].value); }
	/* First value for key; false when absent. */
	bool find_param(std::string_view key, std::string_view &value) const noexcept;
};

/* Parses one FI_ADDR_STR address (see the forms above).  Reads at most
 * in.size() bytes; an embedded NUL is an error.  -FI_EINVAL when
 * malformed. */
int parse_str(std::string_view in, parsed_addr &out) noexcept;

/* The scheme text for a format ("fi_sockaddr_in"), nullptr if none. */
const char *scheme_name(std::uint32_t addr_format) noexcept;

/* fi_getinfo / fi_av_insertsvc: node and service to an address.
 *   node     numeric IPv4 / IPv6 (optionally %scope), a host name (resolved
 *            with getaddrinfo unless FI_NUMERICHOST), an FI_ADDR_STR string
 *            ("scheme://..."), or NULL (wildcard with FI_SOURCE, else
 *            loopback).
 *   service  decimal port 0..65535, a service name (/etc/services), or
 *            NULL (port 0).
 *   addr_format  hint: FI_FORMAT_UNSPEC / FI_SOCKADDR / FI_ADDR_STR take
 *            any family; FI_SOCKADDR_IN / _IN6 restrict it.
 * -FI_EINVAL for malformed input, -FI_ENODATA when the node does not
 * resolve or does not fit the requested format, -FI_ENOSYS for a format
 * whose node strings we cannot interpret. */
int parse_node_service(const char *node, const char *service, std::uint64_t flags,
		       std::uint32_t addr_format, parsed_addr &out) noexcept;

/* Decimal port "0".."65535", digits only. -FI_EINVAL otherwise. */
int parse_port(std::string_view s, std::uint16_t &port) noexcept;

/* fi_av_straddr: prints addr (addrlen bytes, never read beyond) in the form
 * Debian's libfabric prints for that format, NUL-terminated and truncated
 * to buflen (buf may be NULL when buflen is 0).  Returns the buffer size
 * needed including the NUL (what fi_av_straddr stores in *len), or
 * -FI_EINVAL when addrlen is too short for the format or a sockaddr has an
 * unknown family.  Formats without a text form print as
 * fi_addr_unspec://<hex bytes>. */
ssize_t format(std::uint32_t addr_format, const void *addr, std::size_t addrlen, char *buf,
	       std::size_t buflen) noexcept;

/* fi_av_insertsym: the node after name_or_ip.  IPv4 and IPv6 literals
 * count up with carry (an IPv6 %scope is kept); host names count up their
 * numeric suffix keeping its width ("node099" -> "node100", "host99" ->
 * "host100").  -FI_EINVAL with no numeric suffix, -FI_EOVERFLOW past the
 * last address.  The char* form works in place on a NUL-terminated string
 * in a buffer of cap bytes (-FI_ETOOSMALL when it cannot widen). */
int next_node(char *buf, std::size_t cap) noexcept;
int next_node(std::string &name_or_ip) noexcept;

/* fi_av_insertsvc/insertsym: the next decimal port ("99" -> "100");
 * -FI_EINVAL when not a port, -FI_EOVERFLOW after 65535. */
int next_service(std::string &service) noexcept;

/* Printable copy of in for log lines: \xNN for bytes outside ASCII
 * graphic, \" and \\ escaped, "..." when cut.  Always NUL-terminates when
 * buflen > 0; returns the length written. */
std::size_t escape(std::string_view in, char *buf, std::size_t buflen) noexcept;

/* A socket address for log lines: "A.B.C.D:PORT" or "[IPV6]:PORT", or the
 * host alone without with_port; "?" when addr is not an IPv4 or IPv6
 * sockaddr of at least its size in len bytes.  Logs only: an FI_ADDR_STR
 * is what fi_av_straddr prints. */
std::string sockaddr_text(const void *addr, std::size_t len, bool with_port = true);

} // namespace wu::addr

#endif
