/* SPDX-License-Identifier: BSD-3-Clause */
/* ucx provider: fi_msg and fi_tagged over UCP tag matching (the tag layout
 * is in ucx_addr.h), FI_PEEK / FI_CLAIM / FI_DISCARD through
 * ucp_tag_probe_nb and ucp_tag_msg_recv_nbx, and cancel. */
#include "config.h"

#include <algorithm>
#include <cstring>

#include "av/av.h"
#include "core/iov.h"
#include "prov/common/ep_ops.h"
#include "prov/ucx/ucx_ep.h"

namespace wu::ucx {
namespace {

/* Argument checks every send and receive shares; 0 or a negative errno. */
int check_common(ucx_ep *ep, const prov::msg_xfer &x, size_t limit)
{
	if (!ep->b.enabled) {
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: the endpoint is not enabled (fi_enable)\n", x.where);
		return -FI_EOPBADSTATE;
	}
	if (x.count > limit || (x.count && !x.iov)) {
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: %zu buffers (iov %s); this endpoint takes at most %zu\n", x.where,
			x.count, x.iov ? "given" : "NULL", limit);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < x.count; i++)
		if (!x.iov[i].iov_base && x.iov[i].iov_len) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: buffer %zu is NULL with length %zu\n", x.where, i,
				x.iov[i].iov_len);
			return -FI_EINVAL;
		}
	if (x.tagged && (x.tag & ~user_mask)) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"%s: tag 0x%llx does not fit the ucx provider's 32 tag bits (ep_attr->mem_tag_format 0x%llx)\n",
			x.where, static_cast<unsigned long long>(x.tag), static_cast<unsigned long long>(user_mask));
		return -FI_EINVAL;
	}
	return 0;
}

/* The UCP buffer arguments of an op's iov: one contiguous buffer, or the
 * iov datatype over o->iov. */
void set_buffers(op *o, const prov::msg_xfer &x, ucp_request_param_t &prm, void **buf, size_t *count)
{
	if (x.count <= 1) {
		*buf = x.count ? x.iov[0].iov_base : nullptr;
		*count = x.count ? x.iov[0].iov_len : 0;
		return;
	}
	for (size_t i = 0; i < x.count; i++)
		o->iov[i] = {x.iov[i].iov_base, x.iov[i].iov_len};
	o->iov_cnt = x.count;
	prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
	prm.datatype = ucp_dt_make_iov();
	*buf = o->iov;
	*count = x.count;
}

/* Receives of up to small_recv bytes use a UCP generic datatype whose
 * unpacker keeps what fits and counts the rest, so a truncated message
 * still fills the buffer (UCP's own truncation delivers nothing); larger
 * receives keep UCP's zero-copy paths. */
constexpr size_t small_recv = 4096;

void *gen_start_pack(void *, const void *, size_t) noexcept
{
	return nullptr; /* receive-only datatype */
}
void *gen_start_unpack(void *, void *buffer, size_t) noexcept
{
	return buffer; /* the op (recv_buffers) */
}
size_t gen_packed_size(void *) noexcept
{
	return SIZE_MAX >> 1; /* never truncated by UCP: finish_recv compares */
}
size_t gen_pack(void *, size_t, void *, size_t) noexcept
{
	return 0;
}
/* memcpy, without the call for the few bytes of a small message. */
inline void copy_few(void *dst, const void *src, size_t n) noexcept
{
	auto *d = static_cast<char *>(dst);
	auto *s = static_cast<const char *>(src);
	if (n > 16 || n < 8) [[unlikely]] {
		memcpy(d, s, n);
		return;
	}
	uint64_t head, tail; /* 8 to 16 bytes: two moves, which may overlap */
	memcpy(&head, s, 8);
	memcpy(&tail, s + n - 8, 8);
	memcpy(d, &head, 8);
	memcpy(d + n - 8, &tail, 8);
}

