/* tcp provider: the RDM/MSG endpoint object.  msg and tagged ops, bind,
 * control, cancel, options, close (with linger) and fi_endpoint. */
#include "config.h"
#ifdef WU_HAVE_PMIX
#include "pmix_glue/wireup.h"
#endif
#include "prov/tcp/tcp_impl.h"

namespace wu::tcp::detail {

uint64_t tx_flags(tcp_ep *ep)
{
	return ep->info->tx_attr->op_flags;
}

namespace {

uint64_t rx_flags(tcp_ep *ep)
{
	return ep->info->rx_attr->op_flags;
}

/* fi_ops_msg */
ssize_t m_recv(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, void *ctx) noexcept
{
	return ep_call(e, "fi_recv", [&](tcp_ep *ep) {
		iovec v{buf, len};
		return do_recv(ep, &v, 1, src, 0, 0, rx_flags(ep), ctx, false);
	});
}

ssize_t m_recvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, void *ctx) noexcept
{
	return ep_call(e, "fi_recvv", [&](tcp_ep *ep) {
		return do_recv(ep, iov, cnt, src, 0, 0, rx_flags(ep), ctx, false);
	});
}

ssize_t m_recvmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_recvmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) {
			/* Taking them as a plain receive would consume what the
			 * application only meant to look at. */
			WU_WARN(P(), FI_LOG_EP_DATA,
				"fi_recvmsg: FI_PEEK/FI_CLAIM/FI_DISCARD are supported on tagged receives "
				"only (fi_trecvmsg)\n");
			return -FI_EOPNOTSUPP;
		}
		return do_recv(ep, m->msg_iov, m->iov_count, m->addr, 0, 0, flags, m->context, false);
	});
}

ssize_t m_send(fid_ep *e, const void *buf, size_t len, void *, fi_addr_t dest, void *ctx) noexcept
{
	return ep_call(e, "fi_send", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, 0, 0, tx_flags(ep), ctx, false, false);
	});
}

ssize_t m_sendv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t dest, void *ctx) noexcept
{
	return ep_call(e, "fi_sendv", [&](tcp_ep *ep) {
		return do_send(ep, iov, cnt, dest, 0, 0, tx_flags(ep), ctx, false, false);
	});
}

ssize_t m_sendmsg(fid_ep *e, const fi_msg *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_sendmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_send(ep, m->msg_iov, m->iov_count, m->addr, 0, m->data, flags, m->context, false, false);
	});
}

ssize_t m_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest) noexcept
{
	return ep_call(e, "fi_inject", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, 0, 0, 0, nullptr, false, true);
	});
}

ssize_t m_senddata(fid_ep *e, const void *buf, size_t len, void *, uint64_t data, fi_addr_t dest,
		   void *ctx) noexcept
{
	return ep_call(e, "fi_senddata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, 0, data, tx_flags(ep) | FI_REMOTE_CQ_DATA, ctx, false, false);
	});
}

ssize_t m_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest) noexcept
{
	return ep_call(e, "fi_injectdata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, 0, data, FI_REMOTE_CQ_DATA, nullptr, false, true);
	});
}

/* fi_ops_tagged */
ssize_t t_recv(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, uint64_t tag, uint64_t ignore,
	       void *ctx) noexcept
{
	return ep_call(e, "fi_trecv", [&](tcp_ep *ep) {
		iovec v{buf, len};
		return do_recv(ep, &v, 1, src, tag, ignore, rx_flags(ep), ctx, true);
	});
}

ssize_t t_recvv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, uint64_t tag,
		uint64_t ignore, void *ctx) noexcept
{
	return ep_call(e, "fi_trecvv", [&](tcp_ep *ep) {
		return do_recv(ep, iov, cnt, src, tag, ignore, rx_flags(ep), ctx, true);
	});
}

ssize_t t_recvmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_trecvmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))
			return peek_claim(ep, m, flags);
		return do_recv(ep, m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore, flags, m->context, true);
	});
}

