/* SPDX-License-Identifier: BSD-3-Clause */
/* ucx provider: the RDM endpoint object (one UCP worker, made at
 * fi_endpoint so fi_getname works at once), its ops (prov/common/ep_ops.h),
 * peers and their lazily made UCP endpoints, progress (manual, and auto
 * through the worker's event fd), cancel, names and close. */
#include "config.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <random>

#include <sys/random.h>

#include <rdma/fi_cm.h>
#include <ucs/config/global_opts.h>

#include "av/av.h"
#include "core/info.h"
#include "core/param.h"
#include "core/shim.h"
#include "prov/common/ep_control.h"
#include "core/iov.h"
#include "prov/common/ep_ctl_ops.h"
#include "prov/common/ep_ops.h"
#include "prov/common/ops_tables.h"
#include "prov/ucx/ucx_ep.h"

namespace wu::ucx {

/* ---- ops bookkeeping ---- */

op *new_op_alloc(ucx_ep *ep, op_kind k)
{
	const size_t pre = ep->dom->req_pre;
	op *o = make_prefixed<op, op_align>(pre);
	o->pre = pre;
	o->ep = ep;
	o->kind = k;
	ep->live.insert(o);
	return o;
}

void delete_op(op *o) noexcept
{
	drop_prefixed<op, op_align>(o, o->pre);
}

void free_op_slow(op *o) noexcept
{
	o->ep->live.erase(o);
	delete_op(o);
}


void gather(op *o, const iovec *iov, size_t count, size_t len)
{
	o->copy.resize(len);
	copy_from_iov(iov, count, 0, o->copy.data(), len);
}

void complete_tx(op *o, int err)
{
	ucx_ep *ep = o->ep;
	if (o->kind == op_kind::SEND || o->kind == op_kind::RMA) {
		ep->tx_busy--;
		prov::op_kind k = o->kind == op_kind::SEND ? prov::OP_SEND
				  : o->write		   ? prov::OP_WRITE
							   : prov::OP_READ;
		/* Nothing to post (a successful inject, no counter): nothing
		 * goes through the completion batch. */
		if (!ep->closing && (err || o->want_comp || ep->b.cntr_for(k)))
			ep->b.complete_tx(k, o->tagged, o->context, o->len, o->want_comp, err);
	}
	free_op(o);
}

int tx_issued(op *o, ucs_status_ptr_t r, const char *where)
{
	if (r == nullptr) {
		complete_tx(o, 0);
		return 0;
	}
	if (UCS_PTR_IS_ERR(r)) {
		int e = fi_err(UCS_PTR_STATUS(r), where);
		return e ? e : -FI_EIO;
	}
	o->req = r;
	return 1;
}

void tx_done(op *o, ucs_status_t s, const char *where)
{
	complete_tx(o, s == UCS_OK ? 0 : -fi_err(s, where));
}

/* ---- progress ---- */

void progress_locked(ucx_ep *ep)
{
	flush_rx(ep);
	/* Bounded: a peer streaming at us must not keep one reader forever. */
	for (int i = 0; i < 256 && ucp_worker_progress(ep->worker); i++) {
	}
}

void progress_cb(void *arg) noexcept
{
	guard_void("ucx progress", [&] {
		auto *ep = static_cast<ucx_ep *>(arg);
		/* Nothing collected (an empty poll, or completions posted at once
		 * to a leaf CQ): no second trip through the lock.  One
		 * ucp_worker_progress per poll, not until it says it is done:
		 * the call that would say so costs as much as a poll, and the
		 * next poll runs it anyway. */
		ep->b.locked([&] {
			if (!ep->closing) {
				flush_rx(ep);
				ucp_worker_progress(ep->worker);
			}
			if (ep->spare.size() > spare_max) [[unlikely]]
				ep->spare.trim(spare_max);
		});
	});
}

/* ---- peers ---- */

namespace {

/* Starts closing a UCP endpoint (force: a failed one, without flushing);
 * its close request, if any, is finished by drain_closing (ep->closes). */
void start_close(ucx_ep *ep, ucp_ep_h uep, bool force)
{
	ucp_request_param_t prm{};
	if (force) {
		prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
		prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
	}
	void *r = ucp_ep_close_nbx(uep, &prm);
	if (UCS_PTR_IS_PTR(r))
		ep->closes.push_back(r);
}

/* A peer failed (UCP_ERR_HANDLING_MODE_PEER): UCP fails the sends and RMA
 * it holds on that endpoint; what waits for the peer on our side (directed
 * receives, RMA waiting for an rkey) fails here.  The UCP endpoint goes;
 * the next send to the fi_addr makes a new one. */
void peer_err_cb(void *arg, ucp_ep_h uep, ucs_status_t status) noexcept
{
	guard_void("ucx peer error", [&] {
		auto *p = static_cast<peer *>(arg);
		ucx_ep *ep = p->owner;
		if (ep->closing)
			return; /* peers closing with us: nothing waits on them any more */
		int err = fi_err(status, "ucx: peer failed");
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: peer fi_addr %llu (sender id %08x) failed: %s\n",
			static_cast<unsigned long long>(p->addr), p->id, fi_strerror(-err));
		p->dead = true;
		peer_rma_failed(ep, p, err ? -err : FI_EIO);
		fail_directed(ep, p->id);
		if (p->ep == uep) {
			start_close(ep, uep, true);
			p->ep = nullptr;
		}
	});
}

/* Repliers (rma.cpp) have no peer: their failure only drops them. */
void replier_err_cb(void *arg, ucp_ep_h uep, ucs_status_t status) noexcept
{
	guard_void("ucx replier error", [&] {
		auto *ep = static_cast<ucx_ep *>(arg);
		fi_err(status, "ucx: a peer we answered failed");
		for (auto it = ep->repliers.begin(); it != ep->repliers.end(); ++it)
			if (it->second == uep) {
				ep->repliers.erase(it);
				break;
			}
		start_close(ep, uep, true);
	});
}

} // namespace