/* Out of line, so that the one-buffer case saves no registers. */
[[gnu::noinline]] ucs_status_t unpack_iov(op *o, size_t offset, const void *src, size_t len) noexcept
{
	size_t pos = 0;
	for (size_t i = 0; i < o->iov_cnt && len; i++) {
		size_t n = o->iov[i].length;
		if (offset < pos + n) {
			size_t at = offset - pos, c = std::min(n - at, len);
			memcpy(static_cast<char *>(o->iov[i].buffer) + at, src, c);
			src = static_cast<const char *>(src) + c;
			offset += c;
			len -= c;
		}
		pos += n;
	}
	return UCS_OK;
}

ucs_status_t gen_unpack(void *state, size_t offset, const void *src, size_t len) noexcept
{
	auto *o = static_cast<op *>(state);
	if (o->iov_cnt != 1) [[unlikely]]
		return unpack_iov(o, offset, src, len);
	/* One buffer (fi_recv): what fits of it. */
	size_t n = o->iov[0].length;
	if (offset < n)
		copy_few(static_cast<char *>(o->iov[0].buffer) + offset, src, std::min(n - offset, len));
	return UCS_OK;
}
void gen_finish(void *) noexcept {}

} // namespace

ucp_datatype_t small_datatype() noexcept
{
	static ucp_datatype_t dt = [] {
		ucp_generic_dt_ops_t ops{.start_pack = gen_start_pack,
					 .start_unpack = gen_start_unpack,
					 .packed_size = gen_packed_size,
					 .pack = gen_pack,
					 .unpack = gen_unpack,
					 .finish = gen_finish};
		ucp_datatype_t d = 0;
		if (ucp_dt_create_generic(&ops, nullptr, &d) != UCS_OK)
			d = 0;
		return d;
	}();
	return dt;
}

