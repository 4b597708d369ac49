/* SPDX-License-Identifier: BSD-3-Clause */
/* Address text: parsing tables (good and bad), printing against the forms
 * Debian's libfabric prints, round trips, node/service resolution and the
 * insertsym arithmetic. */
#include <arpa/inet.h>
#include <cstring>
#include <net/if.h>
#include <netinet/in.h>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/addr.h"

namespace {

using wu::addr::parsed_addr;

std::string print(uint32_t format, const void *addr, size_t len)
{
	char buf[512];
	ssize_t n = wu::addr::format(format, addr, len, buf, sizeof buf);
	if (n < 0)
		return "<error " + std::to_string(n) + ">";
	EXPECT_EQ(size_t(n), strlen(buf) + 1) << buf;
	return buf;
}

std::string print(const parsed_addr &p) { return print(p.format, p.data(), p.size()); }

std::vector<unsigned char> hex(const char *s)
{
	std::vector<unsigned char> v;
	for (; s[0] && s[1]; s += 2) {
		unsigned b;
		sscanf(s, "%2x", &b);
		v.push_back(static_cast<unsigned char>(b));
	}
	return v;
}

/* ---- good inputs: parse, then print; printing again must be stable ---- */

struct good_case {
	const char *in;
	uint32_t format;
	const char *printed; /* fi_av_straddr form */
	size_t len;
};

const good_case good[] = {
	{"fi_sockaddr_in://10.31.6.12:7471", FI_SOCKADDR_IN, "fi_sockaddr_in://10.31.6.12:7471", 16},
	{"fi_sockaddr_in://127.0.0.1", FI_SOCKADDR_IN, "fi_sockaddr_in://127.0.0.1:0", 16},
	{"fi_sockaddr_in://0.0.0.0:0", FI_SOCKADDR_IN, "fi_sockaddr_in://0.0.0.0:0", 16},
	{"fi_sockaddr_in://255.255.255.255:65535", FI_SOCKADDR_IN,
	 "fi_sockaddr_in://255.255.255.255:65535", 16},
	{"FI_SOCKADDR_IN://1.2.3.4:5", FI_SOCKADDR_IN, "fi_sockaddr_in://1.2.3.4:5", 16},
	{"fi_sockaddr_in://1.2.3.4:5?x=1", FI_SOCKADDR_IN, "fi_sockaddr_in://1.2.3.4:5", 16},
	{"fi_sockaddr_in://1.2.3.4:00080", FI_SOCKADDR_IN, "fi_sockaddr_in://1.2.3.4:80", 16},
	{"fi_sockaddr_in6://[fe80::6:12]:7471", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[fe80::6:12]:7471", 28},
	{"fi_sockaddr_in6://[::1]", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[::1]:0", 28},
	{"fi_sockaddr_in6://[fe80::6:12%1]:7471", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[fe80::6:12]:7471", 28},
	{"fi_sockaddr_in6://[fe80::6:12%lo]:7471", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[fe80::6:12]:7471", 28},
	{"fi_sockaddr_in6://[::ffff:1.2.3.4]:9", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[::ffff:1.2.3.4]:9", 28},
	{"fi_sockaddr_in6://[2001:DB8:0:0:0:0:0:1]:1", FI_SOCKADDR_IN6, "fi_sockaddr_in6://[2001:db8::1]:1", 28},
	{"fi_sockaddr://10.0.0.1:99", FI_SOCKADDR, "fi_sockaddr_in://10.0.0.1:99", 16},
	{"fi_sockaddr://[::1]:99", FI_SOCKADDR, "fi_sockaddr_in6://[::1]:99", 28},
	{"fi_addr_psmx://abc", FI_ADDR_PSMX, "fi_addr_psmx://abc", 8},
	{"fi_addr_psmx://0x12", FI_ADDR_PSMX, "fi_addr_psmx://12", 8},
	{"fi_addr_psmx2://1234:5678", FI_ADDR_PSMX2, "fi_addr_psmx2://1234:5678", 16},
	{"fi_addr_psmx3://1:2:3:4", FI_ADDR_PSMX3, "fi_addr_psmx3://1:2:3:4", 32},
	{"fi_addr_gni://ffffffffffffffff", FI_ADDR_GNI, "fi_addr_gni://ffffffffffffffff", 8},
	{"fi_addr_gni://1:2:3:4:5:6", FI_ADDR_GNI, "fi_addr_gni://1:2:3:4:5:6", 48},
	{"fi_addr_opx://12", FI_ADDR_OPX, "fi_addr_opx://0000000000000012", 8},
	{"fi_addr_opx://0123456789abcdef", FI_ADDR_OPX, "fi_addr_opx://0123456789abcdef", 8},
	{"fi_addr_cxi://0x00001234", FI_ADDR_CXI, "fi_addr_cxi://0x00001234", 4},
	{"fi_addr_cxi://ABCDEF", FI_ADDR_CXI, "fi_addr_cxi://0x00abcdef", 4},
	{"fi_addr_efa://[fe80::1]:5:6", FI_ADDR_EFA, "fi_addr_efa://[fe80::1]:5:6", 24},
	{"fi_addr_efa://[::]:65535:4294967295", FI_ADDR_EFA, "fi_addr_efa://[::]:65535:4294967295", 24},
	{"fi_addr_ib_ud://fe80::1:5/6/7/9", FI_ADDR_IB_UD, "fi_addr_ib_ud://fe80::1:5/6/7/9", 32},
	{"fi_addr_ib_ud://fe80:::5/6/7/9", FI_ADDR_IB_UD, "fi_addr_ib_ud://fe80:::5/6/7/9", 32},
	{"fi_sockaddr_ib://[fe80::1]:0xffff:0x106:0x5:0x9", FI_SOCKADDR_IB,
	 "fi_sockaddr_ib://[fe80::1]:0xffff:0x106:0x5", 48},
	{"fi_sockaddr_ib://[fe80::1]:1234:106:0", FI_SOCKADDR_IB,
	 "fi_sockaddr_ib://[fe80::1]:0x1234:0x106:0x0", 48},
	{"fi_addr_bgq://00112233", FI_ADDR_BGQ, "fi_addr_bgq://00112233", 4},
	{"fi_addr_mlx://abcd", FI_ADDR_MLX, "fi_addr_mlx://abcd", 2},
	{"fi_addr_ucx://0a0B0c", FI_ADDR_UCX, "fi_addr_ucx://0a0b0c", 3},
	{"fi_addr_unspec://ff", FI_FORMAT_UNSPEC, "fi_addr_unspec://ff", 1},
	/* Schemes we do not decode stay text (FI_ADDR_STR). */
	{"fi_shm://1234", FI_ADDR_STR, "fi_shm://1234", 14},
	{"fi_addr_str://host-01.example.org:7471", FI_ADDR_STR, "fi_addr_str://host-01.example.org:7471", 39},
	{"fi_ns://node7:svc/a/b=c?k=v&k2=", FI_ADDR_STR, "fi_ns://node7:svc/a/b=c?k=v&k2=", 32},
	{"x+y://[::1%1]:5", FI_ADDR_STR, "x+y://[::1%1]:5", 16},
	{"myprov://10.0.0.1", FI_ADDR_STR, "myprov://10.0.0.1", 18},
};

TEST(AddrParse, GoodTable)
{
	for (const auto &c : good) {
		SCOPED_TRACE(c.in);
		parsed_addr p;
		ASSERT_EQ(wu::addr::parse_str(c.in, p), 0);
		EXPECT_EQ(p.format, c.format);
		EXPECT_EQ(p.size(), c.len);
		EXPECT_EQ(print(p), c.printed);
		/* Round trip: the printed form parses to the same bytes. */
		parsed_addr q;
		ASSERT_EQ(wu::addr::parse_str(print(p), q), 0);
		std::string again = print(q);
		EXPECT_EQ(again, c.printed);
	}
}

TEST(AddrParse, SockaddrBytes)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_str("fi_sockaddr_in://127.0.0.1:1234", p), 0);
	EXPECT_EQ(0, memcmp(p.data(), hex("020004d27f0000010000000000000000").data(), 16));
	ASSERT_EQ(wu::addr::parse_str("fi_sockaddr_in6://[::1]:1234", p), 0);
	auto *sin6 = static_cast<const sockaddr_in6 *>(p.data());
	EXPECT_EQ(sin6->sin6_family, AF_INET6);
	EXPECT_EQ(ntohs(sin6->sin6_port), 1234);
	EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	ASSERT_EQ(wu::addr::parse_str("fi_sockaddr_in6://[fe80::1%lo]:1", p), 0);
	sin6 = static_cast<const sockaddr_in6 *>(p.data());
	EXPECT_EQ(sin6->sin6_scope_id, if_nametoindex("lo"));
	EXPECT_EQ(p.node(), "fe80::1%lo");
	EXPECT_EQ(p.service(), "1");
	/* Same layouts as Debian's libfabric decodes. */
	ASSERT_EQ(wu::addr::parse_str("fi_addr_psmx2://1234:5678", p), 0);
	EXPECT_EQ(0, memcmp(p.data(), hex("34120000000000007856000000000000").data(), 16));
	ASSERT_EQ(wu::addr::parse_str("fi_addr_efa://[fe80::1]:5:6", p), 0);
	EXPECT_EQ(0, memcmp(p.data(), hex("fe8000000000000000000000000000010500000006000000").data(), 24));
	ASSERT_EQ(wu::addr::parse_str("fi_sockaddr_ib://[fe80::1]:0xffff:0x106:0x5:0x9", p), 0);
	EXPECT_EQ(0, memcmp(static_cast<const char *>(p.data()) + 2,
			    hex("ffff00000000fe8000000000000000000000000000010000000001060009ffffffffffffffff0000000000000005").data(),
			    46));
}

TEST(AddrParse, QueryAndParts)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_str("fi_ns://host9:7471/f1/f2?key=value&k2=v2&empty=", p), 0);
	EXPECT_EQ(p.scheme(), "fi_ns");
	EXPECT_EQ(p.node(), "host9");
	EXPECT_EQ(p.service(), "7471");
	EXPECT_EQ(p.path(), "f1/f2");
	EXPECT_EQ(p.query(), "key=value&k2=v2&empty=");
	ASSERT_EQ(p.param_count(), 3u);
	EXPECT_EQ(p.param_key(0), "key");
	EXPECT_EQ(p.param_value(0), "value");
	EXPECT_EQ(p.param_key(1), "k2");
	EXPECT_EQ(p.param_value(1), "v2");
	EXPECT_EQ(p.param_value(2), "");
	std::string_view v;
	EXPECT_TRUE(p.find_param("k2", v));
	EXPECT_EQ(v, "v2");
	EXPECT_FALSE(p.find_param("nope", v));
	/* Copies stay valid: nothing points into the input. */
	std::string in = "fi_sockaddr_in://1.2.3.4:5?a=b";
	parsed_addr q;
	ASSERT_EQ(wu::addr::parse_str(in, q), 0);
	in.assign(in.size(), 'x');
	parsed_addr r = q;
	EXPECT_EQ(r.param_key(0), "a");
	EXPECT_EQ(r.node(), "1.2.3.4");
	EXPECT_EQ(r.service(), "5");
	EXPECT_TRUE(r.has_port);
}

/* ---- bad inputs ---- */

const char *const bad[] = {
	"",
	"fi_sockaddr_in",
	"fi_sockaddr_in:/1.2.3.4",
	"://1.2.3.4",
	"1fi://x",
	"fi sockaddr://x",
	"fi_sockaddr_in://",
	"fi_sockaddr_in://:5",		 /* empty host */
	"fi_sockaddr_in://1.2.3.256:5",	 /* bad octet */
	"fi_sockaddr_in://1.2.3:5",
	"fi_sockaddr_in://1.2.3.4.5:5",
	"fi_sockaddr_in://01.2.3.4:5",
	"fi_sockaddr_in://1.2.3.4:65536", /* port > 65535 */
	"fi_sockaddr_in://1.2.3.4:99999",
	"fi_sockaddr_in://1.2.3.4:123456789012345678901234",
	"fi_sockaddr_in://1.2.3.4:",
	"fi_sockaddr_in://1.2.3.4:12x",	 /* trailing garbage */
	"fi_sockaddr_in://1.2.3.4:+5",
	"fi_sockaddr_in://1.2.3.4:-5",
	"fi_sockaddr_in://1.2.3.4:5:6",
	"fi_sockaddr_in://1.2.3.4 ",
	"fi_sockaddr_in:// 1.2.3.4",
	"fi_sockaddr_in://localhost:99", /* no DNS in this form */
	"fi_sockaddr_in://[1.2.3.4]:5",
	"fi_sockaddr_in://1.2.3.4/x",
	"fi_sockaddr_in://1.2.3.4#frag",
	"fi_sockaddr_in6://::1",	 /* brackets required */
	"fi_sockaddr_in6://[::1",	 /* unbalanced */
	"fi_sockaddr_in6://::1]:5",
	"fi_sockaddr_in6://[[::1]]:5",
	"fi_sockaddr_in6://[]:5",
	"fi_sockaddr_in6://[::1]5",
	"fi_sockaddr_in6://[::1]:",
	"fi_sockaddr_in6://[::1]:70000",
	"fi_sockaddr_in6://[::g]:5",
	"fi_sockaddr_in6://[1:2:3:4:5:6:7:8:9]:5",
	"fi_sockaddr_in6://[fe80::1%]:5",
	"fi_sockaddr_in6://[fe80::1%no-such-if0]:5",
	"fi_sockaddr_in6://[1.2.3.4]:5",
	"fi_sockaddr://host:5",
	"fi_sockaddr://[1.2.3.4]:5",
	"fi_sockaddr_in://1.2.3.4:5?",	 /* empty query */
	"fi_sockaddr_in://1.2.3.4:5?k",	 /* no '=' */
	"fi_sockaddr_in://1.2.3.4:5?=v",
	"fi_sockaddr_in://1.2.3.4:5?k=v&",
	"fi_sockaddr_in://1.2.3.4:5?k=v&&k2=v",
	"fi_sockaddr_in://1.2.3.4:5?k=v=w",
	"fi_sockaddr_in://1.2.3.4:5?k=v?x=y",
	"fi_sockaddr_in://1.2.3.4:5?k=a b",
	"fi_addr_psmx://",
	"fi_addr_psmx://xyz",
	"fi_addr_psmx://1:2",
	"fi_addr_psmx://12345678901234567",
	"fi_addr_psmx://0x",
	"fi_addr_psmx2://12",
	"fi_addr_psmx2://12:",
	"fi_addr_psmx2://:12",
	"fi_addr_psmx3://1:2:3",
	"fi_addr_gni://1:2:3:4:5:6:7:8:9",
	"fi_addr_opx://12345678901234567",
	"fi_addr_opx://-1",
	"fi_addr_cxi://0x123456789",
	"fi_addr_cxi://0xg",
	"fi_addr_efa://fe80::1:5:6",
	"fi_addr_efa://[fe80::1]:5",
	"fi_addr_efa://[fe80::1]:70000:6",
	"fi_addr_efa://[fe80::1]:5:4294967296",
	"fi_addr_efa://[fe80::1]:5:6:7",
	"fi_addr_efa://[fe80::1:5:6",
	"fi_addr_ib_ud://fe80::1/6/7/9",
	"fi_addr_ib_ud://fe80::1:5/6/7",
	"fi_addr_ib_ud://fe80::1:5/6/7/9/1",
	"fi_addr_ib_ud://zz::1:5/6/7/9",
	"fi_addr_ib_ud://fe80::1:5/12345/7/9",
	"fi_sockaddr_ib://[fe80::1]",
	"fi_sockaddr_ib://[fe80::1]:1:2",
	"fi_sockaddr_ib://fe80::1:1:2:3",
	"fi_sockaddr_ib://[fe80::1]:1:2:3:4:5",
	"fi_sockaddr_ib://[fe80::1]:12345:2:3",
	"fi_addr_bgq://123",
	"fi_addr_mlx://zz",
	"fi_addr_unspec://",
	"fi_shm://",
	"fi_shm://:5",
	"fi_shm://host:",
	"fi_shm://host name",
	"fi_shm://host..x",
	"fi_shm://.host",
	"fi_shm://1.2.3.999",		 /* dotted digits must be IPv4 */
	"fi_shm://host:svc!",
	"fi_shm://[::1",
	"fi_shm://[zz]",
	"fi_shm://host/a b",
	"fi_shm://host/[x]",
	"fi_shm://host#x",
	"fi_shm://a]b",
};

TEST(AddrParse, BadTable)
{
	for (const char *in : bad) {
		SCOPED_TRACE(in);
		parsed_addr p;
		p.format = 12345; /* untouched on failure */
		EXPECT_EQ(wu::addr::parse_str(in, p), -FI_EINVAL);
		EXPECT_EQ(p.format, 12345u);
	}
}

TEST(AddrParse, EmbeddedNulAndLength)
{
	parsed_addr p;
	std::string s("fi_sockaddr_in://1.2.3.4:5", 26);
	EXPECT_EQ(wu::addr::parse_str(s, p), 0);
	std::string nul = s;
	nul[20] = '\0';
	EXPECT_EQ(wu::addr::parse_str(nul, p), -FI_EINVAL);
	EXPECT_EQ(wu::addr::parse_str(s + std::string(1, '\0'), p), -FI_EINVAL);
	/* Only the given length is read: a prefix of a longer buffer. */
	EXPECT_EQ(wu::addr::parse_str(std::string_view(s.data(), 24), p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://1.2.3.4:0");
	EXPECT_EQ(wu::addr::parse_str(std::string_view(s.data(), 25), p), -FI_EINVAL);

	std::string longname = "fi_shm://" + std::string(1100, 'a');
	EXPECT_EQ(wu::addr::parse_str(longname, p), -FI_EINVAL);
	std::string longq = "fi_sockaddr_in://1.2.3.4:5?k=" + std::string(wu::addr::max_str_len, 'v');
	EXPECT_EQ(wu::addr::parse_str(longq, p), -FI_EINVAL);
	/* 63-character labels are fine, 64 are not. */
	EXPECT_EQ(wu::addr::parse_str("fi_shm://" + std::string(63, 'a'), p), 0);
	EXPECT_EQ(wu::addr::parse_str("fi_shm://" + std::string(64, 'a'), p), -FI_EINVAL);
	std::string many = "fi_sockaddr_in://1.2.3.4:5?";
	for (int i = 0; i < 17; i++)
		many += (i ? "&k" : "k") + std::to_string(i) + "=v";
	EXPECT_EQ(wu::addr::parse_str(many, p), -FI_EINVAL);
}

/* ---- printing ---- */

TEST(AddrFormat, MatchesDebianForms)
{
	/* Bytes 00 11 22 ... ff 01 02 ... 10, as in the reference runs. */
	auto b = hex("00112233445566778899aabbccddeeff0102030405060708090a0b0c0d0e0f10"
		     "0000000000000000000000000000000000000000000000000000000000000000");
	EXPECT_EQ(print(FI_ADDR_PSMX, b.data(), 8), "fi_addr_psmx://7766554433221100");
	EXPECT_EQ(print(FI_ADDR_GNI, b.data(), 8), "fi_addr_gni://7766554433221100");
	EXPECT_EQ(print(FI_ADDR_PSMX2, b.data(), 16), "fi_addr_psmx2://7766554433221100:ffeeddccbbaa9988");
	EXPECT_EQ(print(FI_ADDR_PSMX3, b.data(), 32),
		  "fi_addr_psmx3://7766554433221100:ffeeddccbbaa9988:807060504030201:100f0e0d0c0b0a09");
	EXPECT_EQ(print(FI_ADDR_OPX, b.data(), 8), "fi_addr_opx://7766554433221100");
	EXPECT_EQ(print(FI_ADDR_CXI, b.data(), 4), "fi_addr_cxi://0x33221100");
	EXPECT_EQ(print(FI_ADDR_EFA, b.data(), 24),
		  "fi_addr_efa://[11:2233:4455:6677:8899:aabb:ccdd:eeff]:513:134678021");
	EXPECT_EQ(print(FI_ADDR_IB_UD, b.data(), 32),
		  "fi_addr_ib_ud://11:2233:4455:6677:8899:aabb:ccdd:eeff:4030201/605/807/b");
	EXPECT_EQ(print(FI_SOCKADDR_IB, b.data(), 48),
		  "fi_sockaddr_ib://[8899:aabb:ccdd:eeff:102:304:506:708]:0x2233:0xd0e:0x0");
	auto sin = hex("020004d27f0000010000000000000000");
	EXPECT_EQ(print(FI_SOCKADDR_IN, sin.data(), 16), "fi_sockaddr_in://127.0.0.1:1234");
	EXPECT_EQ(print(FI_SOCKADDR, sin.data(), 16), "fi_sockaddr_in://127.0.0.1:1234");
	auto sin6 = hex("0a0004d200000000fe800000000000000000000000000001000000ff");
	EXPECT_EQ(print(FI_SOCKADDR_IN6, sin6.data(), 28), "fi_sockaddr_in6://[fe80::1]:1234");
	EXPECT_EQ(print(FI_ADDR_STR, "foo", 4), "foo");
	EXPECT_EQ(print(FI_ADDR_STR, "foobar", 3), "foo"); /* never past addrlen */
}

TEST(AddrFormat, UnknownAndErrors)
{
	unsigned char b[4] = {0xde, 0xad, 0xbe, 0xef};
	EXPECT_EQ(print(FI_FORMAT_UNSPEC, b, 4), "fi_addr_unspec://deadbeef");
	EXPECT_EQ(print(999, b, 4), "fi_addr_unspec://deadbeef");
	EXPECT_EQ(print(FI_ADDR_BGQ, b, 2), "fi_addr_bgq://dead");
	EXPECT_EQ(print(FI_ADDR_MLX, b, 4), "fi_addr_mlx://deadbeef");
	EXPECT_EQ(print(FI_ADDR_UCX, b, 1), "fi_addr_ucx://de");
	char buf[64];
	EXPECT_EQ(wu::addr::format(FI_SOCKADDR_IN, b, 4, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_SOCKADDR_IN6, b, 16, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_SOCKADDR, b, 1, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_SOCKADDR, b, 4, buf, sizeof buf), -FI_EINVAL); /* family 0xadde */
	EXPECT_EQ(wu::addr::format(FI_ADDR_PSMX2, b, 4, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_ADDR_EFA, b, 4, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_FORMAT_UNSPEC, b, 0, buf, sizeof buf), -FI_EINVAL);
	EXPECT_EQ(wu::addr::format(FI_SOCKADDR_IN, nullptr, 16, buf, sizeof buf), -FI_EINVAL);
}

TEST(AddrFormat, TruncatesAndReportsNeed)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_str("fi_sockaddr_in://127.0.0.1:1234", p), 0);
	const std::string full = "fi_sockaddr_in://127.0.0.1:1234";
	for (size_t cap = 0; cap <= full.size() + 2; cap++) {
		SCOPED_TRACE(cap);
		char buf[64];
		memset(buf, 'X', sizeof buf);
		ssize_t n = wu::addr::format(p.format, p.data(), p.size(), buf, cap);
		EXPECT_EQ(n, ssize_t(full.size() + 1));
		if (cap) {
			size_t got = std::min(cap - 1, full.size());
			EXPECT_EQ(std::string(buf), full.substr(0, got));
		}
		EXPECT_EQ(buf[cap], 'X'); /* nothing written past cap */
	}
	EXPECT_EQ(wu::addr::format(p.format, p.data(), p.size(), nullptr, 0), ssize_t(full.size() + 1));
}

TEST(AddrFormat, RoundTripBytes)
{
	/* format -> parse gives the same bytes for every decodable format. */
	unsigned char b[48];
	for (int i = 0; i < 48; i++)
		b[i] = static_cast<unsigned char>(i * 37 + 5);
	struct {
		uint32_t format;
		size_t len;
	} cases[] = {{FI_ADDR_PSMX, 8},	 {FI_ADDR_PSMX2, 16}, {FI_ADDR_PSMX3, 32}, {FI_ADDR_GNI, 48},
		     {FI_ADDR_OPX, 8},	 {FI_ADDR_CXI, 4},    {FI_ADDR_BGQ, 13},   {FI_ADDR_MLX, 48},
		     {FI_ADDR_UCX, 7},	 {FI_FORMAT_UNSPEC, 3}};
	for (auto c : cases) {
		SCOPED_TRACE(c.format);
		std::string s = print(c.format, b, c.len);
		parsed_addr p;
		ASSERT_EQ(wu::addr::parse_str(s, p), 0) << s;
		EXPECT_EQ(p.format, c.format);
		ASSERT_EQ(p.size(), c.len);
		EXPECT_EQ(0, memcmp(p.data(), b, c.len)) << s;
	}
	/* EFA and IB UD: the fields that are printed survive. */
	unsigned char efa[24] = {};
	memcpy(efa, b, 18);
	memcpy(efa + 20, b + 20, 4);
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_str(print(FI_ADDR_EFA, efa, 24), p), 0);
	EXPECT_EQ(0, memcmp(p.data(), efa, 24));
	unsigned char ud[32] = {};
	memcpy(ud, b, 24);
	ud[26] = b[26];
	ASSERT_EQ(wu::addr::parse_str(print(FI_ADDR_IB_UD, ud, 32), p), 0);
	EXPECT_EQ(0, memcmp(p.data(), ud, 32));
}

/* ---- node / service ---- */

TEST(AddrNodeService, Numeric)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_node_service("10.1.2.3", "7471", FI_NUMERICHOST, FI_FORMAT_UNSPEC, p), 0);
	EXPECT_EQ(p.format, FI_SOCKADDR_IN);
	EXPECT_EQ(print(p), "fi_sockaddr_in://10.1.2.3:7471");
	EXPECT_EQ(p.node(), "10.1.2.3");
	EXPECT_EQ(p.service(), "7471");
	ASSERT_EQ(wu::addr::parse_node_service("fe80::1%lo", "1", FI_NUMERICHOST, FI_SOCKADDR, p), 0);
	EXPECT_EQ(p.format, FI_SOCKADDR_IN6);
	EXPECT_EQ(reinterpret_cast<const sockaddr_in6 *>(p.data())->sin6_scope_id, if_nametoindex("lo"));
	EXPECT_EQ(print(p), "fi_sockaddr_in6://[fe80::1]:1");
	ASSERT_EQ(wu::addr::parse_node_service("::1", nullptr, 0, FI_SOCKADDR_IN6, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in6://[::1]:0");
	EXPECT_FALSE(p.has_port);
	ASSERT_EQ(wu::addr::parse_node_service("127.0.0.1", "0", 0, FI_SOCKADDR_IN, p), 0);
	ASSERT_EQ(wu::addr::parse_node_service("127.0.0.1", "65535", 0, FI_ADDR_STR, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://127.0.0.1:65535");
}

TEST(AddrNodeService, NullNode)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_node_service(nullptr, "99", FI_SOURCE, FI_FORMAT_UNSPEC, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://0.0.0.0:99");
	ASSERT_EQ(wu::addr::parse_node_service(nullptr, "99", 0, FI_FORMAT_UNSPEC, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://127.0.0.1:99");
	ASSERT_EQ(wu::addr::parse_node_service(nullptr, "99", FI_SOURCE, FI_SOCKADDR_IN6, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in6://[::]:99");
	ASSERT_EQ(wu::addr::parse_node_service(nullptr, "99", 0, FI_SOCKADDR_IN6, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in6://[::1]:99");
	EXPECT_EQ(wu::addr::parse_node_service(nullptr, nullptr, 0, FI_FORMAT_UNSPEC, p), -FI_EINVAL);
}

TEST(AddrNodeService, AddrStrNode)
{
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_node_service("fi_sockaddr_in://1.2.3.4:5", nullptr, 0, FI_ADDR_STR, p), 0);
	EXPECT_EQ(p.format, FI_SOCKADDR_IN);
	ASSERT_EQ(wu::addr::parse_node_service("fi_sockaddr_in://1.2.3.4", "77", 0, FI_SOCKADDR_IN, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://1.2.3.4:77");
	ASSERT_EQ(wu::addr::parse_node_service("fi_sockaddr_in6://[::1]:5", nullptr, 0, FI_SOCKADDR, p), 0);
	ASSERT_EQ(wu::addr::parse_node_service("fi_addr_psmx2://1:2", nullptr, 0, FI_ADDR_PSMX2, p), 0);
	EXPECT_EQ(p.format, FI_ADDR_PSMX2);
	EXPECT_EQ(wu::addr::parse_node_service("fi_sockaddr_in://1.2.3.4:5", "6", 0, FI_ADDR_STR, p), -FI_EINVAL);
	EXPECT_EQ(wu::addr::parse_node_service("fi_addr_psmx2://1:2", "6", 0, FI_ADDR_STR, p), -FI_EINVAL);
	EXPECT_EQ(wu::addr::parse_node_service("fi_sockaddr_in://1.2.3.4:5", nullptr, 0, FI_SOCKADDR_IN6, p),
		  -FI_ENODATA);
	EXPECT_EQ(wu::addr::parse_node_service("fi_addr_psmx2://1:2", nullptr, 0, FI_SOCKADDR_IN, p), -FI_ENODATA);
	EXPECT_EQ(wu::addr::parse_node_service("fi_sockaddr_in://1.2.3.4:99999", nullptr, 0, FI_ADDR_STR, p),
		  -FI_EINVAL);
	EXPECT_EQ(wu::addr::parse_node_service("1.2.3.4", nullptr, 0, FI_ADDR_PSMX2, p), -FI_ENOSYS);
}

TEST(AddrNodeService, Bad)
{
	struct {
		const char *node, *service;
		uint64_t flags;
		uint32_t format;
		int ret;
	} cases[] = {
		{"1.2.3.256", "1", FI_NUMERICHOST, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"localhost", "1", FI_NUMERICHOST, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "65536", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "12x", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "-1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "no-such-service-xyz", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3.4", "1", 0, FI_SOCKADDR_IN6, -FI_ENODATA},
		{"::1", "1", 0, FI_SOCKADDR_IN, -FI_ENODATA},
		{"fe80::1%", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"fe80::1%no-such-if0", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"[::1]", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"bad host", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"host..x", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
		{"1.2.3", "1", 0, FI_FORMAT_UNSPEC, -FI_EINVAL},
	};
	for (auto c : cases) {
		SCOPED_TRACE(std::string(c.node ? c.node : "(null)") + " / " + (c.service ? c.service : "(null)"));
		parsed_addr p;
		p.format = 4242;
		EXPECT_EQ(wu::addr::parse_node_service(c.node, c.service, c.flags, c.format, p), c.ret);
		EXPECT_EQ(p.format, 4242u);
	}
	std::string longnode(2000, 'a');
	parsed_addr p;
	EXPECT_EQ(wu::addr::parse_node_service(longnode.c_str(), "1", 0, FI_FORMAT_UNSPEC, p), -FI_EINVAL);
}

TEST(AddrNodeService, LocalhostAndServiceName)
{
	/* Resolved from /etc/hosts and /etc/services: no network needed. */
	parsed_addr p;
	ASSERT_EQ(wu::addr::parse_node_service("localhost", "7", 0, FI_SOCKADDR_IN, p), 0);
	EXPECT_EQ(print(p), "fi_sockaddr_in://127.0.0.1:7");
	if (wu::addr::parse_node_service("127.0.0.1", "ssh", 0, FI_SOCKADDR_IN, p) == 0)
		EXPECT_EQ(print(p), "fi_sockaddr_in://127.0.0.1:22");
	else
		GTEST_SKIP() << "no 'ssh' entry in the services database";
}

/* ---- insertsym arithmetic ---- */

TEST(AddrNext, Table)
{
	struct {
		const char *in, *out;
	} cases[] = {
		{"10.0.0.1", "10.0.0.2"},
		{"10.0.0.255", "10.0.1.0"},
		{"10.0.255.255", "10.1.0.0"},
		{"10.255.255.255", "11.0.0.0"},
		{"0.0.0.0", "0.0.0.1"},
		{"::1", "::2"},
		{"2001:db8::ffff", "2001:db8::1:0"},
		{"fe80::ffff:ffff:ffff:ffff", "fe80:0:0:1::"},
		{"fe80::1%lo", "fe80::2%lo"},
		{"fe80::ff%3", "fe80::100%3"},
		{"host09", "host10"},
		{"node099", "node100"},
		{"host99", "host100"},
		{"host9", "host10"},
		{"host0", "host1"},
		{"n1-rack07", "n1-rack08"},
		{"7", "8"},
		{"9", "10"},
		{"node-1.2", "node-1.3"},
	};
	for (auto c : cases) {
		SCOPED_TRACE(c.in);
		std::string s = c.in;
		ASSERT_EQ(wu::addr::next_node(s), 0);
		EXPECT_EQ(s, c.out);
	}
}

TEST(AddrNext, Errors)
{
	std::string s = "host";
	EXPECT_EQ(wu::addr::next_node(s), -FI_EINVAL);
	EXPECT_EQ(s, "host");
	s = "host9x";
	EXPECT_EQ(wu::addr::next_node(s), -FI_EINVAL);
	s = "";
	EXPECT_EQ(wu::addr::next_node(s), -FI_EINVAL);
	s = "255.255.255.255";
	EXPECT_EQ(wu::addr::next_node(s), -FI_EOVERFLOW);
	s = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
	EXPECT_EQ(wu::addr::next_node(s), -FI_EOVERFLOW);
	EXPECT_EQ(s, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");

	/* In-place form: widening needs one more byte. */
	char buf[7] = "host99";
	EXPECT_EQ(wu::addr::next_node(buf, sizeof buf), -FI_ETOOSMALL);
	EXPECT_STREQ(buf, "host99");
	char big[8] = "host99";
	EXPECT_EQ(wu::addr::next_node(big, sizeof big), 0);
	EXPECT_STREQ(big, "host100");
	char unterminated[4] = {'h', '1', '2', '3'};
	EXPECT_EQ(wu::addr::next_node(unterminated, sizeof unterminated), -FI_EINVAL);
}

TEST(AddrNext, Walk)
{
	/* 300 steps from 10.0.0.250 and host0998: carries and widening. */
	std::string ip = "10.0.0.250", host = "host0998";
	for (int i = 0; i < 300; i++) {
		ASSERT_EQ(wu::addr::next_node(ip), 0);
		ASSERT_EQ(wu::addr::next_node(host), 0);
	}
	EXPECT_EQ(ip, "10.0.2.38");
	EXPECT_EQ(host, "host1298");
}

TEST(AddrNext, Service)
{
	std::string s = "99";
	ASSERT_EQ(wu::addr::next_service(s), 0);
	EXPECT_EQ(s, "100");
	s = "0099";
	ASSERT_EQ(wu::addr::next_service(s), 0);
	EXPECT_EQ(s, "0100");
	s = "65534";
	ASSERT_EQ(wu::addr::next_service(s), 0);
	EXPECT_EQ(s, "65535");
	EXPECT_EQ(wu::addr::next_service(s), -FI_EOVERFLOW);
	s = "http";
	EXPECT_EQ(wu::addr::next_service(s), -FI_EINVAL);
}

/* ---- helpers ---- */

TEST(AddrEscape, Bounded)
{
	char buf[32];
	EXPECT_EQ(wu::addr::escape(std::string_view("a\"b\\c\n\xff", 7), buf, sizeof buf), 15u);
	EXPECT_STREQ(buf, "a\\\"b\\\\c\\x0a\\xff");
	std::string nul("x\0y", 3);
	wu::addr::escape(nul, buf, sizeof buf);
	EXPECT_STREQ(buf, "x\\x00y");
	std::string longs(100, 'z');
	size_t n = wu::addr::escape(longs, buf, sizeof buf);
	EXPECT_EQ(n, strlen(buf));
	EXPECT_LT(n, sizeof buf);
	EXPECT_EQ(std::string(buf).substr(n - 3), "...");
	EXPECT_EQ(wu::addr::escape("abc", buf, 0), 0u);
	wu::addr::escape("abc", buf, 1);
	EXPECT_STREQ(buf, "");
}

TEST(AddrScheme, Names)
{
	EXPECT_STREQ(wu::addr::scheme_name(FI_SOCKADDR_IN), "fi_sockaddr_in");
	EXPECT_STREQ(wu::addr::scheme_name(FI_ADDR_EFA), "fi_addr_efa");
	EXPECT_EQ(wu::addr::scheme_name(FI_ADDR_STR), nullptr);
	EXPECT_EQ(wu::addr::scheme_name(9999), nullptr);
}

} // namespace