ucp_ep_h connect(ucx_ep *ep, const void *worker, peer *p, const char *where, int *err)
{
	ucp_ep_params_t prm{};
	prm.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
	prm.address = static_cast<const ucp_address_t *>(worker);
	ucp_ep_h uep = nullptr;
	if (ep->peer_errors) {
		prm.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
		prm.err_mode = UCP_ERR_HANDLING_MODE_PEER;
		if (p) {
			prm.err_handler.cb = peer_err_cb;
			prm.err_handler.arg = p;
		} else {
			prm.err_handler.cb = replier_err_cb;
			prm.err_handler.arg = ep;
		}
		/* UCX logs the refusal at ERROR level; the fallback below is
		 * ours to report (the level is a process global of UCX's). */
		ucs_log_level_t lvl = ucs_global_opts.log_component.log_level;
		if (lvl < UCS_LOG_LEVEL_DEBUG)
			ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
		ucs_status_t s = ucp_ep_create(ep->worker, &prm, &uep);
		if (lvl < UCS_LOG_LEVEL_DEBUG)
			ucs_global_opts.log_component.log_level = lvl;
		if (s == UCS_OK)
			return uep;
		/* UCX 1.13's shared-memory transports (posix, sysv, self) have no
		 * peer failure handler: such a peer is reached without one. */
		if (!ep->told_no_peer_errors) {
			ep->told_no_peer_errors = true;
			WU_INFO(P(), FI_LOG_EP_CTRL,
				"%s: the UCX transports to a peer cannot report its failure (UCX_TLS); reaching it "
				"without peer failure handling\n",
				where);
		}
		prm.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
	}
	ucs_status_t s = ucp_ep_create(ep->worker, &prm, &uep);
	if (s != UCS_OK) {
		*err = fi_err(s, where);
		return nullptr;
	}
	return uep;
}

peer *peer_for(ucx_ep *ep, fi_addr_t a, const char *where, int *err)
{
	if (peer *c = ep->pc.find(a)) [[likely]]
		return c;
	auto it = ep->peers.find(a);
	peer *p = it == ep->peers.end() ? nullptr : it->second.get();
	if (p && p->ep) {
		ep->pc.put(p);
		return p;
	}
	unsigned char buf[addr_max];
	size_t n = ep->b.av ? av::addr_of(ep->b.av, a, buf, sizeof buf) : 0;
	if (n == 0 || n > sizeof buf || addr_check(buf, n) < 0) {
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: fi_addr %llu names no ucx address in the endpoint's AV\n", where,
			static_cast<unsigned long long>(a));
		*err = -FI_EINVAL;
		return nullptr;
	}
	if (!p) {
		auto np = std::make_unique<peer>();
		np->owner = ep;
		np->addr = a;
		p = np.get();
		ep->peers.emplace(a, std::move(np));
	}
	size_t wlen;
	const void *w = addr_worker(buf, &wlen);
	p->id = addr_id(buf);
	p->send_id = (addr_flags(buf) & addr_flag_id) ? ep->id : 0;
	p->dead = false;
	/* Lazily, on first use: inserting thousands of addresses costs no
	 * connection until one is sent to. */
	p->ep = connect(ep, w, p, where, err);
	if (!p->ep)
		return nullptr;
	ep->pc.put(p);
	return p;
}

