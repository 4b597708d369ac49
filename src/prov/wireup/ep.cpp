/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup endpoint: open (the two sub-endpoints, sharing our lock and our
 * receive context), bindings, enable, progress, names, cancel, options and
 * close.  The data path is in data.cpp, routes in route.cpp. */
#include "config.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include <time.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

#include <rdma/fi_cm.h>

#include "av/av.h"
#include "core/fd.h"
#include "core/info.h"
#include "core/launcher.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "prov/common/ep_ctl_ops.h"
#include "prov/common/ops_tables.h"
#include "prov/common/sub_ep.h"
#include "prov/shm/shm.h"
#include "prov/tcp/tcp.h"
#include "prov/wireup/wx_ep.h"

namespace wu::wireup {

wx_ep *wx_of(fid *f) noexcept
{
	return f ? wx_of(reinterpret_cast<fid_ep *>(f)) : nullptr;
}

namespace {

constexpr char shm_scheme[] = "fi_shm://";
constexpr size_t shm_scheme_len = sizeof(shm_scheme) - 1;

const prov::sub_ops *ops_of(int part) noexcept
{
	return part == part_shm ? shm::sub_ops() : tcp::sub_ops();
}

/* ---- progress ---- */

int64_t mono_ns() noexcept
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

/* A call on which tcp may be due (out of line, and ending in shm's
 * progress, so that wx_progress keeps no stack frame): hot is tcp_hot as
 * wx_progress read it. */
[[gnu::noinline]] void tcp_turn(wx_ep *ep, uint32_t hot) noexcept
{
	bool due = true;
	if (hot)
		ep->tcp_hot.store(hot - 1, std::memory_order_relaxed);
	else if (ep->tcp_busy && !ep->tcp_busy->load(std::memory_order_relaxed)) {
		int64_t now = mono_ns();
		due = now - ep->idle_polled.load(std::memory_order_relaxed) >= ep->idle_ns;
		if (due)
			ep->idle_polled.store(now, std::memory_order_relaxed);
	}
	if (due)
		ep->spf[part_tcp].fn(ep->spf[part_tcp].arg);
	ep->spf[part_shm].fn(ep->spf[part_shm].arg);
}

/* Every CQ and counter read: shm always, tcp only every (poll_mask+1)-th
 * call unless a transfer went through it lately (tcp_hot), so an idle tcp
 * side (an epoll_wait per call) costs shm's latency nothing.  With no tcp
 * connection at all there is only the listener to poll, for a peer's first
 * connect, which tolerates some microseconds: such a call polls it only
 * when idle_ns passed since the last time (a clock read, no syscall), which
 * makes a busy shm ping-pong's syscalls per message near zero and a slow
 * poller's (calls far apart) unchanged.  The counters are plain loads and
 * stores: a lost increment only moves the next poll.  shm's progress is
 * the tail call of the common call (tcp's turn decided first). */
void wx_progress(void *arg) noexcept
{
	auto *ep = static_cast<wx_ep *>(arg);
	if (ep->live[part_shm].load(std::memory_order_relaxed)) [[likely]] {
		if (ep->live[part_tcp].load(std::memory_order_relaxed)) {
			uint32_t hot = ep->tcp_hot.load(std::memory_order_relaxed);
			uint32_t k = ep->tick.load(std::memory_order_relaxed) + 1;
			ep->tick.store(k, std::memory_order_relaxed);
			if (hot || !(k & ep->poll_mask)) [[unlikely]]
				return tcp_turn(ep, hot);
		}
		ep->spf[part_shm].fn(ep->spf[part_shm].arg);
	} else if (ep->live[part_tcp].load(std::memory_order_relaxed)) {
		ep->spf[part_tcp].fn(ep->spf[part_tcp].arg);
	}
}

/* fi_trywait: both sub-endpoints must move data on their own from now on. */
int wx_block(void *arg) noexcept
{
	auto *ep = static_cast<wx_ep *>(arg);
	for (int k : {part_shm, part_tcp})
		if (ep->live[k].load(std::memory_order_relaxed) && ep->spf[k].block)
			if (int r = ep->spf[k].block(ep->spf[k].arg))
				return r;
	return 0;
}

/* ---- sub-endpoints ---- */

/* The info a sub-endpoint opens with: ours, in its provider's address
 * format and with its part of our source address.  Copied and adapted
 * rather than asked of the provider's getinfo: the limits are already the
 * stricter of the two (our getinfo) and the domain is ours. */
fi_info *sub_info(const fi_info *mine, int part, const parts &src)
{
	fi_info *i = info_dup(mine);
	if (!i)
		throw std::bad_alloc();
	std::unique_ptr<fi_info, void (*)(fi_info *)> g(i, info_free);
	free(i->src_addr);
	free(i->dest_addr);
	i->src_addr = i->dest_addr = nullptr;
	i->src_addrlen = i->dest_addrlen = 0;
	i->ep_attr->type = FI_EP_RDM;
	if (part == part_shm) {
		i->addr_format = FI_ADDR_STR;
		i->caps &= ~FI_REMOTE_COMM;
		if (src.shm_len) {
			std::string a = std::string(shm_scheme) + std::string(src.shm, src.shm_len);
			i->src_addr = strdup(a.c_str());
			if (!i->src_addr)
				throw std::bad_alloc();
			i->src_addrlen = a.size() + 1;
		}
	} else {
		i->addr_format = FI_SOCKADDR_IN;
		const void *sa = src.tcp;
		size_t len = src.tcp_len;
		fi_info *got = nullptr;
		if (!sa) {
			/* The interface of our domain (tcp's getinfo names it alike). */
			fi_info *h = info_alloc();
			if (!h)
				throw std::bad_alloc();
			h->ep_attr->type = FI_EP_RDM;
			if (mine->domain_attr && mine->domain_attr->name)
				h->domain_attr->name = strdup(mine->domain_attr->name);
			if (mine->fabric_attr && mine->fabric_attr->name)
				h->fabric_attr->name = strdup(mine->fabric_attr->name);
			tcp::provider()->getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, h,
						 &got);
			info_free(h);
			if (got && got->src_addr) {
				sa = got->src_addr;
				len = got->src_addrlen;
			}
		}
		if (sa) {
			i->addr_format = len == 16 ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
			i->src_addr = malloc(len);
			if (!i->src_addr) {
				info_free(got);
				throw std::bad_alloc();
			}
			memcpy(i->src_addr, sa, len);
			i->src_addrlen = len;
			/* Any port asked for: in a PMIx job the first endpoint takes
			 * its slot's port (the launcher hook: FI_PMIX_PORT_BASE in the
			 * symmetric layout, FI_PMIX_NODE_PORTS for node records), so
			 * that other nodes compute its address. */
			auto *sin = static_cast<sockaddr_in *>(i->src_addr);
			uint16_t port;
			if (sin->sin_port == 0 && launcher::symmetric_port(&port) == 0) {
				/* A port another process holds would leave this endpoint
				 * without tcp: then any port, and the rank is off the
				 * layout (published on its own, or a clear error). */
				sin->sin_port = htons(port); /* at the same offset in sockaddr_in6 */
				unique_fd probe(socket(sin->sin_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
				int one = 1;
				if (probe.get() >= 0)
					setsockopt(probe.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
				if (probe.get() < 0 || bind(probe.get(), static_cast<sockaddr *>(i->src_addr),
							    socklen_t(len)) != 0) {
					WU_WARN(P(), FI_LOG_EP_CTRL,
						"fi_endpoint: layout port %u is taken (%s); this endpoint listens elsewhere\n",
						unsigned(port), strerror(errno));
					sin->sin_port = 0;
				}
			}
		}
		if (got)
			info_free(got);
	}
	return g.release();
}

/* Opens sub-endpoint `part` on our domain and ties it to ep: our lock,
 * our receive context, its part of our AV's addresses, our progress. */
int open_sub(wx_ep *ep, fid_domain *domain, int part, const parts &src)
{
	const prov::sub_ops *so = ops_of(part);
	if (!so) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: no %s sub-endpoints in this build\n",
			part == part_shm ? "shm" : "tcp");
		return -FI_ENOSYS;
	}
	fi_info *si = sub_info(ep->info, part, src);
	fid_ep *s = nullptr;
	int r = so->ep_open(domain, si, &s, nullptr);
	info_free(si);
	if (r) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: the %s sub-endpoint cannot be opened: %s\n", so->name,
			fi_strerror(-r));
		return r;
	}
	prov::ep_base *b = so->base_of(s);
	if (!b) {
		fi_close(&s->fid);
		return -FI_EINVAL;
	}
	b->mtx.share(ep->mtx);
	b->addr_part = part;
	if (part == part_tcp) {
		b->src_ok = tcp_source_ok;
		b->src_arg = ep;
	}
	if ((r = so->lend_rx(s, &ep->rx))) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: the %s sub-endpoint refuses our receive context: %s\n",
			so->name, fi_strerror(-r));
		fi_close(&s->fid);
		return r;
	}
	if (part == part_tcp && so->busy)
		ep->tcp_busy = so->busy(s);
	ep->rx_room[part] = so->rx_room;
	if (part == part_shm)
		ep->shm_inject = so->inject;
	ep->spf[part] = b->progress;
	b->progress = progress_fn{wx_progress, ep, wx_block};
	ep->sub[part] = s;
	ep->sb[part] = b;
	ep->live[part].store(true, std::memory_order_relaxed);
	return 0;
}

