/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters (fi_cntr(3)) for every provider.
 *
 * Two atomics (value, error value): the data path is one fetch_add plus a
 * check for sleepers and for a native wait object to signal.  fi_cntr_wait
 * sleeps on a futex word bumped only when a sleeper registered; the
 * value/sleepers pair uses sequentially consistent operations so that
 * either the adder sees the sleeper or the sleeper sees the new value.
 * With FI_WAIT_NONE or FI_WAIT_SET, fi_cntr_wait polls (progress + yield)
 * rather than failing, as many applications open counters with zeroed
 * attributes and still wait on them. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include <rdma/fi_errno.h>

#include "core/fid.h"
#include "core/log.h"
#include "core/shim.h"
#include "core/sync.h"
#include "prov/common/cq.h"
#include "prov/common/cq_detail.h"
#include "prov/common/idle_yield.h"

namespace wu::cntr {
namespace {

using compl_detail::native_wait;
using compl_detail::progress_set;
using eqd::lock_guard;
using eqd::spinlock;

constexpr long progress_spin_ns = 50 * 1000;
constexpr long progress_slice_ns = 1000 * 1000;

struct cntr_impl;

using cntr_shell = waitobj::shell<fid_cntr, cntr_impl>;

struct cntr_impl {
	cntr_shell *shell = nullptr;
	prov::domain *dom = nullptr;
	child_ref parent; /* on dom->children */
	std::atomic<uint64_t> val{0};
	std::atomic<uint64_t> err{0};
	std::atomic<uint32_t> sleepers{0};
	std::atomic<uint32_t> seq{0};
	std::atomic<uint64_t> opflags{0};
	std::atomic<uint64_t> polled_val{0}; /* val at the last fi_cntr_read */
	spinlock lk; /* native wait level */
	native_wait nw;
	progress_set prog;

	/* After any change of val or err (seq_cst: pairs with wait()). */
	void changed() noexcept
	{
		if (sleepers.load(std::memory_order_seq_cst)) [[unlikely]] {
			seq.fetch_add(1, std::memory_order_seq_cst);
			eqd::futex_wake_all(&seq);
		}
		if (nw.mirrored()) [[unlikely]] {
			lock_guard g(lk);
			nw.set_level(true);
		}
		nw.broadcast();
	}

	/* The application looked: the native object may go quiet again. */
	void seen() noexcept
	{
		if (nw.mirrored()) [[unlikely]] {
			lock_guard g(lk);
			nw.set_level(false);
		}
	}

	void add(uint64_t n) noexcept
	{
		val.fetch_add(n, std::memory_order_seq_cst);
		changed();
	}
	void add_err(uint64_t n) noexcept
	{
		err.fetch_add(n, std::memory_order_seq_cst);
		changed();
	}

	uint64_t read() noexcept
	{
		prog.run();
		seen();
		uint64_t v = val.load(std::memory_order_acquire);
		/* Unchanged since the last read: an empty poll. */
		bool moved = polled_val.load(std::memory_order_relaxed) != v;
		if (moved)
			polled_val.store(v, std::memory_order_relaxed);
		idle_yield::polled(moved);
		return v;
	}
	uint64_t readerr() noexcept
	{
		prog.run();
		seen();
		return err.load(std::memory_order_acquire);
	}

	int wait(uint64_t threshold, int timeout) noexcept
	{
		eqd::deadline d(timeout);
		const uint64_t err0 = err.load(std::memory_order_seq_cst);
		const bool poll = !nw.can_block() || nw.yields();
		timespec spin_until = eqd::slice(d, progress_spin_ns).at;
		for (;;) {
			prog.run();
			seen();
			if (val.load(std::memory_order_seq_cst) >= threshold)
				return 0;
			if (err.load(std::memory_order_seq_cst) != err0)
				return -FI_EAVAIL;
			if (timeout == 0 || d.passed())
				return -FI_ETIMEDOUT;
			bool manual = prog.has_fns();
			if (manual && eqd::before(eqd::now_mono(), spin_until)) {
				eqd::cpu_relax();
				continue;
			}
			if (poll) {
				sched_yield();
				continue;
			}
			sleepers.fetch_add(1, std::memory_order_seq_cst);
			uint32_t s = seq.load(std::memory_order_seq_cst);
			int rc = 0;
			if (val.load(std::memory_order_seq_cst) < threshold &&
			    err.load(std::memory_order_seq_cst) == err0)
				rc = manual ? eqd::futex_wait(&seq, s, eqd::slice(d, progress_slice_ns))
					    : eqd::futex_wait(&seq, s, d);
			sleepers.fetch_sub(1, std::memory_order_seq_cst);
			if (rc == EINTR) {
				if (val.load(std::memory_order_seq_cst) >= threshold)
					return 0;
				return -FI_EINTR;
			}
		}
	}

