/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: shared receive contexts (fi_srx_context, fi_endpoint(3)
 * "Shared Contexts").  An srx is one matching engine; RDM and MSG endpoints
 * bind it with fi_ep_bind before fi_enable and then take every receive
 * from it: a message arriving on any of them matches the srx's receives,
 * and its completion goes to the CQ of the endpoint it arrived on.
 * Receive calls on a bound endpoint are forwarded here.
 *
 * Locking (see tcp_srx in tcp_impl.h): an srx call holds bind_mtx, every
 * bound endpoint's mtx and then the engine's, because posting a receive
 * may start messages of any bound endpoint (copy a staged body, write a
 * CTS on its connection, push its completion); completions are posted
 * once the endpoint locks are released, still under bind_mtx so that no
 * bound endpoint closes meanwhile. */
#include "config.h"
#include "prov/common/ops_tables.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

constexpr uint32_t srx_magic = 0x57555352; /* "WUSR" */

/* Every lock an srx call needs, in order; flush() posts the completions. */
class srx_locks {
public:
	explicit srx_locks(tcp_srx *s) : s_(s), bind_(s->bind_mtx)
	{
		for (tcp_ep *ep : s_->eps)
			ep->b.mtx.lock();
		s_->mtx.lock();
		locked_ = true;
	}
	~srx_locks()
	{
		unlock();
	}
	/* Releases the endpoints and posts what they collected. */
	void flush()
	{
		unlock();
		for (tcp_ep *ep : s_->eps)
			detail::flush(ep);
	}
	srx_locks(const srx_locks &) = delete;
	srx_locks &operator=(const srx_locks &) = delete;

private:
	void unlock()
	{
		if (!locked_)
			return;
		locked_ = false;
		s_->mtx.unlock();
		for (auto it = s_->eps.rbegin(); it != s_->eps.rend(); ++it)
			(*it)->b.mtx.unlock();
	}
	tcp_srx *s_;
	std::unique_lock<std::mutex> bind_;
	bool locked_ = false;
};

tcp_srx *srx_of_ep(fid_ep *e) noexcept
{
	return e ? srx_of(&e->fid) : nullptr;
}

template <class F>
ssize_t srx_call(fid_ep *e, const char *where, F &&fn) noexcept
{
	return guard(where, [&]() -> ssize_t {
		tcp_srx *s = srx_of_ep(e);
		if (!s)
			return -FI_EINVAL;
		return fn(s);
	});
}

/* Where an FI_ENOMSG of a peek on the context itself goes. */
prov::ep_base *first_of(tcp_srx *s)
{
	return s->eps.empty() ? nullptr : &s->eps.front()->b;
}

/* fi_ops_msg / fi_ops_tagged (receives only) */

ssize_t s_recv(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, void *ctx) noexcept
{
	return srx_call(e, "fi_recv(srx)", [&](tcp_srx *s) {
		iovec v{buf, len};
		return srx_recv(s, {.where = "fi_recv(srx)", .iov = &v, .count = 1, .addr = src, .context = ctx,
				    .flags = s->attr.op_flags});
	});
}

ssize_t s_recvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, void *ctx) noexcept
{
	return srx_call(e, "fi_recvv(srx)",
			[&](tcp_srx *s) {
				return srx_recv(s, {.where = "fi_recvv(srx)", .iov = iov, .count = cnt, .addr = src,
						    .context = ctx, .flags = s->attr.op_flags});
			});
}

