/* SPDX-License-Identifier: BSD-3-Clause */
#include "getinfo/filter.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

namespace wu::getinfo {
namespace {

thread_local std::string reason;

std::string flags_str(uint64_t v, enum fi_type t)
{
	char buf[1024];
	fi_tostr_r(buf, sizeof(buf), &v, t);
	return buf;
}

template <class T>
std::string enum_str(T v, enum fi_type t)
{
	char buf[256];
	fi_tostr_r(buf, sizeof(buf), &v, t);
	return buf;
}

struct checker {
	std::string *why;
	int *stage;
	int n = 0;
	bool fail(const std::string &what, const std::string &asked, const std::string &offers)
	{
		*why = what + ": asked " + asked + ", offers " + offers;
		return stop();
	}
	bool stop()
	{
		if (stage)
			*stage = n;
		return false;
	}
	void next() { n++; }
};

/* Fails the check; the explanation (fi_tostr calls, string building) is
 * only made when the caller asked for one. */
#define FAIL(...) return c.why ? c.fail(__VA_ARGS__) : c.stop()

/* Threading levels, weakest guarantee first; a provider offering a level
 * serves every weaker request. */
int thread_rank(int t)
{
	switch (t) {
	case FI_THREAD_SAFE: return 5;
	case FI_THREAD_FID: return 4;
	case FI_THREAD_ENDPOINT: return 3;
	case FI_THREAD_COMPLETION: return 2;
	case FI_THREAD_DOMAIN: return 1;
	default: return 0;
	}
}

std::string num(uint64_t v)
{
	return std::to_string(v);
}

} // namespace

void set_reason(std::string why) { reason = std::move(why); }
std::string take_reason() { return std::exchange(reason, {}); }

namespace {

/* A requested progress mode is served by the same mode, by AUTO (which
 * serves every request), or by AUTO the provider also runs on request. */
bool progress_ok(fi_progress want, fi_progress offer, bool also_auto)
{
	return want == FI_PROGRESS_UNSPEC || want == offer || offer == FI_PROGRESS_AUTO ||
	       (want == FI_PROGRESS_AUTO && also_auto);
}

} // namespace

bool meets(const fi_info &t, const fi_info *h, uint32_t version, std::string *why, int *stage,
	   const template_opts &opts)
{
	checker c{why, stage};
	if (!h)
		return true;
	/* Bit 48 is FI_EXACT_DIRECTED_RECV from API 2.0 on; an older caller
	 * meant FI_VARIABLE_MSG by it, which no provider offers. */
	constexpr uint64_t variable_msg_1x = 1ULL << 48;
	if (version < FI_VERSION(2, 0) &&
	    ((h->caps | (h->tx_attr ? h->tx_attr->caps : 0) | (h->rx_attr ? h->rx_attr->caps : 0)) &
	     variable_msg_1x))
		FAIL("caps", "FI_VARIABLE_MSG (bit 48 before API 2.0) not offered", flags_str(t.caps, FI_TYPE_CAPS));
	uint64_t want_caps = h->caps;
	if ((want_caps & t.caps) != want_caps)
		FAIL("caps", flags_str(want_caps & ~t.caps, FI_TYPE_CAPS) + " not offered",
			      flags_str(t.caps, FI_TYPE_CAPS));
	c.next();
	/* mode: what the application can do for us must cover what we need. */
	if ((t.mode & h->mode) != t.mode)
		FAIL("mode", flags_str(h->mode, FI_TYPE_MODE), "needs " + flags_str(t.mode, FI_TYPE_MODE));
	c.next();
	/* FI_SOCKADDR is "any socket address" (programs that handle IPv4 and
	 * IPv6 alike ask it): it takes both families, as libfabric's tcp. */
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != t.addr_format &&
	    !(h->addr_format == FI_ADDR_STR) &&
	    !(h->addr_format == FI_SOCKADDR &&
	      (t.addr_format == FI_SOCKADDR_IN || t.addr_format == FI_SOCKADDR_IN6)))
		FAIL("addr_format", enum_str(h->addr_format, FI_TYPE_ADDR_FORMAT),
			      enum_str(t.addr_format, FI_TYPE_ADDR_FORMAT));
	c.next();
	if (const fi_ep_attr *e = h->ep_attr) {
		if (e->type != FI_EP_UNSPEC && e->type != t.ep_attr->type)
			FAIL("ep_attr->type", enum_str(e->type, FI_TYPE_EP_TYPE),
				      enum_str(t.ep_attr->type, FI_TYPE_EP_TYPE));
		c.next();
		if (e->protocol != FI_PROTO_UNSPEC && e->protocol != t.ep_attr->protocol)
			FAIL("ep_attr->protocol", enum_str(e->protocol, FI_TYPE_PROTOCOL),
				      enum_str(t.ep_attr->protocol, FI_TYPE_PROTOCOL));
		if (e->max_msg_size > t.ep_attr->max_msg_size)
			FAIL("ep_attr->max_msg_size", num(e->max_msg_size), num(t.ep_attr->max_msg_size));
		if (e->msg_prefix_size && e->msg_prefix_size != t.ep_attr->msg_prefix_size)
			FAIL("ep_attr->msg_prefix_size", num(e->msg_prefix_size),
				      num(t.ep_attr->msg_prefix_size));
		if (e->max_order_raw_size > t.ep_attr->max_order_raw_size)
			FAIL("ep_attr->max_order_raw_size", num(e->max_order_raw_size),
				      num(t.ep_attr->max_order_raw_size));
		if (e->max_order_war_size > t.ep_attr->max_order_war_size)
			FAIL("ep_attr->max_order_war_size", num(e->max_order_war_size),
				      num(t.ep_attr->max_order_war_size));
		if (e->max_order_waw_size > t.ep_attr->max_order_waw_size)
			FAIL("ep_attr->max_order_waw_size", num(e->max_order_waw_size),
				      num(t.ep_attr->max_order_waw_size));
		/* FI_SHARED_CONTEXT matches only where the domain offers shared
		 * contexts: otherwise fi_stx_context / fi_srx_context refuse it. */
		if (e->tx_ctx_cnt == FI_SHARED_CONTEXT ? !t.domain_attr->max_ep_stx_ctx
						       : e->tx_ctx_cnt > t.ep_attr->tx_ctx_cnt)
			FAIL("ep_attr->tx_ctx_cnt",
			     e->tx_ctx_cnt == FI_SHARED_CONTEXT ? std::string("FI_SHARED_CONTEXT") : num(e->tx_ctx_cnt),
			     num(t.ep_attr->tx_ctx_cnt));
		if (e->rx_ctx_cnt == FI_SHARED_CONTEXT ? !t.domain_attr->max_ep_srx_ctx
						       : e->rx_ctx_cnt > t.ep_attr->rx_ctx_cnt)
			FAIL("ep_attr->rx_ctx_cnt",
			     e->rx_ctx_cnt == FI_SHARED_CONTEXT ? std::string("FI_SHARED_CONTEXT") : num(e->rx_ctx_cnt),
			     num(t.ep_attr->rx_ctx_cnt));
		if (e->auth_key_size > t.ep_attr->auth_key_size && !t.domain_attr->max_ep_auth_key)
			FAIL("ep_attr->auth_key_size", num(e->auth_key_size), "no authorization keys");
	}
	c.next();
	if (const fi_tx_attr *x = h->tx_attr) {
		const fi_tx_attr &o = *t.tx_attr;
		if ((x->caps & o.caps) != x->caps)
			FAIL("tx_attr->caps", flags_str(x->caps & ~o.caps, FI_TYPE_CAPS) + " not offered",
				      flags_str(o.caps, FI_TYPE_CAPS));
		if ((x->msg_order & o.msg_order) != x->msg_order)
			FAIL("tx_attr->msg_order", flags_str(x->msg_order, FI_TYPE_MSG_ORDER),
				      flags_str(o.msg_order, FI_TYPE_MSG_ORDER));
		if (x->comp_order & ~(o.comp_order | FI_ORDER_NONE))
			FAIL("tx_attr->comp_order", flags_str(x->comp_order, FI_TYPE_MSG_ORDER),
				      flags_str(o.comp_order, FI_TYPE_MSG_ORDER));
		if (x->inject_size > o.inject_size)
			FAIL("tx_attr->inject_size", num(x->inject_size), num(o.inject_size));
		if (x->size > o.size)
			FAIL("tx_attr->size", num(x->size), num(o.size));
		if (x->iov_limit > o.iov_limit)
			FAIL("tx_attr->iov_limit", num(x->iov_limit), num(o.iov_limit));
		if (x->rma_iov_limit > o.rma_iov_limit)
			FAIL("tx_attr->rma_iov_limit", num(x->rma_iov_limit), num(o.rma_iov_limit));
	}
	c.next();
	if (const fi_rx_attr *x = h->rx_attr) {
		const fi_rx_attr &o = *t.rx_attr;
		if ((x->caps & o.caps) != x->caps)
			FAIL("rx_attr->caps", flags_str(x->caps & ~o.caps, FI_TYPE_CAPS) + " not offered",
				      flags_str(o.caps, FI_TYPE_CAPS));
		if ((x->msg_order & o.msg_order) != x->msg_order)
			FAIL("rx_attr->msg_order", flags_str(x->msg_order, FI_TYPE_MSG_ORDER),
				      flags_str(o.msg_order, FI_TYPE_MSG_ORDER));
		if (x->size > o.size)
			FAIL("rx_attr->size", num(x->size), num(o.size));
		if (x->iov_limit > o.iov_limit)
			FAIL("rx_attr->iov_limit", num(x->iov_limit), num(o.iov_limit));
		if (x->total_buffered_recv > o.total_buffered_recv && o.total_buffered_recv)
			FAIL("rx_attr->total_buffered_recv", num(x->total_buffered_recv),
				      num(o.total_buffered_recv));
	}
	c.next();
	if (const fi_domain_attr *d = h->domain_attr) {
		const fi_domain_attr &o = *t.domain_attr;
		if (d->name && (!o.name || strcmp(d->name, o.name) != 0))
			FAIL("domain_attr->name", d->name, o.name ? o.name : "(none)");
		c.next();
		if (d->threading != FI_THREAD_UNSPEC && thread_rank(d->threading) > thread_rank(o.threading))
			FAIL("domain_attr->threading", enum_str(d->threading, FI_TYPE_THREADING),
				      enum_str(o.threading, FI_TYPE_THREADING));
		/* FI_PROGRESS_CONTROL_UNIFIED (2.x): control calls progress with the
		 * data progress the application drives, so data progress must be
		 * manual; AUTO control progress serves it too. */
		if (d->control_progress == FI_PROGRESS_CONTROL_UNIFIED &&
		    (version < FI_VERSION(2, 0) || d->data_progress == FI_PROGRESS_AUTO ||
		     o.data_progress != FI_PROGRESS_MANUAL))
			FAIL("domain_attr->control_progress",
			     version < FI_VERSION(2, 0) ? std::string("value 3, unknown before API 2.0")
							: "FI_PROGRESS_CONTROL_UNIFIED with data_progress " +
								  enum_str(d->data_progress, FI_TYPE_PROGRESS),
			     "needs manual data progress (offers " + enum_str(o.data_progress, FI_TYPE_PROGRESS) + ")");
		if (!progress_ok(d->control_progress, o.control_progress, opts.auto_control_progress))
			FAIL("domain_attr->control_progress",
				      enum_str(d->control_progress, FI_TYPE_PROGRESS),
				      enum_str(o.control_progress, FI_TYPE_PROGRESS));
		if (!progress_ok(d->data_progress, o.data_progress, opts.auto_data_progress))
			FAIL("domain_attr->data_progress", enum_str(d->data_progress, FI_TYPE_PROGRESS),
				      enum_str(o.data_progress, FI_TYPE_PROGRESS));
		if (d->av_type != FI_AV_UNSPEC && o.av_type != FI_AV_UNSPEC && d->av_type != o.av_type)
			FAIL("domain_attr->av_type", enum_str(d->av_type, FI_TYPE_AV_TYPE),
				      enum_str(o.av_type, FI_TYPE_AV_TYPE));
		/* mr_mode: the bits we need must be among those the app supports;
		 * FI_MR_UNSPEC / basic / scalable are the pre-1.5 spellings. */
		int need = o.mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
		int have = d->mr_mode;
		if (have != FI_MR_UNSPEC && have != FI_MR_BASIC && have != FI_MR_SCALABLE &&
		    (need & have) != need)
			FAIL("domain_attr->mr_mode", "supports " + flags_str((unsigned)have, FI_TYPE_MR_MODE),
				      "needs " + flags_str((unsigned)need, FI_TYPE_MR_MODE));
		if (d->mr_key_size > o.mr_key_size)
			FAIL("domain_attr->mr_key_size", num(d->mr_key_size), num(o.mr_key_size));
		if (d->cq_data_size > o.cq_data_size)
			FAIL("domain_attr->cq_data_size", num(d->cq_data_size), num(o.cq_data_size));
		if (d->cq_cnt > o.cq_cnt)
			FAIL("domain_attr->cq_cnt", num(d->cq_cnt), num(o.cq_cnt));
		if (d->ep_cnt > o.ep_cnt)
			FAIL("domain_attr->ep_cnt", num(d->ep_cnt), num(o.ep_cnt));
		if (d->tx_ctx_cnt > o.tx_ctx_cnt)
			FAIL("domain_attr->tx_ctx_cnt", num(d->tx_ctx_cnt), num(o.tx_ctx_cnt));
		if (d->rx_ctx_cnt > o.rx_ctx_cnt)
			FAIL("domain_attr->rx_ctx_cnt", num(d->rx_ctx_cnt), num(o.rx_ctx_cnt));
		if (d->max_ep_tx_ctx > o.max_ep_tx_ctx)
			FAIL("domain_attr->max_ep_tx_ctx", num(d->max_ep_tx_ctx), num(o.max_ep_tx_ctx));
		if (d->max_ep_rx_ctx > o.max_ep_rx_ctx)
			FAIL("domain_attr->max_ep_rx_ctx", num(d->max_ep_rx_ctx), num(o.max_ep_rx_ctx));
		if (d->max_ep_stx_ctx > o.max_ep_stx_ctx)
			FAIL("domain_attr->max_ep_stx_ctx", num(d->max_ep_stx_ctx), num(o.max_ep_stx_ctx));
		if (d->max_ep_srx_ctx > o.max_ep_srx_ctx)
			FAIL("domain_attr->max_ep_srx_ctx", num(d->max_ep_srx_ctx), num(o.max_ep_srx_ctx));
		if (d->cntr_cnt > o.cntr_cnt)
			FAIL("domain_attr->cntr_cnt", num(d->cntr_cnt), num(o.cntr_cnt));
		if (d->mr_iov_limit > o.mr_iov_limit)
			FAIL("domain_attr->mr_iov_limit", num(d->mr_iov_limit), num(o.mr_iov_limit));
		if ((d->caps & o.caps) != d->caps)
			FAIL("domain_attr->caps", flags_str(d->caps, FI_TYPE_CAPS),
				      flags_str(o.caps, FI_TYPE_CAPS));
		if ((o.mode & d->mode) != o.mode)
			FAIL("domain_attr->mode", flags_str(d->mode, FI_TYPE_MODE),
				      "needs " + flags_str(o.mode, FI_TYPE_MODE));
		if (d->max_err_data > o.max_err_data)
			FAIL("domain_attr->max_err_data", num(d->max_err_data), num(o.max_err_data));
		if (d->mr_cnt > o.mr_cnt)
			FAIL("domain_attr->mr_cnt", num(d->mr_cnt), num(o.mr_cnt));
		if (d->max_ep_auth_key > o.max_ep_auth_key)
			FAIL("domain_attr->max_ep_auth_key", num(d->max_ep_auth_key), num(o.max_ep_auth_key));
		if (d->max_group_id > o.max_group_id)
			FAIL("domain_attr->max_group_id", num(d->max_group_id), num(o.max_group_id));
		/* 2.5 fields: an older caller's struct may end before them. */
		if (version >= FI_VERSION(2, 5)) {
			if (d->max_cntr_value > o.max_cntr_value)
				FAIL("domain_attr->max_cntr_value", num(d->max_cntr_value), num(o.max_cntr_value));
			if (d->max_err_cntr_value > o.max_err_cntr_value)
				FAIL("domain_attr->max_err_cntr_value", num(d->max_err_cntr_value),
				     num(o.max_err_cntr_value));
		}
	}
	c.next();
	if (const fi_fabric_attr *f = h->fabric_attr) {
		const fi_fabric_attr &o = *t.fabric_attr;
		if (f->name && (!o.name || strcmp(f->name, o.name) != 0))
			FAIL("fabric_attr->name", f->name, o.name ? o.name : "(none)");
	}
	c.next();
	return true;
}
#undef FAIL

