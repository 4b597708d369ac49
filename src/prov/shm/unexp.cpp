/* SPDX-License-Identifier: BSD-3-Clause */
/* shm provider: the bound on unexpected messages (FI_SHM_UNEXP_LIMIT
 * bytes, FI_SHM_UNEXP_MSGS messages).
 *
 * Each endpoint has one queue for all its peers, and the cells that answer
 * its own operations (DONE, PULL, RMA_REPLY, HELLO_ACK, CHUNK) travel
 * behind whatever messages peers pushed.  So at the limit the endpoint
 * does not simply stop reading its queue (an endpoint waiting for the
 * answer to its own large send before it posts receives would wait
 * forever): it keeps reading it, handles every other cell, and sets
 * message cells aside, a medium one's payload copied out of its sender's
 * bounce slot (a sender whose slots we held could not send us its answers
 * either: they queue behind its messages).  Only past park_max set-aside
 * cells, or twice the limit in bytes, does it stop reading; the senders
 * then find the queue full and keep their sends queued.  Once receives
 * take unexpected messages, the set-aside cells go on, in order, before
 * anything newer. */
#include "config.h"

#include <cstring>

#include "core/log.h"
#include "prov/shm/shm_ep.h"

namespace wu::shm {

namespace {

/* Set-aside cells stop at another limit's worth of bytes. */
bool park_full(const shm_ep *ep)
{
	return ep->parked_cells.size() >= park_max || (ep->ux_limit && ep->park_bytes >= ep->ux_limit);
}

} // namespace

void ux_arrive(shm_ep *ep, remote *r, const wire &c)
{
	/* Behind set-aside cells a message waits its turn: order per peer.
	 * One that names no valid slot goes on to be refused at once. */
	const char *from = c.kind == K_BOUNCE && c.len <= r->p->bounce_size()
				   ? static_cast<const char *>(r->p->bounce_addr(uint32_t(c.arg)))
				   : nullptr;
	bool bad = c.kind == K_BOUNCE && !from;
	if (bad || (!ux_full(ep) && ep->parked_cells.empty())) {
		on_message(ep, r, c, r->gen);
		return;
	}
	if (ep->parked_cells.empty())
		WU_INFO(P(), FI_LOG_EP_DATA,
			"endpoint %s holds %zu unexpected messages, %zu bytes (FI_SHM_UNEXP_MSGS %zu, "
			"FI_SHM_UNEXP_LIMIT %zu): further messages wait until receives take some\n",
			ep->name.c_str(), ep->ux_count, ep->ux_bytes, ep->ux_msgs, ep->ux_limit);
	parked pk;
	pk.c = c;
	pk.peer = r->slot;
	pk.gen = r->gen;
	pk.cost = ux_overhead;
	if (c.kind == K_PIPE)
		pk.cost += pipe_park(ep, r, c);
	if (from) {
		pk.bytes = std::make_unique_for_overwrite<char[]>(c.len ? size_t(c.len) : 1);
		memcpy(pk.bytes.get(), from, size_t(c.len));
		r->p->bounce_release(uint32_t(c.arg));
		pk.cost += size_t(c.len);
	}
	ep->park_bytes += pk.cost;
	busy(ep);
	ep->parked_cells.push_back(std::move(pk));
}

bool ux_resume(shm_ep *ep)
{
	while (!ep->parked_cells.empty() && !ux_full(ep)) {
		parked pk = std::move(ep->parked_cells.front());
		ep->parked_cells.pop_front();
		ep->park_bytes -= pk.cost;
		on_message(ep, ep->remotes[pk.peer].get(), pk.c, pk.gen, pk.bytes.get());
	}
	return !park_full(ep);
}

void free_parked(shm_ep *ep)
{
	/* Their senders learn of our close (BYE); a LARGE one's fails then. */
	for (parked &pk : ep->parked_cells)
		ep->park_bytes -= pk.cost;
	ep->parked_cells.clear();
}

} // namespace wu::shm
