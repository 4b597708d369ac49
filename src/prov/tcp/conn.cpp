/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: connections.  Socket helpers, opening, closing and failing
 * a connection, connect timeouts and retries, the job-key handshake (auth.h)
 * and the simultaneous-connect tie-break. */
#include "config.h"
#include "prov/tcp/tcp_impl.h"

#include <sys/resource.h>

namespace wu::tcp::detail {

/* Addresses as map keys: sockaddr bytes with padding zeroed. */
std::string addr_key(const void *a, size_t len)
{
	if (len >= sizeof(sockaddr_in) && static_cast<const sockaddr *>(a)->sa_family == AF_INET) {
		sockaddr_in s{};
		memcpy(&s, a, sizeof s);
		memset(s.sin_zero, 0, sizeof s.sin_zero);
		return std::string(reinterpret_cast<const char *>(&s), sizeof s);
	}
	if (len >= sizeof(sockaddr_in6) && static_cast<const sockaddr *>(a)->sa_family == AF_INET6)
		return std::string(static_cast<const char *>(a), sizeof(sockaddr_in6));
	return {};
}

/* A key (addr_key) as text for log lines. */
std::string addr_text(const std::string &k)
{
	return addr::sockaddr_text(k.data(), k.size());
}

namespace {

/* FI_TCP_SOCKBUF: SO_SNDBUF / SO_RCVBUF of data connections (0: the
 * kernel's autotuning).  Read once. */
int sockbuf_size()
{
	static const int v = [] {
		size_t n = param::get_size(prov_desc(), "sockbuf").value;
		return int(std::min<size_t>(n, size_t(1) << 30));
	}();
	return v;
}

} // namespace

void set_nonblock_nodelay(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (int sz = sockbuf_size()) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	}
}

namespace {

/* Whether a connection stays on this host: a loopback peer, or the peer's
 * address is the socket's own. */
bool same_host(int fd, const sockaddr *peer)
{
	sockaddr_storage own{}, other{};
	socklen_t l = sizeof own;
	if (!peer) {
		socklen_t pl = sizeof other;
		if (getpeername(fd, reinterpret_cast<sockaddr *>(&other), &pl))
			return false;
		peer = reinterpret_cast<const sockaddr *>(&other);
	}
	if (peer->sa_family == AF_INET) {
		auto *in = reinterpret_cast<const sockaddr_in *>(peer);
		if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
			return true;
		if (getsockname(fd, reinterpret_cast<sockaddr *>(&own), &l) || own.ss_family != AF_INET)
			return false;
		return reinterpret_cast<sockaddr_in *>(&own)->sin_addr.s_addr == in->sin_addr.s_addr;
	}
	if (peer->sa_family == AF_INET6) {
		auto *in6 = reinterpret_cast<const sockaddr_in6 *>(peer);
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127)
			return true;
		if (getsockname(fd, reinterpret_cast<sockaddr *>(&own), &l) || own.ss_family != AF_INET6)
			return false;
		return !memcmp(&reinterpret_cast<sockaddr_in6 *>(&own)->sin6_addr, &in6->sin6_addr,
			       sizeof in6->sin6_addr);
	}
	return false;
}

} // namespace

/* FI_TCP_LOCAL_CC: congestion control of connections that stay on this
 * host (peer: the connect address, or nullptr for an accepted socket).
 * There is no network to share there, and a pacing algorithm (BBR, where
 * it is the system default) holds back every burst that follows a pause:
 * a 1 MiB ping-pong runs at half speed.  Reno is open to unprivileged
 * users. */
void local_cc(int fd, const sockaddr *peer)
{
	static const std::string cc = param::get_string(prov_desc(), "local_cc").value;
	if (cc.empty() || !same_host(fd, peer))
		return;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), socklen_t(cc.size()))) {
		static std::atomic<bool> said{false};
		if (!said.exchange(true))
			WU_WARN(P(), FI_LOG_EP_CTRL, "FI_TCP_LOCAL_CC=%s: setsockopt(TCP_CONGESTION): %s; keeping the system's\n",
				cc.c_str(), strerror(errno));
	}
}

conn *new_conn(tcp_ep *ep, int fd, bool outgoing, conn_state st)
{
	if (ep->direct)
		set_direct(ep, false); /* progress decides again with this one counted */
	owned<conn> made = make_owned<conn>();
	conn *c = made.get();
	c->fd.reset(fd);
	c->ep = ep;
	c->outgoing = outgoing;
	c->state = st;
	epoll_event e{};
	e.events = EPOLLIN | (st == C_CONNECTING ? uint32_t(EPOLLOUT) : 0u);
	c->want_out = st == C_CONNECTING;
	e.data.ptr = c;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &e)) {
		int err = errno;
		c->fd.release(); /* a failed call leaves fd its caller's */
		throw std::system_error(err, std::generic_category(), "epoll_ctl");
	}
	c->in_epoll = true;
	c->serial = ep->next_serial++;
	ep->conns.push_back(c);
	conns_changed(ep);
	made.release(); /* ep->conns owns it until reap */
	return c;
}

