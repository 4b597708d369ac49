/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-domain endpoint progress (dom_progress.h). */
#include "config.h"
#include "prov/common/dom_progress.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include <rdma/fi_errno.h>

#include "core/owned.h"
#include "prov/common/cq_detail.h"

namespace wu::prov::dom_progress {

namespace {

using wu::compl_detail::progress_set;

/* Sets live while a run holds them (shared_ptr), so a last endpoint may
 * leave while a counter of the domain is being read. */
struct registry {
	std::mutex m;
	std::unordered_map<const domain *, std::shared_ptr<progress_set>> sets;
};

registry &reg() noexcept
{
	static registry &r = make_immortal<registry>(); /* endpoints may close in static destructors */
	return r;
}

std::shared_ptr<progress_set> find(const domain *d) noexcept
{
	std::lock_guard g(reg().m);
	auto it = reg().sets.find(d);
	return it == reg().sets.end() ? nullptr : it->second;
}

void run(void *arg) noexcept
{
	if (auto s = find(static_cast<const domain *>(arg)))
		s->run();
}

} // namespace

int add(const domain *d, progress_fn pf) noexcept
{
	if (!d || !pf.fn)
		return -FI_EINVAL;
	try {
		std::lock_guard g(reg().m);
		auto &s = reg().sets[d];
		if (!s)
			s = std::make_shared<progress_set>();
		return s->add(pf);
	} catch (...) {
		return -FI_ENOMEM;
	}
}

void remove(const domain *d, progress_fn pf) noexcept
{
	std::shared_ptr<progress_set> s = find(d);
	if (!s)
		return;
	s->remove(pf); /* outside the registry lock: it waits for a run in flight */
	std::lock_guard g(reg().m);
	auto it = reg().sets.find(d);
	if (it != reg().sets.end() && it->second == s && !s->has_fns())
		reg().sets.erase(it);
}

progress_fn of(const domain *d) noexcept
{
	return progress_fn{run, const_cast<domain *>(d)};
}

} // namespace wu::prov::dom_progress
