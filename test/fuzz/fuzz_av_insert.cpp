/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for fi_av_insert on every provider's AV (tcp, shm,
 * wireup, and ucx when the library has it): the fuzzed bytes are the
 * address blob, given with a fuzzed count and flags.  The shm AV once took
 * blobs for arrays of char * and read through them (issue 32).
 *
 * Input: byte 0 picks the provider, byte 1 the count (0 .. 15), byte 2
 * the flags (FI_SYNC_ERR, FI_MORE); the rest is the blob, in a heap buffer
 * of exactly max(its length, count * 512) bytes (512: the longest address
 * any format has; fi_av_insert may read that many per address, never more,
 * and ASan sees the end).  Invariants besides the sanitizers: the result
 * is a count in [0, count] or -FI_EINVAL, and it agrees with the fi_addr
 * and FI_SYNC_ERR outputs. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

namespace {

[[noreturn]] void fail(const char *what, int r = 0)
{
	fprintf(stderr, "fuzz_av_insert invariant broken: %s (%d: %s)\n", what, r, fi_strerror(-r));
	abort();
}

constexpr size_t addr_room = 512; /* av::max_blob */

struct prov_dom {
	const char *name;
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
};

/* The domains, opened once and kept (reachable) to the end; a provider
 * the library lacks (ucx) is left out. */
std::vector<prov_dom> &domains()
{
	static auto *v = new std::vector<prov_dom>([] {
		if (!getenv("WU_FUZZ_LOG"))
			setenv("FI_LOG_PROV", "none", 0); /* rejected blobs are the point */
		std::vector<prov_dom> d;
		for (const char *p : {"tcp", "shm", "wireup", "ucx"}) {
			prov_dom x;
			x.name = p;
			fi_info *hints = fi_allocinfo();
			hints->fabric_attr->prov_name = strdup(p);
			hints->ep_attr->type = FI_EP_RDM;
			int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &x.info);
			fi_freeinfo(hints);
			if (r || !x.info) {
				if (strcmp(p, "ucx") != 0)
					fail("fi_getinfo", r);
				continue;
			}
			if ((r = fi_fabric(x.info->fabric_attr, &x.fabric, nullptr)))
				fail("fi_fabric", r);
			if ((r = fi_domain(x.fabric, x.info, &x.domain, nullptr)))
				fail("fi_domain", r);
			d.push_back(x);
		}
		return d;
	}());
	return *v;
}

} // namespace

/* The ucx provider dlopens libucp, whose threads use dynamic TLS; with
 * clang 14 and glibc 2.36 LSan's record of it is garbage for UCX's async
 * thread and its exit-time leak scan dies ("Tracer caught signal 11",
 * "DTLS 6 at 0x0002000003ad-0x0026000014af").  Not tracking dynamic TLS
 * keeps the leak check; our own TLS is static in this binary. */
extern "C" const char *__asan_default_options()
{
	return "intercept_tls_get_addr=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	std::vector<prov_dom> &doms = domains();
	prov_dom &d = doms[data[0] % doms.size()];
	size_t count = data[1] & 15;
	uint64_t flags = ((data[2] & 1) ? FI_SYNC_ERR : 0) | ((data[2] & 2) ? FI_MORE : 0);
	size_t len = size - 3;
	size_t room = std::max(len, count * addr_room);
	std::unique_ptr<uint8_t[]> blob(new uint8_t[room ? room : 1]);
	memset(blob.get(), 0, room);
	memcpy(blob.get(), data + 3, len);

	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	int r = fi_av_open(d.domain, &aa, &av, nullptr);
	if (r)
		fail("fi_av_open", r);
	std::vector<fi_addr_t> fa(count + 1, 0);
	std::vector<int> st(count + 1, -1);
	r = fi_av_insert(av, blob.get(), count, fa.data(), flags, (flags & FI_SYNC_ERR) ? st.data() : nullptr);
	if (r != -FI_EINVAL && (r < 0 || size_t(r) > count))
		fail("fi_av_insert result", r);
	if (r >= 0) {
		size_t ok = 0;
		for (size_t i = 0; i < count; i++) {
			ok += fa[i] != FI_ADDR_NOTAVAIL;
			if ((flags & FI_SYNC_ERR) && (st[i] == 0) != (fa[i] != FI_ADDR_NOTAVAIL))
				fail("FI_SYNC_ERR disagrees with fi_addr", st[i]);
		}
		if (ok != size_t(r))
			fail("count disagrees with fi_addr", r);
		/* What went in reads back. */
		for (size_t i = 0; i < count; i++) {
			if (fa[i] == FI_ADDR_NOTAVAIL)
				continue;
			uint8_t back[addr_room];
			size_t blen = sizeof back;
			if ((r = fi_av_lookup(av, fa[i], back, &blen)))
				fail("fi_av_lookup of an inserted address", r);
		}
	}
	if ((r = fi_close(&av->fid)))
		fail("fi_close(av)", r);
	return 0;
}
