/* SPDX-License-Identifier: BSD-3-Clause */
/* free_list<T, Link>: records of T kept for reuse, so that a data path
 * allocates nothing per operation once warm.  Intrusive: a kept record is
 * chained through its member Link (a T* or void* that the record does not
 * use while it is kept), so keeping costs no memory.  The list owns what
 * it keeps (freed by Del at clear() or destruction); it has no lock: its
 * owner's serialises it. */
#ifndef WU_CORE_FREE_LIST_H
#define WU_CORE_FREE_LIST_H

#include <cstddef>
#include <memory>

namespace wu {

template <class T, auto Link, class Del = std::default_delete<T>>
class free_list {
public:
	free_list() noexcept = default;
	free_list(const free_list &) = delete;
	free_list &operator=(const free_list &) = delete;
	~free_list() { clear(); }

	/* A kept record as it was put back, or nullptr when none is kept. */
	T *pop() noexcept
	{
		T *o = head_;
		if (!o)
			return nullptr;
		head_ = static_cast<T *>(o->*Link);
		n_--;
		return o;
	}
	/* Keeps o (the list owns it from now on). */
	void push(T *o) noexcept
	{
		o->*Link = head_;
		head_ = o;
		n_++;
	}
	/* Keeps o while fewer than max are kept, else frees it (the list
	 * owns o from now on either way). */
	void keep(T *o, size_t max) noexcept
	{
		if (n_ >= max)
			Del{}(o);
		else
			push(o);
	}
	size_t size() const noexcept { return n_; }
	/* Frees every kept record. */
	void clear() noexcept { trim(0); }
	/* Frees kept records until at most max are left. */
	void trim(size_t max) noexcept
	{
		while (n_ > max)
			Del{}(pop());
	}

private:
	T *head_ = nullptr;
	size_t n_ = 0;
};

} // namespace wu

#endif
