/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_control(FI_ENABLE, FI_GETOPSFLAG, FI_SETOPSFLAG), the switch to auto
 * progress, fi_ep_bind of what ep_base binds, and the end of fi_close of an
 * endpoint built on ep_base, the same for every provider.  A provider
 * writes a hooks class
 *
 *	struct my_ctl {
 *		using ep_type = my_ep;                 // has ep_base b, bool want_auto,
 *		                                       // uint32_t magic
 *		static my_ep *lookup(fid *) noexcept;  // NULL: not ours
 *		static int enable_locked(my_ep *);     // under b.mtx: <0 error,
 *		                                       // 0 enabled now, >0 already was
 *		static bool begin_auto_locked(my_ep *); // under b.mtx: true when
 *		                                       // finish_auto must follow
 *		static void finish_auto(my_ep *);      // without b.mtx
 *		static void enabled(my_ep *);          // optional, without b.mtx
 *		static bool can_block(my_ep *);        // optional, under b.mtx
 *	};
 *
 * Auto progress is finished outside the endpoint's lock because the
 * progress engine calls the endpoint back under its own. */
#ifndef WU_PROV_COMMON_EP_CONTROL_H
#define WU_PROV_COMMON_EP_CONTROL_H

#include <cstdint>
#include <memory>
#include <mutex>

#include <rdma/fi_endpoint.h>

#include "core/info.h"
#include "core/log.h"
#include "core/shim.h"
#include "prov/common/ep_base.h"

namespace wu::prov {

template <class H>
class ep_control {
	using ep_t = typename H::ep_type;

	static bool wants_auto(ep_t *ep)
	{
		return ep->want_auto || ep->b.dom->info->domain_attr->data_progress == FI_PROGRESS_AUTO;
	}

	static int enable(ep_t *ep)
	{
		bool fin = false;
		{
			std::lock_guard g(ep->b.mtx);
			int r = H::enable_locked(ep);
			if (r)
				return r < 0 ? r : 0;
			if (wants_auto(ep))
				fin = H::begin_auto_locked(ep);
		}
		if (fin)
			H::finish_auto(ep);
		ep->b.enabled_unlocked(); /* fi_av_remove notices */
		if constexpr (requires { H::enabled(ep); })
			H::enabled(ep);
		return 0;
	}

public:
	/* fi_ops::control. */
	static int control(fid *f, int command, void *arg) noexcept
	{
		return guard("fi_control(ep)", [&]() -> int {
			ep_t *ep = H::lookup(f);
			if (!ep)
				return -FI_EINVAL;
			switch (command) {
			case FI_ENABLE:
				return enable(ep);
			case FI_GETOPSFLAG:
			case FI_SETOPSFLAG:
				return ep->b.ops_flag(command, static_cast<uint64_t *>(arg));
			default:
				WU_INFO(ep->b.prov, FI_LOG_EP_CTRL, "fi_control(ep): command %d is not supported\n",
					command);
				return -FI_ENOSYS;
			}
		});
	}

	/* fi_ops::bind of an endpoint that binds only what ep_base knows. */
	static int bind(fid *f, fid *bfid, uint64_t flags) noexcept
	{
		return guard("fi_ep_bind", [&]() -> int {
			ep_t *ep = H::lookup(f);
			if (!ep || !bfid)
				return -FI_EINVAL;
			return ep->b.bind(bfid, flags);
		});
	}

	/* The end of fi_close, once the transport's state is gone: frees the
	 * endpoint and lets its domain close. */
	static void destroy(ep_t *ep) noexcept
	{
		/* fi_close takes back what the open handed out as a fid; freeing
		 * it drops its child_ref, so the domain may close. */
		std::unique_ptr<ep_t> gone(ep);
		info_free(ep->b.info);
		ep->magic = 0;
	}

	/* progress_fn::block: the application is about to sleep on a bound CQ's
	 * or counter's wait object (fi_trywait returned 0), where manual
	 * progress would never run, so the endpoint switches to auto progress
	 * for good.  A try-lock: a thread binding this endpoint holds its lock
	 * while it waits for the CQ's progress list that our caller holds. */
	static int block(void *arg) noexcept
	{
		return guard("fi_trywait", [&]() -> int {
			auto *ep = static_cast<ep_t *>(arg);
			bool fin = false;
			{
				std::unique_lock g(ep->b.mtx, std::try_to_lock);
				if (!g.owns_lock())
					return -FI_EAGAIN;
				if constexpr (requires { H::can_block(ep); })
					if (!H::can_block(ep))
						return -FI_EAGAIN;
				if (!ep->want_auto)
					WU_INFO(ep->b.prov, FI_LOG_EP_DATA,
						"endpoint %p: the application blocks on a CQ/counter wait object; "
						"data progress is automatic from now on\n",
						static_cast<void *>(ep));
				ep->want_auto = true;
				if (ep->b.enabled)
					fin = H::begin_auto_locked(ep);
			}
			if (fin)
				H::finish_auto(ep);
			return 0;
		});
	}
};

} // namespace wu::prov

#endif
