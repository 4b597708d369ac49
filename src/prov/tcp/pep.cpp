/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: passive endpoints.  Listening, connection requests (their
 * handshake and FI_CONNREQ), reject, and fi_passive_ep. */
#include "config.h"

#include "core/fid.h"
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

namespace {

/* ---- passive endpoints ---- */

tcp_pep *pep_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_PEP)
		return nullptr;
	auto *p = container_of_fid<tcp_pep>(reinterpret_cast<fid_pep *>(f));
	return p->magic == pep_magic ? p : nullptr;
}

} // namespace

void free_connreq(tcp_connreq *cr)
{
	cr->fd.reset();
	cr->magic = 0;
	dispose(cr); /* the fid the connreq event handed out */
}

namespace {

/* fi_close on a request's handle: what an EQ does with an FI_CONNREQ it
 * drops unread (purge at fi_close(pep), fi_close(eq)), so the request is
 * not leaked.  Once reported, the request is off the pep's watch. */
int connreq_close(fid *f) noexcept
{
	return guard("fi_close(connreq)", [&]() -> int {
		if (!f || f->fclass != FI_CLASS_CONNREQ)
			return -FI_EINVAL;
		auto *cr = reinterpret_cast<tcp_connreq *>(f);
		if (cr->magic != cr_magic)
			return -FI_EINVAL;
		if (tcp_pep *pep = cr->pep) {
			if (!cr->reported)
				return -FI_EBUSY; /* still being read by the pep */
			std::lock_guard<std::mutex> g(pep->mtx);
			pep->reqs.erase(cr);
		}
		free_connreq(cr);
		return 0;
	});
}

fi_ops connreq_fi_ops = {
	sizeof(fi_ops), connreq_close, WU_NOSYS(fi_ops, bind), WU_NOSYS(fi_ops, control),
	WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

/* Reads a CONNREQ frame (header + private data) off a new connection,
 * then reports it with an fi_info whose handle is this object. */
void connreq_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp connreq", [&] {
		auto *cr = static_cast<tcp_connreq *>(arg);
		tcp_pep *pep = cr->pep;
		auto drop = [&](const char *why) {
			if (why) {
				st_bad_frames.fetch_add(1, std::memory_order_relaxed);
				WU_WARN(P(), FI_LOG_EP_CTRL, "connection request from %s dropped: %s\n",
					addr_text(addr_key(&cr->peer, cr->peerlen)).c_str(), why);
			}
			cm_engine::get().del(&cr->w, cr->fd);
			std::lock_guard<std::mutex> g(pep->mtx);
			pep->reqs.erase(cr);
			free_connreq(cr);
		};
		for (;;) {
			size_t need = frame::hdr_size;
			frame::header h;
			if (cr->in.size() >= frame::hdr_size) {
				frame::error e = frame::decode(cr->in.data(), cr->in.size(), h);
				if (e != frame::error::ok)
					return drop(frame::to_string(e));
				if (h.type != frame::CONNREQ || h.len < frame::connreq_auth)
					return drop("first frame is not a CONNREQ with a proof");
				need += h.len;
			}
			if (cr->in.size() == need && need > frame::hdr_size - 1 && cr->in.size() >= frame::hdr_size) {
				const char *body = cr->in.data() + frame::hdr_size;
				memcpy(cr->an.con, body, auth::nonce_len);
				if (!auth::verify(pep->key, auth::role::connector, cr->an, h, body + frame::connreq_auth,
						  h.len - frame::connreq_auth,
						  reinterpret_cast<const unsigned char *>(body) + auth::nonce_len)) {
					st_refused.fetch_add(1, std::memory_order_relaxed);
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"refused a connection request from %s: it does not prove our job key "
						"for this connection (another user or job, a relay, or processes "
						"with different FI_TCP_JOB_KEY values)\n",
						addr_text(addr_key(&cr->peer, cr->peerlen)).c_str());
					frame::header no;
					no.type = frame::REJECT;
					no.data = frame::reject_bad_proof;
					char buf[frame::hdr_size];
					frame::encode(no, buf);
					write_all(cr->fd, buf, sizeof buf);
					return drop(nullptr);
				}
				cm_engine::get().del(&cr->w, cr->fd);
				fi_info *info = info_dup(pep->info);
				if (!info)
					return drop("out of memory");
				free(info->dest_addr);
				info->dest_addr = malloc(cr->peerlen);
				if (info->dest_addr)
					memcpy(info->dest_addr, &cr->peer, cr->peerlen);
				info->dest_addrlen = info->dest_addr ? cr->peerlen : 0;
				info->handle = &cr->fid_;
				size_t plen = h.len - frame::connreq_auth;
				std::vector<char> buf(sizeof(fi_eq_cm_entry) + plen);
				fi_eq_cm_entry ent{};
				ent.fid = &pep->pep.fid;
				ent.info = info;
				memcpy(buf.data(), &ent, sizeof ent);
				memcpy(buf.data() + sizeof ent, body + frame::connreq_auth, plen);
				if (pep->eq && !eq_room(pep->eq, nullptr)) {
					/* Filled by others since it was accepted: refusing
					 * beats overrunning the EQ for good. */
					info_free(info);
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"connection request from %s refused: the passive endpoint's EQ is full\n",
						addr_text(addr_key(&cr->peer, cr->peerlen)).c_str());
					return drop(nullptr);
				}
				/* An empty CONNREQ back tells the client that its request
				 * reaches the application: it stops its FI_TCP_CONN_TIMEOUT
				 * clock.  Written first: once posted, cr belongs to fi_accept. */
				frame::header got;
				got.type = frame::CONNREQ;
				char hb[frame::hdr_size];
				frame::encode(got, hb);
				write_all(cr->fd, hb, sizeof hb);
				cr->reported = true;
				if (!pep->eq || eq_post(pep->eq, FI_CONNREQ, buf.data(), buf.size()) < 0) {
					info_free(info);
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"connection request dropped: the passive endpoint has no usable EQ\n");
					std::lock_guard<std::mutex> g(pep->mtx);
					pep->reqs.erase(cr);
					free_connreq(cr);
				}
				return;
			}
			char tmp[frame::hdr_size + frame::connreq_auth + frame::max_cm_data];
			ssize_t n = recv(cr->fd, tmp, need - cr->in.size(), MSG_DONTWAIT);
			if (n > 0) {
				cr->in.append(tmp, size_t(n));
				continue;
			}
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			return drop(nullptr);
		}
	});
}