namespace {

/* A receive's buffers: the small generic datatype over o->iov (its
 * context is o), or what set_buffers gives. */
void recv_buffers(op *o, const prov::msg_xfer &x, ucp_request_param_t &prm, void **buf, size_t *count)
{
	if (o->len <= small_recv && o->ep->small_dt) {
		for (size_t i = 0; i < x.count; i++)
			o->iov[i] = {x.iov[i].iov_base, x.iov[i].iov_len};
		o->iov_cnt = x.count;
		prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
		prm.datatype = o->ep->small_dt;
		*buf = o;
		*count = 1;
		return;
	}
	set_buffers(o, x, prm, buf, count);
	if (x.count == 1) {
		o->iov[0] = {x.iov[0].iov_base, x.iov[0].iov_len};
		o->iov_cnt = 1;
	}
}

void send_cb(void *req, ucs_status_t s, void *user) noexcept
{
	guard_void("ucx send completion", [&] {
		auto *o = static_cast<op *>(user);
		o->req = nullptr;
		const bool ureq = o->ureq; /* ours: not UCP's to free */
		tx_done(o, s, "ucx send");
		if (!ureq)
			ucp_request_free(req);
	});
}

/* A receive finished (status s, o->info filled): its completion, then o goes. */
void finish_recv(op *o, ucs_status_t s)
{
	ucx_ep *ep = o->ep;
	ep->rx_busy--;
	if (ep->closing || o->kind != op_kind::RECV) {
		free_op(o);
		return;
	}
	/* (A receive op has no copy: a discarded message drains through a
	 * CTRL_RX op, above.) */
	cq::completion c;
	c.op_context = o->context;
	c.flags = o->tagged ? FI_RECV | FI_TAGGED : FI_RECV | FI_MSG; /* prov::comp_flags, without the call */
	c.buf = o->iov_cnt ? o->iov[0].buffer : nullptr;
	c.tag = o->tagged ? (o->info.sender_tag & user_mask) : 0;
	if (ep->b.info->caps & FI_SOURCE)
		c.src_addr = source_of(ep, tag_id(o->info.sender_tag));
	fid_cntr *cn = ep->b.c_recv;
	if (s == UCS_OK && o->info.length <= o->len) [[likely]] {
		c.len = o->info.length;
		ep->b.push(ep->b.rx_wants(o->flags) ? ep->b.rx_cq : nullptr, cn, c);
	} else if (s == UCS_OK) {
		/* Through the small datatype: the buffer holds what fit. */
		c.len = o->len;
		ep->b.push(ep->b.rx_cq, cn, c, FI_ETRUNC, o->info.length - o->len);
	} else if (s == UCS_ERR_MESSAGE_TRUNCATED) {
		fi_err(s, "ucx receive");
		c.len = o->len;
		size_t olen = o->info.length > o->len ? o->info.length - o->len : 0;
		ep->b.push(ep->b.rx_cq, cn, c, FI_ETRUNC, olen);
	} else if (s == UCS_ERR_CANCELED) {
		c.len = 0;
		c.src_addr = FI_ADDR_NOTAVAIL;
		c.tag = 0;
		ep->b.push(ep->b.rx_cq, cn, c, o->fail ? o->fail : FI_ECANCELED);
	} else {
		c.len = 0;
		ep->b.push(ep->b.rx_cq, cn, c, -fi_err(s, "ucx receive"));
	}
	free_op(o);
}

void recv_cb(void *req, ucs_status_t s, const ucp_tag_recv_info_t *info, void *user) noexcept
{
	guard_void("ucx receive completion", [&] {
		auto *o = static_cast<op *>(user);
		if (o->ep->posting == o)
			o->ep->posting = nullptr; /* inside post_recv's call: o and req are gone when it returns */
		o->req = nullptr;
		if (info)
			o->info = *info;
		const bool ureq = o->ureq; /* ours: not UCP's to free */
		finish_recv(o, s);
		if (!ureq)
			ucp_request_free(req);
	});
}

/* What ucp_tag_*recv_nbx returned for receive op o: done now, failed now
 * (the caller returns the error), or in flight. */
ssize_t started(op *o, ucs_status_ptr_t r, const char *where)
{
	if (r == nullptr) {
		finish_recv(o, UCS_OK);
		return 0;
	}
	if (UCS_PTR_IS_ERR(r)) {
		int e = fi_err(UCS_PTR_STATUS(r), where);
		o->ep->rx_busy--;
		free_op(o);
		return e ? e : -FI_EIO;
	}
	o->req = r;
	return 0;
}

/* UCP's request in the room before o (ucx_domain::req_pre): no
 * allocation in the call, no ucp_request_free after. */
inline void request_in_room(op *o, ucp_request_param_t &prm) noexcept
{
	if (o->ep->dom->req_pre) [[likely]] {
		prm.op_attr_mask |= UCP_OP_ATTR_FIELD_REQUEST;
		prm.request = o;
		o->ureq = true;
	}
}

/* Posts receive o (under b.mtx) for tag / mask into buf, count (prm has
 * the datatype).  UCP_OP_ATTR_FLAG_NO_IMM_CMPL: a message already here
 * completes o inside the call through recv_cb, which gets the sender's
 * tag and length; UCX 1.13 does not fill recv_info when it completes a
 * receive at once, and a probe before every receive (to learn them) is
 * what this spares. */
[[gnu::always_inline]] inline ssize_t post_recv(op *o, void *buf, size_t count, uint64_t tag, uint64_t mask,
						ucp_request_param_t &prm, const char *where)
{
	ucx_ep *ep = o->ep;
	prm.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
	prm.cb.recv = recv_cb;
	prm.user_data = o;
	request_in_room(o, prm);
	ep->posting = o;
	ucs_status_ptr_t r = ucp_tag_recv_nbx(ep->worker, buf, count, tag, mask, &prm);
	if (!ep->posting)
		return 0; /* completed in the call: recv_cb finished o and freed the request */
	ep->posting = nullptr;
	if (UCS_PTR_IS_PTR(r)) [[likely]] {
		o->req = r;
		return 0;
	}
	return started(o, r, where);
}

/* A receive op for x (src: a directed receive's sender id, else 0),
 * counted in rx_busy. */
op *new_recv(ucx_ep *ep, const prov::msg_xfer &x, uint32_t src)
{
	op *o = new_op(ep, op_kind::RECV);
	o->context = x.context;
	o->flags = x.flags;
	o->tagged = x.tagged;
	o->src_id = src;
	o->len = wu::iov_total(x.iov, x.count);
	ep->rx_busy++;
	return o;
}

/* Receives message m (info) into a scratch buffer and drops it: a
 * discarded message.  Its completion, if any, was already posted. */
ssize_t drain(ucx_ep *ep, ucp_tag_message_h m, const ucp_tag_recv_info_t &info, const char *where)
{
	op *o = new_op(ep, op_kind::CTRL_RX);
	o->info = info;
	ep->rx_busy++;
	o->copy.resize(info.length ? info.length : 1);
	ucp_request_param_t prm{};
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
	prm.cb.recv = recv_cb;
	prm.user_data = o;
	prm.recv_info.tag_info = &o->info;
	return started(o, ucp_tag_msg_recv_nbx(ep->worker, o->copy.data(), info.length, m, &prm), where);
}

/* FI_PEEK, FI_CLAIM, FI_DISCARD (fi_tagged(3)).  A discarded message is
 * reported at once (length 0) and drained in the background: UCP has no
 * way to drop a message but to receive it, which for a rendezvous needs
 * the sender's progress too. */
ssize_t peek_claim(ucx_ep *ep, const prov::msg_xfer &x, uint64_t tag, uint64_t mask)
{
	const bool peek = x.flags & FI_PEEK, claim = x.flags & FI_CLAIM, discard = x.flags & FI_DISCARD;
	cq::completion c;
	c.op_context = x.context;
	c.flags = prov::comp_flags(prov::OP_RECV, true);
	ucp_tag_message_h msg = nullptr;
	ucp_tag_recv_info_t info{};
	if (peek) {
		progress_locked(ep);
		msg = ucp_tag_probe_nb(ep->worker, tag, mask, claim || discard, &info);
		if (!msg) {
			ep->b.push(ep->b.rx_cq, nullptr, c, FI_ENOMSG);
			return 0;
		}
	} else {
		auto it = x.context ? ep->claimed.find(x.context) : ep->claimed.end();
		if (it == ep->claimed.end()) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: FI_CLAIM with a context no FI_PEEK | FI_CLAIM returned\n",
				x.where);
			return -FI_EINVAL;
		}
		msg = it->second.first;
		info = it->second.second;
		ep->claimed.erase(it);
	}
	c.len = info.length;
	c.tag = info.sender_tag & user_mask;
	if (ep->b.info->caps & FI_SOURCE)
		c.src_addr = source_of(ep, tag_id(info.sender_tag));
	if (discard) {
		c.len = 0;
		ep->b.push(ep->b.rx_cq, ep->b.cntr_for(prov::OP_RECV), c);
		return drain(ep, msg, info, x.where);
	}
	if (peek) {
		if (claim)
			ep->claimed[x.context] = {msg, info};
		ep->b.push(ep->b.rx_cq, nullptr, c);
		return 0;
	}
	/* The claim: into the buffers. */
	op *o = new_recv(ep, x, 0);
	ucp_request_param_t prm{};
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
	prm.cb.recv = recv_cb;
	prm.user_data = o;
	prm.recv_info.tag_info = &o->info;
	void *buf;
	size_t count;
	recv_buffers(o, x, prm, &buf, &count);
	o->info = info;
	return started(o, ucp_tag_msg_recv_nbx(ep->worker, buf, count, msg, &prm), x.where);
}