ssize_t t_send(fid_ep *e, const void *buf, size_t len, void *, fi_addr_t dest, uint64_t tag,
	       void *ctx) noexcept
{
	return ep_call(e, "fi_tsend", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, tag, 0, tx_flags(ep), ctx, true, false);
	});
}

ssize_t t_sendv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t dest, uint64_t tag,
		void *ctx) noexcept
{
	return ep_call(e, "fi_tsendv", [&](tcp_ep *ep) {
		return do_send(ep, iov, cnt, dest, tag, 0, tx_flags(ep), ctx, true, false);
	});
}

ssize_t t_sendmsg(fid_ep *e, const fi_msg_tagged *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_tsendmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_send(ep, m->msg_iov, m->iov_count, m->addr, m->tag, m->data, flags, m->context, true,
			       false);
	});
}

ssize_t t_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t tag) noexcept
{
	return ep_call(e, "fi_tinject", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, tag, 0, 0, nullptr, true, true);
	});
}

ssize_t t_senddata(fid_ep *e, const void *buf, size_t len, void *, uint64_t data, fi_addr_t dest,
		   uint64_t tag, void *ctx) noexcept
{
	return ep_call(e, "fi_tsenddata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, tag, data, tx_flags(ep) | FI_REMOTE_CQ_DATA, ctx, true, false);
	});
}

ssize_t t_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
		     uint64_t tag) noexcept
{
	return ep_call(e, "fi_tinjectdata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		return do_send(ep, &v, 1, dest, tag, data, FI_REMOTE_CQ_DATA, nullptr, true, true);
	});
}

fi_ops_msg msg_ops = {sizeof(fi_ops_msg), m_recv,	m_recvv,     m_recvmsg,   m_send,
		      m_sendv,		  m_sendmsg, m_inject, m_senddata, m_injectdata};

fi_ops_tagged tagged_ops = {sizeof(fi_ops_tagged), t_recv,	  t_recvv,   t_recvmsg,	 t_send,
			    t_sendv,		   t_sendmsg, t_inject, t_senddata, t_injectdata};

/* ---- endpoint control ---- */

void unbind_all(tcp_ep *ep)
{
	progress_fn pf{progress_cb, ep, block_cb};
	{
		if (ep->tx_cq)
			cq::unbind(&ep->tx_cq->fid, pf);
		if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
			cq::unbind(&ep->rx_cq->fid, pf);
	}
	{
		fid_cntr *all[] = {ep->c_send, ep->c_recv, ep->c_read, ep->c_write, ep->c_rread, ep->c_rwrite};
		for (size_t i = 0; i < 6; i++) {
			if (!all[i])
				continue;
			bool seen = false;
			for (size_t j = 0; j < i; j++)
				seen |= all[j] == all[i];
			if (!seen)
				cntr::unbind(&all[i]->fid, pf);
		}
	}
	if (ep->av && ep->av_watched) {
		av::unwatch_removes(ep->av, av_removed, ep);
		ep->av_watched = false;
	}
	if (ep->av)
		av::ep_unbind(ep->av);
	if (ep->eq) {
		eq_purge(ep->eq, &ep->ep.fid);
		eq_unbind(&ep->eq->fid);
	}
}

void free_conn_state(tcp_ep *ep)
{
	/* Receives cleared for a rendezvous (a multi-recv buffer may also
	 * still be posted: free each op once). */
	std::unordered_set<op *> cleared;
	for (conn *c : ep->conns)
		for (auto &p : c->rv_wait)
			if (rx_done(ep, p.second.o)) /* else still posted: freed with its queue */
				cleared.insert(p.second.o);
	for (op *o : cleared) {
		if (o->srx && o->srx->posted)
			o->srx->posted--; /* the shared context's room comes back */
		delete o;
	}
	for (conn *c : ep->conns) {
		for (txitem *t : c->txq) {
			delete t->o;
			delete t;
		}
		for (auto &p : c->pending)
			delete p.second;
		if (c->fd >= 0)
			close(c->fd);
		if (c != ep->mc)
			delete c;
	}
	for (conn *c : ep->dead)
		if (c != ep->mc && std::find(ep->conns.begin(), ep->conns.end(), c) == ep->conns.end()) {
			if (c->fd >= 0)
				close(c->fd);
			delete c;
		}
	if (ep->mc && std::find(ep->conns.begin(), ep->conns.end(), ep->mc) == ep->conns.end() && ep->mc->fd >= 0)
		close(ep->mc->fd);
	delete ep->mc;
	ep->mc = nullptr;
	ep->conns.clear();
	ep->dead.clear();
	ep->peers.clear();
	free_rx_state(ep);
}

