/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: MSG connection management.  Names (fi_setname, getname,
 * getpeer), the listener, fi_connect / fi_accept / fi_shutdown, and the cm
 * engine's view of a MSG connection. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

/* The cm engine's view of a MSG connection: drive the handshake, then
 * notice a peer that goes away while nobody reads the CQ (FI_SHUTDOWN). */
void msg_cm_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp cm", [&] {
		auto *c = static_cast<conn *>(arg);
		tcp_ep *ep = c->ep;
		conn_state st;
		{
			std::lock_guard g(ep->b.mtx);
			progress_locked(ep);
			st = c->state;
		}
		flush(ep);
		if (st == C_CLOSED || c->fd < 0)
			return;
		uint32_t evs = st == C_READY ? (EPOLLRDHUP | EPOLLONESHOT)
					     : (EPOLLIN | EPOLLONESHOT | (st == C_CONNECTING ? uint32_t(EPOLLOUT) : 0u));
		cm_engine::get().mod(&c->cmw, c->fd, evs);
	});
}

/* The MSG connect timer fired: progress notices the expired deadline. */
void msg_timer_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp connect timer", [&] {
		auto *ep = static_cast<tcp_ep *>(arg);
		{
			std::lock_guard g(ep->b.mtx);
			progress_locked(ep);
		}
		flush(ep);
	});
}

} // namespace

/* ---- names ---- */

int put_name(const void *a, size_t n, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	size_t cap = *addrlen;
	*addrlen = n;
	if (!addr || cap < n)
		return -FI_ETOOSMALL;
	memcpy(addr, a, n);
	return 0;
}

/* Binds and listens (RDM: the endpoint's own port; connections arrive here). */
int open_listener(tcp_ep *ep)
{
	const sockaddr *sa = reinterpret_cast<const sockaddr *>(&ep->src);
	unique_fd fd(socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -errno;
	/* As the passive endpoint's: a fixed port whose accepted connections
	 * (which inherit the flag) sit in TIME_WAIT can be bound again at once. */
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, sa, ep->srclen) || listen(fd, 1024)) {
		int err = errno;
		WU_WARN(P(), FI_LOG_EP_CTRL, "cannot listen on %s: %s\n",
			addr_text(addr_key(sa, ep->srclen)).c_str(), strerror(err));
		return err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EADDRNOTAVAIL;
	}
	sockaddr_storage ss{};
	socklen_t l = sizeof ss;
	getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &l);
	if (ss.ss_family == AF_INET) {
		auto *in = reinterpret_cast<sockaddr_in *>(&ss);
		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	epoll_event e{};
	e.events = EPOLLIN;
	e.data.ptr = nullptr;
	if (ep->lfd >= 0) {
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->lfd, nullptr);
		ep->lfd.reset();
	}
	epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &e);
	ep->lfd = std::move(fd);
	ep->self = addr_key(&ss, l);
	return 0;
}

bool take_sockaddr(const void *addr, size_t len, sockaddr_storage &out, socklen_t &outlen)
{
	if (!addr || len < sizeof(sa_family_t))
		return false;
	auto fam = static_cast<const sockaddr *>(addr)->sa_family;
	size_t need = fam == AF_INET ? sizeof(sockaddr_in) : fam == AF_INET6 ? sizeof(sockaddr_in6) : 0;
	if (!need || len < need)
		return false;
	out = {};
	memcpy(&out, addr, need);
	outlen = socklen_t(need);
	return true;
}

namespace {

int ep_setname(fid *f, void *addr, size_t len) noexcept
{
	return guard("fi_setname", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		std::lock_guard g(ep->b.mtx);
		if (ep->b.enabled)
			return -FI_EOPBADSTATE;
		sockaddr_storage ss;
		socklen_t l;
		if (!take_sockaddr(addr, len, ss, l))
			return -FI_EINVAL;
		sockaddr_storage old = ep->src;
		socklen_t oldl = ep->srclen;
		ep->src = ss;
		ep->srclen = l;
		if (ep->b.type == FI_EP_RDM) {
			int r = open_listener(ep);
			if (r) {
				ep->src = old;
				ep->srclen = oldl;
				return r;
			}
		}
		return 0;
	});
}