/* A send op's UCP parameters: its callback, and UCP's request in the
 * room before o. */
void send_params(op *o, ucp_request_param_t &prm) noexcept
{
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	prm.cb.send = send_cb;
	prm.user_data = o;
	request_in_room(o, prm);
}

/* A send UCP completes inside the call or refuses (its short protocol:
 * no op, request or copy; UCS_ERR_NO_RESOURCE sent nothing), and what
 * the peer learns from the answer (peer::imm_from). */
inline ucs_status_ptr_t send_at_once(peer *p, const void *buf, size_t len, uint64_t tag) noexcept
{
	ucp_request_param_t imm;
	imm.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
	ucs_status_ptr_t r = ucp_tag_send_nbx(p->ep, buf, len, tag, &imm);
	if (r == nullptr) [[likely]]
		p->imm_went(len);
	else if (UCS_PTR_STATUS(r) == UCS_ERR_NO_RESOURCE)
		p->imm_refused(len);
	return r;
}

/* What a send op's initiation r says: 0 (done, or in flight), or the
 * errno of a refusal, o gone. */
ssize_t send_issued(op *o, ucs_status_ptr_t r, const char *where)
{
	int e = tx_issued(o, r, where);
	if (e >= 0)
		return 0;
	o->ep->tx_busy--;
	free_op(o);
	return e;
}

