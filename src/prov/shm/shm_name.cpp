/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of shm endpoints (shm_addr.h): rank names keyed with the user's
 * secret, generated names with random suffixes. */
#include "prov/shm/shm_addr.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/user_key.h"
#include "prov/shm/shm.h"

namespace wu::shm {
namespace {

/* The job's part of a rank name: the job id itself when short and made of
 * name characters, else a hash of it (PMIx namespaces hold '@' and can be
 * long). */
std::string job_tag(const char *job)
{
	size_t n = strlen(job);
	if (n <= 16 && valid_name(job, n))
		return job;
	char hex[20];
	snprintf(hex, sizeof hex, "h%016llx", (unsigned long long)hash_bytes(job, n));
	return hex;
}

const char *job_env()
{
	const char *j = getenv("FI_SHM_JOB");
	if (j && *j)
		return j;
	j = getenv("PMIX_NAMESPACE");
	return j && *j ? j : nullptr;
}

} // namespace

bool keyed_tag(const char *what, const void *msg, size_t len, char (&hex)[keyed_tag_len + 1]) noexcept
{
	try {
		/* The user's key (core/user_key.h): every process of this user on
		 * the node derives the same names, no other user can. */
		const user_key::key &k = user_key::of_process(prov_desc());
		if (!k.set)
			return false;
		std::string in = std::string("wireup/shm/") + what;
		in += '\0';
		in.append(static_cast<const char *>(msg), len);
		unsigned char mac[crypto::sha256_len];
		static_assert(sizeof mac * 2 >= keyed_tag_len);
		crypto::hmac_sha256(k.b, user_key::key_len, in.data(), in.size(), mac);
		for (size_t i = 0; i < keyed_tag_len; i++)
			hex[i] = "0123456789abcdef"[(mac[i / 2] >> (i % 2 ? 0 : 4)) & 15];
		hex[keyed_tag_len] = 0;
		return true;
	} catch (...) {
		return false;
	}
}

long rank_addr(const char *job, uint32_t rank, char *buf, size_t buflen) noexcept
{
	if (!job || !*job)
		return -FI_EINVAL;
	try {
		std::string id = std::string(job) + '\0' + std::to_string(rank);
		char tag[keyed_tag_len + 1];
		std::string a = std::string(scheme) + "wu" + std::to_string(getuid());
		if (keyed_tag("rank", id.data(), id.size(), tag))
			a += ".r" + std::to_string(rank) + "." + tag;
		else
			a += ".j" + job_tag(job) + "." + std::to_string(rank);
		if (a.size() + 1 > buflen || !buf)
			return -FI_ETOOSMALL;
		memcpy(buf, a.c_str(), a.size() + 1);
		return long(a.size() + 1);
	} catch (...) {
		return -FI_ENOMEM;
	}
}

std::string process_name()
{
	return std::to_string(getpid());
}

std::string rank_name()
{
	const char *job = job_env();
	const char *rank = getenv("PMIX_RANK");
	char *end = nullptr;
	unsigned long r = rank && *rank ? strtoul(rank, &end, 10) : 0;
	if (job && end && !*end && r <= UINT32_MAX) {
		char buf[addr_max];
		if (rank_addr(job, uint32_t(r), buf, sizeof buf) > 0)
			return buf + scheme_len;
	}
	return "";
}

std::string generate_name(bool try_rank)
{
	if (try_rank) {
		std::string r = rank_name();
		if (!r.empty())
			return r;
	}
	/* Random, not a counter: another user must not be able to create the
	 * names our next endpoints will take (issue 32). */
	uint64_t r = 0;
	if (getrandom(&r, sizeof r, 0) != sizeof r) {
		timespec ts{};
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = mix64(uint64_t(ts.tv_nsec) ^ uint64_t(ts.tv_sec) << 30 ^ uint64_t(getpid()) << 44);
	}
	char hex[17];
	snprintf(hex, sizeof hex, "%016" PRIx64, r);
	return "wu" + std::to_string(getuid()) + "." + std::to_string(getpid()) + "." + hex;
}

std::string port_name(uint16_t port)
{
	std::string p = std::to_string(port);
	std::string n = "wu" + std::to_string(getuid()) + ".p" + p;
	char tag[keyed_tag_len + 1];
	if (keyed_tag("port", p.data(), p.size(), tag))
		n += std::string(".") + tag;
	return n;
}

int service_port(const char *service, uint16_t *port) noexcept
{
	if (!service || !*service || strlen(service) > 5)
		return -FI_EINVAL;
	unsigned v = 0;
	for (const char *c = service; *c; c++) {
		if (*c < '0' || *c > '9')
			return -FI_EINVAL;
		v = v * 10 + unsigned(*c - '0');
	}
	if (v == 0 || v > 65535)
		return -FI_EINVAL;
	*port = uint16_t(v);
	return 0;
}

int node_is_here(const char *node, bool quiet) noexcept
{
	if (!node || !*node)
		return 0;
	try {
		std::string n = node;
		if (n.size() > 2 && n.front() == '[' && n.back() == ']')
			n = n.substr(1, n.size() - 2);
		addrinfo hints{}, *res = nullptr;
		hints.ai_socktype = SOCK_DGRAM;
		int rc = getaddrinfo(n.c_str(), nullptr, &hints, &res);
		if (rc || !res) {
			if (!quiet)
				WU_WARN(prov_desc(), FI_LOG_CORE, "node \"%.64s\" does not resolve (%s); shm reaches only this host\n",
					node, gai_strerror(rc));
			if (res)
				freeaddrinfo(res);
			return -FI_ENODATA;
		}
		/* An address of this host is one a socket here can bind. */
		bool here = false;
		for (addrinfo *a = res; a && !here; a = a->ai_next) {
			if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
				continue;
			unique_fd fd(socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
			sockaddr_storage ss{};
			memcpy(&ss, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof ss));
			if (a->ai_family == AF_INET)
				reinterpret_cast<sockaddr_in *>(&ss)->sin_port = 0;
			else
				reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port = 0;
			here = fd.get() >= 0 && bind(fd.get(), reinterpret_cast<sockaddr *>(&ss), a->ai_addrlen) == 0;
		}
		freeaddrinfo(res);
		if (!here && !quiet)
			WU_WARN(prov_desc(), FI_LOG_CORE, "node \"%.64s\" is not this host; shm reaches only this host\n", node);
		return here ? 0 : -FI_ENODATA;
	} catch (...) {
		return -FI_ENOMEM;
	}
}

int service_addr(const char *node, const char *service, std::string &out) noexcept
{
	uint16_t port = 0;
	if (service_port(service, &port)) {
		WU_WARN(prov_desc(), FI_LOG_CORE, "service \"%.16s\" is not a port number 1-65535 (it names a shm endpoint on this host)\n",
			service ? service : "(null)");
		return -FI_EINVAL;
	}
	if (int r = node_is_here(node, false))
		return r;
	try {
		out = std::string(scheme) + port_name(port);
		return 0;
	} catch (...) {
		return -FI_ENOMEM;
	}
}

} // namespace wu::shm