int ep_getname(fid *f, void *addr, size_t *len) noexcept
{
	return guard("fi_getname", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		std::lock_guard g(ep->b.mtx);
		if (ep->b.type == FI_EP_RDM)
			return put_name(ep->self.data(), ep->self.size(), addr, len);
		if (ep->mc && ep->mc->fd >= 0) {
			sockaddr_storage ss{};
			socklen_t l = sizeof ss;
			if (!getsockname(ep->mc->fd, reinterpret_cast<sockaddr *>(&ss), &l))
				return put_name(&ss, l, addr, len);
		}
		if (!ep->srclen)
			return -FI_EADDRNOTAVAIL;
		return put_name(&ep->src, ep->srclen, addr, len);
	});
}

int ep_getpeer(fid_ep *e, void *addr, size_t *len) noexcept
{
	return guard("fi_getpeer", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep)
			return -FI_EINVAL;
		std::lock_guard g(ep->b.mtx);
		if (ep->b.type != FI_EP_MSG || !ep->mc || ep->mc->peer.empty())
			return -FI_ENOTCONN;
		return put_name(ep->mc->peer.data(), ep->mc->peer.size(), addr, len);
	});
}

int ep_connect(fid_ep *e, const void *addr, const void *param, size_t paramlen) noexcept
{
	return guard("fi_connect", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep || ep->b.type != FI_EP_MSG || !addr)
			return -FI_EINVAL;
		if (paramlen > frame::max_cm_data || (paramlen && !param))
			return -FI_EINVAL;
		sockaddr_storage ss;
		socklen_t l;
		size_t alen = ep->b.info->dest_addrlen ? ep->b.info->dest_addrlen : sizeof(sockaddr_in6);
		if (!take_sockaddr(addr, alen, ss, l) && !take_sockaddr(addr, sizeof(sockaddr_in), ss, l))
			return -FI_EINVAL;
		conn *c;
		{
			std::lock_guard g(ep->b.mtx);
			if (!ep->b.eq)
				return -FI_ENOEQ;
			if (!ep->b.enabled)
				ep->b.enabled = true; /* fi_connect enables, as libfabric's providers do */
			if (ep->mc)
				return -FI_EISCONN;
			/* From the passive endpoint's socket when we took one. */
			unique_fd fd(ep->bound >= 0 && ep->src.ss_family == ss.ss_family
					     ? ep->bound.release()
					     : socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
			if (fd < 0)
				return -FI_ENOMEM;
			set_nonblock_nodelay(fd);
			int r = connect(fd, reinterpret_cast<sockaddr *>(&ss), l);
			if (r && errno != EINPROGRESS) {
				int err = errno;
				fd.reset();
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_connect to %s: %s\n",
					addr_text(addr_key(&ss, l)).c_str(), strerror(err));
				return err == ECONNREFUSED ? -FI_ECONNREFUSED : -FI_EINVAL;
			}
			st_connects.fetch_add(1, std::memory_order_relaxed);
			local_cc(fd, reinterpret_cast<sockaddr *>(&ss));
			c = new_conn(ep, fd, true, r == 0 ? C_CM_WAIT : C_CONNECTING);
			fd.release(); /* c owns it */
			c->msg = true;
			c->peer = addr_key(&ss, l);
			ep->mc = c;
			arm_deadline(ep, c);
			if (c->deadline) {
				ep->tfd.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
				itimerspec its{};
				its.it_value.tv_sec = ep->conn_timeout_ms / 1000;
				its.it_value.tv_nsec = long(ep->conn_timeout_ms % 1000) * 1000000L + 1000000L;
				if (its.it_value.tv_nsec >= 1000000000L) {
					its.it_value.tv_sec++;
					its.it_value.tv_nsec -= 1000000000L;
				}
				if (ep->tfd >= 0)
					timerfd_settime(ep->tfd, 0, &its, nullptr);
				ep->tw = {msg_timer_event, ep};
			}
			/* CONNREQ answers the passive side's CHALLENGE (on_challenge). */
			c->chal_wait = true;
			if (paramlen)
				c->cm_param.assign(static_cast<const char *>(param), paramlen);
			c->cmw = {msg_cm_event, c};
			c->cm_watched = true;
		}
		cm_engine::get().add(&c->cmw, c->fd, EPOLLIN | EPOLLOUT | EPOLLONESHOT);
		if (ep->tfd >= 0)
			cm_engine::get().add(&ep->tw, ep->tfd, EPOLLIN | EPOLLONESHOT);
		start_auto(ep);
		return 0;
	});
}

} // namespace

