/* SPDX-License-Identifier: BSD-3-Clause */
/* AV suites: a real tcp domain (fi_getinfo prov_name "tcp", fi_fabric,
 * fi_domain) and helpers to build sockaddrs and open AVs. */
#ifndef WU_TEST_AV_FIXTURE_H
#define WU_TEST_AV_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "av/av.h"
#include "eq/eq.h"

#include "../util/fabric_open.h"

namespace wu::test {

inline sockaddr_in v4(const char *ip, uint16_t port)
{
	sockaddr_in s{};
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

inline sockaddr_in6 v6(const char *ip, uint16_t port)
{
	sockaddr_in6 s{};
	s.sin6_family = AF_INET6;
	s.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &s.sin6_addr);
	return s;
}

inline std::string ip_port(const void *addr)
{
	char buf[64];
	sa_family_t fam;
	memcpy(&fam, addr, sizeof fam);
	if (fam == AF_INET) {
		sockaddr_in s;
		memcpy(&s, addr, sizeof s);
		inet_ntop(AF_INET, &s.sin_addr, buf, sizeof buf);
		return std::string(buf) + ":" + std::to_string(ntohs(s.sin_port));
	}
	sockaddr_in6 s;
	memcpy(&s, addr, sizeof s);
	inet_ntop(AF_INET6, &s.sin6_addr, buf, sizeof buf);
	return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s.sin6_port));
}

/* A tcp fabric + domain opened through the public API. */
class tcp_domain {
public:
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;

	/* addr_format: the domain's format; tweak: edits info before fi_domain. */
	explicit tcp_domain(uint32_t addr_format = FI_SOCKADDR_IN, void (*tweak)(fi_info *) = nullptr)
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup("tcp");
		hints->ep_attr->type = FI_EP_RDM;
		fi_info *got = nullptr;
		int r = fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, hints, &got);
		fi_freeinfo(hints);
		if (r || !got) {
			ADD_FAILURE() << "fi_getinfo(tcp): " << fi_strerror(-r);
			return;
		}
		/* Prefer an IPv4 entry; the AV format is what the test asks for. */
		fi_info *pick = got;
		for (fi_info *i = got; i; i = i->next)
			if (i->addr_format == FI_SOCKADDR_IN) {
				pick = i;
				break;
			}
		info = fi_dupinfo(pick);
		fi_freeinfo(got);
		info->addr_format = addr_format;
		if (tweak)
			tweak(info);
		open_fabric_domain(info, &fabric, &domain);
	}
	~tcp_domain()
	{
		close_fabric_domain(fabric, domain);
		fi_freeinfo(info);
	}

	fid_av *open(fi_av_attr attr, int expect = 0)
	{
		fid_av *av = nullptr;
		EXPECT_EQ(fi_av_open(domain, &attr, &av, this), expect);
		last_attr = attr;
		return av;
	}
	fid_av *open_type(fi_av_type t, uint64_t flags = 0)
	{
		fi_av_attr a{};
		a.type = t;
		a.flags = flags;
		return open(a);
	}
	fid_eq *open_eq()
	{
		fi_eq_attr ea{};
		ea.size = 64;
		ea.wait_obj = FI_WAIT_NONE;
		fid_eq *eq = nullptr;
		int r = fi_eq_open(fabric, &ea, &eq, nullptr);
		if (r == -FI_ENOSYS) /* fabric not wired to src/eq yet: same code, called directly */
			r = wu::eq_open(fabric, fabric->api_version, &ea, &eq, nullptr);
		EXPECT_EQ(r, 0);
		return eq;
	}
	fi_av_attr last_attr{};
};

inline void close_av(fid_av *av)
{
	if (av) {
		EXPECT_EQ(fi_close(&av->fid), 0);
	}
}

inline std::string lookup_str(fid_av *av, fi_addr_t a)
{
	sockaddr_in6 buf{};
	size_t len = sizeof buf;
	int r = fi_av_lookup(av, a, &buf, &len);
	if (r)
		return "error " + std::to_string(r);
	return ip_port(&buf);
}

} // namespace wu::test

#endif