void post_cm_error(tcp_ep *ep, int err, const std::string &data)
{
	if (!ep->b.eq)
		return;
	fi_eq_err_entry e{};
	e.fid = &ep->ep.fid;
	e.context = ep->ep.fid.context;
	e.err = err;
	e.prov_errno = err;
	e.err_data = data.empty() ? nullptr : const_cast<char *>(data.data());
	e.err_data_size = data.size();
	eq_post_error(ep->b.eq, &e);
}

void post_cm_event(tcp_ep *ep, uint32_t event, const void *data, size_t len)
{
	if (!ep->b.eq)
		return;
	std::vector<char> buf(sizeof(fi_eq_cm_entry) + len);
	fi_eq_cm_entry ent{};
	ent.fid = &ep->ep.fid;
	ent.info = nullptr;
	memcpy(buf.data(), &ent, sizeof ent);
	if (len)
		memcpy(buf.data() + sizeof ent, data, len);
	eq_post(ep->b.eq, event, buf.data(), buf.size());
}

/* c no longer counts as an incoming connection waiting to authenticate. */
void authenticated(tcp_ep *ep, conn *c)
{
	if (!c->unauth)
		return;
	ep->unauth.erase(std::find(ep->unauth.begin(), ep->unauth.end(), c));
	c->unauth = false;
}

/* Closes a connection: error completions for every operation that
 * involved it, FI_SHUTDOWN for a MSG endpoint.  The object is freed at
 * the end of the progress pass. */
void conn_fail(tcp_ep *ep, conn *c, int err, const char *why, bool quiet_cm)
{
	if (c->state == C_CLOSED)
		return;
	conn_state was = c->state;
	/* One that never said who it is carries nothing of the application's
	 * (a job's ranks exiting reset those still in their handshake). */
	if (why && c->peer.empty())
		WU_INFO(P(), FI_LOG_EP_DATA, "connection to (unidentified peer) closed: %s\n", why);
	else if (why)
		WU_WARN(P(), FI_LOG_EP_DATA, "connection to %s closed: %s\n", addr_text(c->peer).c_str(), why);
	c->state = C_CLOSED;
	authenticated(ep, c);
	if (c->fd >= 0) {
		if (c->in_epoll)
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
		c->in_epoll = false;
		if (!c->cm_watched) {
			c->fd.reset();
		} else {
			shutdown(c->fd, SHUT_RDWR); /* fd closed when the watch goes */
		}
	}
	if (c->in_map) {
		auto it = ep->peers.find(c->peer);
		if (it != ep->peers.end() && it->second == c)
			ep->peers.erase(it);
		c->in_map = false;
	}
	int e = err ? err : FI_ECONNRESET;
	for (txitem *t : c->txq) {
		if (t->o)
			complete_tx(ep, t->o, e);
		dispose(t);
	}
	c->txq.clear();
	for (auto &p : c->pending)
		complete_tx(ep, p.second, e);
	c->pending.clear();
	forget_claims(ep, c, e);
	if (c->in_body) {
		if (c->bk == B_RECV && c->rop) {
			op *o = c->rop;
			bool release = rx_done(ep, o);
			complete_rx(ep, o,
				    {.buf = c->seg, .len = c->body_into - c->body_left, .src = src_of(ep, c),
				     .kind = prov::msg_kind(c->h.flags & frame::F_TAGGED), .tag = c->h.tag, .err = e,
				     .release = release});
		} else if (c->bk == B_UNEXP && c->ux && c->ux->claimed) {
			unexp *u = c->ux;
			op *o = u->claimed;
			bool release = rx_done(ep, o);
			complete_rx(ep, o,
				    {.src = u->src, .kind = prov::msg_kind(u->tagged), .tag = u->tag, .err = e,
				     .release = release});
			dispose(u);
			c->ux = nullptr;
		} else if (c->bk == B_UNEXP && c->ux) {
			ux_drop(ep, c->ux); /* queued with half a body: it goes */
		} else if (c->bk == B_READRESP && c->rop) {
			complete_tx(ep, c->rop, e);
		} else if (c->bk == B_RNDV && c->rop) {
			op *o = c->rop;
			bool release = rx_done(ep, o);
			complete_rx(ep, o,
				    {.buf = c->seg, .len = c->body_into - c->body_left, .src = c->rv.src,
				     .kind = prov::msg_kind(c->rv.tagged), .tag = c->rv.tag, .err = e, .release = release});
		}
		c->in_body = false;
		c->rop = nullptr;
		c->ux = nullptr;
	}
	/* Receives cleared for a rendezvous from here will get no data. */
	for (auto &p : c->rv_wait) {
		op *o = p.second.o;
		bool release = rx_done(ep, o);
		complete_rx(ep, o,
			    {.src = p.second.src, .kind = prov::msg_kind(p.second.tagged), .tag = p.second.tag, .err = e,
			     .release = release});
	}
	c->rv_wait.clear();
	/* Rendezvous requests from here can no longer be served: drop them.
	 * Unexpected messages whose bodies came from here stay (they are whole). */
	drop_conn_unexp(ep, c);
	if (c->msg && !quiet_cm) {
		if (was == C_CM_WAIT || was == C_CONNECTING) {
			post_cm_error(ep, err == FI_ETIMEDOUT ? FI_ETIMEDOUT : FI_ECONNREFUSED, {});
		} else if (ep->connected && !ep->shut) {
			ep->shut = true;
			post_cm_event(ep, FI_SHUTDOWN, nullptr, 0);
		}
	}
	ep->dead.push_back(c);
}