/* An inject UCP cannot complete inside the call (past its short
 * protocol, or its queue full): a copy of the bytes goes, in an op whose
 * room holds UCP's request.  0, or a negative errno (o gone). */
[[gnu::noinline]] ssize_t inject_copy(ucx_ep *ep, peer *p, const void *buf, size_t len, uint64_t tag, bool tagged)
{
	op *o = new_op(ep, op_kind::SEND);
	o->flags = FI_INJECT;
	o->tagged = tagged;
	o->len = len;
	ep->tx_busy++;
	o->copy.resize(len);
	if (len)
		memcpy(o->copy.data(), buf, len);
	ucp_request_param_t prm;
	send_params(o, prm);
	return send_issued(o, ucp_tag_send_nbx(p->ep, o->copy.data(), len, tag, &prm), tagged ? "fi_tinject" : "fi_inject");
}

} // namespace

ssize_t do_send(ucx_ep *ep, const prov::msg_xfer &x)
{
	return ep->b.locked([&]() -> ssize_t {
		if (int r = check_common(ep, x, ep->b.info->tx_attr->iov_limit))
			return r;
		if (x.tagged && !(ep->b.info->caps & FI_TAGGED)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the endpoint was opened without FI_TAGGED\n", x.where);
			return -FI_EOPNOTSUPP;
		}
		if (x.flags & FI_REMOTE_CQ_DATA) {
			WU_WARN(P(), FI_LOG_EP_DATA,
				"%s: the ucx provider carries no remote CQ data (domain_attr->cq_data_size is 0)\n",
				x.where);
			return -FI_EINVAL;
		}
		const bool inject = x.inject_api || (x.flags & FI_INJECT);
		size_t len = wu::iov_total(x.iov, x.count);
		peer *p;
		if (int r = tx_checks(ep, x.where, inject && len > ep->b.info->tx_attr->inject_size, len, x.addr, &p))
			return r;
		const bool want_comp = !x.inject_api && ep->b.tx_wants(x.flags);
		uint64_t tag = x.tagged ? make_tag(false, p->send_id, x.tag) : make_tag(true, p->send_id, kind_msg);
		if (x.count <= 1 && !(x.flags & FI_DELIVERY_COMPLETE) && p->imm_try(len)) {
			/* What UCP sends at once (its short path) completes here:
			 * no op and no request, nor a copy for an inject (the
			 * buffer is UCP's only during the call).  Anything else
			 * UCP refuses with UCS_ERR_NO_RESOURCE, having sent
			 * nothing, and takes the op path below. */
			ucs_status_ptr_t r = send_at_once(p, x.count ? x.iov[0].iov_base : nullptr, len, tag);
			if (r == nullptr) [[likely]] {
				/* An inject with no counter posts nothing: no
				 * empty item through the completion batch. */
				if (want_comp || ep->b.c_send)
					ep->b.complete_tx(prov::OP_SEND, x.tagged, x.context, len, want_comp, 0);
				return 0;
			}
			if (UCS_PTR_STATUS(r) != UCS_ERR_NO_RESOURCE) {
				int e = fi_err(UCS_PTR_STATUS(r), x.where);
				return e ? e : -FI_EIO;
			}
		}
		op *o = new_op(ep, op_kind::SEND);
		o->context = x.context;
		o->flags = x.flags;
		o->tagged = x.tagged;
		o->len = len;
		o->want_comp = want_comp;
		ep->tx_busy++;
		ucp_request_param_t prm{};
		send_params(o, prm);
		void *buf;
		size_t count;
		if (inject) {
			gather(o, x.iov, x.count, len); /* ours is sent */
			buf = o->copy.data();
			count = len;
		} else {
			set_buffers(o, x, prm, &buf, &count);
		}
		ucs_status_ptr_t r = (x.flags & FI_DELIVERY_COMPLETE)
					     ? ucp_tag_send_sync_nbx(p->ep, buf, count, tag, &prm)
					     : ucp_tag_send_nbx(p->ep, buf, count, tag, &prm);
		return send_issued(o, r, x.where);
	});
}