	void wake() noexcept
	{
		if (sleepers.load(std::memory_order_seq_cst)) {
			seq.fetch_add(1, std::memory_order_seq_cst);
			eqd::futex_wake_all(&seq);
		}
	}
};

constinit compl_detail::graveyard<cntr_shell> graves;

cntr_impl *impl_of(fid_cntr *c) noexcept
{
	return container_of_fid<cntr_shell>(c)->impl;
}

uint64_t cntr_read(fid_cntr *c)
{
	return guard_or(__func__, uint64_t{0}, [&] { return impl_of(c)->read(); });
}

uint64_t cntr_readerr(fid_cntr *c)
{
	return guard_or(__func__, uint64_t{0}, [&] { return impl_of(c)->readerr(); });
}

int cntr_add(fid_cntr *c, uint64_t value)
{
	impl_of(c)->add(value);
	return 0;
}

int cntr_adderr(fid_cntr *c, uint64_t value)
{
	impl_of(c)->add_err(value);
	return 0;
}

int cntr_set(fid_cntr *c, uint64_t value)
{
	cntr_impl *k = impl_of(c);
	k->val.store(value, std::memory_order_seq_cst);
	k->changed();
	return 0;
}

int cntr_seterr(fid_cntr *c, uint64_t value)
{
	cntr_impl *k = impl_of(c);
	k->err.store(value, std::memory_order_seq_cst);
	k->changed();
	return 0;
}

int cntr_wait(fid_cntr *c, uint64_t threshold, int timeout)
{
	return WU_GUARD(return impl_of(c)->wait(threshold, timeout););
}

void expose_fd(void *owner) noexcept
{
	auto *k = static_cast<cntr_impl *>(owner);
	lock_guard g(k->lk);
	/* Something happened since the last look iff the object is raised; a
	 * fresh fd starts quiet and fires on the next change. */
	k->nw.expose_fd_locked(k->nw.signaled());
}

constexpr waitobj::names cntr_names = {FI_LOG_CQ, "a counter", "counter", "a counter", true};

int cntr_control_impl(fid *f, int command, void *arg)
{
	cntr_impl *k = container_of_fid<cntr_shell>(f)->impl;
	if (command == FI_GETOPSFLAG || command == FI_SETOPSFLAG) {
		if (!arg) {
			WU_WARN(&core_prov, FI_LOG_CQ, "fi_control on a counter: arg is NULL\n");
			return -FI_EINVAL;
		}
		auto *flags = static_cast<uint64_t *>(arg);
		if (command == FI_GETOPSFLAG)
			*flags = k->opflags.load(std::memory_order_relaxed);
		else
			k->opflags.store(*flags, std::memory_order_relaxed);
		return 0;
	}
	return k->nw.control(command, arg, cntr_names, expose_fd, k);
}

int cntr_control(fid *f, int command, void *arg)
{
	return WU_GUARD(return cntr_control_impl(f, command, arg););
}

/* A closed handle: everything fails (reads return 0). */
struct closed_cntr {
	static constexpr fi_log_subsys subsys = FI_LOG_CQ;
	static constexpr const char *warning = "call on a closed counter\n";
	static constexpr bool zero_u64 = true;
};
#define WU_CNTR_BADF(ops_type, slot) (&waitobj::badf<closed_cntr, decltype(ops_type::slot)>::fn)

int cntr_close(fid *f);

fi_ops cntr_fi_ops = {
	sizeof(fi_ops),		     cntr_close, WU_NOSYS(fi_ops, bind), cntr_control,
	WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

fi_ops_cntr cntr_ops = {
	sizeof(fi_ops_cntr), cntr_read, cntr_readerr, cntr_add,
	cntr_set,	     cntr_wait, cntr_adderr,  cntr_seterr,
};

constinit fi_ops dead_fi_ops = waitobj::dead_fi_ops<closed_cntr>();

fi_ops_cntr dead_cntr_ops = {
	sizeof(fi_ops_cntr),
	WU_CNTR_BADF(fi_ops_cntr, read),
	WU_CNTR_BADF(fi_ops_cntr, readerr),
	WU_CNTR_BADF(fi_ops_cntr, add),
	WU_CNTR_BADF(fi_ops_cntr, set),
	WU_CNTR_BADF(fi_ops_cntr, wait),
	WU_CNTR_BADF(fi_ops_cntr, adderr),
	WU_CNTR_BADF(fi_ops_cntr, seterr),
};

int cntr_close_impl(fid *f)
{
	auto *sh = container_of_fid<cntr_shell>(f);
	cntr_impl *k = sh->impl;
	if (int b = k->prog.binds()) {
		WU_WARN(&core_prov, FI_LOG_CQ,
			"fi_close(counter %p): %d endpoint, memory-region or poll-set binding(s) still "
			"use it; close those first (fi_poll_del for a poll set)\n",
			static_cast<void *>(f), b);
		return -FI_EBUSY;
	}
	waitobj::retire(sh, graves, &dead_fi_ops, &dead_cntr_ops);
	return 0;
}

int cntr_close(fid *f)
{
	return WU_GUARD(return cntr_close_impl(f););
}

int open_cntr(prov::domain *dom, fi_cntr_attr *attr, fid_cntr **out, void *context)
{
	if (!dom || !out) {
		WU_WARN(&core_prov, FI_LOG_CQ, "fi_cntr_open: %s is NULL or invalid\n",
			!dom ? "domain" : "cntr");
		return -FI_EINVAL;
	}
	*out = nullptr;
	const fi_provider *prov = dom->fab->hooks->prov;
	fi_cntr_attr dflt{}; /* NULL attr: counts completions, no wait object */
	if (!attr)
		attr = &dflt;
	int events, wobj;
	memcpy(&events, &attr->events, sizeof events);
	memcpy(&wobj, &attr->wait_obj, sizeof wobj);
	if (events != FI_CNTR_EVENTS_COMP) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cntr_open: fi_cntr_attr.events %d is not supported (only "
			"FI_CNTR_EVENTS_COMP)\n",
			events);
		return -FI_ENOSYS;
	}
	if (attr->flags) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cntr_open: fi_cntr_attr.flags must be 0 (reserved), got 0x%llx\n",
			static_cast<unsigned long long>(attr->flags));
		return -FI_EBADFLAGS;
	}
	auto k = std::make_unique<cntr_impl>();
	if (int r = k->nw.init(dom, wobj, attr->wait_set, "fi_cntr_open"))
		return r;
	k->dom = dom;
	k->parent = child_ref(dom->children);
	*out = waitobj::publish<fid_cntr>(std::move(k), FI_CLASS_CNTR, context, &cntr_fi_ops, &cntr_ops);
	return 0;
}

