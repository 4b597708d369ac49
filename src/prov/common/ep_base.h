/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint base every provider embeds: what an endpoint does that is not
 * about its transport.  Bindings (CQs with FI_TRANSMIT / FI_RECV /
 * FI_SELECTIVE_COMPLETION, the six counters, AV, EQ) with their checks and
 * log lines, FI_ENABLE's checks (an AV for RDM, an EQ for MSG),
 * FI_GETOPSFLAG / FI_SETOPSFLAG, selective completion and the counter of
 * each kind of operation, and completion posting through a comp_batch:
 * pushed under mtx, flushed once it is released.
 *
 * A provider's endpoint keeps its fid first and embeds one ep_base (not as
 * a base class: the holder of a fid must stay standard-layout, core/fid.h),
 * calls init() when it opens, hands fi_ep_bind / fi_control / fi_close's
 * unbinding to it, and supplies its progress function (progress_fn), which
 * the bound CQs and counters call.  Every binding is held by a bound_ref,
 * which undoes it when reset or destroyed, so a close path never pairs
 * bind and unbind by hand. */
#ifndef WU_PROV_COMMON_EP_BASE_H
#define WU_PROV_COMMON_EP_BASE_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "av/av.h"
#include "prov/common/comp_batch.h"
#include "prov/common/cq.h"
#include "prov/common/ep_mutex.h"
#include "prov/common/objects.h"

namespace wu::prov {

/* What a transfer was, for its completion flags and its counter. */
enum op_kind : uint8_t {
	OP_SEND,
	OP_RECV,
	OP_WRITE,  /* fi_write family */
	OP_READ,   /* fi_read family */
	OP_ATOMIC, /* fi_atomic family */
	OP_FETCH,  /* fetch and compare families (old values come back) */
};

/* The completion flags of an operation of kind k. */
uint64_t comp_flags(op_kind k, bool tagged) noexcept;

/* One binding of a CQ, counter, AV or EQ to an endpoint: made by bind(),
 * undone by reset() or the destructor.  Move-only. */
class bound_ref {
public:
	enum kind : uint8_t { NONE, CQ, CNTR, AV, EQ };

	bound_ref() noexcept = default;
	bound_ref(bound_ref &&o) noexcept;
	bound_ref &operator=(bound_ref &&o) noexcept;
	bound_ref(const bound_ref &) = delete;
	bound_ref &operator=(const bound_ref &) = delete;
	~bound_ref() { reset(); }

