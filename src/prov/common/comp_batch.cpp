/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion batching (comp_batch.h). */
#include "config.h"
#include "prov/common/comp_batch.h"
#include "prov/common/ep_base.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

#include <rdma/fi_errno.h>

namespace wu::prov {

void comp_batch::queue(fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err, size_t olen,
		       const void *err_data, size_t err_len)
{
	if (!cq && !cntr)
		return;
	item p;
	p.cq = cq;
	p.cntr = cntr;
	p.c = c;
	p.err = err;
	p.olen = olen;
	if (err_len)
		p.err_data.assign(static_cast<const char *>(err_data), err_len);
	if (cq != only_cq_)
		only_cq_ = nullptr;
	items_.push_back(std::move(p));
}

bool comp_batch::flush(ep_lock &mtx) noexcept
{
	for (;;) {
		std::vector<item> batch;
		size_t first;
		fid_cq *only;
		{
			std::lock_guard<ep_lock> g(mtx);
			if (empty() || flushing_)
				return true; /* the thread flushing loops for what we added */
			flushing_ = true;
			batch.swap(items_);
			first = head_;
			only = only_cq_;
			head_ = 0;
			only_cq_ = nullptr;
		}
		/* Items stay in place: posted ones are cleared (cq and cntr
		 * null), the first live one is the new head.  Later items for a
		 * CQ found full are not tried, so each CQ keeps its order. */
		constexpr int max_full = 4;
		fid_cq *full[max_full];
		int nfull = 0;
		bool uniform = true; /* every kept item is for full[0] */
		size_t keep = batch.size();
		for (size_t i = first; i < batch.size(); i++) {
			item &p = batch[i];
			if (!p.cq && !p.cntr)
				continue; /* posted by an earlier flush */
			if (p.cq && nfull && std::find(full, full + nfull, p.cq) != full + nfull) {
				if (p.cq != full[0])
					uniform = false;
				else if (only == full[0])
					break; /* the rest is for that CQ too */
				continue;
			}
			if (p.cq) {
				int r = p.err ? cq::post_error(p.cq, p.c, p.err, -p.err, p.olen,
							       p.err_data.empty() ? nullptr : p.err_data.data(),
							       p.err_data.size())
					      : cq::post(p.cq, p.c);
				if (r == -FI_EOVERRUN) {
					keep = std::min(keep, i);
					if (nfull)
						uniform = false;
					if (nfull == max_full)
						break; /* keep the rest as it is, in order */
					full[nfull++] = p.cq;
					continue;
				}
			}
			if (p.cntr) {
				if (p.err)
					cntr::add_err(p.cntr, 1);
				else
					cntr::add(p.cntr, 1);
			}
			p.cq = nullptr;
			p.cntr = nullptr;
		}
		std::lock_guard<ep_lock> g(mtx);
		flushing_ = false;
		if (keep != batch.size()) {
			/* CQ full: keep them, in order, for the next progress call. */
			for (const item &p : items_)
				if (p.cq != full[0])
					uniform = false;
			if (keep > batch.size() / 2) { /* drop the posted prefix: amortised O(1) */
				batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(keep));
				keep = 0;
			}
			batch.insert(batch.end(), std::make_move_iterator(items_.begin()),
				     std::make_move_iterator(items_.end()));
			items_.swap(batch);
			head_ = keep;
			only_cq_ = uniform ? full[0] : nullptr;
			return false;
		}
		if (items_.empty()) {
			batch.clear(); /* hand the storage back: no allocation next time */
			items_.swap(batch);
			return true;
		}
	}
}

} // namespace wu::prov
