/* SPDX-License-Identifier: BSD-3-Clause */
/* The wireup provider's addresses (src/prov/wireup/wx_addr.h): encode and
 * decode round trips, every malformed variant rejected, the 64-byte
 * limit, the AV format's parts and text. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "av/av.h"
#include "prov/wireup/wx_addr.h"

namespace wx = wu::wireup;

namespace {

sockaddr_in v4(const char *ip, uint16_t port)
{
	sockaddr_in s{};
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

sockaddr_in6 v6(const char *ip, uint16_t port)
{
	sockaddr_in6 s{};
	s.sin6_family = AF_INET6;
	s.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &s.sin6_addr);
	return s;
}

std::vector<unsigned char> enc(const void *tcp, size_t tcp_len, const char *shm, uint64_t host = 0x1122334455667788ULL)
{
	wx::parts p;
	p.host = host;
	p.tcp = tcp;
	p.tcp_len = tcp ? tcp_len : 0;
	p.shm = shm;
	p.shm_len = shm ? strlen(shm) : 0;
	std::vector<unsigned char> b(wx::addr_max);
	long n = wx::encode(p, b.data(), b.size());
	EXPECT_GT(n, 0);
	b.resize(n > 0 ? size_t(n) : 0);
	return b;
}

long dec(const std::vector<unsigned char> &b, wx::parts *p = nullptr)
{
	wx::parts q;
	return wx::decode(b.data(), b.size(), p ? p : &q);
}

std::string print(const std::vector<unsigned char> &b)
{
	char buf[128];
	ssize_t n = wx::format()->print(b.data(), b.size(), buf, sizeof buf);
	return n > 0 ? std::string(buf) : "error";
}

} // namespace

TEST(wx_addr, round_trip_ipv4_with_shm)
{
	sockaddr_in s = v4("10.1.2.3", 4567);
	auto b = enc(&s, sizeof s, "wu0.123.4");
	ASSERT_EQ(b.size(), wx::addr_max); /* every address is padded to 64 bytes */
	EXPECT_EQ(b[0], 0x57);
	EXPECT_EQ(b[1], 1);
	EXPECT_EQ(b[2], 16);
	EXPECT_EQ(b[3], 9);
	EXPECT_EQ(b[8], 0x88); /* little-endian host id */
	wx::parts p;
	ASSERT_EQ(dec(b, &p), long(b.size()));
	EXPECT_EQ(p.host, 0x1122334455667788ULL);
	ASSERT_EQ(p.tcp_len, sizeof s);
	EXPECT_EQ(memcmp(p.tcp, &s, sizeof s), 0);
	EXPECT_EQ(std::string(p.shm, p.shm_len), "wu0.123.4");
	EXPECT_EQ(print(b), "fi_wx://10.1.2.3:4567/1122334455667788/wu0.123.4");
}

TEST(wx_addr, round_trip_ipv6_and_single_part)
{
	sockaddr_in6 s = v6("fe80::1", 80);
	auto b = enc(&s, sizeof s, nullptr, 1);
	wx::parts p;
	ASSERT_EQ(dec(b, &p), long(wx::addr_max));
	EXPECT_EQ(p.shm, nullptr);
	EXPECT_EQ(p.shm_len, 0u);
	EXPECT_EQ(memcmp(p.tcp, &s, sizeof s), 0);
	EXPECT_EQ(print(b), "fi_wx://[fe80::1]:80/0000000000000001/");

	auto c = enc(nullptr, 0, "only-shm_1");
	ASSERT_EQ(dec(c, &p), long(wx::addr_max));
	EXPECT_EQ(p.tcp, nullptr);
	EXPECT_EQ(p.tcp_len, 0u);
	EXPECT_EQ(print(c), "fi_wx://" "/1122334455667788/only-shm_1");

	sockaddr_in s4 = v4("127.0.0.1", 1);
	auto d = enc(&s4, sizeof s4, nullptr);
	ASSERT_EQ(dec(d, &p), long(wx::addr_max));
	/* Padding must be zero: a byte after the parts is a corrupt address. */
	d[wx::hdr_len + sizeof s4 + 3] = 1;
	EXPECT_EQ(dec(d, &p), -FI_EINVAL);
}

