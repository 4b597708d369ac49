/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses of fi_getinfo entries: node/service, FI_SOURCE, FI_NUMERICHOST,
 * hints->src_addr/dest_addr, and FI_ADDR_STR output. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/addr.h"
#include "core/info.h"
#include "core/log.h"
#include "getinfo/filter.h"

namespace wu::getinfo {
namespace {

int family_of(uint32_t fmt)
{
	switch (fmt) {
	case FI_SOCKADDR_IN: return AF_INET;
	case FI_SOCKADDR_IN6: return AF_INET6;
	default: return AF_UNSPEC;
	}
}

size_t sa_len(int family)
{
	return family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

/* Resolves node/service for one family; false with *why on failure. */
bool resolve(const char *node, const char *service, uint64_t flags, int family, bool passive,
	     sockaddr_storage *out, std::string *why)
{
	/* An FI_ADDR_STR URI names its address directly. */
	if (node && strstr(node, "://")) {
		addr::parsed_addr p;
		int ret = addr::parse_str(node, p);
		if (ret) {
			*why = std::string("node \"") + node + "\" is not a valid address string";
			return false;
		}
		if (p.bin.ss.ss_family != family) {
			*why = std::string("node \"") + node + "\" is of another address family";
			return false;
		}
		*out = p.bin.ss;
		if (service) {
			char *end = nullptr;
			unsigned long port = strtoul(service, &end, 10);
			if (!*service || *end || port > 65535) {
				*why = std::string("service \"") + service + "\" is not a port number";
				return false;
			}
			if (family == AF_INET)
				reinterpret_cast<sockaddr_in *>(out)->sin_port = htons((uint16_t)port);
			else
				reinterpret_cast<sockaddr_in6 *>(out)->sin6_port = htons((uint16_t)port);
		}
		return true;
	}
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	if (flags & FI_NUMERICHOST)
		hints.ai_flags |= AI_NUMERICHOST;
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	if (service) {
		/* Ports only: a service name would make results depend on /etc/services. */
		char *end = nullptr;
		unsigned long port = strtoul(service, &end, 10);
		if (!*service || *end || port > 65535) {
			*why = std::string("service \"") + service + "\" is not a port number 0-65535";
			return false;
		}
		hints.ai_flags |= AI_NUMERICSERV;
	}
	int rc = getaddrinfo(node, service ? service : "0", &hints, &res);
	if (rc || !res) {
		*why = std::string("node \"") + (node ? node : "") + "\" does not resolve for " +
		       (family == AF_INET ? "IPv4" : "IPv6") + ": " + gai_strerror(rc);
		if (res)
			freeaddrinfo(res);
		return false;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return true;
}

bool set_addr(void **dst, size_t *dstlen, const void *src, size_t len)
{
	free(*dst);
	*dstlen = 0;
	if (!dup_mem(dst, src, len))
		return false;
	*dstlen = *dst ? len : 0;
	return true;
}

/* Turns a sockaddr field into its FI_ADDR_STR form. */
bool to_str(void **addr, size_t *len, uint32_t fmt)
{
	if (!*addr)
		return true;
	char buf[128];
	ssize_t n = addr::format(fmt, *addr, *len, buf, sizeof(buf));
	if (n < 0)
		return false;
	return set_addr(addr, len, buf, strlen(buf) + 1);
}

/* An FI_SOCKADDR hint address says its family in sa_family. */
bool of_family(const void *addr, size_t len, int family)
{
	sa_family_t f;
	if (len < sizeof(f))
		return false;
	memcpy(&f, static_cast<const char *>(addr) + offsetof(sockaddr, sa_family), sizeof(f));
	return f == family;
}

/* Fills src/dest addresses of one narrowed entry; false (+ why) if the
 * entry cannot serve this node/service. */
bool place(fi_info &o, const char *node, const char *service, uint64_t flags,
	   const fi_info *h, std::string *why)
{
	int fam = family_of(o.addr_format);
	if (fam == AF_UNSPEC)
		return true;
	sockaddr_storage ss{};
	bool source = (flags & FI_SOURCE) || (!node && service);
	if (node || service) {
		if (!resolve(node, service, flags, fam, source, &ss, why))
			return false;
		if (source) {
			/* A source must be this entry's interface, or a wildcard. */
			if (node && o.src_addr) {
				bool same = fam == AF_INET
					? reinterpret_cast<sockaddr_in *>(&ss)->sin_addr.s_addr ==
						  static_cast<sockaddr_in *>(o.src_addr)->sin_addr.s_addr
					: memcmp(&reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_addr,
						 &static_cast<sockaddr_in6 *>(o.src_addr)->sin6_addr, 16) == 0;
				if (!same) {
					*why = std::string("node \"") + node + "\" is not the address of " +
					       (o.domain_attr->name ? o.domain_attr->name : "this interface");
					return false;
				}
			}
			if (!node && o.src_addr) {
				/* Keep the interface address, take the port. */
				uint16_t port = fam == AF_INET ? reinterpret_cast<sockaddr_in *>(&ss)->sin_port
							       : reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port;
				memcpy(&ss, o.src_addr, sa_len(fam));
				if (fam == AF_INET)
					reinterpret_cast<sockaddr_in *>(&ss)->sin_port = port;
				else
					reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port = port;
			}
			if (!set_addr(&o.src_addr, &o.src_addrlen, &ss, sa_len(fam)))
				return false;
		} else if (!set_addr(&o.dest_addr, &o.dest_addrlen, &ss, sa_len(fam))) {
			return false;
		}
	}
	if (h && h->src_addr && h->src_addrlen) {
		if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != o.addr_format &&
		    h->addr_format != FI_ADDR_STR && h->addr_format != FI_SOCKADDR) {
			*why = "hints->src_addr is of another address format";
			return false;
		}
		if (h->addr_format == FI_SOCKADDR && !of_family(h->src_addr, h->src_addrlen, fam)) {
			*why = "hints->src_addr (FI_SOCKADDR) is of another address family";
			return false;
		}
		if (h->addr_format == FI_ADDR_STR) {
			addr::parsed_addr p;
			if (addr::parse_str(std::string_view(static_cast<const char *>(h->src_addr),
							     strnlen(static_cast<const char *>(h->src_addr),
								     h->src_addrlen)),
					    p) || p.bin.ss.ss_family != fam) {
				*why = "hints->src_addr is not a valid address string of this family";
				return false;
			}
			set_addr(&o.src_addr, &o.src_addrlen, &p.bin.ss, sa_len(fam));
		} else if (h->src_addrlen != sa_len(fam)) {
			*why = "hints->src_addrlen " + std::to_string(h->src_addrlen) + " does not fit " +
			       (fam == AF_INET ? "sockaddr_in" : "sockaddr_in6");
			return false;
		} else {
			set_addr(&o.src_addr, &o.src_addrlen, h->src_addr, h->src_addrlen);
		}
	}
	if (h && h->dest_addr && h->dest_addrlen && !(node && !source)) {
		if (h->addr_format == FI_SOCKADDR && !of_family(h->dest_addr, h->dest_addrlen, fam)) {
			*why = "hints->dest_addr (FI_SOCKADDR) is of another address family";
			return false;
		}
		if (h->addr_format == FI_ADDR_STR) {
			addr::parsed_addr p;
			if (addr::parse_str(std::string_view(static_cast<const char *>(h->dest_addr),
							     strnlen(static_cast<const char *>(h->dest_addr),
								     h->dest_addrlen)),
					    p) || p.bin.ss.ss_family != fam) {
				*why = "hints->dest_addr is not a valid address string of this family";
				return false;
			}
			set_addr(&o.dest_addr, &o.dest_addrlen, &p.bin.ss, sa_len(fam));
		} else if (h->dest_addrlen != sa_len(fam)) {
			*why = "hints->dest_addrlen " + std::to_string(h->dest_addrlen) + " does not fit " +
			       (fam == AF_INET ? "sockaddr_in" : "sockaddr_in6");
			return false;
		} else {
			set_addr(&o.dest_addr, &o.dest_addrlen, h->dest_addr, h->dest_addrlen);
		}
	}
	if (h && h->addr_format == FI_ADDR_STR) {
		uint32_t fmt = o.addr_format;
		if (!to_str(&o.src_addr, &o.src_addrlen, fmt) || !to_str(&o.dest_addr, &o.dest_addrlen, fmt))
			return false;
		o.addr_format = FI_ADDR_STR;
	}
	return true;
}

} // namespace

int from_templates(std::span<const fi_info *const> templates, uint32_t version, const char *node,
		   const char *service, uint64_t flags, const fi_info *hints, fi_info **info,
		   const template_opts &opts)
{
	fi_info *head = nullptr, **tail = &head;
	/* Why nothing matched is only worked out when nothing did: the first
	 * template that got furthest is explained again, with its reason. */
	const fi_info *best = nullptr;
	std::string place_why;
	int best_stage = -1;
	for (const fi_info *t : templates) {
		int stage = 0;
		if (!meets(*t, hints, version, nullptr, &stage, opts)) {
			if (stage > best_stage) {
				best_stage = stage;
				best = t;
			}
			continue;
		}
		fi_info *o = info_dup(t);
		if (!o) {
			info_free(head);
			return -FI_ENOMEM;
		}
		narrow(*o, hints, version, opts);
		std::string why;
		if (!place(*o, node, service, flags, hints, &why)) {
			info_free(o);
			if (100 > best_stage) {
				best_stage = 100;
				best = nullptr;
				place_why = std::move(why);
			}
			continue;
		}
		o->fabric_attr->api_version = version;
		/* fi_getinfo(3): a passive endpoint in hints->handle is echoed. */
		if (hints && hints->handle && hints->handle->fclass == FI_CLASS_PEP)
			o->handle = hints->handle;
		*tail = o;
		tail = &o->next;
	}
	if (!head) {
		std::string why = std::move(place_why);
		if (best)
			meets(*best, hints, version, &why, nullptr, opts);
		set_reason(why.empty() ? "offers no entries" : std::move(why));
		return -FI_ENODATA;
	}
	*info = head;
	return 0;
}

} // namespace wu::getinfo
