/* Addresses of the shm provider.  An endpoint's address is the FI_ADDR_STR
 * text "fi_shm://<name>", where <name> is its region's name in /dev/shm
 * (characters of [A-Za-z0-9._-]).  Names are given (hints->src_addr, or
 * the node of fi_getinfo with FI_SOURCE) or generated:
 *  - under a job (FI_SHM_JOB, else the PMIx namespace PMIX_NAMESPACE) with
 *    a rank (PMIX_RANK), the first endpoint of the process takes the name
 *    computed from (uid, job, rank): peers on a node find each other
 *    without exchanging names (rank_addr below);
 *  - otherwise, and for every later endpoint, "wu<uid>.<pid>.<counter>". */
#ifndef WU_PROV_SHM_SHM_ADDR_H
#define WU_PROV_SHM_SHM_ADDR_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace wu::shm {

inline constexpr char scheme[] = "fi_shm://";
inline constexpr size_t scheme_len = sizeof(scheme) - 1;
/* Longest address text with its NUL (what an AV entry holds). */
inline constexpr size_t addr_max = 56;
/* Longest name (the address without the scheme, without its NUL). */
inline constexpr size_t name_max = addr_max - scheme_len - 1;

/* Whether s (n bytes, no NUL needed) is a valid name. */
bool valid_name(const char *s, size_t n) noexcept;

/* The length of the address at addr including its NUL (at most avail bytes
 * read), or -FI_EINVAL when it is not "fi_shm://<valid name>". */
long addr_len(const void *addr, size_t avail) noexcept;

/* The address of the first endpoint of rank `rank` in job `job` (as
 * FI_SHM_JOB or the PMIx namespace name it), for this user.  Writes the
 * NUL-terminated text into buf (buflen bytes) and returns its length with
 * the NUL, or a negative FI_E*: -FI_EINVAL for a NULL or empty job,
 * -FI_ETOOSMALL when buflen is short (nothing written). */
long rank_addr(const char *job, uint32_t rank, char *buf, size_t buflen) noexcept;

/* The name fi_getinfo reports as src_addr when none is asked for: the
 * pid, as Debian's shm reports it (fi_shm://<pid>).  An endpoint opened
 * with it, like one opened with no src_addr, gets a generated name
 * (below), so that every endpoint of the process has its own. */
std::string process_name();

/* A name for a new endpoint that was given none (see the top): the rank's
 * name when try_rank and the process runs under a job with a rank, else
 * the next "wu<uid>.<pid>.<counter>".  Throws std::bad_alloc only. */
std::string generate_name(bool try_rank);

} // namespace wu::shm

#endif
