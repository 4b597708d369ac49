/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses of the wireup provider (layout in wx_addr.h). */
#include "prov/wireup/wx_addr.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "av/av.h"
#include "core/addr.h"
#include "core/hash.h"
#include "core/log.h"
#include "prov/shm/shm_addr.h"

namespace wu::wireup {

namespace {

uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = uint8_t(v >> (8 * i));
}

/* A sockaddr of tcp_len bytes whose family says that length. */
bool valid_sockaddr(const void *sa, size_t len)
{
	sa_family_t fam;
	if (!sa || len < sizeof fam)
		return false;
	memcpy(&fam, sa, sizeof fam);
	return (fam == AF_INET && len == sizeof(sockaddr_in)) ||
	       (fam == AF_INET6 && len == sizeof(sockaddr_in6));
}

ssize_t validate(const void *addr, size_t avail)
{
	parts p;
	return decode(addr, avail, &p);
}

/* part_tcp: the sockaddr; part_shm: "fi_shm://<name>" with its NUL, what
 * the shm provider's own AV stores. */
size_t part(const void *addr, size_t len, int which, void *out, size_t outlen)
{
	parts p;
	if (decode(addr, len, &p) < 0 || (outlen && !out))
		return 0;
	if (which == part_tcp) {
		if (!p.tcp)
			return 0;
		if (outlen) /* out may be NULL then: a length query */
			memcpy(out, p.tcp, std::min(outlen, p.tcp_len));
		return p.tcp_len;
	}
	if (which != part_shm || !p.shm)
		return 0;
	char text[shm::addr_max];
	size_t n = shm::scheme_len + p.shm_len + 1;
	if (n > sizeof text)
		return 0; /* decode checked the name, so never */
	memcpy(text, shm::scheme, shm::scheme_len);
	memcpy(text + shm::scheme_len, p.shm, p.shm_len);
	text[n - 1] = '\0';
	if (outlen)
		memcpy(out, text, std::min(outlen, n));
	return n;
}

/* "fi_wx://<tcp address>/<host id>/<shm name>"; an absent part is empty.
 * The tcp address is the core's FI_ADDR_STR text of the sockaddr without
 * its scheme ("127.0.0.1:5000", "[::1]:5000"). */
ssize_t print(const void *addr, size_t len, char *buf, size_t buflen)
{
	parts p;
	if (decode(addr, len, &p) < 0)
		return -FI_EINVAL;
	char tcp[128] = "";
	if (p.tcp) {
		uint32_t f = p.tcp_len == sizeof(sockaddr_in) ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
		char full[160];
		ssize_t n = addr::format(f, p.tcp, p.tcp_len, full, sizeof full);
		if (n < 0 || size_t(n) > sizeof full)
			return -FI_EINVAL;
		const char *body = strstr(full, "://");
		body = body ? body + 3 : full;
		int m = snprintf(tcp, sizeof tcp, "%s", body);
		if (m < 0 || size_t(m) >= sizeof tcp)
			return -FI_EINVAL;
	}
	char text[256];
	int n = snprintf(text, sizeof text, "fi_wx://%s/%016llx/%.*s", tcp, (unsigned long long)p.host,
			 int(p.shm_len), p.shm ? p.shm : "");
	if (n < 0 || size_t(n) >= sizeof text)
		return -FI_EINVAL;
	size_t need = size_t(n) + 1;
	if (buf && buflen) {
		size_t c = std::min(buflen, need);
		memcpy(buf, text, c - 1);
		buf[c - 1] = '\0';
	}
	return ssize_t(need);
}

/* FI_FORMAT_UNSPEC ("void *", a provider-specific opaque blob): 1.17 has
 * no constant for a composite address (FI_ADDR_PROTO does not exist in
 * its fabric.h, and a value past FI_ADDR_UCX would print as unknown in
 * Debian's fi_info and fi_tostr).  It is what libfabric's own providers
 * with opaque names report (ucx before FI_ADDR_UCX, mrail), fi_getinfo's
 * filter lets it through only for hints of FI_FORMAT_UNSPEC (which Open
 * MPI's OFI MTL and MPICH's ch4:ofi leave at zero: they treat names as
 * fi_getname bytes of FI_NAME_MAX at most and never look at the format),
 * and the AV engine takes any format through av::open.  Text: no
 * text_format, so fi_av_insertsvc / insertsym are refused with a log line
 * (a wireup address has no node/service form); fi_av_straddr prints. */
const av::av_format wx_format = {
	"wireup", FI_FORMAT_UNSPEC, addr_max, validate, nullptr, nullptr, FI_FORMAT_UNSPEC, 0, part, print,
};

uint64_t compute_host_id() noexcept
{
	/* Each source in turn, with a separator, so that no two different
	 * triples hash the same input. */
	unsigned char in[512];
	size_t n = 0;
	auto add = [&](const void *p, size_t len) {
		len = std::min(len, sizeof in - n - 1);
		memcpy(in + n, p, len);
		n += len;
		in[n++] = 0xff;
	};
	char boot[64] = "";
	if (FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
		if (!fgets(boot, sizeof boot, f))
			boot[0] = '\0';
		fclose(f);
	}
	if (!boot[0])
		WU_WARN(&core_prov, FI_LOG_CORE,
			"wireup: /proc/sys/kernel/random/boot_id unreadable; the host id uses the hostname and network namespace only\n");
	add(boot, strlen(boot));
	struct stat st {};
	if (stat("/proc/self/ns/net", &st) != 0)
		WU_WARN(&core_prov, FI_LOG_CORE,
			"wireup: /proc/self/ns/net unreadable; processes in other network namespaces may count as this host\n");
	uint64_t ns[2] = {uint64_t(st.st_ino), uint64_t(st.st_dev)};
	add(ns, sizeof ns);
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	add(host, strnlen(host, sizeof host));
	return hash_bytes(in, n);
}

} // namespace

