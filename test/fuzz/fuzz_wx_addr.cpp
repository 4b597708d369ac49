/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the wireup provider's addresses
 * (src/prov/wireup/wx_addr.cpp): arbitrary bytes as an address a peer
 * published.  decode must never read past the bytes given; whatever it
 * accepts must re-encode to the same bytes, print, and yield its parts
 * with the lengths the header states. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "av/av.h"
#include "prov/wireup/wx_addr.h"

namespace {

[[noreturn]] void fail(const char *what, long a, long b)
{
	fprintf(stderr, "fuzz_wx_addr invariant broken: %s (%ld, %ld)\n", what, a, b);
	abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	namespace wx = wu::wireup;
	/* An exact-size heap copy, so that ASan sees any read past it. */
	std::vector<uint8_t> in(data, data + size);
	const void *p = size ? in.data() : nullptr;
	wx::parts parts;
	long n = wx::decode(p, size, &parts);
	const wu::av::av_format *f = wx::format();
	char text[160];
	unsigned char part[80];
	if (n < 0) {
		if (f->validate(p ? p : "", size) >= 0)
			fail("validate accepts what decode refuses", n, 0);
		if (size && f->print(p, size, text, sizeof text) >= 0)
			fail("print accepts what decode refuses", n, 0);
		if (size && (f->part(p, size, wx::part_tcp, part, sizeof part) ||
			     f->part(p, size, wx::part_shm, part, sizeof part)))
			fail("part of a refused address", n, 0);
		return 0;
	}
	if (size_t(n) > size || size_t(n) > wx::addr_max || size_t(n) < wx::hdr_len)
		fail("decoded length", n, long(size));
	/* Every address is exactly addr_max bytes, its parts zero-padded. */
	if (size_t(n) != wx::addr_max || wx::hdr_len + parts.tcp_len + parts.shm_len > wx::addr_max)
		fail("lengths do not add up", n, long(parts.tcp_len + parts.shm_len));
	unsigned char again[wx::addr_max];
	long m = wx::encode(parts, again, sizeof again);
	if (m != n || memcmp(again, in.data(), size_t(n)) != 0)
		fail("re-encoding differs", m, n);
	ssize_t need = f->print(in.data(), size_t(n), text, sizeof text);
	if (need <= 0 || size_t(need) > sizeof text || strlen(text) + 1 != size_t(need) ||
	    strncmp(text, "fi_wx://", 8) != 0)
		fail("print", long(need), 0);
	size_t t = f->part(in.data(), size_t(n), wx::part_tcp, part, sizeof part);
	if (t != parts.tcp_len)
		fail("tcp part length", long(t), long(parts.tcp_len));
	size_t s = f->part(in.data(), size_t(n), wx::part_shm, part, sizeof part);
	if (s != (parts.shm_len ? parts.shm_len + 10 : 0) || (s && part[s - 1] != '\0'))
		fail("shm part", long(s), long(parts.shm_len));
	return 0;
}
