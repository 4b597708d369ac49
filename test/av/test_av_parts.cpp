/* SPDX-License-Identifier: BSD-3-Clause */
/* Composite addresses in the AV engine (av_format::part): addr_of_part and
 * reverse_part over a fake format with two parts, on private and named
 * AVs, with removes, reused indices, reserved entries and bad handles. */
#include <sys/mman.h>
#include <unistd.h>

#include "av_fixture.h"

#include "core/domain.h"
#include "prov/wireup/wx_addr.h"

using namespace wu::test;

namespace {

/* Fake composite address: 0xA5, len0, len1, then the two parts' bytes. */
constexpr size_t fake_max = 40;

ssize_t fake_validate(const void *addr, size_t avail)
{
	auto *b = static_cast<const unsigned char *>(addr);
	if (avail < 3 || b[0] != 0xA5 || (b[1] == 0 && b[2] == 0))
		return -FI_EINVAL;
	size_t n = 3 + size_t(b[1]) + b[2];
	return n <= avail && n <= fake_max ? ssize_t(n) : -FI_EINVAL;
}

size_t fake_part(const void *addr, size_t len, int which, void *out, size_t outlen)
{
	auto *b = static_cast<const unsigned char *>(addr);
	if (fake_validate(addr, len) < 0 || which < 0 || which > 1)
		return 0;
	size_t n = b[1 + which];
	const unsigned char *p = b + 3 + (which ? b[1] : 0);
	if (outlen)
		memcpy(out, p, std::min(n, outlen));
	return n;
}

const wu::av::av_format fake_fmt = {"fake2", FI_FORMAT_UNSPEC, fake_max, fake_validate, nullptr,
				    nullptr, FI_FORMAT_UNSPEC, 0, fake_part};
/* The same without parts. */
const wu::av::av_format plain_fmt = {"fake0", FI_FORMAT_UNSPEC, fake_max, fake_validate, nullptr,
				     nullptr, FI_FORMAT_UNSPEC, 0};

std::vector<unsigned char> mk(const std::string &p0, const std::string &p1)
{
	std::vector<unsigned char> v{0xA5, uint8_t(p0.size()), uint8_t(p1.size())};
	v.insert(v.end(), p0.begin(), p0.end());
	v.insert(v.end(), p1.begin(), p1.end());
	return v;
}

fid_av *open_fmt(tcp_domain &d, const wu::av::av_format *fmt, const char *name = nullptr,
		 fi_av_type type = FI_AV_TABLE)
{
	fi_av_attr a{};
	a.type = type;
	a.name = name;
	fid_av *av = nullptr;
	EXPECT_EQ(wu::av::open(wu::prov::domain_of(d.domain), fmt, &a, &av, nullptr), 0);
	return av;
}

fi_addr_t insert(fid_av *av, const std::vector<unsigned char> &a)
{
	fi_addr_t f = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(fi_av_insert(av, a.data(), 1, &f, 0, nullptr), 1);
	return f;
}

std::string part_of(fid_av *av, fi_addr_t f, int which)
{
	char buf[64];
	size_t n = wu::av::addr_of_part(av, f, which, buf, sizeof buf);
	return std::string(buf, std::min(n, sizeof buf));
}

fi_addr_t rev(fid_av *av, int which, const std::string &s)
{
	return wu::av::reverse_part(av, which, s.data(), s.size());
}

} // namespace

TEST(AvParts, LookupAndReverseOfEachPart)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	fi_addr_t a = insert(av, mk("tcpA", "shmA"));
	fi_addr_t b = insert(av, mk("tcpB", "shmB"));
	EXPECT_EQ(part_of(av, a, 0), "tcpA");
	EXPECT_EQ(part_of(av, a, 1), "shmA");
	EXPECT_EQ(part_of(av, b, 0), "tcpB");
	EXPECT_EQ(part_of(av, b, 1), "shmB");
	EXPECT_EQ(rev(av, 0, "tcpB"), b);
	EXPECT_EQ(rev(av, 1, "shmA"), a);
	/* A part of one index is not found through the other. */
	EXPECT_EQ(rev(av, 1, "tcpA"), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(rev(av, 0, "nope"), FI_ADDR_NOTAVAIL);
	/* Inserts after the index exists are found too (kept in step). */
	fi_addr_t c = insert(av, mk("tcpC", "shmC"));
	EXPECT_EQ(rev(av, 0, "tcpC"), c);
	EXPECT_EQ(rev(av, 1, "shmC"), c);
	/* Truncated copy reports the full length. */
	char small[2];
	EXPECT_EQ(wu::av::addr_of_part(av, c, 1, small, sizeof small), 4u);
	EXPECT_EQ(std::string(small, 2), "sh");
	close_av(av);
}

TEST(AvParts, ManyEntriesGrowTheIndex)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	EXPECT_EQ(rev(av, 0, "x"), FI_ADDR_NOTAVAIL); /* builds an empty index */
	const int n = 3000;
	for (int i = 0; i < n; i++)
		ASSERT_EQ(insert(av, mk("t" + std::to_string(i), "s" + std::to_string(i))), fi_addr_t(i));
	for (int i = 0; i < n; i += 7) {
		EXPECT_EQ(rev(av, 0, "t" + std::to_string(i)), fi_addr_t(i));
		EXPECT_EQ(rev(av, 1, "s" + std::to_string(i)), fi_addr_t(i));
	}
	close_av(av);
}

