/* SPDX-License-Identifier: BSD-3-Clause */
/* The fi_getinfo templates of the built-in providers: what every one fills
 * alike (domain limits, progress, threading, names), the few numbers that
 * differ given by the provider, and what their getinfo entries share. */
#ifndef WU_PROV_COMMON_INFO_TEMPLATE_H
#define WU_PROV_COMMON_INFO_TEMPLATE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include "core/info.h"

namespace wu::prov {

struct template_desc {
	fi_ep_type type = FI_EP_RDM;
	uint64_t caps = 0;	/* FI_LOCAL_COMM / FI_REMOTE_COMM included */
	uint64_t msg_order = 0; /* tx and rx */
	uint32_t addr_format = FI_FORMAT_UNSPEC;
	uint32_t protocol = FI_PROTO_UNSPEC;
	size_t inject_size = 0;
	size_t queue_size = 1024; /* tx_attr->size and rx_attr->size */
	size_t iov_limit = 4;
	size_t rma_iov_limit = 0;
	size_t max_msg_size = SIZE_MAX >> 1;
	size_t max_order_size = 0; /* max_order_{raw,war,waw}_size */
	uint64_t mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;
	size_t cq_data_size = 8;
	size_t ep_cnt = 65536;
	size_t max_ep_srx_ctx = 0;
	const char *fabric_name = nullptr;
	const char *domain_name = nullptr; /* nullptr: fill no names */
	const char *prov_name = nullptr;
	uint32_t prov_version = 0;
};

/* Fills i from d (names too when d has them); throws std::bad_alloc. */
void fill_template(fi_info &i, const template_desc &d);
/* A new template from d; throws std::bad_alloc. */
fi_info *new_template(const template_desc &d);

using wu::info_ptr; /* core/info.h; providers spell it prov::info_ptr */
/* A copy of hints without src_addr and dest_addr (the template matcher
 * places IP addresses only; providers place their own), or an empty
 * pointer for no hints; throws std::bad_alloc. */
info_ptr hints_without_addrs(const fi_info *hints);

/* An address given to fi_getinfo (node, hints) into *out, kept as is:
 * n is its length by the provider's check, negative when it is not one
 * of the provider's ("not_what" says what it should be, for the log and
 * fi_getinfo's reason, given to reason). */
bool take_addr(const fi_provider *p, long n, const void *a, void **out, size_t *outlen, const char *what,
	       const char *not_what, void (*reason)(std::string));

/* fabric_hooks::known of a provider with one fabric and one domain name. */
template <const char *Fabric, const char *Domain>
bool known_names(const char *name, bool domain) noexcept
{
	return strcmp(name, domain ? Domain : Fabric) == 0;
}

} // namespace wu::prov

#endif