/* Room in the EQ for one more request, counting those accepted but not
 * reported yet, and keeping a quarter of it for the events of the
 * connections accepted from it (FI_CONNECTED, FI_SHUTDOWN): a full EQ
 * overruns for good, so a flood of requests waits in the kernel's
 * backlog instead.  (The caps on requests not yet authenticated,
 * pep_make_room, usually bind first: an EQ of the default size has room
 * for 768.) */
bool pep_has_room(tcp_pep *pep)
{
	size_t size = 0;
	size_t room = eq_room(pep->eq, &size);
	size_t pending = 0;
	{
		std::lock_guard<std::mutex> g(pep->mtx);
		for (tcp_connreq *cr : pep->reqs)
			pending += !cr->reported;
	}
	size_t keep = size / 4;
	return room > pending + keep;
}

/* Stops accepting until pep_sweep sees room again (every few ms meanwhile). */
void pep_pause(tcp_pep *pep)
{
	if (pep->paused || pep->tfd < 0)
		return;
	WU_INFO(P(), FI_LOG_EP_CTRL, "passive endpoint: EQ full, connection requests wait in the backlog\n");
	cm_engine::get().del(&pep->w, pep->lfd);
	pep->paused = true;
	itimerspec its{};
	its.it_value.tv_nsec = 5 * 1000000L;
	its.it_interval = its.it_value;
	timerfd_settime(pep->tfd, 0, &its, nullptr);
}