/* Closes sub-endpoint `part` (its bindings go with it). */
void close_sub(wx_ep *ep, int part)
{
	fid_ep *s = ep->sub[part];
	if (!s)
		return;
	ep->sub[part] = nullptr;
	ep->sb[part] = nullptr;
	if (part == part_shm)
		ep->shm_inject = nullptr;
	/* Our progress skips it from now on; a call in flight holds the CQ's
	 * progress list, which its unbinding (in fi_close) waits for. */
	ep->live[part].store(false, std::memory_order_relaxed);
	if (int r = fi_close(&s->fid))
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_close: the %s sub-endpoint: %s\n", ops_of(part)->name,
			fi_strerror(-r));
	ep->rb = ep->sb[part_shm] ? ep->sb[part_shm] : ep->sb[part_tcp];
	if (ep->srx)
		prov::srx_rebase(ep->srx, ep, ep->rb);
}

/* ---- fid ops ---- */

int ep_close(fid *f) noexcept
{
	return guard("fi_close(ep)", [&]() -> int {
		wx_ep *ep = wx_of(f);
		if (!ep)
			return -FI_EINVAL;
		if (ep->watching)
			av::unwatch_removes(ep->av, route_removed, ep);
		/* First: our sub-endpoints go next, and with them the srx's view of us. */
		if (ep->srx)
			prov::srx_detach(ep->srx, ep);
		ep->srx = nullptr;
		close_sub(ep, part_shm);
		close_sub(ep, part_tcp);
		{
			std::lock_guard g(ep->mtx);
			ep->rx.drain();
		}
		free_routes(ep);
		info_free(ep->info);
		ep->magic = 0;
		std::unique_ptr<wx_ep> gone(ep); /* fi_close frees what the open handed out as a fid */
		return 0;
	});
}