/* Writes a small frame on a fresh socket (waits at most a second). */
bool write_all(int fd, const void *p, size_t n)
{
	auto *b = static_cast<const char *>(p);
	for (int tries = 0; n && tries < 100;) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			b += w;
			n -= size_t(w);
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			pollfd pf{fd, POLLOUT, 0};
			poll(&pf, 1, 10);
			tries++;
			continue;
		}
		return false;
	}
	return n == 0;
}

namespace {

int ep_accept(fid_ep *e, const void *param, size_t paramlen) noexcept
{
	return guard("fi_accept", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep || ep->b.type != FI_EP_MSG)
			return -FI_EINVAL;
		if (paramlen > frame::max_cm_data || (paramlen && !param))
			return -FI_EINVAL;
		conn *c;
		{
			std::lock_guard g(ep->b.mtx);
			if (!ep->cr) {
				WU_WARN(P(), FI_LOG_EP_CTRL,
					"fi_accept: the endpoint was not opened from a FI_CONNREQ's info\n");
				return -FI_EINVAL;
			}
			if (!ep->b.eq)
				return -FI_ENOEQ;
			if (ep->mc)
				return -FI_EISCONN;
			ep->b.enabled = true;
			tcp_connreq *cr = ep->cr;
			c = new_conn(ep, cr->fd, false, C_READY);
			c->msg = true;
			c->peer = addr_key(&cr->peer, cr->peerlen);
			frame::header req; /* checked when it arrived */
			if (frame::decode(cr->in.data(), cr->in.size(), req) == frame::error::ok)
				c->tx_window = c->tx_credit = req.aux;
			c->an = cr->an;
			cr->fd.release(); /* c owns it */
			free_connreq(cr);
			ep->cr = nullptr;
			ep->mc = c;
			frame::header acc;
			acc.type = frame::ACCEPT;
			acc.aux = ep->eager_window;
			/* FI_CONNECTED is queued before the peer can see ACCEPT: a fast
			 * peer may otherwise shut down and connect again, and the
			 * application read that FI_CONNREQ before this FI_CONNECTED. */
			ep->connected = true;
			post_cm_event(ep, FI_CONNECTED, nullptr, 0);
			txitem *t = control_item(acc, nullptr, frame::accept_auth + paramlen);
			auth::prove(ep->key, auth::role::acceptor, c->an, acc, param, paramlen,
				    reinterpret_cast<unsigned char *>(t->owned.get()));
			if (paramlen)
				memcpy(t->owned.get() + frame::accept_auth, param, paramlen);
			enqueue(ep, c, t);
			if (c->state == C_CLOSED)
				return 0; /* conn_fail queued FI_SHUTDOWN after FI_CONNECTED */
			c->cmw = {msg_cm_event, c};
			c->cm_watched = true;
		}
		cm_engine::get().add(&c->cmw, c->fd, EPOLLRDHUP | EPOLLONESHOT);
		start_auto(ep);
		return 0;
	});
}

int ep_shutdown(fid_ep *e, uint64_t) noexcept
{
	return guard("fi_shutdown", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep || ep->b.type != FI_EP_MSG)
			return -FI_EINVAL;
		std::lock_guard g(ep->b.mtx);
		if (!ep->mc || ep->mc->fd < 0)
			return -FI_ENOTCONN;
		/* As libfabric's tcp: FI_SHUTDOWN on this side too, now (the peer
		 * gets its own when it sees the connection end). */
		bool report = ep->connected && !ep->shut && ep->mc->state != C_CLOSED;
		ep->shut = true;
		shutdown(ep->mc->fd, SHUT_RDWR);
		if (report)
			post_cm_event(ep, FI_SHUTDOWN, nullptr, 0);
		return 0;
	});
}

} // namespace

fi_ops_cm ep_cm_ops = {
	sizeof(fi_ops_cm), ep_setname, ep_getname, ep_getpeer, ep_connect, WU_NOSYS(fi_ops_cm, listen),
	ep_accept, WU_NOSYS(fi_ops_cm, reject), ep_shutdown, WU_NOSYS(fi_ops_cm, join),
};

} // namespace wu::tcp::detail