void reap(tcp_ep *ep)
{
	if (!ep->dead.empty())
		ep->last_conn = nullptr;
	for (conn *c : ep->dead) {
		ep->conns.erase(std::remove(ep->conns.begin(), ep->conns.end(), c), ep->conns.end());
		if (ep->mc == c)
			continue; /* the MSG connection is freed by ep close */
		if (c->fd >= 0 && !c->cm_watched)
			c->fd.reset();
		if (!c->cm_watched)
			dispose(c);
	}
	ep->dead.clear();
	conns_changed(ep);
}

/* FI_PROGRESS_AUTO: nobody may call progress, so a timer wakes the cm
 * thread at next_deadline. */
void arm_auto_timer(tcp_ep *ep)
{
	ep->autop.arm_in(ep->next_deadline ? std::max<int64_t>(ep->next_deadline - now_ms(), 0) + 1 : 0);
}

/* Starts the timeout (ms from now) of a connection being set up. */
void arm_deadline(tcp_ep *ep, conn *c, int ms)
{
	if (ms <= 0)
		return;
	c->deadline = now_ms() + ms;
	if (!ep->next_deadline || c->deadline < ep->next_deadline) {
		ep->next_deadline = c->deadline;
		arm_auto_timer(ep);
	}
}

/* An RDM connection's set-up moved a step on (TCP connected, CHALLENGE
 * in): the peer lives, so FI_TCP_CONN_TIMEOUT starts again for the next
 * step.  A dead or stopped peer is still caught within one time-out; a
 * live one on a crowded node (256 ranks on 2 cores took over 30 s for
 * the whole set-up) is not failed for being slow. */
void note_progress(tcp_ep *ep, conn *c)
{
	if (!c->msg && c->outgoing && c->deadline)
		arm_deadline(ep, c);
}

/* The TCP connect of an outgoing connection completed: its listener
 * exists (a refusal from now on means it is gone) and a step is done. */
void tcp_connected(tcp_ep *ep, conn *c)
{
	c->reached = true;
	note_progress(ep, c);
}

namespace {

bool setting_up(const conn *c)
{
	return c->state == C_CONNECTING || c->state == C_HELLO_WAIT || c->state == C_CM_WAIT ||
	       c->state == C_LOST || c->state == C_ACCEPTING || c->state == C_BACKOFF;
}

} // namespace

/* ---- refused connects (RDM): at job start a peer may not listen yet ---- */

/* A refused connect is dialed again, backing off, until its deadline. */
bool may_retry(const conn *c)
{
	return !c->msg && c->outgoing && c->deadline && now_ms() < c->deadline;
}

void backoff(tcp_ep *ep, conn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
		c->fd.reset();
	}
	if (!c->retry_ms)
		WU_INFO(P(), FI_LOG_EP_CTRL, "connect to %s refused; retrying for up to FI_TCP_CONN_TIMEOUT (%d ms)\n",
			addr_text(c->peer).c_str(), ep->conn_timeout_ms);
	c->state = C_BACKOFF;
	c->want_out = false;
	c->retry_ms = c->retry_ms ? std::min(c->retry_ms * 2, 500) : 5;
	c->retry_at = now_ms() + c->retry_ms;
	if (!ep->next_deadline || c->retry_at < ep->next_deadline) {
		ep->next_deadline = c->retry_at;
		arm_auto_timer(ep);
	}
}