/* ---- shared receive contexts (prov/common/srx.h) ---- */

void member_flush(void *arg) noexcept
{
	auto *ep = static_cast<wx_ep *>(arg);
	flush(ep, collected(ep));
}

void member_room(void *arg) noexcept
{
	rx_room(static_cast<wx_ep *>(arg));
}

/* fi_ep_bind(ep, srx): before fi_enable, both sub-endpoints take their
 * receives from the srx and its lock from now on. */
int srx_bind(wx_ep *ep, fid *f, uint64_t flags)
{
	prov::srx *s = prov::srx_of(f);
	if (!s || !ep->rb) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_ep_bind: %s\n",
			!s ? "not a shared receive context of ours" : "the endpoint has no sub-endpoint");
		return -FI_EINVAL;
	}
	prov::srx_member m{.ep = ep, .b = ep->rb, .flush = member_flush, .rx_room = member_room};
	return prov::srx_attach(s, m, flags, [&]() -> const char * {
		if (const char *bad = prov::srx_refuse(ep->srx, ep->enabled, false))
			return bad;
		for (int part : {part_tcp, part_shm})
			if (ep->sub[part] && ops_of(part)->lend_rx(ep->sub[part], &s->rx))
				return "a sub-endpoint refuses the shared receive context";
		/* Before fi_enable nothing else holds the lock: it becomes the srx's. */
		for (prov::ep_base *b : ep->sb)
			if (b)
				b->mtx.share(s->lock);
		ep->srx = s;
		return nullptr;
	});
}