/* ---- close: deliver what the application counts as sent ---- */

/* An inject, or a send that asked for no completion, is done for the
 * application when the call returns: the bytes may still be queued here
 * (a connection still in its handshake, a full socket) or wait for the
 * peer's CTS. */
bool owes(const conn *c)
{
	if (c->state == C_CLOSED)
		return false;
	for (const txitem *t : c->txq)
		if (t->o && !t->o->want_comp)
			return true;
	for (const auto &p : c->pending)
		if (p.second->kind == OP_SEND && !p.second->want_comp)
			return true;
	return false;
}

/* Changes whenever a connection moves bytes or changes state. */
uint64_t tx_signature(const tcp_ep *ep)
{
	uint64_t h = ep->conns.size();
	for (const conn *c : ep->conns) {
		h = h * 31 + c->state;
		h = h * 31 + c->txq.size() + c->pending.size();
		h = h * 31 + (c->txq.empty() ? 0 : c->txq.front()->left);
	}
	return h;
}

/* Before an RDM endpoint's sockets close (MPI_Finalize right after an
 * MPI_Bsend or an injected send: the peer waits for those bytes).
 * 1. Progress until no connection owes such bytes, giving up once nothing
 *    moved for linger_ms (the peer is gone or never reads).
 * 2. Shut each connection down for writing and wait until the kernel has
 *    the peer's acknowledgement of every byte, reading and dropping what
 *    arrives meanwhile: a socket closed with unread bytes, or that gets
 *    bytes after its close, is reset, and a reset throws away what the
 *    kernel still holds for the peer. */
void linger(tcp_ep *ep)
{
	if (ep->type != FI_EP_RDM || !ep->enabled || !ep->linger_ms)
		return;
	int64_t quiet_until = now_ms() + ep->linger_ms;
	uint64_t sig = 0;
	for (bool first = true;; first = false) {
		bool owed = false;
		uint64_t now_sig;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			if (!first)
				progress_locked(ep);
			for (conn *c : ep->conns)
				owed |= owes(c);
			now_sig = tx_signature(ep);
		}
		flush(ep);
		if (!owed)
			break;
		int64_t now = now_ms();
		if (first || now_sig != sig) {
			sig = now_sig;
			quiet_until = now + ep->linger_ms;
		} else if (now >= quiet_until) {
			WU_WARN(P(), FI_LOG_EP_DATA,
				"fi_close: closing with sends still undelivered: no progress for FI_TCP_LINGER (%d ms)\n",
				ep->linger_ms);
			return;
		}
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	std::lock_guard<std::mutex> g(ep->mtx);
	std::vector<int> fds;
	for (conn *c : ep->conns)
		if (c->state == C_READY && c->fd >= 0 && !c->cm_watched) {
			shutdown(c->fd, SHUT_WR);
			fds.push_back(c->fd);
		}
	char sink[4096];
	int64_t until = now_ms() + ep->linger_ms;
	while (!fds.empty()) {
		for (size_t i = 0; i < fds.size();) {
			ssize_t n;
			while ((n = recv(fds[i], sink, sizeof sink, MSG_DONTWAIT)) > 0)
				;
			int out = 0;
			bool eof = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
			if (eof || (ioctl(fds[i], SIOCOUTQ, &out) == 0 && out == 0)) {
				fds[i] = fds.back();
				fds.pop_back();
			} else {
				i++;
			}
		}
		if (fds.empty())
			break;
		if (now_ms() >= until) {
			WU_WARN(P(), FI_LOG_EP_DATA,
				"fi_close: %zu connection(s) closed with bytes the peer did not take within FI_TCP_LINGER (%d ms)\n",
				fds.size(), ep->linger_ms);
			break;
		}
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
}

int ep_close(fid *f) noexcept
{
	return guard("fi_close(ep)", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		/* Stop the cm thread first (it may be inside our progress). */
		if (ep->auto_progress) {
			cm_engine::get().del(&ep->autow, ep->epfd);
			cm_engine::get().del(&ep->atw, ep->atfd);
			close(ep->atfd);
			ep->atfd = -1;
		}
		if (ep->mc && ep->mc->cm_watched) {
			cm_engine::get().del(&ep->mc->cmw, ep->mc->fd);
			ep->mc->cm_watched = false;
		}
		if (ep->tfd >= 0) {
			cm_engine::get().del(&ep->tw, ep->tfd);
			close(ep->tfd);
			ep->tfd = -1;
		}
		linger(ep);
		unbind_all(ep);
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			if (ep->mc && ep->mc->fd >= 0)
				shutdown(ep->mc->fd, SHUT_RDWR);
			free_conn_state(ep);
			if (ep->lfd >= 0)
				close(ep->lfd);
			if (ep->epfd >= 0)
				close(ep->epfd);
		}
		srx_detach(ep);
		if (ep->cr)
			free_connreq(ep->cr);
		info_free(ep->info);
		ep->dom->children.put();
		ep->magic = 0;
		delete ep;
		return 0;
	});
}