namespace {

conn *new_backoff_conn(tcp_ep *ep)
{
	owned<conn> made = make_owned<conn>();
	conn *c = made.get();
	c->ep = ep;
	c->outgoing = true;
	c->state = C_BACKOFF;
	c->serial = ep->next_serial++;
	ep->conns.push_back(c);
	made.release(); /* ep->conns owns it until reap */
	conns_changed(ep);
	return c;
}

void retry_connect(tcp_ep *ep, conn *c)
{
	const sockaddr *sa = reinterpret_cast<const sockaddr *>(c->peer.data());
	unique_fd fd(socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return conn_fail(ep, c, FI_ENOMEM, "socket() failed");
	set_nonblock_nodelay(fd);
	local_cc(fd, sa);
	int r = connect(fd, sa, socklen_t(c->peer.size()));
	if (r && errno != EINPROGRESS) {
		int err = errno;
		fd.reset();
		if (err == ECONNREFUSED && !c->reached)
			return backoff(ep, c);
		conn_fail(ep, c, FI_ECONNREFUSED,
			  c->reached ? refused_after_answer : strerror(err));
		return peer_gone(ep, c);
	}
	c->fd = std::move(fd);
	if (r == 0)
		tcp_connected(ep, c);
	c->state = r == 0 ? C_HELLO_WAIT : C_CONNECTING;
	c->want_out = c->state == C_CONNECTING;
	epoll_event e{};
	e.events = conn_events(c);
	e.data.ptr = c;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, c->fd, &e))
		return conn_fail(ep, c, FI_ENOMEM, strerror(errno));
	if (c->state == C_HELLO_WAIT)
		flush_tx(ep, c);
}

std::string peer_of_fd(int fd)
{
	sockaddr_storage ss{};
	socklen_t l = sizeof ss;
	if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &l))
		return "(unknown)";
	return addr_text(addr_key(&ss, l));
}

/* An incoming connection that never completed its handshake (a port
 * scanner, a stray client, a peer that died mid-HELLO) is dropped. */
void drop_silent(tcp_ep *ep, conn *c)
{
	st_silent.fetch_add(1, std::memory_order_relaxed);
	WU_WARN(P(), FI_LOG_EP_CTRL,
		"dropped an incoming connection from %s to %s: no complete handshake within FI_TCP_AUTH_TIMEOUT "
		"(%d ms)\n",
		peer_of_fd(c->fd).c_str(), addr_text(ep->self).c_str(), ep->alim.timeout_ms);
	conn_fail(ep, c, FI_ETIMEDOUT, nullptr);
}

} // namespace

/* Fails connections whose setup outlived FI_TCP_CONN_TIMEOUT. */
void check_deadlines(tcp_ep *ep)
{
	int64_t now = now_ms();
	if (now < ep->next_deadline)
		return;
	ep->next_deadline = 0;
	for (size_t i = 0; i < ep->conns.size(); i++) {
		conn *c = ep->conns[i];
		if (!c->deadline || !setting_up(c))
			continue;
		if (c->deadline <= now && c->state == C_ACCEPTING) {
			drop_silent(ep, c);
			continue;
		}
		if (c->deadline <= now && c->state == C_BACKOFF) {
			std::string why = "connection refused for FI_TCP_CONN_TIMEOUT (" +
					  std::to_string(ep->conn_timeout_ms) + " ms); is the peer listening?";
			conn_fail(ep, c, FI_ECONNREFUSED, why.c_str());
			peer_gone(ep, c);
			continue;
		}
		if (c->deadline <= now) {
			st_timeouts.fetch_add(1, std::memory_order_relaxed);
			std::string why = "no answer within FI_TCP_CONN_TIMEOUT (" + std::to_string(ep->conn_timeout_ms) + " ms)";
			conn_fail(ep, c, FI_ETIMEDOUT, c->msg ? nullptr : why.c_str());
			if (c->outgoing)
				peer_gone(ep, c);
			if (c->msg)
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_connect to %s: %s\n", addr_text(c->peer).c_str(),
					why.c_str());
			continue;
		}
		if (c->state == C_BACKOFF && c->retry_at <= now)
			retry_connect(ep, c);
		int64_t next = c->state == C_BACKOFF ? std::min(c->deadline, c->retry_at) : c->deadline;
		if (!ep->next_deadline || next < ep->next_deadline)
			ep->next_deadline = next;
	}
}

/* ---- incoming connections before they authenticate (auth_limits) ---- */

auth_limits auth_limits::from_params()
{
	auth_limits l;
	int t = param::get_int(P(), "auth_timeout").value;
	l.timeout_ms = t > 0 ? t : std::max(0, param::get_int(P(), "conn_timeout").value);
	l.pending = param::get_size(P(), "auth_pending").value;
	l.per_addr = param::get_size(P(), "auth_pending_per_addr").value;
	return l.resolve(descriptor_limit());
}

