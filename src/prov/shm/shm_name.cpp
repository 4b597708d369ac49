/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of shm endpoints (shm_addr.h): rank names keyed with the user's
 * secret, generated names with random suffixes. */
#include "prov/shm/shm_addr.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <rdma/fi_errno.h>

#include "core/hash.h"
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
		unsigned char mac[EVP_MAX_MD_SIZE];
		unsigned int ml = 0;
		if (!HMAC(EVP_sha256(), k.b, int(user_key::key_len), reinterpret_cast<const unsigned char *>(in.data()),
			  in.size(), mac, &ml) ||
		    ml * 2 < keyed_tag_len)
			return false;
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

} // namespace wu::shm