int ep_bind(fid *f, fid *bfid, uint64_t flags) noexcept
{
	return guard("fi_ep_bind", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep || !bfid)
			return -FI_EINVAL;
		progress_fn pf{progress_cb, ep, block_cb};
		std::unique_lock<std::mutex> g(ep->mtx);
		switch (bfid->fclass) {
		case FI_CLASS_CQ: {
			if (!cq::is_cq(bfid))
				return -FI_EINVAL;
			if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
				return -FI_EBADFLAGS;
			if (!(flags & (FI_TRANSMIT | FI_RECV)))
				return -FI_EBADFLAGS;
			auto *cqf = reinterpret_cast<fid_cq *>(bfid);
			if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq)) {
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind: a %s CQ is already bound\n",
					(flags & FI_TRANSMIT) && ep->tx_cq ? "transmit" : "receive");
				return -FI_EINVAL;
			}
			bool already = ep->tx_cq == cqf || ep->rx_cq == cqf;
			if (!already) {
				int r = cq::bind(bfid, pf);
				if (r)
					return r;
			}
			if (flags & FI_TRANSMIT) {
				ep->tx_cq = cqf;
				ep->tx_sel = flags & FI_SELECTIVE_COMPLETION;
			}
			if (flags & FI_RECV) {
				ep->rx_cq = cqf;
				ep->rx_sel = flags & FI_SELECTIVE_COMPLETION;
			}
			return 0;
		}
		case FI_CLASS_CNTR: {
			if (!cntr::is_cntr(bfid))
				return -FI_EINVAL;
			const uint64_t ok = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
			if (!(flags & ok) || (flags & ~ok))
				return -FI_EBADFLAGS;
			auto *cn = reinterpret_cast<fid_cntr *>(bfid);
			fid_cntr **slots[] = {&ep->c_send, &ep->c_recv, &ep->c_read, &ep->c_write, &ep->c_rread,
					      &ep->c_rwrite};
			uint64_t bits[] = {FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE};
			bool already = false;
			for (auto *s : slots)
				already |= *s == cn;
			for (size_t i = 0; i < 6; i++)
				if ((flags & bits[i]) && *slots[i])
					return -FI_EINVAL;
			if (!already) {
				int r = cntr::bind(bfid, pf);
				if (r)
					return r;
			}
			for (size_t i = 0; i < 6; i++)
				if (flags & bits[i])
					*slots[i] = cn;
			return 0;
		}
		case FI_CLASS_AV: {
			if (ep->type != FI_EP_RDM || !av::is_av(bfid))
				return -FI_EINVAL;
			if (flags)
				return -FI_EBADFLAGS; /* fi_endpoint(3): an AV takes no bind flags */
			if (ep->av)
				return -FI_EINVAL;
			if (ep->enabled)
				return -FI_EOPBADSTATE;
			int r = av::ep_bind(reinterpret_cast<fid_av *>(bfid));
			if (r)
				return r;
			ep->av = reinterpret_cast<fid_av *>(bfid);
			ep->av_shared = av::is_shared(ep->av);
			return 0;
		}
		case FI_CLASS_SRX_CTX: {
			tcp_srx *srx = srx_of(bfid);
			if (!srx)
				return -FI_EINVAL;
			if (flags)
				return -FI_EBADFLAGS; /* fi_endpoint(3): bound with flags 0 */
			g.unlock(); /* srx locks come first (tcp_srx) */
			return srx_attach(ep, srx);
		}
		case FI_CLASS_EQ: {
			if (flags) { /* fi_endpoint(3): an EQ takes no bind flags */
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind: flags 0x%llx are not valid for an EQ\n",
					(unsigned long long)flags);
				return -FI_EBADFLAGS;
			}
			if (ep->eq)
				return -FI_EINVAL;
			int r = eq_bind(bfid);
			if (r)
				return r;
			ep->eq = reinterpret_cast<fid_eq *>(bfid);
			return 0;
		}
		default:
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind: cannot bind an object of class %zu to an endpoint\n",
				bfid->fclass);
			return -FI_EINVAL;
		}
	});
}

