/* SPDX-License-Identifier: BSD-3-Clause */
/* A move-only owning pointer that keeps its holder standard-layout under
 * every compiler: std::unique_ptr does not under clang with libstdc++ (its
 * tuple storage), and a C++ object that embeds a fid first must stay
 * standard-layout (core/fid.h). */
#ifndef WU_CORE_OWNED_H
#define WU_CORE_OWNED_H

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace wu {

/* Drop is an empty type whose call operator frees a T (default: delete),
 * so the holder stays one pointer wide. */
template <class T, class Drop = std::default_delete<T>>
class owned {
	using elem = std::remove_extent_t<T>;
	static_assert(std::is_empty_v<Drop>, "owned<> keeps no deleter state");
	elem *p_ = nullptr;

	void drop() noexcept
	{
		if (p_)
			Drop{}(p_);
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

/* owned's make_unique. */
template <class T, class... A>
owned<T> make_owned(A &&...a)
{
	return owned<T>(new T(std::forward<A>(a)...));
}

/* A new T, or null when memory is short (for noexcept paths). */
template <class T, class... A>
std::unique_ptr<T> try_make(A &&...a) noexcept(std::is_nothrow_constructible_v<T, A...>)
{
	return std::unique_ptr<T>(new (std::nothrow) T(std::forward<A>(a)...));
}

/* n default-initialised T, or null when memory is short: for a path that
 * must report -FI_ENOMEM (or keep what it had) rather than throw. */
template <class T>
std::unique_ptr<T[]> try_make_array(size_t n) noexcept
{
	return std::unique_ptr<T[]>(new (std::nothrow) T[n]);
}

/* owned's make_unique_for_overwrite: n elements of T (an array type),
 * default-initialised, for a buffer about to be written (no zeroing on a
 * data path). */
template <class T>
owned<T> make_owned_for_overwrite(size_t n)
{
	static_assert(std::is_unbounded_array_v<T>);
	return owned<T>(new std::remove_extent_t<T>[n]);
}

/* A T placed pre bytes into a block aligned to Align (pre a multiple of
 * it), for a library that keeps its own header in front of our record
 * (UCX's request); freed only by drop_prefixed with the same pre. */
template <class T, size_t Align, class... A>
T *make_prefixed(size_t pre, A &&...a)
{
	void *m = ::operator new(pre + sizeof(T), std::align_val_t{Align});
	try {
		void *at = static_cast<char *>(m) + pre;
		if constexpr (sizeof...(A) == 0)
			return new (at) T; /* default-initialised, as a plain new T */
		else
			return new (at) T(std::forward<A>(a)...);
	} catch (...) {
		::operator delete(m, std::align_val_t{Align});
		throw;
	}
}

template <class T, size_t Align>
void drop_prefixed(T *o, size_t pre) noexcept
{
	char *m = reinterpret_cast<char *>(o) - pre;
	o->~T();
	::operator delete(m, std::align_val_t{Align});
}

/* Frees a record that an intrusive list or a table of raw pointers held:
 * such a record is made by make_owned and release()d into its structure,
 * and comes back here where the structure lets it go (a disposer, as
 * intrusive containers have), so that no owning delete is spelt out. */
template <class T>
void dispose(T *p) noexcept
{
	owned<T>{p}.reset();
}

/* A T that lives as long as the process and is never destroyed (it may be
 * used from atexit handlers or other static destructors): keep the result
 * in a function-local static. */
template <class T, class... A>
T &make_immortal(A &&...a)
{
	return *new T(std::forward<A>(a)...);
}

} // namespace wu

#endif