/* 0 picks limits a job of many ranks per node needs while they all dial
 * at once (16 x 16 ranks: 240 at one endpoint, 16 from each node), and
 * that still leave most descriptors to the job. */
auth_limits auth_limits::resolve(size_t fd_limit) const
{
	auth_limits l = *this;
	if (!l.pending)
		l.pending = std::clamp<size_t>(fd_limit / 4, 64, 4096);
	if (!l.per_addr)
		l.per_addr = std::max<size_t>(16, l.pending / 4);
	l.per_addr = std::min(l.per_addr, l.pending);
	return l;
}

size_t descriptor_limit()
{
	rlimit rl{};
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 1024;
	return size_t(rl.rlim_cur);
}

std::string source_ip(const sockaddr_storage &ss, socklen_t len)
{
	std::string k = addr_key(&ss, len);
	if (ss.ss_family == AF_INET && k.size() >= sizeof(sockaddr_in))
		memset(&k[offsetof(sockaddr_in, sin_port)], 0, sizeof(in_port_t));
	else if (ss.ss_family == AF_INET6 && k.size() >= sizeof(sockaddr_in6))
		memset(&k[offsetof(sockaddr_in6, sin6_port)], 0, sizeof(in_port_t));
	return k;
}

std::vector<size_t> over_auth_limits(const std::vector<const std::string *> &from, const std::string &ip,
				     const auth_limits &lim)
{
	std::vector<size_t> out;
	size_t same = 0;
	for (const std::string *f : from)
		same += *f == ip;
	/* The oldest from ip first, then the oldest of all. */
	for (size_t i = 0; i < from.size() && same >= lim.per_addr; i++)
		if (*from[i] == ip) {
			out.push_back(i);
			same--;
		}
	size_t left = from.size() - out.size();
	for (size_t i = 0; i < from.size() && left >= lim.pending; i++)
		if (std::find(out.begin(), out.end(), i) == out.end()) {
			out.push_back(i);
			left--;
		}
	return out;
}

void note_unauth_drop(const std::string &from, const std::string &to, const auth_limits &lim)
{
	st_silent.fetch_add(1, std::memory_order_relaxed);
	WU_WARN_SPARSE(P(), FI_LOG_EP_CTRL,
		       "dropped an incoming connection from %s to %s before it proved the job key: too many "
		       "connections wait to (FI_TCP_AUTH_PENDING %zu, FI_TCP_AUTH_PENDING_PER_ADDR %zu); the "
		       "oldest goes\n",
		       from.c_str(), to.c_str(), lim.pending, lim.per_addr);
}

void admit_incoming(tcp_ep *ep, conn *c, const sockaddr_storage &from, socklen_t len)
{
	c->from_ip = source_ip(from, len);
	std::vector<const std::string *> ips;
	for (conn *p : ep->unauth)
		ips.push_back(&p->from_ip);
	std::vector<size_t> drop = over_auth_limits(ips, c->from_ip, ep->alim);
	std::vector<conn *> victims;
	for (size_t i : drop)
		victims.push_back(ep->unauth[i]);
	for (conn *v : victims) {
		note_unauth_drop(peer_of_fd(v->fd), addr_text(ep->self), ep->alim);
		conn_fail(ep, v, FI_ECONNABORTED, nullptr);
	}
	c->unauth = true;
	ep->unauth.push_back(c);
	arm_deadline(ep, c, ep->alim.timeout_ms);
}

bool redial_closed(tcp_ep *ep, conn *c)
{
	if (c->state != C_HELLO_WAIT || !may_retry(c) || !c->in_map)
		return false;
	WU_INFO(P(), FI_LOG_EP_CTRL, "connection to %s closed by the peer during the handshake; dialing again\n",
		addr_text(c->peer).c_str());
	/* What the handshake queued goes; the application's sends stay. */
	for (auto it = c->txq.begin(); it != c->txq.end();) {
		if ((*it)->control && !(*it)->o) {
			dispose(*it);
			it = c->txq.erase(it);
		} else {
			++it;
		}
	}
	c->rpos = c->rend = 0;
	c->in_body = false;
	c->bk = B_NONE;
	c->an = {};
	c->chal_wait = true;
	backoff(ep, c);
	return true;
}