int ep_control(fid *f, int command, void *arg) noexcept
{
	return guard("fi_control(ep)", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		switch (command) {
		case FI_ENABLE: {
			{
				std::lock_guard<std::mutex> g(ep->mtx);
				if (ep->enabled)
					return 0;
				if (ep->type == FI_EP_RDM && !ep->av) {
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"fi_enable: bind an address vector to the RDM endpoint first (fi_ep_bind)\n");
					return -FI_ENOAV;
				}
				if (ep->type == FI_EP_MSG && !ep->eq) {
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"fi_enable: bind an event queue to the MSG endpoint first (fi_ep_bind)\n");
					return -FI_ENOEQ;
				}
				ep->enabled = true;
			}
			if (ep->type == FI_EP_RDM && ep->av && av::watch_removes(ep->av, av_removed, ep) == 0)
				ep->av_watched = true;
			start_auto(ep);
#ifdef WU_HAVE_PMIX
			/* Lets "pmix:" named AVs of other ranks resolve this endpoint
			 * with no application code (FI_PMIX_AUTO_PUBLISH). */
			if (ep->type == FI_EP_RDM)
				pmix::endpoint_named(ep->self.data(), ep->self.size(),
						     ep->self.size() == sizeof(sockaddr_in) ? FI_SOCKADDR_IN
											    : FI_SOCKADDR_IN6);
#endif
			return 0;
		}
		case FI_GETOPSFLAG:
		case FI_SETOPSFLAG: {
			auto *fl = static_cast<uint64_t *>(arg);
			if (!fl)
				return -FI_EINVAL;
			std::lock_guard<std::mutex> g(ep->mtx);
			uint64_t *target = (*fl & FI_TRANSMIT) ? &ep->info->tx_attr->op_flags
			                                       : (*fl & FI_RECV) ? &ep->info->rx_attr->op_flags : nullptr;
			if (!target)
				return -FI_EINVAL;
			if (command == FI_GETOPSFLAG)
				*fl = *target;
			else
				*target = *fl & ~(FI_TRANSMIT | FI_RECV);
			return 0;
		}
		default:
			return -FI_ENOSYS;
		}
	});
}

