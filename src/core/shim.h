/* SPDX-License-Identifier: BSD-3-Clause */
/* The one ABI shim: every exported function and every ops-table entry runs
 * its C++ body through wu::guard so that no exception crosses the C ABI. */
#ifndef WU_CORE_SHIM_H
#define WU_CORE_SHIM_H

#include <cerrno>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

#include <rdma/fi_errno.h>

#include "core/func.h"

namespace wu {

/* Thrown inside C++ code for a decided fabric error; caught by guard(). */
struct fi_error {
	int code; /* positive FI_E* value */
	explicit fi_error(int c) noexcept : code(c < 0 ? -c : c) {}
};

/* Logs an escaped unknown exception (implemented in shim.cpp). */
void shim_report(const char *where, const char *what) noexcept;

/* Runs fn; maps exceptions to a negative FI_E* value of the function's
 * integral return type.  Functions returning pointers use guard_ptr. */
template <class F>
auto guard(const char *where, F &&fn) noexcept -> decltype(fn())
{
	using R = decltype(fn());
	static_assert(std::is_integral_v<R>, "guard() wraps functions returning an integer status");
	try {
		return fn();
	} catch (const fi_error &e) {
		return static_cast<R>(-e.code);
	} catch (const std::bad_alloc &) {
		return static_cast<R>(-FI_ENOMEM);
	} catch (const std::system_error &e) {
		shim_report(where, e.what());
		int c = e.code().value();
		return static_cast<R>(c > 0 ? -c : -FI_EOTHER);
	} catch (const std::exception &e) {
		shim_report(where, e.what());
		return static_cast<R>(-FI_EOTHER);
	} catch (...) {
		shim_report(where, "unknown exception");
		return static_cast<R>(-FI_EOTHER);
	}
}

/* For void and pointer returning entry points: fallback value on failure. */
template <class F, class R>
R guard_or(const char *where, R fallback, F &&fn) noexcept
{
	try {
		return fn();
	} catch (const std::exception &e) {
		shim_report(where, e.what());
	} catch (...) {
		shim_report(where, "unknown exception");
	}
	return fallback;
}

template <class F>
void guard_void(const char *where, F &&fn) noexcept
{
	try {
		fn();
	} catch (const std::exception &e) {
		shim_report(where, e.what());
	} catch (...) {
		shim_report(where, "unknown exception");
	}
}

} // namespace wu

#define WU_GUARD(...)                                                                              \
	::wu::guard(WU_FUNC_, [&, wu_log_fn_ = static_cast<const char *>(WU_FUNC_)]() {            \
		(void)wu_log_fn_;                                                                  \
		__VA_ARGS__                                                                        \
	})

#endif
