/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for src/core/addr*.cpp: arbitrary bytes into the
 * FI_ADDR_STR parser, the node/service parser, the printer and the
 * insertsym arithmetic.  Besides the sanitizers it checks invariants:
 * whatever parses prints, what prints parses back to the same text, a
 * truncated print is a prefix of the full one, and no call writes past
 * the size it was given.
 *
 * Byte 0 picks the entry point, byte 1 a flag/format/size, the rest is
 * the payload.  FI_NUMERICHOST is always set: no DNS from a fuzzer. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/addr.h"

namespace {

[[noreturn]] void fail(const char *what, const std::string &a, const std::string &b = {})
{
	fprintf(stderr, "fuzz_addr invariant broken: %s\n  [%s]\n  [%s]\n", what, a.c_str(), b.c_str());
	abort();
}

/* Prints with a canary after the buffer; checks the return value. */
std::string print_checked(std::uint32_t fmt, const void *addr, size_t len, size_t cap)
{
	char buf[600];
	if (cap > 512)
		cap = 512;
	memset(buf, 0x5a, sizeof buf);
	ssize_t n = wu::addr::format(fmt, addr, len, buf, cap);
	for (size_t i = cap; i < sizeof buf; i++)
		if (static_cast<unsigned char>(buf[i]) != 0x5a)
			fail("format wrote past buflen", std::to_string(cap));
	if (n < 0)
		return {};
	if (n == 0)
		fail("format returned 0 (must count the NUL)", "");
	if (cap) {
		size_t got = strnlen(buf, cap);
		if (got == cap)
			fail("format left the buffer unterminated", std::to_string(cap));
		if (got != std::min(size_t(n) - 1, cap - 1))
			fail("format length and text disagree", buf, std::to_string(n));
	}
	return std::string(buf, cap ? strnlen(buf, cap) : 0);
}

std::string print_full(std::uint32_t fmt, const void *addr, size_t len)
{
	char buf[1200];
	ssize_t n = wu::addr::format(fmt, addr, len, buf, sizeof buf);
	if (n < 0)
		return {};
	if (size_t(n) > sizeof buf)
		fail("printed form longer than 1200", buf);
	return buf;
}

void parse_and_reprint(std::string_view in, size_t cap)
{
	wu::addr::parsed_addr p;
	if (wu::addr::parse_str(in, p))
		return;
	if (p.size() == 0 || (p.format != FI_ADDR_STR && p.size() > wu::addr::max_raw_len))
		fail("parsed size out of range", std::string(in));
	std::string s1 = print_full(p.format, p.data(), p.size());
	if (s1.empty())
		fail("parsed address does not print", std::string(in));
	std::string part = print_checked(p.format, p.data(), p.size(), cap);
	if (s1.compare(0, part.size(), part) != 0)
		fail("truncated print is not a prefix", s1, part);
	wu::addr::parsed_addr q;
	if (wu::addr::parse_str(s1, q))
		fail("printed form does not parse", std::string(in), s1);
	std::string s2 = print_full(q.format, q.data(), q.size());
	if (s1 != s2)
		fail("print(parse(print(x))) != print(x)", s1, s2);
	std::string_view v;
	for (size_t i = 0; i < p.param_count(); i++)
		if (!p.find_param(p.param_key(i), v))
			fail("find_param misses a key", std::string(in));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const unsigned mode = data[0] % 5, arg = data[1];
	const char *body = reinterpret_cast<const char *>(data + 2);
	const size_t len = size - 2;

	switch (mode) {
	case 0: /* FI_ADDR_STR text */
		parse_and_reprint(std::string_view(body, len), arg);
		break;
	case 1: { /* node '\0' service */
		std::string all(body, len);
		size_t nul = all.find('\0');
		std::string node = all.substr(0, nul);
		std::string service = nul == std::string::npos ? std::string() : all.substr(nul + 1);
		static const std::uint32_t hints[] = {FI_FORMAT_UNSPEC, FI_SOCKADDR, FI_SOCKADDR_IN,
						      FI_SOCKADDR_IN6, FI_ADDR_STR, FI_ADDR_PSMX2};
		std::uint64_t flags = FI_NUMERICHOST | ((arg & 8) ? FI_SOURCE : 0);
		/* Keep service names short: each is a /etc/services lookup. */
		const char *svc = (arg & 16) ? nullptr : service.c_str();
		wu::addr::parsed_addr p;
		if (wu::addr::parse_node_service((arg & 32) ? nullptr : node.c_str(), svc, flags,
						 hints[arg % 6], p) == 0) {
			if (p.format != FI_ADDR_STR && p.size() > wu::addr::max_raw_len)
				fail("parse_node_service size out of range", node);
			if (print_full(p.format, p.data(), p.size()).empty())
				fail("parse_node_service result does not print", node, service);
		}
		break;
	}
	case 2: { /* arbitrary bytes as an address of format arg */
		std::uint32_t fmt = arg < 20 ? arg : (arg == 255 ? 0x7fffffffu : arg);
		/* Copy so that ASan sees the exact length. */
		std::string bytes(body, len);
		std::string full = print_full(fmt, bytes.data(), bytes.size());
		std::string part = print_checked(fmt, bytes.data(), bytes.size(), len % 97);
		if (full.compare(0, part.size(), part) != 0)
			fail("truncated print is not a prefix", full, part);
		if (!full.empty() && fmt != FI_ADDR_STR)
			parse_and_reprint(full, 64);
		break;
	}
	case 3: { /* next_node in a buffer of cap bytes */
		std::string s(body, len);
		size_t cap = s.size() + (arg % 4);
		std::string buf(s);
		buf.resize(cap, '\0');
		char *heap = static_cast<char *>(malloc(cap ? cap : 1));
		memcpy(heap, buf.data(), cap);
		wu::addr::next_node(heap, cap);
		if (cap && !memchr(heap, '\0', cap) && memchr(buf.data(), '\0', cap))
			fail("next_node lost the NUL", s);
		free(heap);
		std::string t(body, len);
		for (unsigned i = 0; i < (arg & 7) && wu::addr::next_node(t) == 0; i++)
			;
		break;
	}
	case 4: { /* escape and next_service */
		char buf[256];
		size_t cap = arg;
		size_t n = wu::addr::escape(std::string_view(body, len), buf, cap);
		if (cap && (n >= cap || buf[n] != '\0'))
			fail("escape overran", std::to_string(cap));
		std::string s(body, len);
		wu::addr::next_service(s);
		break;
	}
	}
	return 0;
}