ssize_t do_recv(ucx_ep *ep, const prov::msg_xfer &x)
{
	return ep->b.locked([&]() -> ssize_t {
		flush_rx(ep);
		if (x.tagged && !(ep->b.info->caps & FI_TAGGED)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the endpoint was opened without FI_TAGGED\n", x.where);
			return -FI_EOPNOTSUPP;
		}
		if (!x.tagged && (x.flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: FI_PEEK, FI_CLAIM and FI_DISCARD are for tagged receives\n",
				x.where);
			return -FI_EOPNOTSUPP;
		}
		if (x.flags & FI_MULTI_RECV) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the ucx provider has no FI_MULTI_RECV\n", x.where);
			return -FI_EINVAL;
		}
		const bool pc = x.tagged && (x.flags & (FI_PEEK | FI_CLAIM));
		if (x.tagged && (x.flags & FI_DISCARD) && !pc) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: FI_DISCARD goes with FI_PEEK or FI_CLAIM\n", x.where);
			return -FI_EINVAL;
		}
		if (pc && (x.flags & FI_CLAIM) && !x.context) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: FI_CLAIM needs the context that names the message\n",
				x.where);
			return -FI_EINVAL;
		}
		if (!pc || (x.flags & FI_CLAIM && !(x.flags & FI_PEEK) && !(x.flags & FI_DISCARD)))
			if (int r = check_common(ep, x, ep->b.info->rx_attr->iov_limit))
				return r;
		if (pc && !ep->b.enabled)
			return -FI_EOPBADSTATE;
		if (x.tagged && (x.tag & ~user_mask)) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: tag 0x%llx does not fit the ucx provider's 32 tag bits\n",
				x.where, static_cast<unsigned long long>(x.tag));
			return -FI_EINVAL;
		}
		uint64_t tag, mask;
		if (x.tagged) {
			tag = x.tag & ~x.ignore & user_mask;
			mask = tag_reserved | ep->rx_id_mask | (~x.ignore & user_mask);
		} else {
			tag = make_tag(true, 0, kind_msg);
			mask = tag_reserved | ep->rx_id_mask | user_mask;
		}
		uint32_t src = 0;
		if (ep->directed && x.addr != FI_ADDR_UNSPEC) {
			if (!ep->b.av || !av::addr_of_part(ep->b.av, x.addr, 0, &src, sizeof src) || !src) {
				WU_WARN(P(), FI_LOG_EP_DATA, "%s: source fi_addr %llu is not in the endpoint's AV\n",
					x.where, static_cast<unsigned long long>(x.addr));
				return -FI_EINVAL;
			}
			tag |= uint64_t(src) << id_shift;
			mask |= id_mask;
		}
		if (pc)
			return peek_claim(ep, x, tag, mask);
		if (ep->rx_busy >= ep->b.info->rx_attr->size)
			return -FI_EAGAIN;
		op *o = new_recv(ep, x, src);
		ucp_request_param_t prm{};
		void *buf;
		size_t count;
		recv_buffers(o, x, prm, &buf, &count);
		return post_recv(o, buf, count, tag, mask, prm, x.where);
	});
}

