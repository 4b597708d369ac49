/* SPDX-License-Identifier: BSD-3-Clause */
/* Poll sets, as fi_poll(3) describes them:
 *   fi_poll_add / fi_poll_del   a CQ or counter of ours (flags must be 0)
 *   fi_poll                     drives the progress of the endpoints bound
 *                               to each member and returns the contexts of
 *                               the CQs that are not empty and of the
 *                               counters whose value or error count changed
 *                               since fi_poll last reported them
 * A member is held like an endpoint binding, so fi_close on it is -FI_EBUSY
 * until fi_poll_del (or the poll set's close, which releases its members:
 * libfabric allows closing a poll set that still has members). */
#include "prov/common/poll.h"

#include <memory>
#include <mutex>
#include <vector>

#include "core/fid.h"
#include "core/log.h"
#include "core/shim.h"
#include "core/wait.h"
#include "prov/common/cq.h"
#include "prov/common/objects.h"

namespace wu::poll {
namespace {

struct member {
	fid *f;
	bool is_cq;
	/* Counters: the values last reported (libfabric starts from 0). */
	uint64_t seen_val = 0;
	uint64_t seen_err = 0;
};

inline constexpr uint32_t poll_magic = 0x57555053; /* "WUPS" */

struct poll_set {
	fid_poll fid; /* first: the C view */
	uint32_t magic;
	prov::domain *dom;
	child_ref parent; /* on dom->children, dropped at fi_close */
	std::mutex mu;
	std::vector<member> members; /* guarded by mu */
	size_t next = 0;	     /* first member checked by the next fi_poll */
	poll_set *next_dead = nullptr;
};

/* Closed sets stay readable memory for a while (as CQs do), so a call on
 * a closed handle fails with -FI_EBADF instead of touching freed memory. */
constinit waitobj::graveyard<poll_set, 256> graves;

struct closed_poll {
	static constexpr fi_log_subsys subsys = FI_LOG_DOMAIN;
	static constexpr const char *warning = "call on a closed poll set\n";
	static constexpr bool zero_u64 = false;
};
#define WU_POLL_BADF(ops_type, slot) (&waitobj::badf<closed_poll, decltype(ops_type::slot)>::fn)

constinit fi_ops dead_fi_ops = waitobj::dead_fi_ops<closed_poll>();

fi_ops_poll dead_poll_ops = {
	sizeof(fi_ops_poll),
	WU_POLL_BADF(fi_ops_poll, poll),
	WU_POLL_BADF(fi_ops_poll, poll_add),
	WU_POLL_BADF(fi_ops_poll, poll_del),
};

poll_set *set_of(fid_poll *p, const char *what) noexcept
{
	poll_set *s = p ? container_of_fid<poll_set>(p) : nullptr;
	if (!s || p->fid.fclass != FI_CLASS_POLL || s->magic != poll_magic) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "%s: not an open poll set\n", what);
		return nullptr;
	}
	return s;
}

int release(const member &m) noexcept
{
	return m.is_cq ? cq::unbind(m.f, {}) : cntr::unbind(m.f, {});
}

int poll_add_impl(fid_poll *p, fid *f, uint64_t flags)
{
	poll_set *s = set_of(p, "fi_poll_add");
	if (!s)
		return -FI_EINVAL;
	if (flags) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_poll_add: flags 0x%llx are not defined\n",
			static_cast<unsigned long long>(flags));
		return -FI_EBADFLAGS;
	}
	bool is_cq = cq::is_cq(f);
	if (!is_cq && !cntr::is_cntr(f)) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN,
			"fi_poll_add: %p is not an open completion queue or counter of this library\n",
			static_cast<void *>(f));
		return -FI_EINVAL;
	}
	std::lock_guard lk(s->mu);
	for (const member &m : s->members)
		if (m.f == f)
			return 0; /* already in: nothing changes, as in libfabric */
	s->members.reserve(s->members.size() + 1); /* may throw before the binding */
	int r = is_cq ? cq::bind(f, {}) : cntr::bind(f, {});
	if (r)
		return r;
	s->members.push_back({f, is_cq});
	return 0;
}