cntr_impl *live(fid_cntr *c, const char *what) noexcept
{
	if (!c || !is_cntr(&c->fid)) [[unlikely]] {
		WU_WARN(&core_prov, FI_LOG_CQ, "%s: not an open counter\n", what);
		return nullptr;
	}
	return impl_of(c);
}

} // namespace

bool is_cntr(const fid *f) noexcept
{
	return f && f->fclass == FI_CLASS_CNTR && f->ops == &cntr_fi_ops;
}

int open(prov::domain *dom, fi_cntr_attr *attr, fid_cntr **cntr, void *context) noexcept
{
	return WU_GUARD(return open_cntr(dom, attr, cntr, context););
}

int domain_cntr_open(fid_domain *domain, fi_cntr_attr *attr, fid_cntr **cntr,
		     void *context) noexcept
{
	return open(prov::domain_of(domain), attr, cntr, context);
}

int bind_impl(fid *f, progress_fn progress)
{
	if (!is_cntr(f)) {
		WU_WARN(&core_prov, FI_LOG_CQ, "bind: %p is not an open counter\n",
			static_cast<void *>(f));
		return -FI_EINVAL;
	}
	return impl_of(reinterpret_cast<fid_cntr *>(f))->prog.add(progress);
}

int bind(fid *f, progress_fn progress) noexcept
{
	return WU_GUARD(return bind_impl(f, progress););
}

int unbind(fid *f, progress_fn progress) noexcept
{
	if (!is_cntr(f)) {
		WU_WARN(&core_prov, FI_LOG_CQ, "unbind: %p is not an open counter\n",
			static_cast<void *>(f));
		return -FI_EINVAL;
	}
	int r = impl_of(reinterpret_cast<fid_cntr *>(f))->prog.remove(progress);
	if (r)
		WU_WARN(&core_prov, FI_LOG_CQ, "unbind: counter %p has no such binding\n",
			static_cast<void *>(f));
	return r;
}

void add(fid_cntr *c, uint64_t n) noexcept
{
	if (cntr_impl *k = live(c, "cntr::add")) [[likely]]
		k->add(n);
}

void add_err(fid_cntr *c, uint64_t n) noexcept
{
	if (cntr_impl *k = live(c, "cntr::add_err")) [[likely]]
		k->add_err(n);
}

void wake(fid_cntr *c) noexcept
{
	if (cntr_impl *k = live(c, "cntr::wake"))
		k->wake();
}

int trywait(fid *f) noexcept
{
	if (!is_cntr(f))
		return -FI_EINVAL;
	cntr_impl *k = impl_of(reinterpret_cast<fid_cntr *>(f));
	{
		lock_guard g(k->lk);
		if (k->nw.signaled())
			return -FI_EAGAIN;
	}
	if (int r = k->prog.block_all())
		return r;
	lock_guard g(k->lk);
	return k->nw.signaled() ? -FI_EAGAIN : 0;
}

} // namespace wu::cntr
