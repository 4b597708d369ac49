/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: its endpoints as sub-endpoints of the wireup provider
 * (prov/common/sub_ep.h).  ep_open is shm's own fi_endpoint, which needs of
 * the domain only what every prov::domain has (its fi_info's
 * domain_attr->data_progress, its MR table, its children count): it looks
 * at neither the provider's name nor the fabric.  Its info must be shaped
 * for shm: RDM, and src_addr absent or an fi_shm://<name> address. */
#include "config.h"

#include <mutex>

#include "core/log.h"
#include "core/shim.h"
#include "prov/common/sub_ep.h"
#include "prov/shm/shm.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

namespace {

prov::ep_base *base_of(fid_ep *e) noexcept
{
	shm_ep *ep = e ? ep_of(&e->fid) : nullptr;
	return ep ? &ep->b : nullptr;
}

int lend_rx(fid_ep *e, prov::rx_ctx *rx) noexcept
{
	return guard("shm lend_rx", [&]() -> int {
		shm_ep *ep = e ? ep_of(&e->fid) : nullptr;
		if (!ep || !rx) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "lend_rx: %s is invalid\n", !ep ? "the endpoint" : "the receive context");
			return -FI_EINVAL;
		}
		std::lock_guard g(ep->b.mtx);
		if (ep->srx) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "lend_rx: the endpoint is bound to a shared receive context\n");
			return -FI_EOPBADSTATE;
		}
		if (ep->b.enabled) {
			/* Receives may be posted to its own context already. */
			WU_WARN(P(), FI_LOG_EP_CTRL, "lend_rx: the endpoint is enabled; lend before fi_enable\n");
			return -FI_EOPBADSTATE;
		}
		ep->rx = rx;
		return 0;
	});
}

/* Under the shared lock: messages set aside at FI_SHM_UNEXP_LIMIT go on
 * now that the lender's receive may have taken unexpected ones (with auto
 * progress nothing else would run them until a peer pushes again). */
void rx_room(fid_ep *e) noexcept
{
	guard_void("shm rx_room", [&] {
		if (shm_ep *ep = e ? ep_of(&e->fid) : nullptr)
			rx_room_locked(ep);
	});
}

const prov::sub_ops ops = {"shm", ep_open, base_of, lend_rx, nullptr, rx_room, inject_sub};

} // namespace

const prov::sub_ops *sub_ops() noexcept
{
	return &ops;
}

} // namespace wu::shm