	/* Binds f (of kind k) for owner; pf is what a CQ or counter calls.
	 * 0, or the negative errno of the binding (nothing held then). */
	int bind(kind k, fid *f, const fid *owner, progress_fn pf) noexcept;
	/* Undoes the binding (an EQ first loses the owner's queued events). */
	void reset() noexcept;
	fid *get() const noexcept { return f_; }

private:
	fid *f_ = nullptr;
	const fid *owner_ = nullptr;
	progress_fn pf_{};
	kind k_ = NONE;
};

/* The ops tables of an endpoint-like fid (an endpoint, an srx). */
struct ep_tables {
	fi_ops *fi;
	fi_ops_ep *ep;
	fi_ops_cm *cm;
	fi_ops_msg *msg;
	fi_ops_rma *rma;
	fi_ops_tagged *tagged;
	fi_ops_atomic *atomic;
};
/* Fills e as an fid of class fclass (no collectives). */
void set_ep_fid(fid_ep &e, size_t fclass, void *context, const ep_tables &t) noexcept;

/* fi_endpoint's common argument checks for provider `name`, which offers
 * the endpoint types in types (a bit per fi_ep_type); logs why and
 * returns nullptr (the caller returns -FI_EINVAL) or the domain. */
domain *check_ep_open(fi_provider *p, const char *name, fid_domain *d, const fi_info *info, fid_ep **out,
		      unsigned types) noexcept;
constexpr unsigned ep_type_bit(fi_ep_type t) noexcept
{
	return 1u << unsigned(t);
}

/* An endpoint's lock: its own mutex (ep_mutex.h: the data path takes it
 * several times per message), or, for the sub-endpoints of one wireup
 * endpoint (src/prov/wireup), a mutex they share, so that the one receive
 * context lent to them (lend_rx) needs no lock of its own.  Shared with
 * share() before the endpoint is enabled, never after. */
class ep_lock {
public:
	void lock() { m_->lock(); }
	void unlock() { m_->unlock(); }
	bool try_lock() { return m_->try_lock(); }
	void share(ep_mutex &m) noexcept { m_ = &m; }
	ep_mutex &native() noexcept { return *m_; }

private:
	ep_mutex own_;
	ep_mutex *m_ = &own_;
};

struct ep_base {
	ep_lock mtx; /* the endpoint's one lock: all of its state */
	const fid *self = nullptr;
	fi_provider *prov = nullptr; /* its log lines */
	domain *dom = nullptr;
	child_ref parent; /* on dom->children, from the end of a successful open */
	fi_info *info = nullptr; /* owned by the provider (freed at its close) */
	fi_ep_type type = FI_EP_UNSPEC;
	bool enabled = false;
	/* Bound objects (views; the bindings are held below). */
	fid_cq *tx_cq = nullptr, *rx_cq = nullptr;
	bool tx_sel = false, rx_sel = false; /* FI_SELECTIVE_COMPLETION */
	fid_cntr *c_send = nullptr, *c_recv = nullptr, *c_read = nullptr, *c_write = nullptr,
		 *c_rread = nullptr, *c_rwrite = nullptr;
	fid_av *av = nullptr;
	bool av_shared = false; /* other processes may change entries (av::is_shared) */
	/* A sub-endpoint of a wireup endpoint sees part addr_part of the
	 * wireup AV's composite addresses (av_format::part; 0 tcp, 1 shm);
	 * -1: the AV's addresses are its own.  Set before binding the AV. */
	int addr_part = -1;
	/* Optional (a sub-endpoint's multiplexer): whether fi_addr a may be
	 * the source of a message that came through this transport;
	 * peer_lookup answers FI_ADDR_NOTAVAIL for one it may not. */
	bool (*src_ok)(void *arg, fi_addr_t a) noexcept = nullptr;
	void *src_arg = nullptr;
	fid_eq *eq = nullptr;
	comp_batch comps; /* posted by flush() after mtx is released */
	progress_fn progress{};
	/* Told about fi_av_remove once enabled (optional). */
	av::removed_fn av_removed = nullptr;
	void *av_arg = nullptr;
	bool av_watched = false;
	bool dom_progress_joined = false; /* in dom_progress since fi_enable */
	bound_ref cq_refs[2], cntr_refs[6], av_ref, eq_ref;

	/* At open: self is the endpoint's fid, pf its progress. */
	void init(const fid *self_fid, fi_provider *p, domain *d, fi_info *i, progress_fn pf) noexcept;

	/* fi_ep_bind of a CQ, counter, AV or EQ (takes mtx).  Any other class
	 * is -FI_EINVAL with a log line: a provider looks at its own classes
	 * (a shared receive context) first. */
	int bind(fid *bfid, uint64_t flags);

	/* FI_ENABLE's checks, under mtx: 1 when already enabled, 0 when it may
	 * enable now (enabled is set), else -FI_ENOAV / -FI_ENOEQ. */
	int enable_locked();
	/* After enable_locked said 0, without mtx: starts watching the AV's removals. */
	void enabled_unlocked() noexcept;

	/* FI_GETOPSFLAG / FI_SETOPSFLAG (takes mtx). */
	int ops_flag(int command, uint64_t *flags);

	/* fi_setopt (FI_OPT_ENDPOINT level) of what every endpoint takes alike:
	 * FI_OPT_MIN_MULTI_RECV into *min_multi_recv (under mtx), and
	 * FI_OPT_CUDA_API_PERMITTED / FI_OPT_SHARED_MEMORY_PERMITTED, which
	 * none of ours acts on; -FI_ENOPROTOOPT for the provider's own. */
	int setopt(size_t *min_multi_recv, int name, const void *val, size_t len);
	/* fi_getopt's answer for a size_t option v. */
	static int put_size_opt(size_t v, void *val, size_t *len) noexcept;
	/* fi_getopt of the 2.x limits (FI_OPT_MAX_*_SIZE, FI_OPT_INJECT_*_SIZE):
	 * what info, which the data paths check, allows; -FI_ENOPROTOOPT for
	 * another option or an RMA / atomic limit without that capability. */
	static int limit_getopt(const fi_info *info, int name, void *val, size_t *len) noexcept;