void narrow(fi_info &o, const fi_info *h, uint32_t version, const template_opts &opts)
{
	/* Before 1.5 applications spoke only the basic/scalable mr modes. */
	if (version < FI_VERSION(1, 5) && o.domain_attr->mr_mode == 0)
		o.domain_attr->mr_mode = FI_MR_SCALABLE;
	if (!h)
		return;
	if (h->caps) {
		/* Primary caps only when asked; secondary ones reported when free
		 * (a costly one when asked for, in caps or rx_attr->caps). */
		const uint64_t asked = h->caps | (h->rx_attr ? h->rx_attr->caps : 0);
		o.caps = h->caps | (o.caps & secondary_caps & ~(opts.costly_caps & ~asked));
		o.tx_attr->caps &= o.caps;
		o.rx_attr->caps &= o.caps;
	}
	o.mode &= h->mode;
	if (h->tx_attr) {
		if (h->tx_attr->caps)
			o.tx_attr->caps = h->tx_attr->caps;
		o.tx_attr->op_flags = h->tx_attr->op_flags;
		if (h->tx_attr->msg_order)
			o.tx_attr->msg_order = h->tx_attr->msg_order;
		o.tx_attr->mode &= h->mode | h->tx_attr->mode;
	} else {
		o.tx_attr->mode &= h->mode;
	}
	if (h->rx_attr) {
		if (h->rx_attr->caps)
			o.rx_attr->caps = h->rx_attr->caps;
		o.rx_attr->op_flags = h->rx_attr->op_flags;
		o.rx_attr->mode &= h->mode | h->rx_attr->mode;
	} else {
		o.rx_attr->mode &= h->mode;
	}
	if (h->ep_attr && h->ep_attr->mem_tag_format)
		o.ep_attr->mem_tag_format = h->ep_attr->mem_tag_format;
	if (const fi_domain_attr *d = h->domain_attr) {
		if (d->threading != FI_THREAD_UNSPEC)
			o.domain_attr->threading = d->threading;
		if (d->control_progress != FI_PROGRESS_UNSPEC)
			o.domain_attr->control_progress = d->control_progress;
		if (d->data_progress != FI_PROGRESS_UNSPEC)
			o.domain_attr->data_progress = d->data_progress;
		if (d->resource_mgmt != FI_RM_UNSPEC)
			o.domain_attr->resource_mgmt = d->resource_mgmt;
		if (d->av_type != FI_AV_UNSPEC)
			o.domain_attr->av_type = d->av_type;
		if (d->mr_mode == FI_MR_BASIC || d->mr_mode == FI_MR_SCALABLE)
			o.domain_attr->mr_mode = d->mr_mode;
		else if (d->mr_mode != FI_MR_UNSPEC)
			o.domain_attr->mr_mode &= d->mr_mode;
		o.domain_attr->mode &= d->mode | h->mode;
	}
}

} // namespace wu::getinfo
