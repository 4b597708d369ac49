/* SPDX-License-Identifier: BSD-3-Clause */
/* Parent references: an open object (domain, EQ, CQ, endpoint, ...) holds
 * one on the object it was opened from, and fi_close of the parent is
 * -FI_EBUSY while any is held.  A child_ref takes its reference when made
 * and drops it when destroyed or reset, so no error path or close has a
 * get() to pair with a put() by hand. */
#ifndef WU_CORE_CHILD_REF_H
#define WU_CORE_CHILD_REF_H

#include <atomic>
#include <utility>

namespace wu {

/* The count a parent keeps of its children; see child_ref. */
struct refs {
	std::atomic<int> n{0};
	bool busy() const noexcept { return n.load(std::memory_order_acquire) != 0; }
	int count() const noexcept { return n.load(std::memory_order_relaxed); }
};

/* One child's reference on its parent's refs (move-only). */
class child_ref {
public:
	child_ref() noexcept = default;
	explicit child_ref(refs &r) noexcept : r_(&r) { r.n.fetch_add(1, std::memory_order_relaxed); }
	child_ref(child_ref &&o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
	child_ref &operator=(child_ref &&o) noexcept
	{
		if (this != &o) {
			reset();
			r_ = std::exchange(o.r_, nullptr);
		}
		return *this;
	}
	child_ref(const child_ref &) = delete;
	child_ref &operator=(const child_ref &) = delete;
	~child_ref() { reset(); }

	/* Drops the reference now (the parent may close from here on). */
	void reset() noexcept
	{
		if (r_)
			std::exchange(r_, nullptr)->n.fetch_sub(1, std::memory_order_acq_rel);
	}
	explicit operator bool() const noexcept { return r_ != nullptr; }

private:
	refs *r_ = nullptr;
};

} // namespace wu

#endif