void pep_sweep_period(tcp_pep *pep)
{
	long ms = pep->alim.timeout_ms ? std::max(pep->alim.timeout_ms / 4, 5) : 0;
	itimerspec its{};
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (ms % 1000) * 1000000L;
	its.it_interval = its.it_value;
	timerfd_settime(pep->tfd, 0, &its, nullptr);
}

/* Makes room for one more request not yet authenticated, from ip: the
 * oldest beyond FI_TCP_AUTH_PENDING(_PER_ADDR) are closed (cm thread, as
 * every request's watch). */
void pep_make_room(tcp_pep *pep, const std::string &ip)
{
	std::vector<tcp_connreq *> victims;
	{
		std::lock_guard<std::mutex> g(pep->mtx);
		std::vector<tcp_connreq *> pending;
		for (tcp_connreq *cr : pep->reqs)
			if (!cr->reported)
				pending.push_back(cr);
		std::sort(pending.begin(), pending.end(),
			  [](const tcp_connreq *a, const tcp_connreq *b) { return a->seq < b->seq; });
		std::vector<const std::string *> ips;
		for (tcp_connreq *cr : pending)
			ips.push_back(&cr->from_ip);
		for (size_t i : over_auth_limits(ips, ip, pep->alim)) {
			victims.push_back(pending[i]);
			pep->reqs.erase(pending[i]);
		}
	}
	for (tcp_connreq *cr : victims) {
		note_unauth_drop(addr_text(addr_key(&cr->peer, cr->peerlen)), "a passive endpoint", pep->alim);
		cm_engine::get().del(&cr->w, cr->fd);
		free_connreq(cr);
	}
}

void pep_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp listen", [&] {
		auto *pep = static_cast<tcp_pep *>(arg);
		for (;;) {
			if (!pep_has_room(pep)) {
				pep_pause(pep);
				return;
			}
			sockaddr_storage ss{};
			socklen_t l = sizeof ss;
			unique_fd fd(accept4(pep->lfd, reinterpret_cast<sockaddr *>(&ss), &l, SOCK_NONBLOCK | SOCK_CLOEXEC));
			if (fd < 0)
				return;
			set_nonblock_nodelay(fd);
			local_cc(fd, reinterpret_cast<sockaddr *>(&ss));
			owned<tcp_connreq> made = make_owned<tcp_connreq>();
			tcp_connreq *cr = made.get();
			cr->fid_.fclass = FI_CLASS_CONNREQ;
			cr->fid_.ops = &connreq_fi_ops;
			cr->magic = cr_magic;
			cr->pep = pep;
			cr->fd = std::move(fd);
			cr->peer = ss;
			cr->peerlen = l;
			cr->born = now_ms();
			cr->seq = pep->next_seq++;
			cr->from_ip = source_ip(ss, l);
			cr->w = {connreq_event, cr};
			/* The connector proves the key over this nonce in its CONNREQ. */
			frame::header ch;
			ch.type = frame::CHALLENGE;
			ch.len = auth::nonce_len;
			char chal[frame::hdr_size + auth::nonce_len];
			frame::encode(ch, chal);
			bool ok = auth::bind_ends(cr->an, cr->fd, auth::role::acceptor) &&
				  auth::random_bytes(cr->an.acc, auth::nonce_len);
			if (ok) {
				memcpy(chal + frame::hdr_size, cr->an.acc, auth::nonce_len);
				ok = write_all(cr->fd, chal, sizeof chal);
			}
			if (!ok) {
				continue; /* made frees it and closes its socket */
			}
			pep_make_room(pep, cr->from_ip);
			{
				std::lock_guard<std::mutex> g(pep->mtx);
				pep->reqs.insert(cr);
			}
			made.release(); /* pep->reqs owns it */
			cm_engine::get().add(&cr->w, cr->fd, EPOLLIN);
		}
	});
}

/* Drops connection requests still without a whole CONNREQ frame after
 * FI_TCP_AUTH_TIMEOUT: a silent or stalled client holds nothing for long. */