ssize_t ep_cancel(fid *f, void *context) noexcept
{
	return guard("fi_cancel", [&]() -> ssize_t {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			op *found = cancel_recv(ep, context);
			if (!found)
				return -FI_ENOENT;
			complete_rx(ep, found, found->iov_cnt ? found->iov[0].iov_base : nullptr, 0, FI_ADDR_NOTAVAIL,
				    found->tagged, found->tag, false, 0, 0, FI_ECANCELED, true);
		}
		flush(ep);
		return 0;
	});
}

int ep_getopt(fid *f, int level, int name, void *val, size_t *len) noexcept
{
	return guard("fi_getopt", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep || !val || !len)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT)
			return -FI_ENOPROTOOPT;
		size_t v;
		switch (name) {
		case FI_OPT_MIN_MULTI_RECV: v = ep->min_multi_recv; break;
		case FI_OPT_CM_DATA_SIZE: v = frame::max_cm_data; break;
		default: return -FI_ENOPROTOOPT;
		}
		if (*len < sizeof v) {
			*len = sizeof v;
			return -FI_ETOOSMALL;
		}
		memcpy(val, &v, sizeof v);
		*len = sizeof v;
		return 0;
	});
}

int ep_setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
{
	return guard("fi_setopt", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep || !val)
			return -FI_EINVAL;
		if (level != FI_OPT_ENDPOINT)
			return -FI_ENOPROTOOPT;
		switch (name) {
		case FI_OPT_MIN_MULTI_RECV: {
			if (len != sizeof(size_t))
				return -FI_EINVAL;
			std::lock_guard<std::mutex> g(ep->mtx);
			memcpy(&ep->min_multi_recv, val, sizeof(size_t));
			return 0;
		}
		case FI_OPT_CM_DATA_SIZE: {
			size_t v;
			if (len != sizeof v)
				return -FI_EINVAL;
			memcpy(&v, val, sizeof v);
			return v <= frame::max_cm_data ? 0 : -FI_EINVAL;
		}
		case FI_OPT_CUDA_API_PERMITTED:
		case FI_OPT_SHARED_MEMORY_PERMITTED:
			return len == sizeof(bool) ? 0 : -FI_EINVAL; /* we use neither */
		default:
			return -FI_ENOPROTOOPT;
		}
	});
}

ssize_t ep_rx_left(fid_ep *e) noexcept
{
	return ep_call(e, "fi_rx_size_left", [&](tcp_ep *ep) -> ssize_t {
		std::lock_guard<std::mutex> g(ep->mtx);
		return ssize_t(ep->info->rx_attr->size - std::min(ep->rx_posted, ep->info->rx_attr->size));
	});
}

ssize_t ep_tx_left(fid_ep *e) noexcept
{
	return ep_call(e, "fi_tx_size_left", [&](tcp_ep *ep) -> ssize_t {
		std::lock_guard<std::mutex> g(ep->mtx);
		return ssize_t(ep->info->tx_attr->size - std::min(ep->tx_inflight, ep->info->tx_attr->size));
	});
}

fi_ops ep_fi_ops = {
	sizeof(fi_ops), ep_close, ep_bind, ep_control, WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr),
	WU_NOSYS(fi_ops, ops_set),
};

fi_ops_ep ep_ops = {
	sizeof(fi_ops_ep), ep_cancel, ep_getopt, ep_setopt, WU_NOSYS(fi_ops_ep, tx_ctx),
	WU_NOSYS(fi_ops_ep, rx_ctx), ep_rx_left, ep_tx_left,
};

/* Where an endpoint listens / binds: its info's src_addr, else the
 * domain's interface address, else loopback; the port of src_addr or 0. */
void pick_src(tcp_ep *ep, const fi_info *info)
{
	if (info->src_addr && take_sockaddr(info->src_addr, info->src_addrlen, ep->src, ep->srclen))
		return;
	const fi_info *di = ep->dom->info;
	if (di->src_addr && take_sockaddr(di->src_addr, di->src_addrlen, ep->src, ep->srclen)) {
		if (ep->src.ss_family == AF_INET)
			reinterpret_cast<sockaddr_in *>(&ep->src)->sin_port = 0;
		else
			reinterpret_cast<sockaddr_in6 *>(&ep->src)->sin6_port = 0;
		return;
	}
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(&ep->src, &in, sizeof in);
	ep->srclen = sizeof in;
}

} // namespace

} // namespace wu::tcp::detail

