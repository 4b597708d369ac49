/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive contexts (srx.h): the srx object, its ops, binding and
 * the locks of an srx call. */
#include "config.h"
#include "prov/common/srx.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "av/av.h"
#include "core/fid.h"
#include "core/shim.h"
#include "prov/common/ops_tables.h"

namespace wu::prov {

namespace {

constexpr uint32_t srx_magic = 0x57555352; /* "WUSR" */

/* Every lock an srx call needs, in order (srx.h); flush() posts the completions. */
class srx_locks {
public:
	explicit srx_locks(srx *s) : s_(s), bind_(s->bind_mtx)
	{
		if (s_->own_locks) {
			for (srx_member &m : s_->eps)
				m.b->mtx.lock();
			s_->eng_mtx.lock();
		} else {
			s_->lock.lock();
		}
		locked_ = true;
	}
	~srx_locks() { unlock(); }
	/* Under the locks, after a post or claim: the endpoints move on
	 * what they set aside. */
	void room()
	{
		for (srx_member &m : s_->eps)
			if (m.rx_room)
				m.rx_room(m.ep);
	}
	/* Releases the endpoints and posts what they collected. */
	void flush()
	{
		unlock();
		for (srx_member &m : s_->eps)
			m.flush(m.ep);
	}
	srx_locks(const srx_locks &) = delete;
	srx_locks &operator=(const srx_locks &) = delete;

private:
	void unlock()
	{
		if (!locked_)
			return;
		locked_ = false;
		if (!s_->own_locks) {
			s_->lock.unlock();
			return;
		}
		s_->eng_mtx.unlock();
		for (auto it = s_->eps.rbegin(); it != s_->eps.rend(); ++it)
			it->b->mtx.unlock();
	}
	srx *s_;
	std::unique_lock<std::mutex> bind_;
	bool locked_ = false;
};

srx *srx_of_ep(fid_ep *e) noexcept
{
	return e ? srx_of(&e->fid) : nullptr;
}

template <class F>
ssize_t srx_call(fid_ep *e, const char *where, F &&fn) noexcept
{
	return guard(where, [&]() -> ssize_t {
		srx *s = srx_of_ep(e);
		if (!s)
			return -FI_EINVAL;
		return fn(s);
	});
}

/* Where an FI_ENOMSG of a peek on the context itself goes. */
ep_base *first_of(srx *s)
{
	for (srx_member &m : s->eps)
		if (m.b)
			return m.b;
	return nullptr;
}

/* fi_ops_msg / fi_ops_tagged (receives only) */

ssize_t s_recv(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, void *ctx) noexcept
{
	return srx_call(e, "fi_recv(srx)", [&](srx *s) {
		iovec v{buf, len};
		return srx_recv(s, {.where = "fi_recv(srx)", .iov = &v, .count = 1, .addr = src, .context = ctx,
				    .flags = s->attr.op_flags});
	});
}

ssize_t s_recvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, void *ctx) noexcept
{
	return srx_call(e, "fi_recvv(srx)",
			[&](srx *s) {
				return srx_recv(s, {.where = "fi_recvv(srx)", .iov = iov, .count = cnt, .addr = src,
						    .context = ctx, .flags = s->attr.op_flags});
			});
}

ssize_t s_recvmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
{
	return srx_call(e, "fi_recvmsg(srx)", [&](srx *s) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return srx_recv(s, {.where = "fi_recvmsg(srx)", .iov = m->msg_iov, .desc = m->desc,
				    .count = m->iov_count, .addr = m->addr, .data = m->data, .context = m->context,
				    .flags = flags, .msg_api = true});
	});
}

ssize_t s_trecv(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, uint64_t tag, uint64_t ignore,
		void *ctx) noexcept
{
	return srx_call(e, "fi_trecv(srx)", [&](srx *s) {
		iovec v{buf, len};
		return srx_recv(s, {.where = "fi_trecv(srx)", .iov = &v, .count = 1, .addr = src, .tag = tag,
				    .ignore = ignore, .context = ctx, .flags = s->attr.op_flags, .tagged = true});
	});
}