int tx_checks(ucx_ep *ep, const char *where, bool bad_inject, size_t len, fi_addr_t a, peer **p)
{
	if (bad_inject) {
		WU_WARN(P(), FI_LOG_EP_DATA, "%s: %zu bytes to inject; inject_size is %zu\n", where, len,
			ep->b.info->tx_attr->inject_size);
		return -FI_EINVAL;
	}
	if (ep->tx_busy >= ep->b.info->tx_attr->size) {
		progress_locked(ep);
		if (ep->tx_busy >= ep->b.info->tx_attr->size)
			return -FI_EAGAIN;
	}
	int err = 0;
	*p = peer_for(ep, a, where, &err);
	return *p ? 0 : err;
}

fi_addr_t source_lookup(ucx_ep *ep, uint32_t id) noexcept
{
	if (!ep->av_gen || !id)
		return FI_ADDR_NOTAVAIL;
	source_cache::ent &s = ep->sources.slot(id);
	/* The change count (a load) also catches a slot removed and filled
	 * again before fi_av_remove's notice reached us.  Read before the
	 * look-up: a change during it leaves the slot stale, not wrong. */
	uint64_t gen = __atomic_load_n(ep->av_gen, __ATOMIC_ACQUIRE);
	if (s.id == id && s.gen == gen)
		return s.src;
	fi_addr_t a = av::reverse_part(ep->b.av, 0, &id, sizeof id);
	if (a == FI_ADDR_NOTAVAIL)
		return a;
	s.id = id;
	s.addr = a;
	s.src = av::source_id(ep->b.av, a);
	s.gen = gen;
	return s.src;
}