ssize_t s_recvmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
{
	return srx_call(e, "fi_recvmsg(srx)", [&](tcp_srx *s) -> ssize_t {
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
	return srx_call(e, "fi_trecv(srx)", [&](tcp_srx *s) {
		iovec v{buf, len};
		return srx_recv(s, {.where = "fi_trecv(srx)", .iov = &v, .count = 1, .addr = src, .tag = tag,
				    .ignore = ignore, .context = ctx, .flags = s->attr.op_flags, .tagged = true});
	});
}

ssize_t s_trecvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, uint64_t tag,
		 uint64_t ignore, void *ctx) noexcept
{
	return srx_call(e, "fi_trecvv(srx)", [&](tcp_srx *s) {
		return srx_recv(s, {.where = "fi_trecvv(srx)", .iov = iov, .count = cnt, .addr = src, .tag = tag,
				    .ignore = ignore, .context = ctx, .flags = s->attr.op_flags, .tagged = true});
	});
}

ssize_t s_trecvmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
{
	return srx_call(e, "fi_trecvmsg(srx)", [&](tcp_srx *s) -> ssize_t {
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

fi_ops_msg srx_msg_ops = {sizeof(fi_ops_msg),
			  s_recv,
			  s_recvv,
			  s_recvmsg,
			  WU_NOSYS(fi_ops_msg, send),
			  WU_NOSYS(fi_ops_msg, sendv),
			  WU_NOSYS(fi_ops_msg, sendmsg),
			  WU_NOSYS(fi_ops_msg, inject),
			  WU_NOSYS(fi_ops_msg, senddata),
			  WU_NOSYS(fi_ops_msg, injectdata)};

fi_ops_tagged srx_tagged_ops = {sizeof(fi_ops_tagged),
				s_trecv,
				s_trecvv,
				s_trecvmsg,
				WU_NOSYS(fi_ops_tagged, send),
				WU_NOSYS(fi_ops_tagged, sendv),
				WU_NOSYS(fi_ops_tagged, sendmsg),
				WU_NOSYS(fi_ops_tagged, inject),
				WU_NOSYS(fi_ops_tagged, senddata),
				WU_NOSYS(fi_ops_tagged, injectdata)};

fi_ops_rma srx_rma_ops = {sizeof(fi_ops_rma),
			  WU_NOSYS(fi_ops_rma, read),
			  WU_NOSYS(fi_ops_rma, readv),
			  WU_NOSYS(fi_ops_rma, readmsg),
			  WU_NOSYS(fi_ops_rma, write),
			  WU_NOSYS(fi_ops_rma, writev),
			  WU_NOSYS(fi_ops_rma, writemsg),
			  WU_NOSYS(fi_ops_rma, inject),
			  WU_NOSYS(fi_ops_rma, writedata),
			  WU_NOSYS(fi_ops_rma, injectdata)};

fi_ops_atomic srx_atomic_ops = {sizeof(fi_ops_atomic),
				WU_NOSYS(fi_ops_atomic, write),
				WU_NOSYS(fi_ops_atomic, writev),
				WU_NOSYS(fi_ops_atomic, writemsg),
				WU_NOSYS(fi_ops_atomic, inject),
				WU_NOSYS(fi_ops_atomic, readwrite),
				WU_NOSYS(fi_ops_atomic, readwritev),
				WU_NOSYS(fi_ops_atomic, readwritemsg),
				WU_NOSYS(fi_ops_atomic, compwrite),
				WU_NOSYS(fi_ops_atomic, compwritev),
				WU_NOSYS(fi_ops_atomic, compwritemsg),
				WU_NOSYS(fi_ops_atomic, writevalid),
				WU_NOSYS(fi_ops_atomic, readwritevalid),
				WU_NOSYS(fi_ops_atomic, compwritevalid)};

constinit fi_ops_cm srx_cm_ops = prov::rdm_cm_ops(WU_NOSYS(fi_ops_cm, setname), WU_NOSYS(fi_ops_cm, getname));

/* fi_ops_ep */

ssize_t srx_cancel(fid *f, void *context) noexcept
{
	return guard("fi_cancel(srx)", [&]() -> ssize_t {
		tcp_srx *s = srx_of(f);
		if (!s)
			return -FI_EINVAL;
		srx_locks l(s);
		op *o = s->rx.cancel(context);
		if (!o)
			return -FI_ENOENT;
		if (s->eps.empty()) {
			/* No endpoint, so no CQ to report to: it just goes. */
			s->rx.release(o);
			return 0;
		}
		complete_canceled(s->eps.front(), o);
		l.flush();
		return 0;
	});
}

int srx_getopt(fid *f, int level, int name, void *val, size_t *len) noexcept
{
	return guard("fi_getopt(srx)", [&]() -> int {
		tcp_srx *s = srx_of(f);
		if (!s || !val || !len)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV)
			return -FI_ENOPROTOOPT;
		std::lock_guard<std::mutex> g(s->bind_mtx);
		return prov::ep_base::put_size_opt(s->rx.min_multi_recv, val, len);
	});
}

int srx_setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
{
	return guard("fi_setopt(srx)", [&]() -> int {
		tcp_srx *s = srx_of(f);
		if (!s || !val)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV)
			return -FI_ENOPROTOOPT;
		if (len != sizeof(size_t))
			return -FI_EINVAL;
		std::lock_guard<std::mutex> g(s->bind_mtx);
		memcpy(&s->rx.min_multi_recv, val, sizeof(size_t));
		return 0;
	});
}

ssize_t srx_rx_left(fid_ep *e) noexcept
{
	return srx_call(e, "fi_rx_size_left(srx)", [&](tcp_srx *s) -> ssize_t {
		size_t n = s->rx.posted;
		return ssize_t(s->rx.size - std::min(n, s->rx.size));
	});
}

constinit fi_ops_ep srx_ep_ops =
	prov::ep_core_ops(srx_cancel, srx_getopt, srx_setopt, srx_rx_left, WU_NOSYS(fi_ops_ep, tx_size_left));

/* fi_ops */

int srx_close(fid *f) noexcept
{
	return guard("fi_close(srx)", [&]() -> int {
		tcp_srx *s = srx_of(f);
		if (!s)
			return -FI_EINVAL;
		{
			std::lock_guard<std::mutex> g(s->bind_mtx);
			if (!s->eps.empty()) {
				WU_WARN(P(), FI_LOG_EP_CTRL,
					"fi_close(srx): %zu endpoint(s) still bound; close them first\n", s->eps.size());
				return -FI_EBUSY;
			}
			/* Receives still posted go without completions (fi_close(3)). */
			s->rx.drain();
		}
		s->magic = 0;
		delete s;
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

constinit fi_ops srx_fi_ops = prov::ep_fi_ops(srx_close, WU_NOSYS(fi_ops, bind), srx_control);

} // namespace

tcp_srx *srx_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_SRX_CTX)
		return nullptr;
	auto *s = container_of_fid<tcp_srx>(reinterpret_cast<fid_ep *>(f));
	return s->magic == srx_magic ? s : nullptr;
}

/* A receive posted to the srx itself or through an endpoint bound to it
 * (FI_PEEK/FI_CLAIM/FI_DISCARD of a bound endpoint come through peek_claim). */
ssize_t srx_recv(tcp_srx *srx, const prov::msg_xfer &x)
{
	ssize_t kind = prov::classify_recv(x, P());
	if (kind < 0)
		return kind;
	if (kind == prov::RX_PEEK) {
		fi_msg_tagged m{x.iov, x.desc, x.count, x.addr, x.tag, x.ignore, x.context, x.data};
		return srx_peek_claim(srx, &m, x.flags);
	}
	srx_locks l(srx);
	if (srx->rx.full())
		return -FI_EAGAIN;
	prov::post_recv(srx->rx, nullptr, x);
	l.flush();
	return 0;
}

ssize_t srx_peek_claim(tcp_srx *srx, const fi_msg_tagged *m, uint64_t flags)
{
	if (const char *bad = prov::check_peek(m, flags)) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(srx, FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return -FI_EINVAL;
	}
	srx_locks l(srx);
	if (ssize_t r = prov::peek_claim(srx->rx, first_of(srx), m, flags))
		return r;
	l.flush();
	return 0;
}

namespace {

/* Is an endpoint other than ep bound to srx on an AV other than av?
 * Under srx->bind_mtx (an endpoint's AV is bound under it, see srx_bind_av). */
bool other_av(const tcp_srx *srx, const tcp_ep *ep, const fid_av *av)
{
	if (!av)
		return false;
	for (const tcp_ep *o : srx->eps)
		if (o != ep && o->b.av && o->b.av != av)
			return true;
	return false;
}

} // namespace

/* fi_ep_bind(ep, &av->fid, 0) on an endpoint bound to srx: the same AV as
 * the other endpoints sharing it. */
int srx_bind_av(tcp_ep *ep, tcp_srx *srx, fid *av, uint64_t flags)
{
	std::lock_guard<std::mutex> b(srx->bind_mtx);
	if (av::is_av(av) && other_av(srx, ep, reinterpret_cast<fid_av *>(av))) {
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"fi_ep_bind(av): endpoints sharing a receive context must use one address vector "
			"(fi_endpoint(3))\n");
		return -FI_EINVAL;
	}
	return ep->b.bind(av, flags);
}

/* fi_ep_bind(ep, &srx->fid, 0): before fi_enable, one srx per endpoint,
 * same domain; connectionless endpoints sharing one share its AV
 * (fi_endpoint(3)), since sources are that AV's fi_addr_t values. */
int srx_attach(tcp_ep *ep, tcp_srx *srx)
{
	std::lock_guard<std::mutex> b(srx->bind_mtx);
	std::lock_guard g(ep->b.mtx);
	const char *bad = nullptr;
	if (ep->srx)
		bad = "the endpoint already has a shared receive context";
	else if (ep->b.enabled)
		bad = "bind the shared receive context before fi_enable";
	else if (srx->dom != ep->b.dom)
		bad = "the shared receive context belongs to another domain";
	else if (ep->rx != &ep->own_rx)
		bad = "the endpoint is a sub-endpoint with a lent receive context";
	else if (other_av(srx, ep, ep->b.av))
		bad = "endpoints sharing a receive context must use one address vector (fi_endpoint(3))";
	if (bad) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind(srx): %s\n", bad);
		return -FI_EINVAL;
	}
	srx->eps.push_back(ep);
	ep->srx = srx;
	ep->rx = &srx->rx;
	return 0;
}

