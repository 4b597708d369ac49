/* Completion batching (comp_batch.h). */
#include "config.h"
#include "prov/common/comp_batch.h"
#include "prov/common/ep_base.h"

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
	items_.push_back(std::move(p));
}

bool comp_batch::flush(ep_lock &mtx) noexcept
{
	for (;;) {
		std::vector<item> batch;
		{
			std::lock_guard<ep_lock> g(mtx);
			if (items_.empty() || flushing_)
				return true; /* the thread flushing loops for what we added */
			flushing_ = true;
			batch.swap(items_);
		}
		std::vector<item> retry;
		for (item &p : batch) {
			if (p.cq) {
				int r = p.err ? cq::post_error(p.cq, p.c, p.err, -p.err, p.olen,
							       p.err_data.empty() ? nullptr : p.err_data.data(),
							       p.err_data.size())
					      : cq::post(p.cq, p.c);
				if (r == -FI_EOVERRUN) {
					retry.push_back(std::move(p));
					continue;
				}
			}
			if (p.cntr) {
				if (p.err)
					cntr::add_err(p.cntr, 1);
				else
					cntr::add(p.cntr, 1);
			}
		}
		std::lock_guard<ep_lock> g(mtx);
		flushing_ = false;
		if (!retry.empty()) {
			/* CQ full: keep them, in order, for the next progress call. */
			retry.insert(retry.end(), std::make_move_iterator(items_.begin()),
				     std::make_move_iterator(items_.end()));
			items_.swap(retry);
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