TEST(wx_addr, encode_refuses_malformed_parts)
{
	char buf[wx::addr_max];
	wx::parts p;
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL); /* neither part */
	sockaddr_in s = v4("1.2.3.4", 5);
	p.tcp = &s;
	p.tcp_len = sizeof(sockaddr_in6); /* family says 16 */
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL);
	p.tcp_len = 15;
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL);
	sockaddr_in bad = s;
	bad.sin_family = AF_UNIX;
	p.tcp = &bad;
	p.tcp_len = sizeof bad;
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL);
	p.tcp = &s;
	p.tcp_len = sizeof s;
	p.shm = "bad/name";
	p.shm_len = 8;
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL);
	p.shm = ".hidden";
	p.shm_len = 7;
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_EINVAL);
	p.shm = "ok";
	p.shm_len = 2;
	EXPECT_EQ(wx::encode(p, buf, 10), -FI_ETOOSMALL);
	EXPECT_EQ(wx::encode(p, nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(wx::encode(p, buf, wx::addr_max - 1), -FI_ETOOSMALL); /* the padding is written too */
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), long(wx::addr_max));
}

TEST(wx_addr, longest_address_is64_bytes)
{
	sockaddr_in6 s = v6("::1", 9);
	std::string name(wx::addr_max - wx::hdr_len - sizeof s, 'n'); /* 20 */
	auto b = enc(&s, sizeof s, name.c_str());
	ASSERT_EQ(b.size(), wx::addr_max);
	EXPECT_EQ(dec(b), long(wx::addr_max));
	/* One more character does not fit. */
	std::string longer = name + "n";
	wx::parts p;
	p.tcp = &s;
	p.tcp_len = sizeof s;
	p.shm = longer.c_str();
	p.shm_len = longer.size();
	unsigned char buf[128];
	EXPECT_EQ(wx::encode(p, buf, sizeof buf), -FI_ETOOSMALL);
	/* Nor does a header claiming it. */
	std::vector<unsigned char> big(b);
	big[3] = uint8_t(longer.size());
	big.push_back('n');
	EXPECT_EQ(dec(big), -FI_EINVAL);
}

TEST(wx_addr, every_truncation_is_rejected)
{
	sockaddr_in6 s = v6("2001:db8::7", 7000);
	auto b = enc(&s, sizeof s, "wu0.99.1");
	for (size_t n = 0; n < b.size(); n++) {
		std::vector<unsigned char> t(b.begin(), b.begin() + long(n));
		wx::parts p;
		EXPECT_EQ(wx::decode(t.data(), n, &p), -FI_EINVAL) << n;
	}
	/* Extra bytes after the address are not read and not counted. */
	std::vector<unsigned char> more(b);
	more.push_back(0xee);
	EXPECT_EQ(dec(more), long(b.size()));
}