/* fi_close(ep): its messages left the engine already (free_rx_state). */
void srx_detach(tcp_ep *ep)
{
	tcp_srx *srx = ep->srx;
	if (!srx)
		return;
	std::lock_guard<std::mutex> b(srx->bind_mtx);
	std::lock_guard g(ep->b.mtx);
	srx->eps.erase(std::remove(srx->eps.begin(), srx->eps.end(), ep), srx->eps.end());
	ep->srx = nullptr;
	ep->rx = &ep->own_rx;
}

} // namespace wu::tcp::detail

namespace wu::tcp {

using namespace detail;

int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept
{
	return guard("fi_srx_context", [&]() -> int {
		prov::domain *dom = prov::domain_of(domain);
		if (!dom || !out) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_srx_context: %s is invalid\n", !dom ? "domain" : "rx_ep");
			return -FI_EINVAL;
		}
		const uint64_t ok_caps = FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |
					 FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE |
					 FI_SEND | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA_EVENT;
		if (attr && (attr->caps & ~ok_caps)) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_srx_context: capabilities 0x%llx are not offered\n",
				(unsigned long long)(attr->caps & ~ok_caps));
			return -FI_EINVAL;
		}
		if (attr && attr->iov_limit > max_iov) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_srx_context: iov_limit %zu is over %zu\n", attr->iov_limit,
				max_iov);
			return -FI_EINVAL;
		}
		auto s = std::make_unique<tcp_srx>();
		prov::set_ep_fid(s->ep, FI_CLASS_SRX_CTX, context, {&srx_fi_ops, &srx_ep_ops, &srx_cm_ops, &srx_msg_ops,
								   &srx_rma_ops, &srx_tagged_ops, &srx_atomic_ops});
		s->magic = srx_magic;
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
		s->rx.prov = P();
		s->parent = child_ref(dom->children);
		*out = &s.release()->ep;
		return 0;
	});
}

} // namespace wu::tcp
