/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup's sockaddr mode (wx_addr.h, issue 28): hints asking for
 * FI_SOCKADDR* (fabtests' fi_av_test asks for FI_SOCKADDR) get entries
 * whose addresses are the tcp part alone; the AV of such a domain takes
 * sockaddrs, and its endpoints name themselves by their tcp sockaddr and
 * reach every peer through tcp. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "prov/wireup/wireup.h"
#include "../common/prov_fixture.h"

namespace {

using namespace wu::test;

/* fabtests' fi_av_test hints (unit/av_test.c main), for wireup. */
fi_info *av_test_hints(uint32_t addr_format)
{
	fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup("wireup");
	h->mode = ~uint64_t{0};
	h->domain_attr->mode = ~uint64_t{0};
	h->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->addr_format = addr_format;
	h->ep_attr->type = FI_EP_RDM;
	return h;
}

int getinfo_sock(uint32_t addr_format, fi_info **out)
{
	fi_info *h = av_test_hints(addr_format);
	int r = fi_getinfo(FI_VERSION(1, 13), "127.0.0.1", nullptr, FI_SOURCE, h, out);
	fi_freeinfo(h);
	return r;
}

/* prov_env's tweak: the domain opened in sockaddr mode, from the entry
 * fi_getinfo gives for FI_SOCKADDR_IN hints. */
void sockaddr_mode(fi_info *i)
{
	fi_info *got = nullptr;
	ASSERT_EQ(getinfo_sock(FI_SOCKADDR_IN, &got), 0);
	free(i->src_addr);
	i->src_addr = got->src_addr;
	i->src_addrlen = got->src_addrlen;
	i->addr_format = got->addr_format;
	got->src_addr = nullptr;
	got->src_addrlen = 0;
	fi_freeinfo(got);
}

} // namespace

TEST(wireup_sockaddr, fi_av_test_hints_get_sockaddr_entries)
{
	for (uint32_t f : {uint32_t(FI_SOCKADDR), uint32_t(FI_SOCKADDR_IN)}) {
		fi_info *got = nullptr;
		ASSERT_EQ(getinfo_sock(f, &got), 0) << "addr_format " << f;
		for (fi_info *i = got; i; i = i->next) {
			EXPECT_STREQ(i->fabric_attr->prov_name, "wireup");
			EXPECT_EQ(i->addr_format, uint32_t(FI_SOCKADDR_IN));
			ASSERT_EQ(i->src_addrlen, sizeof(sockaddr_in));
			sockaddr_in sin;
			memcpy(&sin, i->src_addr, sizeof sin);
			EXPECT_EQ(sin.sin_family, AF_INET);
			EXPECT_EQ(ntohl(sin.sin_addr.s_addr), uint32_t(INADDR_LOOPBACK));
		}
		fi_freeinfo(got);
	}
	/* Formats wireup has no form for still find nothing. */
	fi_info *got = nullptr;
	EXPECT_EQ(getinfo_sock(FI_ADDR_STR, &got), -FI_ENODATA);
	EXPECT_EQ(getinfo_sock(FI_ADDR_PSMX2, &got), -FI_ENODATA);
}

TEST(wireup_sockaddr, endpoints_name_themselves_by_sockaddr_and_talk_over_tcp)
{
	prov_env env("wireup", FI_VERSION(1, 17), sockaddr_mode);
	ASSERT_NE(env.domain, nullptr);
	rdm_ep a(env), b(env);
	ASSERT_EQ(a.name.size(), sizeof(sockaddr_in)) << "fi_getname gives the tcp sockaddr";
	sockaddr_in sb;
	memcpy(&sb, b.name.data(), sizeof sb);
	EXPECT_EQ(sb.sin_family, AF_INET);
	EXPECT_NE(sb.sin_port, 0);
	fi_addr_t to_b = a.insert(b);
	ASSERT_NE(to_b, FI_ADDR_NOTAVAIL);
	/* The AV takes sockaddrs: a zeroed one (no family) is refused. */
	sockaddr_in zero{};
	fi_addr_t bad = 0;
	EXPECT_EQ(fi_av_insert(a.av, &zero, 1, &bad, 0, nullptr), 0);
	char out[8] = "sockad", in[8] = {};
	int cr, cs;
	ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &cr), 0);
	ASSERT_EQ(fi_send(a.ep, out, sizeof out, nullptr, to_b, &cs), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_STREQ(in, "sockad");
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {a.rx, b.tx, b.rx}), 1);
	wu::wireup::route_stats s;
	ASSERT_EQ(wu::wireup::stats_of(a.ep, &s), 0);
	EXPECT_EQ(s.tcp, 1u) << "a sockaddr peer goes through tcp";
	EXPECT_EQ(s.shm, 0u);
	EXPECT_EQ(s.shm_ep, nullptr) << "no shm sub-endpoint in sockaddr mode";
}