namespace wu::tcp {

using namespace detail;

stats get_stats() noexcept
{
	return {st_refused.load(), st_bad_frames.load(), st_connects.load(), st_rndv.load(), st_staged.load(),
		st_timeouts.load(), st_silent.load()};
}

int ep_open(fid_domain *domain, fi_info *info, fid_ep **out, void *context) noexcept
{
	return guard("fi_endpoint", [&]() -> int {
		prov::domain *dom = prov::domain_of(domain);
		if (!dom || !info || !out || !info->ep_attr || !info->tx_attr || !info->rx_attr) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: %s is invalid\n",
				!dom ? "domain" : !info ? "info" : !out ? "ep" : "info (attributes missing)");
			return -FI_EINVAL;
		}
		fi_ep_type type = info->ep_attr->type;
		if (type != FI_EP_RDM && type != FI_EP_MSG) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: endpoint type %d is not offered by tcp (RDM, MSG)\n",
				int(type));
			return -FI_EINVAL;
		}
		tcp_connreq *cr = nullptr;
		if (info->handle) {
			if (type != FI_EP_MSG || info->handle->fclass != FI_CLASS_CONNREQ)
				return -FI_EINVAL;
			cr = reinterpret_cast<tcp_connreq *>(info->handle);
			if (cr->magic != cr_magic)
				return -FI_EINVAL;
		}
		auto ep = std::make_unique<tcp_ep>();
		ep->ep.fid.fclass = FI_CLASS_EP;
		ep->ep.fid.context = context;
		ep->ep.fid.ops = &ep_fi_ops;
		ep->ep.ops = &ep_ops;
		ep->ep.cm = &ep_cm_ops;
		ep->ep.msg = &msg_ops;
		ep->ep.rma = &rma_ops;
		ep->ep.tagged = &tagged_ops;
		ep->ep.atomic = &atomic_ops;
		ep->ep.collective = nullptr; /* no collectives: fi_query_collective is ENOSYS */
		ep->magic = ep_magic;
		ep->tp->ep = ep.get();
		ep->dom = dom;
		ep->type = type;
		ep->info = info_dup(info);
		if (!ep->info)
			return -FI_ENOMEM;
		ep->info->handle = nullptr;
		if (!ep->info->tx_attr->size)
			ep->info->tx_attr->size = 2048;
		if (!ep->info->rx_attr->size)
			ep->info->rx_attr->size = 2048;
		if (ep->info->tx_attr->inject_size == 0 || ep->info->tx_attr->inject_size > 64)
			ep->info->tx_attr->inject_size = 64;
		if (int r = auth::job_key(ep->key)) {
			info_free(ep->info);
			return r;
		}
		ep->rndv_size = param::get_size(P(), "rndv_size").value;
		ep->eager_window = std::min<uint64_t>(param::get_size(P(), "eager_window").value, frame::max_payload);
		ep->conn_timeout_ms = std::max(0, param::get_int(P(), "conn_timeout").value);
		ep->linger_ms = std::max(0, param::get_int(P(), "linger").value);
		ep->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ep->epfd < 0) {
			info_free(ep->info);
			return -FI_ENOMEM;
		}
		pick_src(ep.get(), info);
		if (type == FI_EP_RDM) {
			int r = open_listener(ep.get());
			if (r) {
				close(ep->epfd);
				info_free(ep->info);
				return r;
			}
		}
		if (cr) {
			if (cr->pep) {
				std::lock_guard<std::mutex> g(cr->pep->mtx);
				cr->pep->reqs.erase(cr);
			}
			ep->cr = cr;
		}
		dom->children.get();
		*out = &ep.release()->ep;
		return 0;
	});
}

} // namespace wu::tcp