/* fi_ep_bind of what the sub-endpoints bind: each of them binds it. */
int bind_subs(wx_ep *ep, fid *bfid, uint64_t flags)
{
	switch (bfid->fclass) {
	case FI_CLASS_AV:
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
	case FI_CLASS_EQ: break;
	default:
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"fi_ep_bind: a wireup endpoint binds AVs, CQs, counters and EQs (class %zu given)\n",
			bfid->fclass);
		return -FI_EINVAL;
	}
	if (ep->enabled && bfid->fclass == FI_CLASS_AV)
		return -FI_EOPBADSTATE;
	for (fid_ep *s : ep->sub)
		if (s)
			if (int r = fi_ep_bind(s, bfid, flags))
				return r;
	if (bfid->fclass == FI_CLASS_AV) {
		ep->av = reinterpret_cast<fid_av *>(bfid);
		ep->av_shared = av::is_shared(ep->av);
	}
	return 0;
}

int ep_bind(fid *f, fid *bfid, uint64_t flags) noexcept
{
	return guard("fi_ep_bind", [&]() -> int {
		wx_ep *ep = wx_of(f);
		if (!ep || !bfid)
			return -FI_EINVAL;
		return prov::srx_ep_bind(
			ep->srx, ep, bfid, [&] { return srx_bind(ep, bfid, flags); },
			[&] { return bind_subs(ep, bfid, flags); });
	});
}

int enable(wx_ep *ep)
{
	if (ep->enabled)
		return 0;
	if (!ep->av) {
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"fi_enable: bind an address vector to the RDM endpoint first (fi_ep_bind)\n");
		return -FI_ENOAV;
	}
	int err = 0;
	for (int part : {part_shm, part_tcp}) {
		fid_ep *s = ep->sub[part];
		if (!s)
			continue;
		int r = fi_enable(s);
		if (!r)
			continue;
		if (part == part_shm && ep->named_shm) {
			/* Peers that named us by node/service go to that name. */
			WU_WARN(P(), FI_LOG_EP_CTRL,
				"fi_enable: the shm name this endpoint is bound to (its service on this host) cannot be taken (%s; another user's region of that name is never used); not enabled\n",
				fi_strerror(-r));
			return r;
		}
		/* A refused shm (another user's region, a locked /dev/shm) leaves
		 * tcp for every peer; a failed tcp leaves shm for this host. */
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_enable: the %s sub-endpoint cannot be enabled (%s); %s\n",
			ops_of(part)->name, fi_strerror(-r),
			part == part_shm ? "peers on this host go through tcp" : "only peers on this host are reachable");
		close_sub(ep, part);
		err = r;
	}
	if (!ep->sub[part_shm] && !ep->sub[part_tcp])
		return err ? err : -FI_ENODEV;
	if (!ep->av_shared && !av::watch_removes(ep->av, route_removed, ep))
		ep->watching = true;
	ep->enabled = true;
	ep->rx_fast = prov::rx_fast_mask(ep->info, ep->srx);
	return 0;
}

