/* SPDX-License-Identifier: BSD-3-Clause */
/* fid plumbing shared by every object: the one -FI_ENOSYS slot, and the
 * standard-layout rule for objects whose first member is a struct fid_*. */
#ifndef WU_CORE_FID_H
#define WU_CORE_FID_H

#include <cstddef>
#include <type_traits>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "core/log.h"

namespace wu {

/* A compile-time string, so the ENOSYS slot can name what was asked for. */
template <size_t N>
struct slot_name {
	char s[N];
	constexpr slot_name(const char (&in)[N])
	{
		for (size_t i = 0; i < N; i++)
			s[i] = in[i];
	}
};

template <class Sig, slot_name Name>
struct nosys;

/* Unsupported operation: log why at info level and return -FI_ENOSYS
 * (or a null/zero value for slots that do not return a status). */
template <class R, class... Args, slot_name Name>
struct nosys<R (*)(Args...), Name> {
	static R fn(Args...) noexcept
	{
		WU_INFO(&core_prov, FI_LOG_CORE, "%s is not supported by this object\n", Name.s);
		if constexpr (std::is_integral_v<R>)
			return static_cast<R>(-FI_ENOSYS);
		else if constexpr (!std::is_void_v<R>)
			return R{};
	}
};

/* WU_NOSYS(struct fi_ops, bind) is a function pointer fit for that slot. */
#define WU_NOSYS(ops_type, slot) \
	(&::wu::nosys<decltype(ops_type::slot), #slot>::fn)

/* The header every fid_* starts with: its class, the application's context
 * and its fi_ops. */
inline void set_fid(fid &f, size_t fclass, void *context, fi_ops *ops) noexcept
{
	f.fclass = fclass;
	f.context = context;
	f.ops = ops;
}

/* Recover the C++ object whose first member is the given fid struct. */
template <class T, class Fid>
T *container_of_fid(Fid *fid) noexcept
{
	static_assert(std::is_standard_layout_v<T>, "fid holders must stay standard-layout");
	return reinterpret_cast<T *>(fid);
}

} // namespace wu

#endif
