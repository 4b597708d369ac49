/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint base (ep_base.h): bindings, enable checks, ops flags,
 * completions. */
#include "config.h"
#include "prov/common/ep_base.h"

#include <cstring>
#include <utility>

#include "core/fid.h"
#include "core/log.h"
#include "eq/eq.h"
#include "prov/common/dom_progress.h"

namespace wu::prov {

uint64_t comp_flags(op_kind k, bool tagged) noexcept
{
	switch (k) {
	case OP_SEND: return FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	case OP_RECV: return FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	case OP_WRITE: return FI_RMA | FI_WRITE;
	case OP_READ: return FI_RMA | FI_READ;
	case OP_ATOMIC: return FI_ATOMIC | FI_WRITE;
	case OP_FETCH: return FI_ATOMIC | FI_READ;
	}
	return 0;
}

/* ---- bound_ref ---- */

bound_ref::bound_ref(bound_ref &&o) noexcept
	: f_(std::exchange(o.f_, nullptr)), owner_(o.owner_), pf_(o.pf_), k_(std::exchange(o.k_, NONE))
{
}

bound_ref &bound_ref::operator=(bound_ref &&o) noexcept
{
	if (this != &o) {
		reset();
		f_ = std::exchange(o.f_, nullptr);
		owner_ = o.owner_;
		pf_ = o.pf_;
		k_ = std::exchange(o.k_, NONE);
	}
	return *this;
}

int bound_ref::bind(kind k, fid *f, const fid *owner, progress_fn pf) noexcept
{
	reset();
	int r = -FI_EINVAL;
	switch (k) {
	case CQ: r = cq::bind(f, pf); break;
	case CNTR: r = cntr::bind(f, pf); break;
	case AV: r = av::ep_bind(reinterpret_cast<fid_av *>(f)); break;
	case EQ: r = eq_bind(f); break;
	case NONE: break;
	}
	if (r)
		return r;
	f_ = f;
	owner_ = owner;
	pf_ = pf;
	k_ = k;
	return 0;
}

void bound_ref::reset() noexcept
{
	fid *f = std::exchange(f_, nullptr);
	kind k = std::exchange(k_, NONE);
	if (!f)
		return;
	switch (k) {
	case CQ: cq::unbind(f, pf_); break;
	case CNTR: cntr::unbind(f, pf_); break;
	case AV: av::ep_unbind(reinterpret_cast<fid_av *>(f)); break;
	case EQ:
		/* Events about the endpoint must not outlive it. */
		if (owner_)
			eq_purge(reinterpret_cast<fid_eq *>(f), owner_);
		eq_unbind(f);
		break;
	case NONE: break;
	}
}

/* ---- ep_base ---- */

void ep_base::init(const fid *self_fid, fi_provider *p, domain *d, fi_info *i, progress_fn pf) noexcept
{
	self = self_fid;
	prov = p;
	dom = d;
	info = i;
	type = i && i->ep_attr ? i->ep_attr->type : FI_EP_UNSPEC;
	progress = pf;
}

namespace {

int bind_cq(ep_base &b, fid *bfid, uint64_t flags)
{
	if (!cq::is_cq(bfid))
		return -FI_EINVAL;
	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EBADFLAGS;
	auto *cqf = reinterpret_cast<fid_cq *>(bfid);
	if (((flags & FI_TRANSMIT) && b.tx_cq) || ((flags & FI_RECV) && b.rx_cq)) {
		WU_WARN(b.prov, FI_LOG_EP_CTRL, "fi_ep_bind: a %s CQ is already bound\n",
			(flags & FI_TRANSMIT) && b.tx_cq ? "transmit" : "receive");
		return -FI_EINVAL;
	}
	/* One binding per distinct CQ: the first free slot holds it. */
	if (b.tx_cq != cqf && b.rx_cq != cqf) {
		bound_ref &slot = b.cq_refs[b.cq_refs[0].get() ? 1 : 0];
		if (int r = slot.bind(bound_ref::CQ, bfid, b.self, b.progress))
			return r;
	}
	if (flags & FI_TRANSMIT) {
		b.tx_cq = cqf;
		b.tx_sel = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		b.rx_cq = cqf;
		b.rx_sel = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

int bind_cntr(ep_base &b, fid *bfid, uint64_t flags)
{
	if (!cntr::is_cntr(bfid))
		return -FI_EINVAL;
	const uint64_t ok = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!(flags & ok) || (flags & ~ok))
		return -FI_EBADFLAGS;
	auto *cn = reinterpret_cast<fid_cntr *>(bfid);
	fid_cntr **slots[] = {&b.c_send, &b.c_recv, &b.c_read, &b.c_write, &b.c_rread, &b.c_rwrite};
	const uint64_t bits[] = {FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE};
	bool already = false;
	for (auto *s : slots)
		already |= *s == cn;
	for (size_t i = 0; i < 6; i++)
		if ((flags & bits[i]) && *slots[i])
			return -FI_EINVAL;
	if (!already) {
		bound_ref *free_ref = nullptr;
		for (auto &r : b.cntr_refs)
			if (!r.get()) {
				free_ref = &r;
				break;
			}
		if (!free_ref) /* cannot happen: at most six distinct counters */
			return -FI_EINVAL;
		if (int r = free_ref->bind(bound_ref::CNTR, bfid, b.self, b.progress))
			return r;
	}
	for (size_t i = 0; i < 6; i++)
		if (flags & bits[i])
			*slots[i] = cn;
	return 0;
}

int bind_av(ep_base &b, fid *bfid, uint64_t flags)
{
	if (b.type != FI_EP_RDM || !av::is_av(bfid))
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS; /* fi_endpoint(3): an AV takes no bind flags */
	if (b.av)
		return -FI_EINVAL;
	if (b.enabled)
		return -FI_EOPBADSTATE;
	if (int r = b.av_ref.bind(bound_ref::AV, bfid, b.self, b.progress))
		return r;
	b.av = reinterpret_cast<fid_av *>(bfid);
	b.av_shared = av::is_shared(b.av);
	return 0;
}

int bind_eq(ep_base &b, fid *bfid, uint64_t flags)
{
	if (flags) { /* fi_endpoint(3): an EQ takes no bind flags */
		WU_WARN(b.prov, FI_LOG_EP_CTRL, "fi_ep_bind: flags 0x%llx are not valid for an EQ\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (b.eq)
		return -FI_EINVAL;
	if (int r = b.eq_ref.bind(bound_ref::EQ, bfid, b.self, b.progress))
		return r;
	b.eq = reinterpret_cast<fid_eq *>(bfid);
	return 0;
}

} // namespace

int ep_base::bind(fid *bfid, uint64_t flags)
{
	if (!bfid)
		return -FI_EINVAL;
	std::lock_guard g(mtx);
	switch (bfid->fclass) {
	case FI_CLASS_CQ: return bind_cq(*this, bfid, flags);
	case FI_CLASS_CNTR: return bind_cntr(*this, bfid, flags);
	case FI_CLASS_AV: return bind_av(*this, bfid, flags);
	case FI_CLASS_EQ: return bind_eq(*this, bfid, flags);
	default:
		WU_WARN(prov, FI_LOG_EP_CTRL, "fi_ep_bind: cannot bind an object of class %zu to an endpoint\n",
			bfid->fclass);
		return -FI_EINVAL;
	}
}

int ep_base::enable_locked()
{
	if (enabled)
		return 1;
	if (type == FI_EP_RDM && !av) {
		WU_WARN(prov, FI_LOG_EP_CTRL, "fi_enable: bind an address vector to the RDM endpoint first (fi_ep_bind)\n");
		return -FI_ENOAV;
	}
	if (type == FI_EP_MSG && !eq) {
		WU_WARN(prov, FI_LOG_EP_CTRL, "fi_enable: bind an event queue to the MSG endpoint first (fi_ep_bind)\n");
		return -FI_ENOEQ;
	}
	enabled = true;
	return 0;
}

void ep_base::enabled_unlocked() noexcept
{
	/* Counters bound only to regions of the domain progress it too. */
	if (!dom_progress_joined && dom && progress.fn && dom_progress::add(dom, progress) == 0)
		dom_progress_joined = true;
	if (type == FI_EP_RDM && av && av_removed && !av_watched && av::watch_removes(av, av_removed, av_arg) == 0)
		av_watched = true;
}

int ep_base::ops_flag(int command, uint64_t *fl)
{
	if (!fl)
		return -FI_EINVAL;
	std::lock_guard g(mtx);
	uint64_t *target = (*fl & FI_TRANSMIT) ? &info->tx_attr->op_flags
	                                       : (*fl & FI_RECV) ? &info->rx_attr->op_flags : nullptr;
	if (!target)
		return -FI_EINVAL;
	if (command == FI_GETOPSFLAG)
		*fl = *target;
	else
		*target = *fl & ~(FI_TRANSMIT | FI_RECV);
	return 0;
}

void ep_base::unbind_all() noexcept
{
	if (dom_progress_joined) {
		dom_progress::remove(dom, progress);
		dom_progress_joined = false;
	}
	for (auto &r : cq_refs)
		r.reset();
	for (auto &r : cntr_refs)
		r.reset();
	if (av && av_watched) {
		av::unwatch_removes(av, av_removed, av_arg);
		av_watched = false;
	}
	av_ref.reset();
	eq_ref.reset();
}

fid_cntr *ep_base::cntr_for(op_kind k) const noexcept
{
	switch (k) {
	case OP_SEND: return c_send;
	case OP_WRITE:
	case OP_ATOMIC: return c_write;
	case OP_READ:
	case OP_FETCH: return c_read;
	default: return c_recv;
	}
}

void ep_base::complete_tx(op_kind k, bool tagged, void *context, size_t len, bool want_comp, int err,
			  bool inject)
{
	cq::completion c;
	c.op_context = context;
	c.flags = comp_flags(k, tagged);
	c.len = err ? 0 : len;
	if (err && inject) {
		/* fi_msg(3): an inject generates no completion; an error entry
		 * would carry a NULL op_context the application never gave
		 * (Open MPI's OFI MTL dereferences it). */
		WU_WARN_SPARSE(prov, FI_LOG_EP_DATA, "an injected %s failed (%s): no completion for an inject%s\n",
			       k == OP_SEND ? "send" : k == OP_WRITE ? "RMA write" : "atomic", fi_strerror(err),
			       cntr_for(k) ? "; counted on the bound counter's errors" : "");
		push(nullptr, cntr_for(k), c, err);
		return;
	}
	push((err || want_comp) ? tx_cq : nullptr, cntr_for(k), c, err);
}

int ep_base::setopt(size_t *min_multi_recv, int name, const void *val, size_t len)
{
	switch (name) {
	case FI_OPT_MIN_MULTI_RECV: {
		if (len != sizeof(size_t))
			return -FI_EINVAL;
		std::lock_guard g(mtx);
		memcpy(min_multi_recv, val, sizeof(size_t));
		return 0;
	}
	case FI_OPT_CUDA_API_PERMITTED:
	case FI_OPT_SHARED_MEMORY_PERMITTED:
		return len == sizeof(bool) ? 0 : -FI_EINVAL;
	case FI_OPT_MAX_MSG_SIZE:
	case FI_OPT_MAX_TAGGED_SIZE:
	case FI_OPT_MAX_RMA_SIZE:
	case FI_OPT_MAX_ATOMIC_SIZE:
	case FI_OPT_INJECT_MSG_SIZE:
	case FI_OPT_INJECT_TAGGED_SIZE:
	case FI_OPT_INJECT_RMA_SIZE:
	case FI_OPT_INJECT_ATOMIC_SIZE:
		/* One limit per endpoint serves every kind of operation here, so
		 * lowering one kind's alone cannot be kept (fi_endpoint(3) allows
		 * refusing): the limits stay what fi_getopt reports. */
		WU_INFO(prov, FI_LOG_EP_CTRL,
			"fi_setopt: option %d (a size limit) cannot be changed on %s endpoints; "
			"fi_getopt reports the limit\n",
			name, prov->name);
		return -FI_EOPNOTSUPP;
	default:
		return -FI_ENOPROTOOPT;
	}
}

int ep_base::limit_getopt(const fi_info *i, int name, void *val, size_t *len) noexcept
{
	uint64_t need = 0;
	size_t v;
	switch (name) {
	case FI_OPT_MAX_MSG_SIZE: need = FI_MSG; v = i->ep_attr->max_msg_size; break;
	case FI_OPT_MAX_TAGGED_SIZE: need = FI_TAGGED; v = i->ep_attr->max_msg_size; break;
	case FI_OPT_MAX_RMA_SIZE: need = FI_RMA; v = i->ep_attr->max_msg_size; break;
	case FI_OPT_MAX_ATOMIC_SIZE: need = FI_ATOMIC; v = i->ep_attr->max_msg_size; break;
	case FI_OPT_INJECT_MSG_SIZE: need = FI_MSG; v = i->tx_attr->inject_size; break;
	case FI_OPT_INJECT_TAGGED_SIZE: need = FI_TAGGED; v = i->tx_attr->inject_size; break;
	case FI_OPT_INJECT_RMA_SIZE: need = FI_RMA; v = i->tx_attr->inject_size; break;
	case FI_OPT_INJECT_ATOMIC_SIZE: need = FI_ATOMIC; v = i->tx_attr->inject_size; break;
	default: return -FI_ENOPROTOOPT;
	}
	/* fabtests ask FI_OPT_INJECT_MSG_SIZE of every endpoint: a message
	 * limit is answered whatever the caps; RMA and atomic ones only with
	 * the capability. */
	if ((need & (FI_RMA | FI_ATOMIC)) && !(i->caps & need))
		return -FI_ENOPROTOOPT;
	return put_size_opt(v, val, len);
}

int ep_base::put_size_opt(size_t v, void *val, size_t *len) noexcept
{
	if (*len < sizeof v) {
		*len = sizeof v;
		return -FI_ETOOSMALL;
	}
	memcpy(val, &v, sizeof v);
	*len = sizeof v;
	return 0;
}

void set_ep_fid(fid_ep &e, size_t fclass, void *context, const ep_tables &t) noexcept
{
	set_fid(e.fid, fclass, context, t.fi);
	e.ops = t.ep;
	e.cm = t.cm;
	e.msg = t.msg;
	e.rma = t.rma;
	e.tagged = t.tagged;
	e.atomic = t.atomic;
	e.collective = nullptr; /* no collectives: fi_query_collective is ENOSYS */
}

domain *check_ep_open(fi_provider *p, const char *name, fid_domain *d, const fi_info *info, fid_ep **out,
		      unsigned types) noexcept
{
	domain *dom = domain_of(d);
	if (!dom || !info || !out || !info->ep_attr || !info->tx_attr || !info->rx_attr) {
		WU_WARN(p, FI_LOG_EP_CTRL, "fi_endpoint: %s is invalid\n",
			!dom ? "domain" : !info ? "info" : !out ? "ep" : "info (attributes missing)");
		return nullptr;
	}
	fi_ep_type t = info->ep_attr->type;
	if (unsigned(t) >= 32 || !(types & ep_type_bit(t))) {
		WU_WARN(p, FI_LOG_EP_CTRL, "fi_endpoint: endpoint type %d is not offered by %s (%s)\n", int(t), name,
			types == ep_type_bit(FI_EP_RDM) ? "RDM only" : "RDM, MSG");
		return nullptr;
	}
	return dom;
}

} // namespace wu::prov
