/* SPDX-License-Identifier: BSD-3-Clause */
#include "prov/common/info_template.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/info.h"
#include "core/log.h"

namespace wu::prov {

namespace {

/* What fi_tx_attr and fi_rx_attr take alike from a template; caps: those
 * of the template's caps that apply to the side. */
template <class A>
void fill_side(A &a, const template_desc &t, uint64_t caps)
{
	a.caps = t.caps & caps;
	a.msg_order = t.msg_order;
	a.comp_order = FI_ORDER_NONE;
	a.size = t.queue_size;
	a.iov_limit = t.iov_limit;
}

} // namespace

void fill_template(fi_info &i, const template_desc &t)
{
	i.caps = t.caps;
	i.mode = 0;
	i.addr_format = t.addr_format;
	fill_side(*i.tx_attr, t, FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND);
	i.tx_attr->inject_size = t.inject_size;
	i.tx_attr->rma_iov_limit = t.rma_iov_limit;
	fill_side(*i.rx_attr, t,
		  FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
			  FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_RMA_EVENT);
	i.ep_attr->type = t.type;
	i.ep_attr->protocol = t.protocol;
	i.ep_attr->protocol_version = 1;
	i.ep_attr->max_msg_size = t.max_msg_size;
	i.ep_attr->max_order_raw_size = t.max_order_size;
	i.ep_attr->max_order_war_size = t.max_order_size;
	i.ep_attr->max_order_waw_size = t.max_order_size;
	i.ep_attr->mem_tag_format = t.mem_tag_format;
	i.ep_attr->tx_ctx_cnt = 1;
	i.ep_attr->rx_ctx_cnt = 1;
	fi_domain_attr &d = *i.domain_attr;
	d.threading = FI_THREAD_SAFE;
	d.control_progress = FI_PROGRESS_AUTO;
	d.data_progress = FI_PROGRESS_MANUAL;
	d.resource_mgmt = FI_RM_ENABLED;
	d.av_type = FI_AV_UNSPEC;
	d.mr_mode = 0;
	d.mr_key_size = 8;
	d.cq_data_size = t.cq_data_size;
	d.cq_cnt = 65536;
	d.ep_cnt = t.ep_cnt;
	d.tx_ctx_cnt = 1;
	d.rx_ctx_cnt = 1;
	d.max_ep_tx_ctx = 1;
	d.max_ep_rx_ctx = 1;
	d.max_ep_stx_ctx = 0; /* no shared transmit contexts (fi_stx_context: -FI_ENOSYS) */
	d.max_ep_srx_ctx = t.max_ep_srx_ctx;
	d.cntr_cnt = 65536;
	d.mr_iov_limit = 1;
	d.caps = t.caps & (FI_LOCAL_COMM | FI_REMOTE_COMM);
	d.max_err_data = 0;
	d.mr_cnt = 65536;
	d.max_group_id = 0;
	/* counters hold a uint64_t (2.5 fields) */
	d.max_cntr_value = UINT64_MAX;
	d.max_err_cntr_value = UINT64_MAX;
	if (!t.domain_name)
		return;
	d.name = strdup(t.domain_name);
	i.fabric_attr->name = strdup(t.fabric_name);
	i.fabric_attr->prov_name = strdup(t.prov_name);
	i.fabric_attr->prov_version = t.prov_version;
	if (!d.name || !i.fabric_attr->name || !i.fabric_attr->prov_name)
		throw std::bad_alloc();
}

fi_info *new_template(const template_desc &d)
{
	info_ptr i(info_alloc(), info_free);
	if (!i)
		throw std::bad_alloc();
	fill_template(*i, d);
	return i.release();
}

info_ptr hints_without_addrs(const fi_info *hints)
{
	info_ptr h(hints ? info_dup(hints) : nullptr, info_free);
	if (hints && !h)
		throw std::bad_alloc();
	if (h) {
		free(h->src_addr);
		free(h->dest_addr);
		h->src_addr = h->dest_addr = nullptr;
		h->src_addrlen = h->dest_addrlen = 0;
	}
	return h;
}

bool take_addr(const fi_provider *p, long n, const void *a, void **out, size_t *outlen, const char *what,
	       const char *not_what, void (*reason)(std::string))
{
	if (n < 0 || !a) {
		WU_INFO(p, FI_LOG_CORE, "fi_getinfo: %s is not %s\n", what, not_what);
		reason(std::string(what) + " is not " + not_what);
		return false;
	}
	void *c = malloc(size_t(n));
	if (!c)
		throw std::bad_alloc();
	memcpy(c, a, size_t(n));
	free(*out);
	*out = c;
	*outlen = size_t(n);
	return true;
}

} // namespace wu::prov
