/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion batching for an endpoint: completions are collected under the
 * endpoint's lock and posted to CQs and counters after it is released, so a
 * CQ that calls the provider's progress while holding its own lock cannot
 * deadlock with it.  Only a CQ whose post takes nothing but its own spin
 * lock (cq::post_is_leaf) is posted to at once, when nothing is queued
 * ahead.  One thread flushes at a time so a CQ sees the endpoint's
 * completions in order; a full CQ keeps them for the next flush, and a
 * flush that finds it still full costs O(1) when everything kept waits on
 * that one CQ (the usual case), not a retry of each kept completion. */
#ifndef WU_PROV_COMMON_COMP_BATCH_H
#define WU_PROV_COMMON_COMP_BATCH_H

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include <rdma/fi_domain.h>

#include "prov/common/cq.h"

namespace wu::prov {

class ep_lock;

class comp_batch {
public:
	/* Under the endpoint's lock. */
	void push(fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err = 0, size_t olen = 0,
		  const void *err_data = nullptr, size_t err_len = 0)
	{
		/* Nothing queued ahead and nobody posting: a CQ that takes no
		 * other lock gets it now, sparing the hand-off through flush
		 * (latency). */
		if (!err && !cntr && cq && empty() && !flushing_ && cq::post_if_leaf(cq, c) == 0)
			return;
		queue(cq, cntr, c, err, olen, err_data, err_len);
	}
	bool empty() const noexcept { return items_.empty(); } /* kept items keep a live one at head_ */
	/* Without the endpoint's lock mtx: posts what was collected.  False
	 * when a full CQ kept some back: the caller must flush again later
	 * (progress that skips quiet endpoints must not skip this one). */
	bool flush(ep_lock &mtx) noexcept;

private:
	void queue(fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err, size_t olen, const void *err_data,
		   size_t err_len);
	struct item {
		fid_cq *cq = nullptr;
		fid_cntr *cntr = nullptr;
		cq::completion c;
		int err = 0;
		size_t olen = 0;
		std::string err_data;
	};
	std::vector<item> items_;
	size_t head_ = 0; /* items_ before it are posted (kept after a full CQ) */
	/* Non-null: every item from head_ waits on this CQ, which was full. */
	fid_cq *only_cq_ = nullptr;
	bool flushing_ = false;
};

} // namespace wu::prov

#endif