namespace {

/* ---- auto progress: the worker's event fd on the cm engine ---- */

/* Progress, then arm the worker; UCS_ERR_BUSY means events came in while
 * we progressed: progress again.  A worker that keeps being busy is
 * visited again on the timer. */
void auto_event(void *arg, bool) noexcept
{
	auto *ep = static_cast<ucx_ep *>(arg);
	guard("ucx auto progress", [&]() -> int {
		ep->b.locked([&] {
			if (ep->closing)
				return;
			int rounds = 0;
			for (;;) {
				progress_locked(ep);
				ucs_status_t s = ucp_worker_arm(ep->worker);
				if (s != UCS_ERR_BUSY || ++rounds >= 64)
					break;
			}
			ep->autop.arm_in(rounds >= 64 ? 1 : 0);
		});
		return 0;
	});
}

/* Under b.mtx, enabled: true when finish_auto must follow, without it. */
bool start_auto_locked(ucx_ep *ep)
{
	if (ep->efd < 0)
		return false;
	flush_rx(ep); /* from now on receives go to UCP at once */
	return ep->autop.begin(auto_event, ep);
}

void finish_auto(ucx_ep *ep)
{
	ep->autop.finish(ep->efd);
}

/* ---- fid ops ---- */

void av_removed(void *arg, fi_addr_t a) noexcept
{
	guard_void("ucx av remove", [&] {
		auto *ep = static_cast<ucx_ep *>(arg);
		std::lock_guard g(ep->b.mtx);
		ep->sources.drop(a);
		auto it = ep->peers.find(a);
		if (it == ep->peers.end())
			return;
		peer *p = it->second.get();
		peer_rma_failed(ep, p, FI_ECANCELED);
		if (p->ep) {
			start_close(ep, p->ep, false);
			p->ep = nullptr;
		}
		/* Ops waiting on it hold no pointer to it once its rkeys failed. */
		ep->pc.drop(p);
		ep->peers.erase(it);
	});
}

/* Runs the worker until the close requests are done or time is up. */
void drain_closing(ucx_ep *ep, std::chrono::milliseconds limit)
{
	auto until = std::chrono::steady_clock::now() + limit;
	while (!ep->closes.empty()) {
		ucp_worker_progress(ep->worker);
		for (auto it = ep->closes.begin(); it != ep->closes.end();) {
			if (ucp_request_check_status(*it) != UCS_INPROGRESS) {
				ucp_request_free(*it);
				it = ep->closes.erase(it);
			} else {
				++it;
			}
		}
		if (std::chrono::steady_clock::now() > until)
			break;
	}
}

void close_worker(ucx_ep *ep)
{
	ep->closing = true;
	/* Deferred receives are in live: freed below with the rest. */
	ep->deferred = nullptr;
	ep->deferred_tail = &ep->deferred;
	if (!ep->worker)
		return;
	/* Receives and RMA still held: canceled (their callbacks free them). */
	for (op *o : ep->live.snapshot())
		if (o->req && o->kind != op_kind::SEND && o->kind != op_kind::CTRL_TX)
			ucp_request_cancel(ep->worker, o->req);
	progress_locked(ep);
	free_rma(ep);
	/* Flush what was sent (injected sends count as done for the
	 * application), then force what a silent peer still holds. */
	for (auto &[a, p] : ep->peers)
		if (p->ep) {
			start_close(ep, p->ep, false);
			p->ep = nullptr;
		}
	for (auto &[id, uep] : ep->repliers)
		start_close(ep, uep, false);
	ep->repliers.clear();
	drain_closing(ep, std::chrono::milliseconds(ep->linger_ms));
	for (void *r : ep->closes) {
		ucp_request_cancel(ep->worker, r);
		ucp_request_free(r);
	}
	ep->closes.clear();
	ep->ctrl = nullptr;
	ep->pc.clear();
	ep->peers.clear();
	/* Requests UCP still holds go with the worker (a callback it runs
	 * meanwhile frees its op); the ops left are ours to free after. */
	ucp_worker_destroy(ep->worker);
	ep->worker = nullptr;
	for (op *o : ep->live.snapshot())
		free_op(o);
	/* After the worker: the room before a spare op may hold a request
	 * UCP touched until then. */
	ep->spare.clear();
}

int enable_locked(ucx_ep *ep);

struct ctl_hooks {
	using ep_type = ucx_ep;
	static ucx_ep *lookup(fid *f) noexcept { return ep_of(f); }
	static int enable_locked(ucx_ep *ep) { return ucx::enable_locked(ep); }
	static bool begin_auto_locked(ucx_ep *ep) { return start_auto_locked(ep); }
	static void finish_auto(ucx_ep *ep) { ucx::finish_auto(ep); }
	/* Without UCP's event fd nothing can wake a sleeper. */
	static bool can_block(ucx_ep *ep) { return ep->efd >= 0; }
	/* fi_ops_ep (prov/common/ep_ctl_ops.h): receives are UCP's, no FI_MULTI_RECV. */
	static ssize_t cancel_locked(ucx_ep *ep, void *context) { return ucx::cancel_locked(ep, context); }
	static size_t rx_busy(ucx_ep *ep) { return ep->rx_busy; }
	static size_t tx_busy(ucx_ep *ep) { return ep->tx_busy; }
};
using ctl = prov::ep_control<ctl_hooks>;
using ctl_ops = prov::ep_ctl_ops<ctl_hooks>;

int ep_close(fid *f) noexcept
{
	return guard("fi_close(ep)", [&]() -> int {
		ucx_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		/* No auto progress runs or will run once this returns. */
		ep->autop.stop(ep->efd);
		ep->b.unbind_all();
		{
			std::lock_guard g(ep->b.mtx);
			close_worker(ep);
		}
		ctl::destroy(ep);
		return 0;
	});
}

/* fi_enable under b.mtx: the base's checks, then the control receive. */
int enable_locked(ucx_ep *ep)
{
	if (int r = ep->b.enable_locked())
		return r;
	ep->av_gen = av::change_count(ep->b.av);
	if (int r = post_ctrl(ep)) {
		ep->b.enabled = false;
		return r;
	}
	return 0;
}


int ep_getname(fid *f, void *addr, size_t *addrlen) noexcept
{
	return guard("fi_getname", [&]() -> int {
		ucx_ep *ep = ep_of(f);
		if (!ep || !addrlen)
			return -FI_EINVAL;
		std::lock_guard g(ep->b.mtx);
		size_t need = ep->name.size();
		size_t have = *addrlen;
		*addrlen = need;
		if (!addr || have < need)
			return -FI_ETOOSMALL;
		memcpy(addr, ep->name.data(), need);
		return 0;
	});
}

int ep_setname(fid *f, void *, size_t) noexcept
{
	return guard("fi_setname", [&]() -> int {
		if (!ep_of(f))
			return -FI_EINVAL;
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_setname: a ucx endpoint's address is its UCP worker's; it cannot be set\n");
		return -FI_EOPNOTSUPP;
	});
}

constinit fi_ops ep_fi_ops = prov::ep_fi_ops(ep_close, ctl::bind, ctl::control);

constinit fi_ops_cm ep_cm_ops = prov::rdm_cm_ops(ep_setname, ep_getname);

/* A sender id: random, so that endpoints of many processes rarely share
 * one (a receiver with two AV entries of one id reports the first for
 * FI_SOURCE, and logs it at insert: av's reverse index). */
uint32_t new_id()
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != ssize_t(sizeof v))
		v = uint32_t(std::random_device{}());
	v &= id_max;
	return v ? v : 1;
}