void pep_sweep(tcp_pep *pep)
{
	uint64_t ticks;
	ssize_t n = read(pep->tfd, &ticks, sizeof ticks);
	(void)n;
	if (pep->paused && pep_has_room(pep)) {
		pep->paused = false;
		pep_sweep_period(pep);
		cm_engine::get().add(&pep->w, pep->lfd, EPOLLIN);
	}
	if (!pep->alim.timeout_ms)
		return;
	int64_t now = now_ms();
	std::vector<tcp_connreq *> old;
	{
		std::lock_guard<std::mutex> g(pep->mtx);
		for (auto it = pep->reqs.begin(); it != pep->reqs.end();) {
			if (!(*it)->reported && now - (*it)->born >= pep->alim.timeout_ms) {
				old.push_back(*it);
				it = pep->reqs.erase(it);
			} else {
				++it;
			}
		}
	}
	for (tcp_connreq *cr : old) {
		st_silent.fetch_add(1, std::memory_order_relaxed);
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"dropped an incoming connection from %s to a passive endpoint: no complete CONNREQ within "
			"FI_TCP_AUTH_TIMEOUT (%d ms)\n",
			addr_text(addr_key(&cr->peer, cr->peerlen)).c_str(), pep->alim.timeout_ms);
		cm_engine::get().del(&cr->w, cr->fd);
		free_connreq(cr);
	}
}

void pep_sweep_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp connreq timeout", [&] { pep_sweep(static_cast<tcp_pep *>(arg)); });
}

/* Starts pep_sweep every quarter of FI_TCP_AUTH_TIMEOUT (0: never). */
void start_pep_sweep(tcp_pep *pep)
{
	pep->alim = auth_limits::from_params();
	/* Created even with no timeout: pep_pause uses it to resume. */
	pep->tfd.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
	if (pep->tfd < 0)
		throw fi_error(FI_ENOMEM);
	pep_sweep_period(pep);
	pep->tw = {pep_sweep_event, pep};
	cm_engine::get().add(&pep->tw, pep->tfd, EPOLLIN);
}

} // namespace

int take_pep_socket(fid *f, unique_fd &fd, sockaddr_storage &ss, socklen_t &l) noexcept
{
	tcp_pep *pep = pep_of(f);
	if (!pep) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: info->handle is not a tcp passive endpoint or connection request\n");
		return -FI_EINVAL;
	}
	if (pep->listening || pep->lfd < 0) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: info->handle is a passive endpoint that %s; its address cannot be taken\n",
			pep->listening ? "listens" : "has no socket left");
		return -FI_EOPBADSTATE;
	}
	l = sizeof ss;
	if (getsockname(pep->lfd, reinterpret_cast<sockaddr *>(&ss), &l))
		return -FI_EADDRNOTAVAIL;
	fd = std::move(pep->lfd);
	return 0;
}