namespace {

/* The short paths of fi_inject / fi_tinject and fi_recv / fi_trecv (the
 * ep_ops traits hooks): prov::general_path when do_send / do_recv must
 * take the call, nothing changed then. */
ssize_t inject_one(ucx_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t kind)
{
	const bool tagged = kind & FI_TAGGED, has_data = kind & FI_REMOTE_CQ_DATA;
	const fi_info *info = ep->b.info;
	/* What do_send would refuse (it logs why) or send otherwise goes to it. */
	if (has_data || len > info->tx_attr->inject_size || (!buf && len) ||
	    (tagged && (!(info->caps & FI_TAGGED) || (tag & ~user_mask))))
		return prov::general_path;
	return ep->b.locked([&]() -> ssize_t {
		peer *p;
		if (!ep->b.enabled || ep->tx_busy >= info->tx_attr->size || !(p = ep->pc.find(dest))) [[unlikely]]
			return prov::general_path;
		const uint64_t t = tagged ? make_tag(false, p->send_id, tag) : make_tag(true, p->send_id, kind_msg);
		if (!p->imm_try(len))
			return inject_copy(ep, p, buf, len, t, tagged);
		/* As in do_send: what UCP sends at once completes here. */
		ucs_status_ptr_t r = send_at_once(p, buf, len, t);
		if (r == nullptr) [[likely]] {
			if (ep->b.c_send)
				ep->b.complete_tx(prov::OP_SEND, tagged, nullptr, len, false, 0);
			return 0;
		}
		if (UCS_PTR_STATUS(r) == UCS_ERR_NO_RESOURCE)
			return inject_copy(ep, p, buf, len, t, tagged);
		int e = fi_err(UCS_PTR_STATUS(r), tagged ? "fi_tinject" : "fi_inject");
		return e ? e : -FI_EIO;
	});
}

ssize_t recv_one(ucx_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
		 bool tagged)
{
	const fi_info *info = ep->b.info;
	const uint64_t flags = info->rx_attr->op_flags;
	/* What do_recv would refuse (it logs why) or post otherwise goes to
	 * it: a directed receive (an AV lookup), a large one (no small
	 * datatype), the flags it looks at. */
	if ((tagged && (!(info->caps & FI_TAGGED) || (tag & ~user_mask))) || (!buf && len) || len > small_recv ||
	    !ep->small_dt || (ep->directed && src != FI_ADDR_UNSPEC) ||
	    (flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)))
		return prov::general_path;
	return ep->b.locked([&]() -> ssize_t {
		if (!ep->b.enabled || ep->rx_busy >= info->rx_attr->size) [[unlikely]]
			return prov::general_path;
		op *o = new_op(ep, op_kind::RECV);
		o->context = ctx;
		o->flags = flags;
		o->tagged = tagged;
		o->len = len;
		o->iov[0] = {buf, len};
		o->iov_cnt = 1;
		ep->rx_busy++;
		const uint64_t t = tagged ? tag & ~ignore & user_mask : make_tag(true, 0, kind_msg);
		const uint64_t m = tag_reserved | ep->rx_id_mask | (tagged ? ~ignore & user_mask : user_mask);
		if (!ep->autop.on()) [[likely]] {
			/* Manual progress: UCP gets it at the next poll (flush_rx). */
			o->ptag = t;
			o->pmask = m;
			o->dnext = nullptr;
			*ep->deferred_tail = o;
			ep->deferred_tail = &o->dnext;
			return 0;
		}
		ucp_request_param_t prm;
		prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
		prm.datatype = ep->small_dt;
		return post_recv(o, o, 1, t, m, prm, tagged ? "fi_trecv" : "fi_recv");
	});
}

