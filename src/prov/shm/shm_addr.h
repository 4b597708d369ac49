/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses of the shm provider.  An endpoint's address is the FI_ADDR_STR
 * text "fi_shm://<name>", where <name> is its region's name in /dev/shm
 * (characters of [A-Za-z0-9._-]).  Names are given (hints->src_addr, or
 * the node of fi_getinfo with FI_SOURCE) or generated:
 *  - under a job (FI_SHM_JOB, else the PMIx namespace PMIX_NAMESPACE) with
 *    a rank (PMIX_RANK), the first endpoint of the process takes the name
 *    computed from (uid, job, rank): peers on a node find each other
 *    without exchanging names (rank_addr below);
 *  - otherwise, and for every later endpoint, "wu<uid>.<pid>.<16 random
 *    hex digits>".
 *
 * /dev/shm is every user's: a name another user can predict, it can
 * create first (issue 32).  Generated names are random, and an endpoint
 * whose generated name is taken draws another.  Rank names are keyed:
 * "wu<uid>.r<rank>.<HMAC-SHA256 of (job, rank) under the user's Wireup key,
 * 20 hex digits>", the key being the per-user 0600 key file the tcp
 * provider also uses (tcp/auth.h), so the processes of this user on the
 * node derive the same names without exchange and nobody else can.
 * Without a usable key file, rank names fall back to the predictable
 * "wu<uid>.j<job>.<rank>"; an endpoint that finds its rank name held by
 * someone else says so in a log line and takes a generated name (the PMIx
 * wire-up then publishes a note, core/launcher.h).
 *
 * A node/service pair (fi_getinfo, fi_av_insertsvc, fi_av_insertsym) names
 * an endpoint without any exchange: the service is a port number that
 * names the endpoint on this host, the node must be this host (any of its
 * addresses or names, so "127.0.0.1" and "localhost" name the same
 * endpoint), and the name is "wu<uid>.p<port>.<keyed tag of the port>"
 * (port_name below): the processes of this user compute it, nobody else
 * can, and a region of that name another user created is refused on
 * create and attach as any other (region.h). */
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

/* keyed_tag_len hex digits of HMAC-SHA256 under this user's key over
 * "wireup/shm/<what>\0" and msg: a name part only processes of this user
 * can compute.  false when no key is available (logged once). */
inline constexpr size_t keyed_tag_len = 20;
bool keyed_tag(const char *what, const void *msg, size_t len, char (&hex)[keyed_tag_len + 1]) noexcept;

/* The name fi_getinfo reports as src_addr when none is asked for: the
 * pid, as Debian's shm reports it (fi_shm://<pid>).  An endpoint opened
 * with it, like one opened with no src_addr, gets a generated name
 * (below), so that every endpoint of the process has its own. */
std::string process_name();

/* The rank's name when the process runs under a job with a rank, else "". */
std::string rank_name();

/* A name for a new endpoint that was given none (see the top): the rank's
 * name when try_rank and the process runs under a job with a rank, else
 * a fresh "wu<uid>.<pid>.<random>".  Throws std::bad_alloc only. */
std::string generate_name(bool try_rank);

/* The region name port names on this host for this user (see the top);
 * without a usable key file the predictable "wu<uid>.p<port>" (logged by
 * keyed_tag): still refused when another user holds it.  Throws
 * std::bad_alloc only. */
std::string port_name(uint16_t port);

/* The port of a service: decimal 1..65535, digits only; -FI_EINVAL
 * otherwise (0 names no endpoint). */
int service_port(const char *service, uint16_t *port) noexcept;

/* 0 when node names this host (NULL or "" do): a literal or name that
 * resolves to an address a socket here can bind (loopback, or one of the
 * host's interfaces); -FI_ENODATA when it resolves elsewhere or not at
 * all.  quiet: no log line (callers that only ask). */
int node_is_here(const char *node, bool quiet) noexcept;

/* The "fi_shm://<name>" text node/service names (node_is_here, then
 * port_name), into out.  0, or -FI_ENODATA (another host, logged "shm
 * reaches only this host") / -FI_EINVAL (not a port), logged. */
int service_addr(const char *node, const char *service, std::string &out) noexcept;

} // namespace wu::shm

#endif