TEST(AvParts, RemoveAndReinsertAtAReusedIndex)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	fi_addr_t a = insert(av, mk("tcpA", "shmA"));
	fi_addr_t b = insert(av, mk("tcpB", "shmB"));
	EXPECT_EQ(rev(av, 0, "tcpA"), a);
	ASSERT_EQ(fi_av_remove(av, &a, 1, 0), 0);
	EXPECT_EQ(rev(av, 0, "tcpA"), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(rev(av, 1, "shmA"), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(part_of(av, a, 0), "");
	fi_addr_t c = insert(av, mk("tcpC", "shmC"));
	EXPECT_EQ(c, a); /* the lowest free index */
	EXPECT_EQ(rev(av, 0, "tcpC"), c);
	EXPECT_EQ(rev(av, 1, "shmC"), c);
	EXPECT_EQ(rev(av, 0, "tcpA"), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(rev(av, 1, "shmB"), b);
	/* The old address again: found at its new index. */
	fi_addr_t a2 = insert(av, mk("tcpA", "shmA"));
	EXPECT_EQ(rev(av, 0, "tcpA"), a2);
	close_av(av);
}

TEST(AvParts, APartAbsentInSomeEntries)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	fi_addr_t only_tcp = insert(av, mk("tcpA", ""));
	fi_addr_t only_shm = insert(av, mk("", "shmB"));
	EXPECT_EQ(part_of(av, only_tcp, 0), "tcpA");
	EXPECT_EQ(wu::av::addr_of_part(av, only_tcp, 1, nullptr, 0), 0u);
	EXPECT_EQ(wu::av::addr_of_part(av, only_shm, 0, nullptr, 0), 0u);
	EXPECT_EQ(part_of(av, only_shm, 1), "shmB");
	EXPECT_EQ(rev(av, 0, "tcpA"), only_tcp);
	EXPECT_EQ(rev(av, 1, "shmB"), only_shm);
	EXPECT_EQ(rev(av, 1, ""), FI_ADDR_NOTAVAIL);
	close_av(av);
}

TEST(AvParts, FormatWithoutPartsAndBadArguments)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &plain_fmt);
	ASSERT_NE(av, nullptr);
	fi_addr_t a = insert(av, mk("tcpA", "shmA"));
	char buf[16];
	EXPECT_EQ(wu::av::addr_of_part(av, a, 0, buf, sizeof buf), 0u);
	EXPECT_EQ(rev(av, 0, "tcpA"), FI_ADDR_NOTAVAIL);
	close_av(av);

	av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	a = insert(av, mk("tcpA", "shmA"));
	/* Bad handles: nullptr, another class, an unknown part, no entry. */
	EXPECT_EQ(wu::av::addr_of_part(nullptr, a, 0, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::reverse_part(nullptr, 0, "tcpA", 4), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(wu::av::addr_of_part(reinterpret_cast<fid_av *>(d.domain), a, 0, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::reverse_part(reinterpret_cast<fid_av *>(d.domain), 0, "tcpA", 4),
		  FI_ADDR_NOTAVAIL);
	EXPECT_EQ(wu::av::addr_of_part(av, a, 2, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::addr_of_part(av, a, -1, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::reverse_part(av, 2, "tcpA", 4), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(wu::av::reverse_part(av, 0, nullptr, 4), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(wu::av::reverse_part(av, 0, "tcpA", 0), FI_ADDR_NOTAVAIL);
	std::string huge(200, 'x');
	EXPECT_EQ(rev(av, 0, huge), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(wu::av::addr_of_part(av, a + 5, 0, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::addr_of_part(av, FI_ADDR_NOTAVAIL, 0, buf, sizeof buf), 0u);
	EXPECT_EQ(wu::av::addr_of_part(av, a, 0, nullptr, 4), 0u);
	close_av(av);
}

TEST(AvParts, TextInsertIsRefused)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	fi_addr_t f = 0;
	EXPECT_LT(fi_av_insertsvc(av, "127.0.0.1", "5000", &f, 0, nullptr), 1);
	EXPECT_LT(fi_av_insertsym(av, "127.0.0.1", 2, "5000", 2, &f, 0, nullptr), 1);
	close_av(av);
}

static int resolve_fake(void *ctx, fi_addr_t, uint64_t token, void *addr, size_t *len)
{
	++*static_cast<int *>(ctx);
	auto v = mk("rt" + std::to_string(token), "rs" + std::to_string(token));
	if (*len < v.size())
		return -FI_ETOOSMALL;
	memcpy(addr, v.data(), v.size());
	*len = v.size();
	return 0;
}

TEST(AvParts, ResolvedReservedEntriesAreFound)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	uint64_t tokens[3] = {0, 1, 2};
	fi_addr_t fa[3];
	ASSERT_EQ(wu::av::reserve(av, tokens, 3, fa), 3);
	int calls = 0;
	ASSERT_EQ(wu::av::set_resolver(av, resolve_fake, &calls), 0);
	EXPECT_EQ(rev(av, 0, "rt1"), FI_ADDR_NOTAVAIL); /* not resolved yet */
	EXPECT_EQ(part_of(av, fa[1], 0), "rt1");        /* resolves */
	EXPECT_EQ(calls, 1);
	EXPECT_EQ(rev(av, 0, "rt1"), fa[1]);
	EXPECT_EQ(rev(av, 1, "rs1"), fa[1]);
	EXPECT_EQ(part_of(av, fa[2], 1), "rs2");
	EXPECT_EQ(rev(av, 1, "rs2"), fa[2]);
	close_av(av);
}

TEST(AvParts, NamedAvWrittenThroughAnotherHandle)
{
	tcp_domain d;
	std::string name = "test-parts-" + std::to_string(getpid());
	fid_av *w = open_fmt(d, &fake_fmt, name.c_str());
	fid_av *r = open_fmt(d, &fake_fmt, name.c_str());
	ASSERT_NE(w, nullptr);
	ASSERT_NE(r, nullptr);
	fi_addr_t a = insert(w, mk("tcpA", "shmA"));
	EXPECT_EQ(rev(r, 0, "tcpA"), a); /* r's index is built here */
	ASSERT_EQ(fi_av_remove(w, &a, 1, 0), 0);
	/* Removed behind r's back: its index slot is stale, the check catches it. */
	EXPECT_EQ(rev(r, 0, "tcpA"), FI_ADDR_NOTAVAIL);
	fi_addr_t c = insert(w, mk("tcpC", "shmC"));
	EXPECT_EQ(c, a);
	EXPECT_EQ(rev(r, 1, "shmC"), c);
	EXPECT_EQ(rev(r, 0, "tcpA"), FI_ADDR_NOTAVAIL);
	EXPECT_EQ(part_of(r, c, 0), "tcpC");
	close_av(r);
	close_av(w);
	shm_unlink(("/wireup-av-" + name).c_str());
}

TEST(AvParts, BatchInsertTakesAddressesBackToBack)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, &fake_fmt);
	ASSERT_NE(av, nullptr);
	std::vector<unsigned char> all;
	for (auto &v : {mk("t0", "s0"), mk("tcp-one", ""), mk("", "shm-two-longer")})
		all.insert(all.end(), v.begin(), v.end());
	fi_addr_t fa[3];
	ASSERT_EQ(fi_av_insert(av, all.data(), 3, fa, 0, nullptr), 3);
	EXPECT_EQ(part_of(av, fa[0], 1), "s0");
	EXPECT_EQ(part_of(av, fa[1], 0), "tcp-one");
	EXPECT_EQ(part_of(av, fa[2], 1), "shm-two-longer");
	close_av(av);
}

TEST(AvParts, WireupFormatInAnAv)
{
	tcp_domain d;
	fid_av *av = open_fmt(d, wu::wireup::format());
	ASSERT_NE(av, nullptr);
	sockaddr_in s = v4("127.0.0.1", 5000);
	wu::wireup::parts p;
	p.host = 0xabcdef0123456789ULL;
	p.tcp = &s;
	p.tcp_len = sizeof s;
	p.shm = "wu0.77.1";
	p.shm_len = 8;
	unsigned char buf[wu::wireup::addr_max];
	long n = wu::wireup::encode(p, buf, sizeof buf);
	ASSERT_GT(n, 0);
	fi_addr_t f = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(av, buf, 1, &f, 0, nullptr), 1);
	unsigned char back[wu::wireup::addr_max];
	size_t len = sizeof back;
	ASSERT_EQ(fi_av_lookup(av, f, back, &len), 0);
	ASSERT_EQ(len, size_t(n));
	EXPECT_EQ(memcmp(back, buf, len), 0);
	char text[128];
	size_t tl = sizeof text;
	ASSERT_NE(fi_av_straddr(av, buf, text, &tl), nullptr);
	EXPECT_STREQ(text, "fi_wx://127.0.0.1:5000/abcdef0123456789/wu0.77.1");
	EXPECT_EQ(part_of(av, f, wu::wireup::part_shm), std::string("fi_shm://wu0.77.1", 18));
	EXPECT_EQ(wu::av::reverse_part(av, wu::wireup::part_shm, "fi_shm://wu0.77.1", 18), f);
	EXPECT_EQ(wu::av::reverse_part(av, wu::wireup::part_tcp, &s, sizeof s), f);
	/* A corrupt address is refused. */
	buf[0] = 0;
	fi_addr_t g = 0;
	EXPECT_EQ(fi_av_insert(av, buf, 1, &g, 0, nullptr), 0);
	EXPECT_EQ(g, FI_ADDR_NOTAVAIL);
	fi_addr_t h = 0;
	EXPECT_LT(fi_av_insertsvc(av, "127.0.0.1", "5000", &h, 0, nullptr), 1);
	close_av(av);
}