TEST(wx_addr, every_header_field_is_checked)
{
	sockaddr_in s = v4("10.0.0.1", 1);
	const auto good = enc(&s, sizeof s, "abc");
	auto bad = [&](auto edit) {
		auto b = good;
		edit(b);
		return dec(b);
	};
	EXPECT_EQ(bad([](auto &b) { b[0] = 0x58; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[1] = 2; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[1] = 0; }), -FI_EINVAL);
	for (int i = 4; i < 8; i++)
		EXPECT_EQ(bad([i](auto &b) { b[i] = 1; }), -FI_EINVAL) << i;
	/* tcp_len other than 0/16/28, or not matching the family. */
	EXPECT_EQ(bad([](auto &b) { b[2] = 15; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[2] = 28; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[16] = AF_INET6; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[16] = 0; }), -FI_EINVAL);
	/* Neither part. */
	EXPECT_EQ(bad([](auto &b) { b[2] = 0, b[3] = 0; }), -FI_EINVAL);
	/* Name characters. */
	EXPECT_EQ(bad([](auto &b) { b[32] = '/'; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[32] = '.'; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[33] = '\0'; }), -FI_EINVAL);
	EXPECT_EQ(bad([](auto &b) { b[34] = char(0xc3); }), -FI_EINVAL);
	/* A shm_len past the data. */
	EXPECT_EQ(bad([](auto &b) { b[3] = 4; }), -FI_EINVAL);
	EXPECT_EQ(dec(good), long(good.size()));
	wx::parts p;
	EXPECT_EQ(wx::decode(nullptr, 64, &p), -FI_EINVAL);
	EXPECT_EQ(wx::decode(good.data(), good.size(), nullptr), -FI_EINVAL);
}

TEST(wx_addr, host_id_is_stable_and_non_zero)
{
	uint64_t a = wx::host_id();
	EXPECT_EQ(wx::host_id(), a);
	EXPECT_NE(a, 0u);
}

TEST(wx_addr, format_parts_and_attributes)
{
	const wu::av::av_format *f = wx::format();
	ASSERT_NE(f, nullptr);
	EXPECT_STREQ(f->name, "wireup");
	EXPECT_EQ(f->addr_format, uint32_t(FI_FORMAT_UNSPEC));
	EXPECT_EQ(f->max_addrlen, 64u);
	EXPECT_LE(f->max_addrlen, wu::av::max_blob);
	EXPECT_EQ(f->text_format, 0u);
	ASSERT_NE(f->part, nullptr);
	sockaddr_in s = v4("192.168.0.1", 777);
	auto b = enc(&s, sizeof s, "wu0.1.2");
	EXPECT_EQ(f->validate(b.data(), b.size()), ssize_t(b.size()));
	EXPECT_EQ(f->validate(b.data(), b.size() - 1), -FI_EINVAL);
	unsigned char out[64];
	ASSERT_EQ(f->part(b.data(), b.size(), wx::part_tcp, out, sizeof out), sizeof s);
	EXPECT_EQ(memcmp(out, &s, sizeof s), 0);
	ASSERT_EQ(f->part(b.data(), b.size(), wx::part_shm, out, sizeof out), 17u);
	EXPECT_STREQ(reinterpret_cast<char *>(out), "fi_shm://wu0.1.2");
	/* Truncated: the full length is still reported. */
	char small[4];
	EXPECT_EQ(f->part(b.data(), b.size(), wx::part_shm, small, sizeof small), 17u);
	EXPECT_EQ(std::string(small, 4), "fi_s");
	EXPECT_EQ(f->part(b.data(), b.size(), 2, out, sizeof out), 0u);
	auto only_shm = enc(nullptr, 0, "x");
	EXPECT_EQ(f->part(only_shm.data(), only_shm.size(), wx::part_tcp, out, sizeof out), 0u);
	auto only_tcp = enc(&s, sizeof s, nullptr);
	EXPECT_EQ(f->part(only_tcp.data(), only_tcp.size(), wx::part_shm, out, sizeof out), 0u);
	EXPECT_EQ(f->part(b.data(), 10, wx::part_tcp, out, sizeof out), 0u);
	/* Printing truncates and says the size needed. */
	char text[10];
	ssize_t need = f->print(b.data(), b.size(), text, sizeof text);
	EXPECT_EQ(need, ssize_t(strlen("fi_wx://192.168.0.1:777/1122334455667788/wu0.1.2") + 1));
	EXPECT_STREQ(text, "fi_wx://1");
	EXPECT_EQ(f->print(b.data(), b.size(), nullptr, 0), need);
	EXPECT_EQ(f->print(b.data(), 3, text, sizeof text), -FI_EINVAL);
}
