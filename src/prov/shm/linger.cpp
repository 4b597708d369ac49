/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_close of a shm endpoint delivers what the application already counts
 * as sent: injects (and eager sends) still in a peer's backlog, behind an
 * unanswered HELLO or a full queue or bounce pool, would be lost with the
 * endpoint.  MPICH's MPI_Bsend then MPI_Finalize counts on them: the
 * receiver waits forever for the dropped messages. */
#include "config.h"

#include <time.h>

#include <algorithm>

#include "core/log.h"
#include "core/param.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

namespace {

/* Cells still queued for peers that may take them. */
size_t queued(shm_ep *ep)
{
	size_t n = 0;
	for (auto &r : ep->remotes)
		if (!r->dead)
			n += r->backlog.size();
	return n;
}

} // namespace

void linger_locked(shm_ep *ep)
{
	size_t left = queued(ep);
	if (!left)
		return;
	const int64_t limit = std::max(0, param::get_int(P(), "linger").value);
	int64_t moved = now_ms(), checked = moved;
	while (left) {
		(void)progress_locked(ep);
		size_t now_left = queued(ep);
		int64_t t = now_ms();
		if (now_left < left) {
			moved = t;
		} else if (t - moved >= limit) {
			WU_WARN(P(), FI_LOG_EP_CTRL,
				"fi_close: endpoint %s: peers took none of %zu queued cells for %lld ms (FI_SHM_LINGER); dropped\n",
				ep->name.c_str(), now_left, (long long)(t - moved));
			return;
		}
		left = now_left;
		if (t - checked >= ep->dead_ms) {
			/* A peer that exited takes nothing: no need to wait out the limit. */
			checked = t;
			for (auto &r : ep->remotes)
				if (!r->dead && !r->backlog.empty() && r->p && !r->p->alive())
					peer_dead(ep, r.get(), "its process is gone");
			left = queued(ep);
		}
		if (left) {
			/* The peer needs the core to take them. */
			timespec ts{0, 50 * 1000};
			nanosleep(&ts, nullptr);
		}
	}
}

} // namespace wu::shm
