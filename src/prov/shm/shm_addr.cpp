#include "prov/shm/shm_addr.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <rdma/fi_errno.h>

#include "core/hash.h"

namespace wu::shm {
namespace {

bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

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

bool valid_name(const char *s, size_t n) noexcept
{
	if (!s || n == 0 || n > name_max || s[0] == '.')
		return false;
	for (size_t k = 0; k < n; k++)
		if (!name_char(s[k]))
			return false;
	return true;
}

long addr_len(const void *addr, size_t avail) noexcept
{
	if (!addr)
		return -FI_EINVAL;
	auto *s = static_cast<const char *>(addr);
	size_t n = strnlen(s, avail < addr_max ? avail : addr_max);
	if (n == (avail < addr_max ? avail : addr_max) || n <= scheme_len ||
	    strncmp(s, scheme, scheme_len) != 0 || !valid_name(s + scheme_len, n - scheme_len))
		return -FI_EINVAL;
	return long(n + 1);
}

long rank_addr(const char *job, uint32_t rank, char *buf, size_t buflen) noexcept
{
	if (!job || !*job)
		return -FI_EINVAL;
	try {
		std::string a = std::string(scheme) + "wu" + std::to_string(getuid()) + ".j" + job_tag(job) + "." +
				std::to_string(rank);
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

std::string generate_name(bool try_rank)
{
	if (try_rank) {
		const char *job = job_env();
		const char *rank = getenv("PMIX_RANK");
		char *end = nullptr;
		unsigned long r = rank && *rank ? strtoul(rank, &end, 10) : 0;
		if (job && end && !*end && r <= UINT32_MAX) {
			char buf[addr_max];
			if (rank_addr(job, uint32_t(r), buf, sizeof buf) > 0)
				return buf + scheme_len;
		}
	}
	static std::atomic<unsigned> counter{0};
	return "wu" + std::to_string(getuid()) + "." + std::to_string(getpid()) + "." +
	       std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

} // namespace wu::shm