namespace {

/* Outgoing RDM connection to a listening address. */
conn *connect_to(tcp_ep *ep, const std::string &key)
{
	const sockaddr *sa = reinterpret_cast<const sockaddr *>(key.data());
	unique_fd fd(socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (fd < 0)
		throw fi_error(FI_ENOMEM);
	set_nonblock_nodelay(fd);
	int r = connect(fd, sa, socklen_t(key.size()));
	if (r && errno != EINPROGRESS) {
		int err = errno;
		fd.reset();
		if (err != ECONNREFUSED || ep->conn_timeout_ms <= 0) {
			WU_WARN(P(), FI_LOG_EP_DATA, "connect to %s: %s\n", addr_text(key).c_str(), strerror(err));
			return nullptr;
		}
	}
	st_connects.fetch_add(1, std::memory_order_relaxed);
	if (fd >= 0)
		local_cc(fd, sa);
	const bool reached = fd >= 0 && r == 0;
	conn *c = fd < 0 ? new_backoff_conn(ep) : new_conn(ep, fd, true, r == 0 ? C_HELLO_WAIT : C_CONNECTING);
	fd.release(); /* c owns it */
	c->reached = reached;
	c->peer = key;
	c->in_map = true;
	arm_deadline(ep, c);
	ep->peers[key] = c;
	c->chal_wait = true; /* HELLO answers the peer's CHALLENGE (on_challenge) */
	if (c->state == C_BACKOFF)
		backoff(ep, c);
	return c;
}

} // namespace

/* The connection to use for fi_addr (RDM) or the MSG connection. */
conn *conn_for(tcp_ep *ep, fi_addr_t addr, int *err)
{
	if (ep->b.type == FI_EP_MSG) {
		if (!ep->mc || !ep->connected || ep->mc->state == C_CLOSED) {
			*err = ep->shut ? FI_ECONNRESET : FI_ENOTCONN;
			return nullptr;
		}
		return ep->mc;
	}
	if (!ep->b.av) {
		*err = FI_ENOAV;
		return nullptr;
	}
	if (ep->last_conn && ep->last_fa == addr && ep->last_conn->in_map && ep->last_conn->state == C_READY &&
	    !stale(ep, addr, ep->last_stamp))
		return ep->last_conn;
	auto known = ep->fa_peer.find(addr);
	if (known != ep->fa_peer.end() && stale(ep, addr, known->second.stamp)) {
		WU_INFO(P(), FI_LOG_EP_DATA,
			"fi_addr %llu was removed or replaced by another process sharing the AV; "
			"looking it up again\n",
			(unsigned long long)addr);
		ep->fa_peer.erase(known);
		known = ep->fa_peer.end();
	}
	if (known == ep->fa_peer.end()) {
		/* Stamp first: a change while reading is caught on the next use. */
		uint64_t stamp = ep->b.av_shared ? av::entry_stamp(ep->b.av, addr) : 0;
		unsigned char buf[av::max_blob];
		size_t n = ep->b.peer_addr(addr, buf, sizeof buf);
		if (!n || n > sizeof buf) {
			WU_WARN(P(), FI_LOG_EP_DATA, "fi_addr %llu names no address in the bound AV\n",
				(unsigned long long)addr);
			*err = FI_EINVAL;
			return nullptr;
		}
		std::string k = addr_key(buf, n);
		if (k.empty()) {
			*err = FI_EINVAL;
			return nullptr;
		}
		known = ep->fa_peer.emplace(addr, tcp_ep::fa_entry{std::move(k), stamp}).first;
	}
	const std::string &key = known->second.key;
	auto it = ep->peers.find(key);
	if (it != ep->peers.end()) {
		ep->last_fa = addr;
		ep->last_conn = it->second;
		ep->last_stamp = known->second.stamp;
		return it->second;
	}
	conn *c = connect_to(ep, key);
	if (!c)
		*err = FI_ECONNREFUSED;
	return c;
}

namespace {

/* Moves queued (non-handshake) sends from one connection to another. */
void move_queue(conn *from, conn *to)
{
	for (txitem *t : from->txq) {
		if (t->control && !t->o) {
			dispose(t);
			continue;
		}
		/* The window it was sent under was the old connection's. */
		if (t->iov[0].iov_base == t->hdr && t->hdr[3] == frame::MSG) {
			frame::header h;
			if (frame::decode(t->hdr, frame::hdr_size, h) == frame::error::ok && (h.flags & frame::F_CREDIT)) {
				h.flags &= uint16_t(~frame::F_CREDIT);
				frame::encode(h, t->hdr);
			}
		}
		to->txq.push_back(t);
	}
	from->txq.clear();
}

} // namespace

/* ---- handshake (auth.h) ---- */

/* An accepted connection speaks first: CHALLENGE with a fresh nonce. */
void send_challenge(tcp_ep *ep, conn *c)
{
	if (!auth::bind_ends(c->an, c->fd, auth::role::acceptor))
		return conn_fail(ep, c, FI_EIO, nullptr);
	if (!auth::random_bytes(c->an.acc, sizeof c->an.acc))
		return conn_fail(ep, c, FI_EOTHER, "no random nonce for the handshake");
	frame::header h;
	h.type = frame::CHALLENGE;
	enqueue(ep, c, control_item(h, c->an.acc, sizeof c->an.acc));
}

/* The peer's CHALLENGE on an outgoing connection: answer with HELLO (RDM)
 * or CONNREQ (MSG), our nonce and our proof of the key over both nonces
 * and both ends of this connection. */
void on_challenge(tcp_ep *ep, conn *c)
{
	if (!auth::bind_ends(c->an, c->fd, auth::role::connector))
		return conn_fail(ep, c, FI_EIO, nullptr);
	note_progress(ep, c);
	memcpy(c->an.acc, c->small.data(), sizeof c->an.acc);
	if (!auth::random_bytes(c->an.con, sizeof c->an.con))
		return conn_fail(ep, c, FI_EOTHER, "no random nonce for the handshake");
	frame::header h;
	h.type = c->msg ? frame::CONNREQ : frame::HELLO;
	h.aux = ep->eager_window;
	const std::string &what = c->msg ? c->cm_param : ep->self;
	std::string body(reinterpret_cast<const char *>(c->an.con), sizeof c->an.con);
	unsigned char mac[auth::mac_len];
	auth::prove(ep->key, auth::role::connector, c->an, h, what.data(), what.size(), mac);
	body.append(reinterpret_cast<const char *>(mac), sizeof mac);
	body += what;
	c->chal_wait = false;
	c->txq.push_front(control_item(h, body.data(), body.size()));
	flush_tx(ep, c);
}

namespace {

/* HELLO_ACK with our proof over the handshake's nonces. */
txitem *ack_item(tcp_ep *ep, conn *c, uint64_t data)
{
	frame::header h;
	h.type = frame::HELLO_ACK;
	h.data = data;
	h.aux = data == 0 ? ep->eager_window : 0;
	unsigned char mac[auth::mac_len];
	auth::prove(ep->key, auth::role::acceptor, c->an, h, nullptr, 0, mac);
	return control_item(h, mac, sizeof mac);
}

} // namespace

/* HELLO on an incoming connection: check the peer's proof of the job key,
 * refuse a claim on an address that already has a live connection, then
 * decide which of two simultaneous connections survives (the one opened by
 * the lower listening address). */
void on_hello(tcp_ep *ep, conn *c)
{
	const size_t pre = auth::nonce_len + auth::mac_len;
	memcpy(c->an.con, c->small.data(), auth::nonce_len);
	const auto *mac = reinterpret_cast<const unsigned char *>(c->small.data()) + auth::nonce_len;
	if (!auth::verify(ep->key, auth::role::connector, c->an, c->h, c->small.data() + pre, c->small.size() - pre,
			  mac)) {
		st_refused.fetch_add(1, std::memory_order_relaxed);
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"refused a connection from %s to %s: its handshake does not prove our job key for this "
			"connection (another user or job, a relay between two endpoints, or processes of one job "
			"with different FI_TCP_JOB_KEY values)\n",
			peer_of_fd(c->fd).c_str(), addr_text(ep->self).c_str());
		frame::header h;
		h.type = frame::HELLO_ACK;
		h.data = frame::ack_bad_proof;
		txitem *t = control_item(h);
		t->after = AFTER_CLOSE;
		enqueue(ep, c, t);
		return;
	}
	authenticated(ep, c);
	std::string key = addr_key(c->small.data() + pre, c->small.size() - pre);
	if (key.empty()) {
		protocol_error(ep, c, "HELLO without a socket address");
		return;
	}
	c->peer = key;
	auto it = ep->peers.find(key);
	if (it != ep->peers.end() && it->second->state == C_READY && it->second != c) {
		/* The peer may have closed that connection (fi_av_remove on its
		 * side) just before dialing again: read it first so that a
		 * pending EOF retires it instead of deciding the tie-break. */
		read_conn(ep, it->second);
		it = ep->peers.find(key);
	}
	conn *existing = it == ep->peers.end() ? nullptr : it->second;
	if (key != ep->self && existing && existing->outgoing && existing->state != C_BACKOFF && ep->self < key) {
		/* Our own connection to this peer wins; refuse this one. */
		txitem *t = ack_item(ep, c, 1);
		t->after = AFTER_CLOSE;
		enqueue(ep, c, t);
		return;
	}
	if (key != ep->self && existing && existing != c && existing->state == C_READY) {
		/* The address already has a live, authenticated connection: this
		 * one would take over its traffic and its FI_SOURCE. */
		st_refused.fetch_add(1, std::memory_order_relaxed);
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"refused a connection from %s to %s: it claims the listening address %s, which already has "
			"a live connection\n",
			peer_of_fd(c->fd).c_str(), addr_text(ep->self).c_str(), addr_text(key).c_str());
		c->peer.clear();
		txitem *t = ack_item(ep, c, frame::ack_addr_taken);
		t->after = AFTER_CLOSE;
		enqueue(ep, c, t);
		return;
	}
	if (key != ep->self) {
		if (existing) {
			existing->in_map = false;
			move_queue(existing, c);
			/* Our own dial still in its handshake lost the tie-break: the
			 * peer, which holds this connection's other end, refuses
			 * it.  Closed now rather than when the refusal comes, so the
			 * pair holds one connection even while the peer makes no
			 * progress (issue 30: two per pair at 8 x 8). */
			if (existing->state == C_LOST || existing->state == C_BACKOFF ||
			    (existing->outgoing && !existing->msg &&
			     (existing->state == C_CONNECTING || existing->state == C_HELLO_WAIT)))
				conn_fail(ep, existing, 0, nullptr);
		}
		ep->peers[key] = c;
		c->in_map = true;
	}
	c->state = C_READY;
	c->tx_window = c->tx_credit = c->h.aux;
	peer_back(ep, c);
	/* The ack goes first, then whatever was queued for this peer. */
	c->txq.push_front(ack_item(ep, c, 0));
	flush_tx(ep, c);
}