int cm_data_getopt(int name, void *val, size_t *len) noexcept
{
	if (name != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	return prov::ep_base::put_size_opt(frame::max_cm_data, val, len);
}

int cm_data_setopt(int name, const void *val, size_t len) noexcept
{
	if (name != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	size_t v;
	if (len != sizeof v)
		return -FI_EINVAL;
	memcpy(&v, val, sizeof v);
	return v <= frame::max_cm_data ? 0 : -FI_EINVAL;
}

namespace {

int pep_close(fid *f) noexcept
{
	return guard("fi_close(pep)", [&]() -> int {
		tcp_pep *pep = pep_of(f);
		if (!pep)
			return -FI_EINVAL;
		/* The timer first: it may resume the listen watch. */
		if (pep->tfd >= 0) {
			cm_engine::get().del(&pep->tw, pep->tfd);
			pep->tfd.reset();
		}
		if (pep->listening)
			cm_engine::get().del(&pep->w, pep->lfd);
		/* With no watch running: a request's own event frees it when its
		 * client goes away, which must not happen between taking it and
		 * freeing it here (a double free under a connection flood). */
		cm_engine::get().exclusive([&] {
			std::vector<tcp_connreq *> left;
			{
				std::lock_guard<std::mutex> g(pep->mtx);
				left.assign(pep->reqs.begin(), pep->reqs.end());
				pep->reqs.clear();
			}
			for (tcp_connreq *cr : left) {
				if (!cr->reported) {
					cm_engine::get().del(&cr->w, cr->fd);
					free_connreq(cr);
				} else {
					cr->pep = nullptr; /* still reachable from an unread info */
				}
			}
		});
		pep->eq_ref.reset(); /* its events about us go with the binding */
		pep->lfd.reset();
		info_free(pep->info);
		pep->magic = 0;
		std::unique_ptr<tcp_pep> gone(pep); /* fi_close frees what the open handed out as a fid */
		return 0;
	});
}

int pep_bind(fid *f, fid *bfid, uint64_t flags) noexcept
{
	return guard("fi_pep_bind", [&]() -> int {
		tcp_pep *pep = pep_of(f);
		if (!pep || !bfid || bfid->fclass != FI_CLASS_EQ)
			return -FI_EINVAL;
		if (flags) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_pep_bind: flags 0x%llx are not valid for an EQ\n",
				(unsigned long long)flags);
			return -FI_EBADFLAGS;
		}
		if (pep->eq)
			return -FI_EINVAL;
		if (int r = pep->eq_ref.bind(prov::bound_ref::EQ, bfid, &pep->pep.fid, {}))
			return r;
		pep->eq = reinterpret_cast<fid_eq *>(bfid);
		return 0;
	});
}

int pep_listen(fid_pep *p) noexcept
{
	return guard("fi_listen", [&]() -> int {
		tcp_pep *pep = pep_of(&p->fid);
		if (!pep)
			return -FI_EINVAL;
		if (!pep->eq) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_listen: bind an event queue first (fi_pep_bind)\n");
			return -FI_ENOEQ;
		}
		if (pep->listening)
			return 0;
		if (listen(pep->lfd, 1024))
			return -FI_EADDRINUSE;
		start_pep_sweep(pep);
		pep->listening = true;
		pep->w = {pep_event, pep};
		cm_engine::get().add(&pep->w, pep->lfd, EPOLLIN);
		return 0;
	});
}

int pep_getname(fid *f, void *addr, size_t *len) noexcept
{
	return guard("fi_getname(pep)", [&]() -> int {
		tcp_pep *pep = pep_of(f);
		if (!pep)
			return -FI_EINVAL;
		sockaddr_storage ss{};
		socklen_t l = sizeof ss;
		if (getsockname(pep->lfd, reinterpret_cast<sockaddr *>(&ss), &l))
			return -FI_EADDRNOTAVAIL;
		return put_name(&ss, l, addr, len);
	});
}

int pep_setname(fid *f, void *addr, size_t len) noexcept
{
	return guard("fi_setname(pep)", [&]() -> int {
		tcp_pep *pep = pep_of(f);
		if (!pep)
			return -FI_EINVAL;
		if (pep->listening)
			return -FI_EOPBADSTATE;
		sockaddr_storage ss;
		socklen_t l;
		if (!take_sockaddr(addr, len, ss, l))
			return -FI_EINVAL;
		unique_fd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
		if (fd < 0)
			return -FI_ENOMEM;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, reinterpret_cast<sockaddr *>(&ss), l))
			return -FI_EADDRINUSE;
		pep->lfd = std::move(fd);
		return 0;
	});
}