ssize_t s_trecvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, uint64_t tag,
		 uint64_t ignore, void *ctx) noexcept
{
	return srx_call(e, "fi_trecvv(srx)", [&](srx *s) {
		return srx_recv(s, {.where = "fi_trecvv(srx)", .iov = iov, .count = cnt, .addr = src, .tag = tag,
				    .ignore = ignore, .context = ctx, .flags = s->attr.op_flags, .tagged = true});
	});
}

ssize_t s_trecvmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
{
	return srx_call(e, "fi_trecvmsg(srx)", [&](srx *s) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))
			return srx_peek_claim(s, m, flags);
		return srx_recv(s, {.where = "fi_trecvmsg(srx)", .iov = m->msg_iov, .desc = m->desc,
				    .count = m->iov_count, .addr = m->addr, .tag = m->tag, .ignore = m->ignore,
				    .data = m->data, .context = m->context, .flags = flags, .tagged = true,
				    .msg_api = true});
	});
}

/* A shared receive context only receives: every other slot refuses, logging what was asked.
 * fi_ops_msg and fi_ops_tagged name their send slots alike. */
#define SRX_NO_SENDS(ops)                                                                                    \
	WU_NOSYS(ops, send), WU_NOSYS(ops, sendv), WU_NOSYS(ops, sendmsg), WU_NOSYS(ops, inject),            \
		WU_NOSYS(ops, senddata), WU_NOSYS(ops, injectdata)
#define NO_RMA(slot) WU_NOSYS(fi_ops_rma, slot)
#define NO_ATOMIC(slot) WU_NOSYS(fi_ops_atomic, slot)

fi_ops_msg srx_msg_ops = {sizeof(fi_ops_msg), s_recv, s_recvv, s_recvmsg, SRX_NO_SENDS(fi_ops_msg)};

fi_ops_tagged srx_tagged_ops = {sizeof(fi_ops_tagged), s_trecv, s_trecvv, s_trecvmsg,
				SRX_NO_SENDS(fi_ops_tagged)};

fi_ops_rma srx_rma_ops = {sizeof(fi_ops_rma), NO_RMA(read),      NO_RMA(readv),    NO_RMA(readmsg),
			  NO_RMA(write),      NO_RMA(writev),    NO_RMA(writemsg), NO_RMA(inject),
			  NO_RMA(writedata),  NO_RMA(injectdata)};

fi_ops_atomic srx_atomic_ops = {sizeof(fi_ops_atomic),     NO_ATOMIC(write),         NO_ATOMIC(writev),
				NO_ATOMIC(writemsg),       NO_ATOMIC(inject),        NO_ATOMIC(readwrite),
				NO_ATOMIC(readwritev),     NO_ATOMIC(readwritemsg),  NO_ATOMIC(compwrite),
				NO_ATOMIC(compwritev),     NO_ATOMIC(compwritemsg),  NO_ATOMIC(writevalid),
				NO_ATOMIC(readwritevalid), NO_ATOMIC(compwritevalid)};

#undef SRX_NO_SENDS
#undef NO_RMA
#undef NO_ATOMIC

constinit fi_ops_cm srx_cm_ops = rdm_cm_ops(WU_NOSYS(fi_ops_cm, setname), WU_NOSYS(fi_ops_cm, getname));

/* fi_ops_ep */

ssize_t srx_cancel(fid *f, void *context) noexcept
{
	return guard("fi_cancel(srx)", [&]() -> ssize_t {
		srx *s = srx_of(f);
		if (!s)
			return -FI_EINVAL;
		srx_locks l(s);
		op *o = s->rx.cancel(context);
		if (!o)
			return -FI_ENOENT;
		ep_base *b = first_of(s);
		if (!b) {
			/* No endpoint, so no CQ to report to: it just goes. */
			s->rx.release(o);
			return 0;
		}
		complete_canceled(*b, o);
		l.flush();
		return 0;
	});
}