/* Our address: host id, the tcp sub-endpoint's sockaddr, the shm one's name. */
int get_name(wx_ep *ep, void *addr, size_t *addrlen)
{
	if (ep->sock) {
		if (!ep->sub[part_tcp]) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_getname: no tcp sub-endpoint, so no sockaddr\n");
			return -FI_EOPBADSTATE;
		}
		return fi_getname(&ep->sub[part_tcp]->fid, addr, addrlen);
	}
	unsigned char tcpa[sizeof(sockaddr_in6)];
	char shma[80];
	parts p;
	p.host = ep->host;
	if (fid_ep *s = ep->sub[part_tcp]) {
		size_t l = sizeof tcpa;
		if (!fi_getname(&s->fid, tcpa, &l) && l <= sizeof tcpa) {
			p.tcp = tcpa;
			p.tcp_len = l;
		}
	}
	if (fid_ep *s = ep->sub[part_shm]) {
		size_t l = sizeof shma;
		if (!fi_getname(&s->fid, shma, &l) && l > shm_scheme_len + 1 && l <= sizeof shma) {
			p.shm = shma + shm_scheme_len;
			p.shm_len = strnlen(p.shm, l - shm_scheme_len);
		}
	}
	unsigned char out[addr_max];
	long n = encode(p, out, sizeof out);
	if (n < 0) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_getname: no address (%s)\n", fi_strerror(int(-n)));
		return int(n);
	}
	size_t have = *addrlen;
	*addrlen = size_t(n);
	if (!addr || have < size_t(n))
		return -FI_ETOOSMALL;
	memcpy(addr, out, size_t(n));
	return 0;
}

int ep_control(fid *f, int command, void *arg) noexcept
{
	return guard("fi_control(ep)", [&]() -> int {
		wx_ep *ep = wx_of(f);
		if (!ep)
			return -FI_EINVAL;
		switch (command) {
		case FI_ENABLE: {
			bool was = ep->enabled;
			if (int r = enable(ep))
				return r;
			/* Lets "pmix:" AVs of other ranks resolve this endpoint. */
			if (!was && !ep->sock) {
				unsigned char a[addr_max];
				size_t l = sizeof a;
				if (!get_name(ep, a, &l))
					launcher::endpoint_named(a, l, format()->addr_format);
			}
			return 0;
		}
		case FI_GETOPSFLAG:
			if (!ep->rb || !arg)
				return -FI_EINVAL;
			return fi_control(const_cast<fid *>(ep->rb->self), command, arg);
		case FI_SETOPSFLAG:
			if (!arg)
				return -FI_EINVAL;
			for (fid_ep *s : ep->sub)
				if (s)
					if (int r = fi_control(&s->fid, command, arg))
						return r;
			return 0;
		default:
			return -FI_ENOSYS;
		}
	});
}

/* fi_ops_ep (prov/common/ep_ctl_ops.h): receives are posted through rb,
 * whose lock is ours, to our receive context; transmits go to the
 * sub-endpoints, so room to send is the least either has. */
struct ctl_hooks {
	using ep_type = wx_ep;
	static wx_ep *lookup(fid *f) noexcept
	{
		wx_ep *ep = wx_of(f);
		return ep && ep->rb ? ep : nullptr;
	}
	static prov::ep_base &base(wx_ep *ep) { return *ep->rb; }
	static const fi_info *info(wx_ep *ep) { return ep->info; }
	static prov::rx_ctx *rx(wx_ep *ep) { return ep->srx ? &ep->srx->rx : &ep->rx; }
	static ssize_t tx_left(wx_ep *ep)
	{
		ssize_t best = -FI_EOPBADSTATE;
		for (fid_ep *s : ep->sub) {
			if (!s)
				continue;
			ssize_t n = s->ops->tx_size_left(s);
			if (n < 0)
				return n;
			best = best < 0 ? n : std::min(best, n);
		}
		return best;
	}
};
using ctl_ops = prov::ep_ctl_ops<ctl_hooks>;

int ep_getname(fid *f, void *addr, size_t *addrlen) noexcept
{
	return guard("fi_getname", [&]() -> int {
		wx_ep *ep = wx_of(f);
		if (!ep || !addrlen)
			return -FI_EINVAL;
		return get_name(ep, addr, addrlen);
	});
}

int ep_setname(fid *f, void *, size_t) noexcept
{
	return guard("fi_setname", [&]() -> int {
		if (!wx_of(f))
			return -FI_EINVAL;
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"fi_setname: a wireup endpoint takes its names from its sub-endpoints; give a source address in fi_info instead\n");
		return -FI_ENOSYS;
	});
}

constinit fi_ops ep_fi_ops = prov::ep_fi_ops(ep_close, ep_bind, ep_control);

constinit fi_ops_cm ep_cm_ops = prov::rdm_cm_ops(ep_setname, ep_getname);

} // namespace