int poll_del_impl(fid_poll *p, fid *f, uint64_t flags)
{
	poll_set *s = set_of(p, "fi_poll_del");
	if (!s)
		return -FI_EINVAL;
	if (flags) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_poll_del: flags 0x%llx are not defined\n",
			static_cast<unsigned long long>(flags));
		return -FI_EBADFLAGS;
	}
	std::lock_guard lk(s->mu);
	for (size_t i = 0; i < s->members.size(); i++) {
		if (s->members[i].f != f)
			continue;
		int r = release(s->members[i]);
		s->members.erase(s->members.begin() + static_cast<std::ptrdiff_t>(i));
		return r;
	}
	/* Nothing to do; libfabric says 0 too, and teardown code relies on it. */
	WU_INFO(&core_prov, FI_LOG_DOMAIN, "fi_poll_del: %p is not in this poll set\n",
		static_cast<void *>(f));
	return 0;
}

int poll_run_impl(fid_poll *p, void **context, int count)
{
	poll_set *s = set_of(p, "fi_poll");
	if (!s)
		return -FI_EINVAL;
	if (count < 0 || (count > 0 && !context)) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_poll: %s\n",
			count < 0 ? "count is negative" : "context is NULL");
		return -FI_EINVAL;
	}
	std::lock_guard lk(s->mu);
	size_t n = s->members.size();
	int found = 0;
	/* Start where the last call stopped, so that a full context array
	 * does not hide the same members every time. */
	size_t start = n ? s->next % n : 0;
	for (size_t k = 0; k < n && found < count; k++) {
		member &m = s->members[(start + k) % n];
		bool ready;
		if (m.is_cq) {
			int r = cq::pending(m.f);
			if (r < 0)
				return found ? found : r;
			ready = r > 0;
		} else {
			/* Reads drive the bound endpoints' progress. */
			auto *c = reinterpret_cast<fid_cntr *>(m.f);
			uint64_t v = fi_cntr_read(c), e = fi_cntr_readerr(c);
			ready = v != m.seen_val || e != m.seen_err;
			/* Seen only once reported: a change is never lost. */
			m.seen_val = v;
			m.seen_err = e;
		}
		if (ready) {
			context[found++] = m.f->context;
			s->next = (start + k + 1) % n;
		}
	}
	return found;
}

int poll_close_impl(fid *f)
{
	poll_set *s = set_of(reinterpret_cast<fid_poll *>(f), "fi_close(poll set)");
	if (!s)
		return -FI_EINVAL;
	{
		std::lock_guard lk(s->mu);
		for (const member &m : s->members)
			release(m);
		s->members.clear();
	}
	s->magic = 0;
	s->fid.fid.ops = &dead_fi_ops;
	s->fid.ops = &dead_poll_ops;
	s->parent.reset();
	graves.bury(s);
	return 0;
}

int poll_run(fid_poll *p, void **context, int count)
{
	return WU_GUARD(return poll_run_impl(p, context, count););
}

int poll_add(fid_poll *p, fid *f, uint64_t flags)
{
	return WU_GUARD(return poll_add_impl(p, f, flags););
}

int poll_del(fid_poll *p, fid *f, uint64_t flags)
{
	return WU_GUARD(return poll_del_impl(p, f, flags););
}

int poll_close(fid *f)
{
	return WU_GUARD(return poll_close_impl(f););
}

fi_ops_poll poll_ops = {
	sizeof(fi_ops_poll),
	poll_run,
	poll_add,
	poll_del,
};

fi_ops poll_fi_ops = {
	sizeof(fi_ops),
	poll_close,
	WU_NOSYS(fi_ops, bind),
	WU_NOSYS(fi_ops, control),
	WU_NOSYS(fi_ops, ops_open),
	WU_NOSYS(fi_ops, tostr),
	WU_NOSYS(fi_ops, ops_set),
};

int poll_open_impl(fid_domain *domain, fi_poll_attr *attr, fid_poll **pollset)
{
	prov::domain *dom = prov::domain_of(domain);
	if (!dom || !attr || !pollset) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_poll_open: %s is NULL or invalid\n",
			!dom ? "domain" : !attr ? "attr" : "pollset");
		return -FI_EINVAL;
	}
	if (attr->flags) {
		WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_poll_open: attr->flags 0x%llx must be 0\n",
			static_cast<unsigned long long>(attr->flags));
		return -FI_EINVAL;
	}
	auto s = std::make_unique<poll_set>();
	set_fid(s->fid.fid, FI_CLASS_POLL, nullptr, &poll_fi_ops);
	s->fid.ops = &poll_ops;
	s->magic = poll_magic;
	s->dom = dom;
	s->parent = child_ref(dom->children);
	*pollset = &s.release()->fid;
	return 0;
}

} // namespace

int domain_poll_open(fid_domain *domain, fi_poll_attr *attr, fid_poll **pollset) noexcept
{
	return WU_GUARD(return poll_open_impl(domain, attr, pollset););
}

} // namespace wu::poll