	/* Close, without mtx and before the transport state goes: no CQ,
	 * counter or AV calls the endpoint back once this returns. */
	void unbind_all() noexcept;

	uint64_t tx_flags() const noexcept { return info->tx_attr->op_flags; }
	uint64_t rx_flags() const noexcept { return info->rx_attr->op_flags; }
	/* Does a successful operation posted with flags go to the CQ? */
	bool tx_wants(uint64_t flags) const noexcept { return !tx_sel || (flags & FI_COMPLETION); }
	bool rx_wants(uint64_t flags) const noexcept { return !rx_sel || (flags & FI_COMPLETION); }
	/* The counter an operation of kind k counts on, on this side. */
	fid_cntr *cntr_for(op_kind k) const noexcept;

	/* The peer's address as this endpoint's transport knows it
	 * (av::addr_of, or the part addr_part of it); 0: no such entry. */
	size_t peer_addr(fi_addr_t a, void *buf, size_t len) const noexcept
	{
		return addr_part < 0 ? av::addr_of(av, a, buf, len) : av::addr_of_part(av, a, addr_part, buf, len);
	}
	/* The fi_addr of a transport address (av::reverse, or of the part);
	 * FI_ADDR_NOTAVAIL when the AV has none, or src_ok refuses it. */
	fi_addr_t peer_lookup(const void *addr, size_t len) const noexcept
	{
		fi_addr_t a = addr_part < 0 ? av::reverse(av, addr, len) : av::reverse_part(av, addr_part, addr, len);
		return a == FI_ADDR_NOTAVAIL || !src_ok || src_ok(src_arg, a) ? a : FI_ADDR_NOTAVAIL;
	}

	/* Under mtx: collects a completion. */
	void push(fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err = 0, size_t olen = 0,
		  const void *err_data = nullptr, size_t err_len = 0)
	{
		comps.push(cq, cntr, c, err, olen, err_data, err_len);
	}
	/* Under mtx: the completion of a transmit-side operation (send, RMA,
	 * atomic): to the transmit CQ when it failed or want_comp, and its
	 * counter.  A failed inject (fi_inject*: the application gave no
	 * context and expects no completion) only counts as an error on the
	 * counter, and is logged. */
	void complete_tx(op_kind k, bool tagged, void *context, size_t len, bool want_comp, int err,
			 bool inject = false);
	/* Without mtx: posts what was collected. */
	/* Without mtx: posts what was collected; false when a full CQ kept
	 * some back for a later flush. */
	bool flush() noexcept { return comps.flush(mtx); }

	/* The frame of a submit or progress call: fn runs under mtx; what it
	 * collected is posted once the lock is released, by post (flush(),
	 * or the provider's own), and only when there is something: the
	 * common call, which collects nothing or posts straight to a leaf
	 * CQ, takes the lock once.  What another thread adds later, that
	 * thread posts.  Returns what fn returns. */
	template <class F, class Post>
	auto locked(F &&fn, Post &&post) -> decltype(fn())
	{
		bool collected;
		if constexpr (std::is_void_v<decltype(fn())>) {
			{
				std::lock_guard g(mtx);
				fn();
				collected = !comps.empty();
			}
			if (collected)
				post();
		} else {
			decltype(fn()) r;
			{
				std::lock_guard g(mtx);
				r = fn();
				collected = !comps.empty();
			}
			if (collected)
				post();
			return r;
		}
	}
	template <class F>
	auto locked(F &&fn) -> decltype(fn())
	{
		return locked(static_cast<F &&>(fn), [this] { flush(); });
	}
};

} // namespace wu::prov

#endif
