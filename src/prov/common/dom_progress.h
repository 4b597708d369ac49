/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress of every enabled endpoint of a domain, for what belongs to
 * the domain rather than to an endpoint: a counter bound only to memory
 * regions (fi_mr_bind, FI_RMA_EVENT) has no endpoint of its own, yet with
 * manual progress reading it is what makes the target apply a peer's RMA
 * (fi_cntr(3)).  Endpoints join at fi_enable and leave when they close. */
#ifndef WU_PROV_COMMON_DOM_PROGRESS_H
#define WU_PROV_COMMON_DOM_PROGRESS_H

#include "core/domain.h"
#include "prov/common/cq.h"

namespace wu::prov::dom_progress {

/* pf joins d's set (once per endpoint); 0 or -FI_ENOMEM. */
int add(const domain *d, progress_fn pf) noexcept;
/* pf leaves d's set; waits for a progress call of it in flight. */
void remove(const domain *d, progress_fn pf) noexcept;
/* What a counter bound to a region of d binds: runs d's set. */
progress_fn of(const domain *d) noexcept;

} // namespace wu::prov::dom_progress

#endif
