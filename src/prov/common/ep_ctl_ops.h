/* SPDX-License-Identifier: BSD-3-Clause */
/* The fi_ops_ep table of an endpoint (fi_cancel, fi_getopt, fi_setopt,
 * fi_rx_size_left, fi_tx_size_left), generated from its hooks the way
 * ep_ops.h generates the data operations, so that a provider writes only
 * what is its own.  The hooks class (usually the one ep_control.h takes):
 *
 *	struct my_ctl {
 *		using ep_type = my_ep;
 *		static my_ep *lookup(fid *) noexcept;   // NULL: not ours
 *		static size_t tx_busy(my_ep *);         // under the lock: transmits in flight
 *	    optional:
 *		static prov::ep_base &base(my_ep *);    // default ep->b (its mtx, flush())
 *		static const fi_info *info(my_ep *);    // default base(ep).info (the limits)
 *		static prov::rx_ctx *rx(my_ep *);       // the receive context: fi_cancel,
 *		                                        // FI_OPT_MIN_MULTI_RECV, rx_size_left;
 *		                                        // none: no FI_MULTI_RECV
 *		static ssize_t cancel_locked(my_ep *, void *ctx); // instead of rx(ep)->cancel
 *		static void flush(my_ep *);             // after a cancel, without the lock
 *		static int getopt(my_ep *, int name, void *val, size_t *len);
 *		static int setopt(my_ep *, int name, const void *val, size_t len);
 *		                                        // own options; -FI_ENOPROTOOPT: not one
 *		static size_t rx_busy(my_ep *);         // default rx(ep)->posted
 *		static ssize_t tx_left(my_ep *);        // the whole fi_tx_size_left
 *	};
 *
 * and points its endpoint at ep_ctl_ops<my_ctl>::ops(). */
#ifndef WU_PROV_COMMON_EP_CTL_OPS_H
#define WU_PROV_COMMON_EP_CTL_OPS_H

#include <algorithm>
#include <cstddef>
#include <mutex>

#include <rdma/fi_endpoint.h>

#include "core/shim.h"
#include "prov/common/ep_base.h"
#include "prov/common/ops_tables.h"
#include "prov/common/rx.h"

namespace wu::prov {

template <class H>
class ep_ctl_ops {
	using ep_t = typename H::ep_type;
	static constexpr bool has_rx = requires(ep_t *ep) { H::rx(ep); };

	static ep_base &base(ep_t *ep)
	{
		if constexpr (requires { H::base(ep); })
			return H::base(ep);
		else
			return ep->b;
	}
	static const fi_info *info(ep_t *ep)
	{
		if constexpr (requires { H::info(ep); })
			return H::info(ep);
		else
			return base(ep).info;
	}
	static ssize_t cancel_locked(ep_t *ep, void *ctx)
	{
		if constexpr (requires { H::cancel_locked(ep, ctx); }) {
			return H::cancel_locked(ep, ctx);
		} else {
			op *o = H::rx(ep)->cancel(ctx);
			if (!o)
				return -FI_ENOENT;
			complete_canceled(base(ep), o);
			return 0;
		}
	}
	static size_t rx_busy(ep_t *ep)
	{
		if constexpr (requires { H::rx_busy(ep); })
			return H::rx_busy(ep);
		else
			return H::rx(ep)->posted.load();
	}
	static ssize_t left(size_t size, size_t busy) noexcept
	{
		return ssize_t(size - std::min(busy, size));
	}

public:
	static ssize_t cancel(fid *f, void *context) noexcept
	{
		return guard("fi_cancel", [&]() -> ssize_t {
			ep_t *ep = H::lookup(f);
			if (!ep)
				return -FI_EINVAL;
			ep_base &b = base(ep);
			return b.locked([&] { return cancel_locked(ep, context); },
					[&] {
						if constexpr (requires { H::flush(ep); })
							H::flush(ep);
						else
							b.flush();
					});
		});
	}

	/* fi_getopt / fi_setopt: fn's answer for a known endpoint, valid
	 * arguments (args_ok) and an FI_OPT_ENDPOINT option. */
	template <class F>
	static int opt_call(fid *f, const char *where, bool args_ok, int level, F &&fn) noexcept
	{
		return guard(where, [&]() -> int {
			ep_t *ep = H::lookup(f);
			if (!ep || !args_ok)
				return -FI_EINVAL;
			return level == FI_OPT_ENDPOINT ? fn(ep) : -FI_ENOPROTOOPT;
		});
	}

	static int getopt(fid *f, int level, int name, void *val, size_t *len) noexcept
	{
		return opt_call(f, "fi_getopt", val && len, level, [&](ep_t *ep) -> int {
			if constexpr (requires { H::getopt(ep, name, val, len); })
				if (int r = H::getopt(ep, name, val, len); r != -FI_ENOPROTOOPT)
					return r;
			if constexpr (has_rx)
				if (name == FI_OPT_MIN_MULTI_RECV) {
					size_t v;
					{
						std::lock_guard g(base(ep).mtx);
						v = H::rx(ep)->min_multi_recv;
					}
					return ep_base::put_size_opt(v, val, len);
				}
			return ep_base::limit_getopt(info(ep), name, val, len);
		});
	}

	static int setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
	{
		return opt_call(f, "fi_setopt", val, level, [&](ep_t *ep) -> int {
			if constexpr (requires { H::setopt(ep, name, val, len); })
				if (int r = H::setopt(ep, name, val, len); r != -FI_ENOPROTOOPT)
					return r;
			if constexpr (has_rx) {
				return base(ep).setopt(&H::rx(ep)->min_multi_recv, name, val, len);
			} else {
				if (name == FI_OPT_MIN_MULTI_RECV) /* no FI_MULTI_RECV */
					return -FI_ENOPROTOOPT;
				size_t unused = 0;
				return base(ep).setopt(&unused, name, val, len);
			}
		});
	}

	/* fi_rx_size_left / fi_tx_size_left: what fn says of a known endpoint. */
	template <class F>
	static ssize_t size_left(fid_ep *e, const char *where, F &&fn) noexcept
	{
		return guard(where, [&]() -> ssize_t {
			ep_t *ep = e ? H::lookup(&e->fid) : nullptr;
			return ep ? fn(ep) : -FI_EINVAL;
		});
	}

	static ssize_t rx_left(fid_ep *e) noexcept
	{
		return size_left(e, "fi_rx_size_left", [](ep_t *ep) {
			std::lock_guard g(base(ep).mtx);
			return left(info(ep)->rx_attr->size, rx_busy(ep));
		});
	}

	static ssize_t tx_left(fid_ep *e) noexcept
	{
		return size_left(e, "fi_tx_size_left", [](ep_t *ep) -> ssize_t {
			if constexpr (requires { H::tx_left(ep); }) {
				return H::tx_left(ep);
			} else {
				std::lock_guard g(base(ep).mtx);
				return left(info(ep)->tx_attr->size, H::tx_busy(ep));
			}
		});
	}

	static constexpr fi_ops_ep table = ep_core_ops(cancel, getopt, setopt, rx_left, tx_left);
	/* fid_ep holds a non-const pointer; nothing writes through it. */
	static fi_ops_ep *ops() noexcept { return const_cast<fi_ops_ep *>(&table); }
};

} // namespace wu::prov

#endif
