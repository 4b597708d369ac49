/* SPDX-License-Identifier: BSD-3-Clause */
/* The wireup provider's addresses of node-local ranks (issue 15): computed,
 * not exchanged.  Under PMIx the shm sub-endpoint of a rank's first wireup
 * endpoint takes the rank's name (shm::rank_addr), so a peer on the same
 * host reaches it through {this host's id, no tcp part, that name}; only
 * remote peers need the tcp part, and the launcher's glue fetches it for
 * them alone (the local_format of core/launcher.h, registered here). */
#include "prov/wireup/wireup.h"

#include <cstdlib>
#include <cstring>

#include <rdma/fi_errno.h>

#include "av/av.h"
#include "core/launcher.h"
#include "prov/shm/shm_addr.h"
#include "prov/wireup/wx_addr.h"

namespace wu::wireup {

namespace {

/* The job the shm provider names ranks by (shm_addr.h): FI_SHM_JOB
 * replaces the own namespace, never another one. */
const char *shm_job(const char *nspace)
{
	const char *j = getenv("FI_SHM_JOB");
	const char *own = getenv("PMIX_NAMESPACE");
	if (j && *j && own && strcmp(own, nspace) == 0)
		return j;
	return nspace;
}

/* The rank's shm name without the scheme; its length, or a negative FI_E*. */
long rank_name(const char *nspace, uint32_t rank, char *buf, size_t buflen)
{
	char a[shm::addr_max];
	long n = shm::rank_addr(shm_job(nspace), rank, a, sizeof a);
	if (n < 0)
		return n;
	size_t len = size_t(n) - 1 - shm::scheme_len;
	if (len > buflen)
		return -FI_ETOOSMALL;
	memcpy(buf, a + shm::scheme_len, len);
	return long(len);
}

long local_addr(const char *nspace, uint32_t rank, void *buf, size_t buflen) noexcept
{
	char name[shm::addr_max];
	long n = rank_name(nspace, rank, name, sizeof name);
	if (n < 0)
		return n;
	parts p;
	p.host = host_id();
	p.shm = name;
	p.shm_len = size_t(n);
	return encode(p, buf, buflen);
}

bool computable(const char *nspace, uint32_t rank, const void *addr, size_t len) noexcept
{
	parts p;
	char name[shm::addr_max];
	long n = rank_name(nspace, rank, name, sizeof name);
	return n > 0 && decode(addr, len, &p) > 0 && p.host == host_id() && p.shm &&
	       p.shm_len == size_t(n) && memcmp(p.shm, name, p.shm_len) == 0;
}

/* The tcp part: what another node reaches (symmetric mode). */
long net_part(const void *addr, size_t len, void *sa, size_t salen) noexcept
{
	parts p;
	if (decode(addr, len, &p) < 0 || !p.tcp)
		return -FI_EINVAL;
	if (p.tcp_len > salen)
		return -FI_ETOOSMALL;
	memcpy(sa, p.tcp, p.tcp_len);
	return long(p.tcp_len);
}

/* Other nodes' view: the host id and the tcp part.  The shm name (per
 * rank, keyed) is used only by peers on the same host, which compute it
 * (local_addr); without it a remote rank's node blob entry follows the
 * node's port rule. */
long remote_view(const void *addr, size_t len, void *out, size_t outlen) noexcept
{
	parts p;
	if (decode(addr, len, &p) < 0 || !p.tcp)
		return -FI_EINVAL;
	p.shm = nullptr;
	p.shm_len = 0;
	return encode(p, out, outlen);
}

} // namespace

int register_local_format() noexcept
{
	/* Stride 0: the AV takes composite addresses back to back. */
	static launcher::local_format f = {0, 0, local_addr, computable, net_part, remote_view};
	f.addr_format = format()->addr_format;
	return launcher::register_local_format(&f);
}

} // namespace wu::wireup