namespace {

/* Why an outgoing handshake failed, for the log line of the side that dialed. */
void refused(conn *c, const char *why)
{
	st_refused.fetch_add(1, std::memory_order_relaxed);
	WU_WARN(P(), FI_LOG_EP_CTRL, "%s %s refused: %s\n", c->msg ? "fi_connect to" : "connection to",
		addr_text(c->peer).c_str(), why);
}

const char *const why_bad_proof =
	"the peer does not accept our proof of the job key (another user or job listens there, or the "
	"processes were started with different FI_TCP_JOB_KEY values)";

const char *const why_peer_unproven =
	"the peer's answer does not prove our job key for the address we dialed (another user or job "
	"listens there, or the processes were started with different FI_TCP_JOB_KEY values)";

} // namespace

void on_hello_ack(tcp_ep *ep, conn *c)
{
	if (c->h.data == frame::ack_bad_proof) {
		refused(c, why_bad_proof);
		return conn_fail(ep, c, FI_ECONNREFUSED, nullptr);
	}
	if (!auth::verify(ep->key, auth::role::acceptor, c->an, c->h, nullptr, 0,
			  reinterpret_cast<const unsigned char *>(c->small.data()))) {
		refused(c, why_peer_unproven);
		return conn_fail(ep, c, FI_ECONNREFUSED, nullptr);
	}
	if (c->h.data == frame::ack_addr_taken) {
		refused(c, "the peer already has a live connection from our listening address");
		return conn_fail(ep, c, FI_ECONNREFUSED, nullptr);
	}
	if (c->h.data == 0) {
		c->state = C_READY;
		c->tx_window = c->tx_credit = c->h.aux;
		peer_back(ep, c);
		flush_tx(ep, c);
		return;
	}
	/* We lost a simultaneous connect: the peer's connection carries the
	 * traffic.  If its HELLO has not arrived yet, keep the queued sends
	 * here until it does. */
	auto it = ep->peers.find(c->peer);
	if (it != ep->peers.end() && it->second == c) {
		if (c->in_epoll)
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
		c->in_epoll = false;
		c->fd.reset();
		c->state = C_LOST;
		return;
	}
	if (it != ep->peers.end())
		move_queue(c, it->second);
	conn_fail(ep, c, 0, nullptr);
	if (it != ep->peers.end())
		flush_tx(ep, it->second);
}

/* ACCEPT or REJECT on a MSG connect: only a peer that proves the key may
 * answer (its private data reaches the application only then). */
bool cm_answer_proven(tcp_ep *ep, conn *c)
{
	const char *why = nullptr;
	if (c->h.type == frame::REJECT && c->h.data == frame::reject_bad_proof)
		why = why_bad_proof;
	else if (!auth::verify(ep->key, auth::role::acceptor, c->an, c->h, c->small.data() + frame::accept_auth,
			       c->small.size() - frame::accept_auth,
			       reinterpret_cast<const unsigned char *>(c->small.data())))
		why = why_peer_unproven;
	if (!why)
		return true;
	refused(c, why);
	post_cm_error(ep, FI_ECONNREFUSED, std::string());
	conn_fail(ep, c, FI_ECONNREFUSED, nullptr, true);
	return false;
}

} // namespace wu::tcp::detail