int srx_getopt(fid *f, int level, int name, void *val, size_t *len) noexcept
{
	return guard("fi_getopt(srx)", [&]() -> int {
		srx *s = srx_of(f);
		if (!s || !val || !len)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV)
			return -FI_ENOPROTOOPT;
		std::lock_guard<std::mutex> g(s->bind_mtx);
		return ep_base::put_size_opt(s->rx.min_multi_recv, val, len);
	});
}

int srx_setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
{
	return guard("fi_setopt(srx)", [&]() -> int {
		srx *s = srx_of(f);
		if (!s || !val)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV)
			return -FI_ENOPROTOOPT;
		if (len != sizeof(size_t))
			return -FI_EINVAL;
		srx_locks l(s);
		memcpy(&s->rx.min_multi_recv, val, sizeof(size_t));
		return 0;
	});
}

ssize_t srx_rx_left(fid_ep *e) noexcept
{
	return srx_call(e, "fi_rx_size_left(srx)", [&](srx *s) -> ssize_t {
		size_t n = s->rx.posted;
		return ssize_t(s->rx.size - std::min(n, s->rx.size));
	});
}

constinit fi_ops_ep srx_ep_ops =
	ep_core_ops(srx_cancel, srx_getopt, srx_setopt, srx_rx_left, WU_NOSYS(fi_ops_ep, tx_size_left));

/* fi_ops */

int srx_close(fid *f) noexcept
{
	return guard("fi_close(srx)", [&]() -> int {
		srx *s = srx_of(f);
		if (!s)
			return -FI_EINVAL;
		{
			std::lock_guard<std::mutex> g(s->bind_mtx);
			if (!s->eps.empty()) {
				/* fi_endpoint(3): close the endpoints first. */
				WU_WARN(s->prov, FI_LOG_EP_CTRL,
					"fi_close(srx): %zu endpoint(s) still bound; close them first\n", s->eps.size());
				return -FI_EBUSY;
			}
			/* Receives still posted go without completions (fi_close(3)). */
			s->rx.drain();
		}
		s->magic = 0;
		std::unique_ptr<srx> gone(s); /* srx_open released it to the application */
		return 0;
	});
}

int srx_control(fid *f, int command, void *) noexcept
{
	return guard("fi_control(srx)", [&]() -> int {
		if (!srx_of(f))
			return -FI_EINVAL;
		return command == FI_ENABLE ? 0 : -FI_ENOSYS;
	});
}

constinit fi_ops srx_fi_ops = ep_fi_ops(srx_close, WU_NOSYS(fi_ops, bind), srx_control);

/* Is an endpoint other than ep bound to s on an AV other than av?  Under bind_mtx. */
bool other_av(const srx *s, const void *ep, const fid_av *av)
{
	if (!av)
		return false;
	for (const srx_member &o : s->eps)
		if (o.ep != ep && o.b && o.b->av && o.b->av != av)
			return true;
	return false;
}

} // namespace

srx *srx_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_SRX_CTX)
		return nullptr;
	auto *s = container_of_fid<srx>(reinterpret_cast<fid_ep *>(f));
	return s->magic == srx_magic ? s : nullptr;
}

ssize_t srx_recv(srx *s, const msg_xfer &x)
{
	ssize_t kind = classify_recv(x, s->prov);
	if (kind < 0)
		return kind;
	if (kind == RX_PEEK) {
		fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
		return srx_peek_claim(s, &m, x.flags);
	}
	srx_locks l(s);
	if (s->rx.full())
		return -FI_EAGAIN;
	post_recv(s->rx, nullptr, x);
	l.room();
	l.flush();
	return 0;
}