struct ucx_traits {
	using ep_type = ucx_ep;
	static ucx_ep *lookup(fid_ep *e) noexcept { return ep_of(e); }
	static uint64_t tx_flags(ucx_ep *ep) { return ep->b.info->tx_attr->op_flags; }
	static uint64_t rx_flags(ucx_ep *ep) { return ep->b.info->rx_attr->op_flags; }
	static ssize_t send(ucx_ep *ep, const prov::msg_xfer &x) { return do_send(ep, x); }
	static ssize_t recv(ucx_ep *ep, const prov::msg_xfer &x) { return do_recv(ep, x); }
	static ssize_t inject(ucx_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t,
			      uint64_t kind)
	{
		return inject_one(ep, buf, len, dest, tag, kind);
	}
	static ssize_t recv1(ucx_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
			     void *ctx, bool tagged)
	{
		return recv_one(ep, buf, len, src, tag, ignore, ctx, tagged);
	}
	static ssize_t rma(ucx_ep *ep, const prov::rma_xfer &x) { return do_rma(ep, x); }
	static ssize_t atomic(ucx_ep *, const prov::atomic_xfer &x)
	{
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: the ucx provider offers no atomics (fi_getinfo refuses FI_ATOMIC)\n",
			x.where);
		return -FI_EOPNOTSUPP;
	}
	static int atomic_valid(ucx_ep *, const char *where, wu::atomic::kind, fi_datatype, fi_op, size_t *)
	{
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: the ucx provider offers no atomics\n", where);
		return -FI_EOPNOTSUPP;
	}
};

using ucx_ops = prov::ep_ops<ucx_traits>;

} // namespace

data_tables data_ops() noexcept
{
	return {ucx_ops::msg_ops(), ucx_ops::rma_ops(), ucx_ops::tagged_ops(), ucx_ops::atomic_ops()};
}

void post_deferred(ucx_ep *ep)
{
	op *o = ep->deferred;
	ep->deferred = nullptr;
	ep->deferred_tail = &ep->deferred;
	while (o) {
		op *next = o->dnext;
		o->dnext = nullptr;
		void *context = o->context; /* o is gone if UCP refuses */
		const bool tagged = o->tagged;
		ucp_request_param_t prm;
		prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
		prm.datatype = ep->small_dt;
		/* fi_recv has returned: a refusal now is the receive's error
		 * completion (post_recv logged it and freed o). */
		if (ssize_t r = post_recv(o, o, 1, o->ptag, o->pmask, prm, "ucx: posting a receive"); r < 0) [[unlikely]] {
			cq::completion c;
			c.op_context = context;
			c.flags = tagged ? FI_RECV | FI_TAGGED : FI_RECV | FI_MSG;
			ep->b.push(ep->b.rx_cq, ep->b.c_recv, c, int(-r));
		}
		o = next;
	}
}

int cancel_locked(ucx_ep *ep, void *context)
{
	flush_rx(ep); /* a deferred receive is canceled through UCP like the rest */
	for (op *o : ep->live)
		if (o->kind == op_kind::RECV && o->context == context && o->req) {
			/* Its callback completes it with UCS_ERR_CANCELED, maybe now. */
			ucp_request_cancel(ep->worker, o->req);
			return 0;
		}
	auto it = ep->claimed.find(context);
	if (it != ep->claimed.end()) {
		/* A claimed message nobody will take: dropped. */
		auto [m, info] = it->second;
		ep->claimed.erase(it);
		drain(ep, m, info, "fi_cancel");
		return 0;
	}
	return -FI_ENOENT;
}

void fail_directed(ucx_ep *ep, uint32_t id)
{
	std::vector<op *> v;
	for (op *o : ep->live)
		if (o->kind == op_kind::RECV && o->src_id == id && o->req)
			v.push_back(o);
	for (op *o : v) {
		o->fail = FI_EIO;
		ucp_request_cancel(ep->worker, o->req);
	}
}

} // namespace wu::ucx