/* The worker and its address, at fi_endpoint. */
int make_worker(ucx_ep *ep)
{
	ucp_worker_params_t wp{};
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS;
	wp.thread_mode = UCS_THREAD_MODE_SINGLE; /* every call under the endpoint's lock */
	wp.events = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV | UCP_WAKEUP_RMA | UCP_WAKEUP_TX | UCP_WAKEUP_RX;
	if (int r = fi_err(ucp_worker_create(ep->dom->ctx, &wp, &ep->worker), "fi_endpoint: ucp_worker_create"))
		return r;
	ucp_address_t *wa = nullptr;
	size_t wlen = 0;
	if (int r = fi_err(ucp_worker_get_address(ep->worker, &wa, &wlen), "fi_endpoint: ucp_worker_get_address"))
		return r;
	ep->id = new_id();
	ep->name.resize(addr_hdr + wlen);
	size_t n = addr_build(ep->id, ep->rx_id_mask ? 0 : addr_flag_id, wa, wlen, ep->name.data(), ep->name.size());
	ucp_worker_release_address(ep->worker, wa);
	if (!n) {
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"fi_endpoint: the UCP worker's address is %zu bytes, more than the %zu a ucx address holds "
			"(set UCX_TLS to fewer transports, or UCX_NET_DEVICES to fewer devices)\n",
			wlen, worker_max);
		return -FI_ENOSPC;
	}
	int fd = -1;
	if (ucp_worker_get_efd(ep->worker, &fd) == UCS_OK)
		ep->efd = fd;
	else
		WU_INFO(P(), FI_LOG_EP_CTRL, "fi_endpoint: the UCP worker has no event fd: no auto progress\n");
	return 0;
}

} // namespace

int ep_open(fid_domain *domain, fi_info *info, fid_ep **out, void *context) noexcept
{
	return guard("fi_endpoint", [&]() -> int {
		prov::domain *dom = prov::check_ep_open(P(), "ucx", domain, info, out, prov::ep_type_bit(FI_EP_RDM));
		if (!dom)
			return -FI_EINVAL;
		ucx_domain *ud = ucx_domain_of(dom);
		if (!ud) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: the domain is not a ucx domain\n");
			return -FI_EINVAL;
		}
		if ((info->caps & rma_caps) && !ud->rma) {
			WU_WARN(P(), FI_LOG_EP_CTRL,
				"fi_endpoint: the endpoint asks for RMA but its domain was opened without it in caps\n");
			return -FI_EINVAL;
		}
		auto ep = std::make_unique<ucx_ep>();
		data_tables t = data_ops();
		prov::set_ep_fid(ep->ep, FI_CLASS_EP, context,
				 {&ep_fi_ops, ctl_ops::ops(), &ep_cm_ops, t.msg, t.rma, t.tagged, t.atomic});
		ep->dom = ud;
		fi_info *mine = info_dup(info);
		if (!mine)
			return -FI_ENOMEM;
		ep->b.init(&ep->ep.fid, P(), dom, mine, progress_fn{progress_cb, ep.get(), ctl::block});
		ep->b.info->handle = nullptr;
		fi_tx_attr &tx = *ep->b.info->tx_attr;
		fi_rx_attr &rx = *ep->b.info->rx_attr;
		if (!tx.size)
			tx.size = 1024;
		if (!rx.size)
			rx.size = 1024;
		if (!tx.iov_limit || tx.iov_limit > max_iov)
			tx.iov_limit = max_iov;
		if (!rx.iov_limit || rx.iov_limit > max_iov)
			rx.iov_limit = max_iov;
		if (tx.inject_size == 0 || tx.inject_size > 4096)
			tx.inject_size = 4096;
		ep->directed = ep->b.info->caps & FI_DIRECTED_RECV;
		if (!(ep->b.info->caps & (FI_SOURCE | FI_DIRECTED_RECV)))
			ep->rx_id_mask = id_mask;
		ep->peer_errors = param::get_bool(P(), "peer_errors").value;
		ep->linger_ms = std::max(0, param::get_int(P(), "linger").value);
		ep->b.av_removed = av_removed;
		ep->b.av_arg = ep.get();
		ep->small_dt = small_datatype();
		if (int r = make_worker(ep.get())) {
			if (ep->worker)
				ucp_worker_destroy(ep->worker);
			info_free(ep->b.info);
			return r;
		}
		ep->b.parent = child_ref(dom->children);
		*out = &ep.release()->ep;
		return 0;
	});
}

} // namespace wu::ucx
