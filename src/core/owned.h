/* SPDX-License-Identifier: BSD-3-Clause */
/* A move-only owning pointer that keeps its holder standard-layout under
 * every compiler: std::unique_ptr does not under clang with libstdc++ (its
 * tuple storage), and a C++ object that embeds a fid first must stay
 * standard-layout (core/fid.h). */
#ifndef WU_CORE_OWNED_H
#define WU_CORE_OWNED_H

#include <type_traits>
#include <utility>

namespace wu {

template <class T>
class owned {
	using elem = std::remove_extent_t<T>;
	elem *p_ = nullptr;

	void drop() noexcept
	{
		if constexpr (std::is_array_v<T>)
			delete[] p_;
		else
			delete p_;
	}

public:
	owned() noexcept = default;
	explicit owned(elem *p) noexcept : p_(p) {}
	owned(owned &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
	owned &operator=(owned &&o) noexcept
	{
		if (this != &o) {
			drop();
			p_ = std::exchange(o.p_, nullptr);
		}
		return *this;
	}
	owned(const owned &) = delete;
	owned &operator=(const owned &) = delete;
	~owned() { drop(); }

	elem *get() const noexcept { return p_; }
	elem *operator->() const noexcept { return p_; }
	elem &operator*() const noexcept { return *p_; }
	explicit operator bool() const noexcept { return p_ != nullptr; }
	void reset(elem *p = nullptr) noexcept
	{
		drop();
		p_ = p;
	}
	elem *release() noexcept { return std::exchange(p_, nullptr); }
};

} // namespace wu

#endif