int pep_reject(fid_pep *p, fid_t handle, const void *param, size_t paramlen) noexcept
{
	return guard("fi_reject", [&]() -> int {
		tcp_pep *pep = pep_of(&p->fid);
		if (!pep || !handle || handle->fclass != FI_CLASS_CONNREQ)
			return -FI_EINVAL;
		auto *cr = reinterpret_cast<tcp_connreq *>(handle);
		if (cr->magic != cr_magic || paramlen > frame::max_cm_data || (paramlen && !param))
			return -FI_EINVAL;
		{
			std::lock_guard<std::mutex> g(pep->mtx);
			pep->reqs.erase(cr);
		}
		frame::header h;
		h.type = frame::REJECT;
		h.len = frame::accept_auth + paramlen;
		std::vector<char> buf(frame::hdr_size + h.len);
		frame::encode(h, buf.data());
		auth::prove(pep->key, auth::role::acceptor, cr->an, h, param, paramlen,
			    reinterpret_cast<unsigned char *>(buf.data() + frame::hdr_size));
		if (paramlen)
			memcpy(buf.data() + frame::hdr_size + frame::accept_auth, param, paramlen);
		write_all(cr->fd, buf.data(), buf.size());
		free_connreq(cr);
		return 0;
	});
}

int pep_getopt(fid *f, int level, int name, void *val, size_t *len) noexcept
{
	if (!pep_of(f) || !val || !len)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	return cm_data_getopt(name, val, len);
}

int pep_setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
{
	if (!pep_of(f) || !val)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	return cm_data_setopt(name, val, len);
}

fi_ops pep_fi_ops = {
	sizeof(fi_ops), pep_close, pep_bind, WU_NOSYS(fi_ops, control), WU_NOSYS(fi_ops, ops_open),
	WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

fi_ops_ep pep_ops = {
	sizeof(fi_ops_ep), WU_NOSYS(fi_ops_ep, cancel), pep_getopt, pep_setopt, WU_NOSYS(fi_ops_ep, tx_ctx),
	WU_NOSYS(fi_ops_ep, rx_ctx), WU_NOSYS(fi_ops_ep, rx_size_left), WU_NOSYS(fi_ops_ep, tx_size_left),
};

fi_ops_cm pep_cm_ops = {
	sizeof(fi_ops_cm), pep_setname, pep_getname, WU_NOSYS(fi_ops_cm, getpeer), WU_NOSYS(fi_ops_cm, connect),
	pep_listen, WU_NOSYS(fi_ops_cm, accept), pep_reject, WU_NOSYS(fi_ops_cm, shutdown),
	WU_NOSYS(fi_ops_cm, join),
};

} // namespace

} // namespace wu::tcp::detail

namespace wu::tcp {

using namespace detail;

const fi_info *pep_info(const fid *f) noexcept
{
	tcp_pep *pep = pep_of(const_cast<fid *>(f));
	return pep ? pep->info : nullptr;
}

int pep_open(prov::fabric *fab, fi_info *info, fid_pep **out, void *context)
{
	if (!info->ep_attr || info->ep_attr->type != FI_EP_MSG) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_passive_ep: info must describe a FI_EP_MSG endpoint\n");
		return -FI_EINVAL;
	}
	sockaddr_storage ss{};
	socklen_t l = 0;
	if (!info->src_addr || !take_sockaddr(info->src_addr, info->src_addrlen, ss, l)) {
		sockaddr_in in{};
		in.sin_family = AF_INET;
		in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		memcpy(&ss, &in, sizeof in);
		l = sizeof in;
	}
	auth::key key;
	if (int r = auth::job_key(key))
		return r;
	unique_fd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -FI_ENOMEM;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, reinterpret_cast<sockaddr *>(&ss), l)) {
		int err = errno;
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_passive_ep: cannot bind %s: %s\n",
			addr_text(addr_key(&ss, l)).c_str(), strerror(err));
		return err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EADDRNOTAVAIL;
	}
	auto pep = std::make_unique<tcp_pep>();
	set_fid(pep->pep.fid, FI_CLASS_PEP, context, &pep_fi_ops);
	pep->pep.ops = &pep_ops;
	pep->pep.cm = &pep_cm_ops;
	pep->magic = pep_magic;
	pep->fab = fab;
	pep->info = info_dup(info);
	pep->lfd = std::move(fd);
	pep->key = key;
	if (!pep->info)
		return -FI_ENOMEM; /* pep goes, and the socket with it */
	pep->parent = child_ref(fab->children);
	*out = &pep.release()->pep;
	return 0;
}

} // namespace wu::tcp
