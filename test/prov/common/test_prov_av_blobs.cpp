/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_av_insert of blobs that are not the AV's format (issue 32): the shm
 * AV took any blob whose bytes 6 and 7 are zero for an array of char * and
 * read through it (SIGSEGV) -- a sockaddr_in of 10.0.0.0/16, a wireup
 * address, a small integer.  On every provider each such blob is now
 * -FI_EINVAL or a per-address error (or, in the provider's own format,
 * an address), never a crash, and nothing past the format's longest
 * address is read. */
#include "prov_fixture.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "prov/shm/shm_addr.h"

using namespace wu::test;

namespace {

/* A blob at the start of a zeroed buffer long enough for `count`
 * addresses of any format (the caller's side of the contract: count
 * addresses are there to read). */
std::vector<unsigned char> padded(const void *blob, size_t len, size_t count)
{
	std::vector<unsigned char> b(std::max<size_t>(len, 1024 * count), 0);
	memcpy(b.data(), blob, len);
	return b;
}

std::vector<char> wireup_name()
{
	prov_env env("wireup", FI_EP_RDM);
	rdm_ep ep(env);
	return ep.name;
}

struct blob {
	const char *what;
	std::vector<unsigned char> bytes;
};

std::vector<blob> crashing_blobs()
{
	std::vector<blob> v;
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(4000);
	sin.sin_addr.s_addr = htonl(0x0a000102); /* 10.0.1.2: bytes 6 and 7 are zero */
	v.push_back({"sockaddr_in 10.0.1.2", std::vector<unsigned char>(reinterpret_cast<unsigned char *>(&sin),
									 reinterpret_cast<unsigned char *>(&sin + 1))});
	std::vector<char> w = wireup_name();
	v.push_back({"a wireup address", std::vector<unsigned char>(w.begin(), w.end())});
	uint64_t small = 5;
	v.push_back({"the integer 5", std::vector<unsigned char>(reinterpret_cast<unsigned char *>(&small),
								 reinterpret_cast<unsigned char *>(&small + 1))});
	uint64_t ptr_like = 0x00007ffd12345678ull; /* what a char * looks like */
	v.push_back({"a pointer's bytes", std::vector<unsigned char>(reinterpret_cast<unsigned char *>(&ptr_like),
								     reinterpret_cast<unsigned char *>(&ptr_like + 1))});
	return v;
}

/* A table AV on env's domain (nullptr if it has none). */
fid_av *table_av(prov_env &env)
{
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fid_av *av = nullptr;
	if (env.domain) {
		EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	}
	return av;
}

WU_PROVIDER_TEST_SUITE(av_blobs);

TEST_P(av_blobs, foreign_blobs_are_refused_or_inserted_never_a_crash)
{
	prov_env env(prov(), FI_EP_RDM);
	fid_av *av = table_av(env);
	ASSERT_NE(av, nullptr);
	for (const blob &b : crashing_blobs()) {
		for (size_t count : {size_t(1), size_t(3)}) {
			std::vector<unsigned char> buf = padded(b.bytes.data(), b.bytes.size(), count);
			std::vector<fi_addr_t> fa(count, 0);
			std::vector<int> st(count, -1);
			int r = fi_av_insert(av, buf.data(), count, fa.data(), FI_SYNC_ERR, st.data());
			ASSERT_TRUE(r == -FI_EINVAL || (r >= 0 && size_t(r) <= count))
				<< b.what << " x" << count << ": " << r;
			if (r < 0)
				continue;
			size_t ok = 0;
			for (size_t i = 0; i < count; i++) {
				EXPECT_EQ(st[i] == 0, fa[i] != FI_ADDR_NOTAVAIL) << b.what << " #" << i;
				ok += st[i] == 0;
			}
			EXPECT_EQ(ok, size_t(r)) << b.what;
			/* shm takes only its own names: none of these is one. */
			if (prov() == "shm") {
				EXPECT_EQ(r, 0) << b.what;
			}
		}
	}
	EXPECT_EQ(fi_close(&av->fid), 0);
}

/* A shm name without its NUL within the longest name: refused, and no
 * byte past that longest name is read (ASan sees the buffer's end). */
TEST(av_blobs_shm, a_name_without_nul_is_refused_without_reading_past_it)
{
	prov_env env("shm", FI_EP_RDM);
	fid_av *av = table_av(env);
	ASSERT_NE(av, nullptr);
	std::unique_ptr<char[]> name(new char[wu::shm::addr_max]);
	memcpy(name.get(), "fi_shm://", 9);
	memset(name.get() + 9, 'a', wu::shm::addr_max - 9);
	fi_addr_t fa = 0;
	EXPECT_EQ(fi_av_insert(av, name.get(), 1, &fa, 0, nullptr), 0);
	EXPECT_EQ(fa, FI_ADDR_NOTAVAIL);
	/* Behind a bad name, the next cannot be found: both refused. */
	char two[] = "fi_shm://bad name\0fi_shm://good";
	fi_addr_t f2[2] = {0, 0};
	EXPECT_EQ(fi_av_insert(av, two, 2, f2, 0, nullptr), 0);
	EXPECT_EQ(f2[1], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_close(&av->fid), 0);
}

} // namespace
