/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the ucx provider's addresses
 * (src/prov/ucx/ucx_addr.cpp): arbitrary bytes as an address a peer
 * published.  addr_check must never read past the bytes given; what it
 * accepts must print, rebuild to the same bytes from its id and worker
 * address, and stay within the limits of the header. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "prov/ucx/ucx_addr.h"

namespace {

[[noreturn]] void fail(const char *what, long a, long b)
{
	fprintf(stderr, "fuzz_ucx_addr invariant broken: %s (%ld, %ld)\n", what, a, b);
	abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	namespace u = wu::ucx;
	/* An exact-size heap copy, so that ASan sees any read past it. */
	std::vector<uint8_t> in(data, data + size);
	const void *p = size ? in.data() : nullptr;
	ssize_t n = u::addr_check(p, size);
	char text[128];
	if (n < 0) {
		if (size && u::addr_print(p, size, text, sizeof text) >= 0)
			fail("print accepts what check refuses", long(n), 0);
		return 0;
	}
	if (size_t(n) > size || size_t(n) > u::addr_max || size_t(n) <= u::addr_hdr)
		fail("checked length", long(n), long(size));
	uint32_t id = u::addr_id(p);
	if (id == 0 || id > u::id_max)
		fail("sender id", long(id), 0);
	size_t wlen = 0;
	const void *w = u::addr_worker(p, &wlen);
	if (u::addr_hdr + wlen != size_t(n))
		fail("worker length", long(wlen), long(n));
	std::vector<uint8_t> again(u::addr_max);
	const uint8_t flags = u::addr_flags(p);
	if (flags & ~u::addr_flag_id)
		fail("flags", long(flags), 0);
	if (u::addr_build(id, flags, w, wlen, again.data(), again.size()) != size_t(n) || memcmp(again.data(), p, size_t(n)))
		fail("rebuild differs", long(n), 0);
	ssize_t t = u::addr_print(p, size_t(n), text, sizeof text);
	if (t <= 0 || size_t(t) > sizeof text || strlen(text) + 1 != size_t(t) || strncmp(text, "fi_ucx://", 9))
		fail("print", long(t), 0);
	if (u::addr_print(p, size_t(n), nullptr, 0) != t)
		fail("print length query", long(t), 0);
	return 0;
}