long encode(const parts &p, void *buf, size_t buflen) noexcept
{
	if (!p.tcp && !p.shm)
		return -FI_EINVAL;
	if (p.tcp && !valid_sockaddr(p.tcp, p.tcp_len))
		return -FI_EINVAL;
	if (!p.tcp && p.tcp_len)
		return -FI_EINVAL;
	if (p.shm && !shm::valid_name(p.shm, p.shm_len))
		return -FI_EINVAL;
	if (!p.shm && p.shm_len)
		return -FI_EINVAL;
	size_t total = hdr_len + p.tcp_len + p.shm_len;
	if (!buf)
		return -FI_EINVAL;
	if (total > addr_max || buflen < addr_max)
		return -FI_ETOOSMALL;
	unsigned char *b = static_cast<unsigned char *>(buf);
	memset(b + total, 0, addr_max - total);
	b[0] = addr_magic;
	b[1] = addr_version;
	b[2] = uint8_t(p.tcp_len);
	b[3] = uint8_t(p.shm_len);
	memset(b + 4, 0, 4);
	put_le64(b + 8, p.host);
	if (p.tcp_len)
		memcpy(b + hdr_len, p.tcp, p.tcp_len);
	if (p.shm_len)
		memcpy(b + hdr_len + p.tcp_len, p.shm, p.shm_len);
	return long(addr_max);
}

long decode(const void *addr, size_t avail, parts *out) noexcept
{
	if (!addr || !out || avail < addr_max)
		return -FI_EINVAL;
	const unsigned char *b = static_cast<const unsigned char *>(addr);
	if (b[0] != addr_magic || b[1] != addr_version || b[4] || b[5] || b[6] || b[7])
		return -FI_EINVAL;
	size_t tcp_len = b[2], shm_len = b[3];
	if (tcp_len != 0 && tcp_len != sizeof(sockaddr_in) && tcp_len != sizeof(sockaddr_in6))
		return -FI_EINVAL;
	if (tcp_len == 0 && shm_len == 0)
		return -FI_EINVAL;
	size_t total = hdr_len + tcp_len + shm_len;
	if (total > addr_max)
		return -FI_EINVAL;
	for (size_t k = total; k < addr_max; k++)
		if (b[k])
			return -FI_EINVAL;
	const unsigned char *tcp = b + hdr_len;
	const char *shm = reinterpret_cast<const char *>(tcp + tcp_len);
	if (tcp_len && !valid_sockaddr(tcp, tcp_len))
		return -FI_EINVAL;
	if (shm_len && !shm::valid_name(shm, shm_len))
		return -FI_EINVAL;
	parts p;
	p.host = get_le64(b + 8);
	p.tcp = tcp_len ? tcp : nullptr;
	p.tcp_len = tcp_len;
	p.shm = shm_len ? shm : nullptr;
	p.shm_len = shm_len;
	*out = p;
	return long(addr_max);
}

uint64_t host_id() noexcept
{
	static const uint64_t id = compute_host_id();
	return id;
}

const av::av_format *format() noexcept
{
	return &wx_format;
}

bool is_sock_format(uint32_t f) noexcept
{
	return f == FI_SOCKADDR || f == FI_SOCKADDR_IN || f == FI_SOCKADDR_IN6;
}

long sock_len(const void *sa, size_t len) noexcept
{
	return valid_sockaddr(sa, len) ? long(len) : -FI_EINVAL;
}

namespace {

/* A sockaddr entry is all tcp part. */
size_t sock_part(const void *addr, size_t len, int which, void *out, size_t outlen)
{
	if (which != part_tcp || !valid_sockaddr(addr, len))
		return 0;
	if (out && outlen >= len)
		memcpy(out, addr, len);
	return len;
}

av::av_format with_parts(uint32_t af)
{
	av::av_format f = *av::ip_format(af);
	f.part = sock_part;
	return f;
}

} // namespace

const av::av_format *sock_format(uint32_t af) noexcept
{
	static const av::av_format in = with_parts(FI_SOCKADDR_IN), in6 = with_parts(FI_SOCKADDR_IN6),
				   any = with_parts(FI_SOCKADDR);
	return af == FI_SOCKADDR_IN ? &in : af == FI_SOCKADDR_IN6 ? &in6 : is_sock_format(af) ? &any : nullptr;
}

} // namespace wu::wireup
