/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: progress.  The manual progress pass (direct polling or
 * epoll), the CQ/counter progress and block hooks, fi_av_remove, and
 * FI_PROGRESS_AUTO on the cm engine. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

/* Few connections, all established, nobody else waiting on epfd. */
bool poll_direct(tcp_ep *ep)
{
	if (ep->autop.on() || ep->conns.empty() || ep->conns.size() > direct_poll_max)
		return false;
	for (conn *c : ep->conns)
		if (c->state != C_READY || c->fd < 0)
			return false;
	return true;
}

} // namespace

/* Directly polled sockets leave epfd: a registered socket costs the
 * sender an epoll callback on every segment it delivers to us. */
void set_direct(tcp_ep *ep, bool on)
{
	ep->direct = on;
	for (conn *c : ep->conns) {
		if (c->fd < 0 || c->state == C_CLOSED || c->in_epoll != on)
			continue;
		if (on) {
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
		} else {
			epoll_event e{};
			e.events = conn_events(c);
			e.data.ptr = c;
			epoll_ctl(ep->epfd, EPOLL_CTL_ADD, c->fd, &e);
		}
		c->in_epoll = !on;
	}
}

void progress_locked(tcp_ep *ep)
{
	bool direct = poll_direct(ep);
	if (direct != ep->direct)
		set_direct(ep, direct);
	if (direct) {
		ep->backlog = false;	   /* every connection is read below anyway */
		ep->next_deadline = 0; /* and none is being set up */
		uint64_t reads = ep->reads;
		for (size_t i = 0; i < ep->conns.size(); i++) {
			conn *c = ep->conns[i];
			if (c->state != C_READY)
				continue;
			if (!c->txq.empty() && !flush_tx(ep, c))
				continue; /* stands in for EPOLLOUT */
			read_conn(ep, c);
		}
		/* A pass that found data returns at once (the latency path); idle
		 * passes, and every 64th busy one, look at the clock for epoll. */
		int64_t now = 0;
		if ((ep->reads != reads && ++ep->busy_passes < 64) ||
		    (now = now_ns()) - ep->last_epoll < epoll_interval_ns) {
			if (!ep->dead.empty())
				reap(ep);
			return;
		}
		ep->busy_passes = 0;
		ep->last_epoll = now;
	}
	epoll_event ev[32];
	int n = epoll_wait(ep->epfd, ev, 32, 0);
	for (int i = 0; i < n; i++) {
		if (!ev[i].data.ptr) {
			accept_all(ep);
			continue;
		}
		auto *c = static_cast<conn *>(ev[i].data.ptr);
		if (c->state == C_CLOSED || c->state == C_LOST)
			continue;
		if (c->state == C_CONNECTING) {
			if (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
				connect_done(ep, c);
			continue;
		}
		if (ev[i].events & EPOLLOUT)
			if (!flush_tx(ep, c))
				continue;
		if (c->rx_paused && (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
			/* The peer sent all it will: what is left is bounded by
			 * the kernel's buffers, so take it (and see the end). */
			c->rx_ended = true;
			rx_resume(ep, c);
		}
		if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			read_conn(ep, c);
	}
	if (ep->next_deadline)
		check_deadlines(ep);
	if (ep->backlog) {
		ep->backlog = false;
		for (size_t i = 0; i < ep->conns.size(); i++) {
			conn *c = ep->conns[i];
			if (c->state != C_CLOSED && c->state != C_LOST && c->state != C_CONNECTING &&
			    (c->rend > c->rpos || (c->in_body && !c->body_left && !c->discard_left)))
				read_conn(ep, c);
		}
	}
	reap(ep);
}

void progress_cb(void *arg) noexcept
{
	guard_void("tcp progress", [&] {
		auto *ep = static_cast<tcp_ep *>(arg);
		bool any;
		{
			std::lock_guard g(ep->b.mtx);
			progress_locked(ep);
			any = !ep->b.comps.empty();
		}
		if (any)
			flush(ep);
	});
}

/* fi_av_remove removed fi_addr: close the connection(s) to that peer;
 * operations queued or in flight on them complete with FI_ECONNABORTED.
 * A later insert of the address and a send connect again. */
void av_removed(void *arg, fi_addr_t fa) noexcept
{
	guard_void("tcp av remove", [&] {
		auto *ep = static_cast<tcp_ep *>(arg);
		{
			std::lock_guard g(ep->b.mtx);
			ep->last_conn = nullptr;
			std::string key;
			auto it = ep->fa_peer.find(fa);
			if (it != ep->fa_peer.end()) {
				key = std::move(it->second.key);
				ep->fa_peer.erase(it);
			}
			std::vector<conn *> drop;
			for (conn *c : ep->conns)
				if (c->state != C_CLOSED && !c->msg &&
				    (c->src == fa || (!key.empty() && c->peer == key)))
					drop.push_back(c);
			for (conn *c : drop) {
				WU_INFO(P(), FI_LOG_EP_CTRL, "fi_av_remove: closing the connection to %s\n",
					addr_text(c->peer).c_str());
				conn_fail(ep, c, FI_ECONNABORTED, nullptr);
			}
			av_forget_unexp(ep, fa);
			reap(ep);
		}
		flush(ep);
	});
}

/* FI_PROGRESS_AUTO: the cm thread saw the endpoint's epoll fd ready.  Frames
 * left staged when read_conn ran out of budget make no epoll event, so go
 * on until none are. */
void auto_progress(tcp_ep *ep)
{
	bool more = true;
	while (more) {
		{
			std::lock_guard g(ep->b.mtx);
			progress_locked(ep);
			more = ep->backlog;
		}
		flush(ep);
	}
}

namespace {

/* The engine saw epfd ready, or the deadline timer fired. */
void auto_event(void *arg, bool timer) noexcept
{
	guard_void(timer ? "tcp auto progress timer" : "tcp auto progress", [&] {
		auto *ep = static_cast<tcp_ep *>(arg);
		auto_progress(ep);
		if (!timer)
			return;
		std::lock_guard g(ep->b.mtx);
		arm_auto_timer(ep);
	});
}

} // namespace

/* Starts auto progress once the endpoint is enabled (fi_enable, or
 * fi_connect / fi_accept for MSG) if its domain asked for it.  Called
 * without ep->b.mtx: the engine calls into the endpoint under its own lock. */
bool begin_auto_locked(tcp_ep *ep)
{
	if (ep->autop.on() ||
	    (ep->b.dom->info->domain_attr->data_progress != FI_PROGRESS_AUTO && !ep->want_auto))
		return false;
	ep->autop.begin(auto_event, ep);
	if (ep->direct)
		set_direct(ep, false); /* the engine only sees sockets in epfd */
	return true;
}

/* Without ep->b.mtx: the engine calls into the endpoint under its own lock. */
void finish_auto(tcp_ep *ep)
{
	ep->autop.finish(ep->epfd);
}

void start_auto(tcp_ep *ep)
{
	{
		std::lock_guard g(ep->b.mtx);
		if (!begin_auto_locked(ep))
			return;
	}
	finish_auto(ep);
}

} // namespace wu::tcp::detail