int ep_open(fid_domain *domain, fi_info *info, fid_ep **out, void *context) noexcept
{
	return guard("fi_endpoint", [&]() -> int {
		prov::domain *dom = prov::check_ep_open(P(), "wireup", domain, info, out, prov::ep_type_bit(FI_EP_RDM));
		if (!dom)
			return -FI_EINVAL;
		parts src;
		const bool sock = is_sock_format(info->addr_format);
		if (sock && info->src_addr) {
			if (sock_len(info->src_addr, info->src_addrlen) < 0) {
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: info->src_addr is not a sockaddr_in or sockaddr_in6\n");
				return -FI_EINVAL;
			}
			src.tcp = info->src_addr;
			src.tcp_len = info->src_addrlen;
		} else if (info->src_addr && decode(info->src_addr, info->src_addrlen, &src) < 0) {
			WU_WARN(P(), FI_LOG_EP_CTRL, "fi_endpoint: info->src_addr is not a wireup address\n");
			return -FI_EINVAL;
		}
		auto ep = std::make_unique<wx_ep>();
		prov::set_ep_fid(ep->ep, FI_CLASS_EP, context, {&ep_fi_ops, ctl_ops::ops(), &ep_cm_ops, &wx_msg_ops, &wx_rma_ops,
							     &wx_tagged_ops, &wx_atomic_ops});
		ep->dom = dom;
		ep->info = info_dup(info);
		if (!ep->info)
			return -FI_ENOMEM;
		ep->info->handle = nullptr;
		if (!ep->info->rx_attr->size)
			ep->info->rx_attr->size = 1024;
		ep->rx.size = ep->info->rx_attr->size;
		ep->rx.directed = ep->info->caps & FI_DIRECTED_RECV;
		ep->rx.prov = P();
		ep->host = host_id();
		int every = param::get_int(P(), "tcp_poll").value;
		uint32_t m = 1;
		while (m < uint32_t(std::clamp(every, 1, 1 << 20)))
			m <<= 1;
		ep->poll_mask = m - 1;
		ep->idle_ns = int64_t(std::clamp(param::get_int(P(), "tcp_idle_poll_us").value, 0, 1000000)) * 1000;
		struct info_owner {
			wx_ep *e;
			~info_owner()
			{
				if (e) {
					close_sub(e, part_shm);
					close_sub(e, part_tcp);
					info_free(e->info);
				}
			}
		} own{ep.get()};
		ep->sock = sock;
		ep->named_shm = src.shm_len && param::get_bool(P(), "shm").value;
		/* In sockaddr mode no address names a shm endpoint: none is opened. */
		int rs = param::get_bool(P(), "shm").value && !sock ? open_sub(ep.get(), domain, part_shm, src)
								      : -FI_ENOSYS;
		if (rs && ep->named_shm)
			return rs;
		int rt = open_sub(ep.get(), domain, part_tcp, src);
		if (rt == -FI_EADDRINUSE && !src.tcp) {
			/* The layout's port was taken after its probe: any port (the
			 * hook gives one once per process). */
			WU_INFO(P(), FI_LOG_EP_CTRL, "fi_endpoint: the tcp sub-endpoint takes any port\n");
			rt = open_sub(ep.get(), domain, part_tcp, src);
		}
		if (rs && rt)
			return rt;
		ep->rb = ep->sb[part_shm] ? ep->sb[part_shm] : ep->sb[part_tcp];
		own.e = nullptr;
		ep->parent = child_ref(dom->children);
		*out = &ep.release()->ep;
		return 0;
	});
}

int srx_open(fid_domain *domain, fi_rx_attr *attr, fid_ep **out, void *context) noexcept
{
	return prov::srx_open({.prov = P(), .own_locks = false}, domain, attr, out, context);
}

int stats_of(fid_ep *e, route_stats *out) noexcept
{
	wx_ep *ep = wx_of(e);
	if (!ep || !out)
		return -FI_EINVAL;
	out->shm = ep->n_shm.load();
	out->tcp = ep->n_tcp.load();
	out->unreachable = ep->n_bad.load();
	out->shm_ep = ep->sub[part_shm];
	out->tcp_ep = ep->sub[part_tcp];
	return 0;
}

} // namespace wu::wireup