ssize_t srx_peek_claim(srx *s, const fi_msg_tagged *m, uint64_t flags)
{
	if (const char *bad = check_peek(m, flags)) {
		WU_WARN(s->prov, FI_LOG_EP_DATA, "fi_trecvmsg(srx, FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return -FI_EINVAL;
	}
	srx_locks l(s);
	if (ssize_t r = peek_claim(s->rx, first_of(s), m, flags))
		return r;
	l.room();
	l.flush();
	return 0;
}

const char *srx_check_attach(srx *s, const srx_member &m, uint64_t) noexcept
{
	for (const srx_member &o : s->eps)
		if (o.ep == m.ep)
			return "the endpoint is bound to this shared receive context already";
	if (m.b->dom != s->dom)
		return "the shared receive context belongs to another domain";
	if (other_av(s, m.ep, m.b->av))
		return "endpoints sharing a receive context must use one address vector (fi_endpoint(3))";
	return nullptr;
}

const char *srx_refuse(bool bound, bool enabled, bool lent) noexcept
{
	if (bound)
		return "the endpoint already has a shared receive context";
	if (enabled)
		return "bind the shared receive context before fi_enable";
	if (lent)
		return "the endpoint is a sub-endpoint with a lent receive context";
	return nullptr;
}

void srx_detach(srx *s, const void *ep) noexcept
{
	std::lock_guard<std::mutex> g(s->bind_mtx);
	std::erase_if(s->eps, [ep](const srx_member &m) { return m.ep == ep; });
}

void srx_rebase(srx *s, const void *ep, ep_base *b) noexcept
{
	std::lock_guard<std::mutex> g(s->bind_mtx);
	for (srx_member &m : s->eps)
		if (m.ep == ep)
			m.b = b;
}

bool srx_other_av(const srx *s, const void *ep, const fid *av) noexcept
{
	return av::is_av(const_cast<fid *>(av)) && other_av(s, ep, reinterpret_cast<const fid_av *>(av));
}

int srx_open(const srx_desc &d, fid_domain *fd, fi_rx_attr *attr, fid_ep **out, void *context) noexcept
{
	return guard("fi_srx_context", [&]() -> int {
		domain *dom = domain_of(fd);
		if (!dom || !out) {
			WU_WARN(d.prov, FI_LOG_EP_CTRL, "fi_srx_context: %s is invalid\n", !dom ? "domain" : "rx_ep");
			return -FI_EINVAL;
		}
		const uint64_t ok_caps = FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |
					 FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE |
					 FI_SEND | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA_EVENT;
		if (attr && (attr->caps & ~ok_caps)) {
			WU_WARN(d.prov, FI_LOG_EP_CTRL, "fi_srx_context: capabilities 0x%llx are not offered\n",
				(unsigned long long)(attr->caps & ~ok_caps));
			return -FI_EINVAL;
		}
		if (attr && attr->iov_limit > max_iov) {
			WU_WARN(d.prov, FI_LOG_EP_CTRL, "fi_srx_context: iov_limit %zu is over %zu\n", attr->iov_limit,
				max_iov);
			return -FI_EINVAL;
		}
		auto s = std::make_unique<srx>();
		set_ep_fid(s->ep, FI_CLASS_SRX_CTX, context, {&srx_fi_ops, &srx_ep_ops, &srx_cm_ops, &srx_msg_ops,
							    &srx_rma_ops, &srx_tagged_ops, &srx_atomic_ops});
		s->magic = srx_magic;
		s->prov = d.prov;
		s->own_locks = d.own_locks;
		s->dom = dom;
		if (attr)
			s->attr = *attr;
		else
			s->attr.caps = FI_MSG | FI_TAGGED | FI_RECV;
		s->attr.op_flags &= FI_COMPLETION | FI_MULTI_RECV;
		if (!s->attr.size)
			s->attr.size = 2048;
		if (!s->attr.iov_limit)
			s->attr.iov_limit = max_iov;
		s->rx.size = s->attr.size;
		s->rx.directed = s->attr.caps & FI_DIRECTED_RECV;
		s->rx.shared = true;
		s->rx.prov = d.prov;
		s->parent = child_ref(dom->children);
		*out = &s.release()->ep;
		return 0;
	});
}

} // namespace wu::prov
