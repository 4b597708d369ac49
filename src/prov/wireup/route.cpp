/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup endpoint: routes.  A peer's transport is decided once per fi_addr
 * from its address in the AV (wx_addr.h): our host id and a shm part ->
 * the shm sub-endpoint, else tcp; and cached in a table the data path
 * reads with one load.  fi_av_remove clears the entry (route_removed); an
 * AV other processes write (named, shared) is decided on every call. */
#include "config.h"

#include <cinttypes>

#include "av/av.h"
#include "core/log.h"
#include "core/shim.h"
#include "prov/wireup/wx_ep.h"

namespace wu::wireup {

namespace {

/* Under ep->mtx: the table holding a (grown by copying). */
route_table *table_for(wx_ep *ep, fi_addr_t a)
{
	route_table *t = ep->routes.load(std::memory_order_relaxed);
	if (t && a < t->n)
		return t;
	size_t n = t ? t->n : 0;
	size_t want = n ? n : 64;
	while (want <= a)
		want *= 2;
	auto nt = std::make_unique<route_table>();
	nt->v = std::make_unique_for_overwrite<std::atomic<uint8_t>[]>(want);
	for (size_t k = 0; k < want; k++)
		nt->v[k].store(k < n ? t->v[k].load(std::memory_order_relaxed) : uint8_t(R_NONE),
			       std::memory_order_relaxed);
	nt->n = want;
	route_table *raw = nt.get();
	ep->old_routes.push_back(std::move(nt));
	ep->routes.store(raw, std::memory_order_release);
	return raw;
}

/* a's route from its address (p, when given, gets the address's parts);
 * R_NONE when the AV has no wireup address for it, R_BAD when neither
 * transport reaches it.  Logs nothing. */
route classify(wx_ep *ep, fi_addr_t a, unsigned char (&buf)[addr_max], parts &p)
{
	size_t n = av::addr_of(ep->av, a, buf, sizeof buf);
	if (ep->sock) { /* the entry is a sockaddr: tcp's */
		if (!n || n > sizeof buf || sock_len(buf, n) < 0)
			return R_NONE;
		p.tcp = buf;
		p.tcp_len = n;
		return ep->sub[part_tcp] ? R_TCP : R_BAD;
	}
	if (!n || n > sizeof buf || decode(buf, n, &p) < 0)
		return R_NONE;
	if (p.shm_len && p.host == ep->host && ep->sub[part_shm])
		return R_SHM;
	if (p.tcp_len && ep->sub[part_tcp])
		return R_TCP;
	return R_BAD;
}

route decide(wx_ep *ep, fi_addr_t a, int *err)
{
	unsigned char buf[addr_max];
	parts p;
	route r = classify(ep, a, buf, p);
	if (r == R_NONE) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_addr %" PRIu64 " has no wireup address in the AV\n", uint64_t(a));
		*err = -FI_EINVAL;
		return R_NONE;
	}
	if (r != R_BAD)
		return r;
	if (p.shm_len && p.host == ep->host)
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_addr %" PRIu64 " is on this host but our shm sub-endpoint is off and it has no tcp part\n",
			uint64_t(a));
	else
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_addr %" PRIu64 " is on another host (id %016" PRIx64 ") and has %s\n", uint64_t(a),
			p.host, p.tcp_len ? "a tcp part, but our tcp sub-endpoint is off" : "no tcp part");
	*err = -FI_EHOSTUNREACH;
	return R_BAD;
}

/* Once per peer and endpoint (the decision is cached), at FI_LOG_LEVEL=info:
 * which transport serves it, so that a user (and test/ompi/ompi_nodes.sh)
 * sees node-local peers on shm and the others on tcp. */
void log_route(wx_ep *ep, fi_addr_t a, route r)
{
	if (!log_enabled(P(), FI_LOG_INFO, FI_LOG_EP_DATA))
		return;
	unsigned char buf[addr_max];
	char text[256] = "?";
	size_t n = av::addr_of(ep->av, a, buf, sizeof buf);
	if (n && n <= sizeof buf && !ep->sock && format()->print)
		format()->print(buf, n, text, sizeof text);
	WU_INFO(P(), FI_LOG_EP_DATA, "fi_addr %" PRIu64 " (%s) goes through %s\n", uint64_t(a), text,
		r == R_SHM ? "shm" : "tcp");
}

} // namespace

ssize_t route_slow(wx_ep *ep, fi_addr_t a, fid_ep **out) noexcept
{
	return guard("wireup route", [&]() -> ssize_t {
		if (!ep->enabled || !ep->av) {
			WU_WARN(P(), FI_LOG_EP_DATA, "transfer on an endpoint that is not enabled\n");
			return -FI_EOPBADSTATE;
		}
		if (a == FI_ADDR_UNSPEC || a == FI_ADDR_NOTAVAIL) {
			WU_WARN(P(), FI_LOG_EP_DATA, "a transfer needs a destination fi_addr (FI_ADDR_UNSPEC given)\n");
			return -FI_EINVAL;
		}
		/* Unreachable stays so (logged once) until fi_av_remove. */
		route_table *t = ep->routes.load(std::memory_order_acquire);
		if (t && a < t->n && t->v[a].load(std::memory_order_relaxed) == R_BAD)
			return -FI_EHOSTUNREACH;
		int err = 0;
		uint64_t gen = ep->route_gen.load(std::memory_order_acquire);
		route r = decide(ep, a, &err);
		if (r == R_NONE)
			return err;
		(r == R_SHM ? ep->n_shm : r == R_TCP ? ep->n_tcp : ep->n_bad).fetch_add(1, std::memory_order_relaxed);
		if (r != R_BAD)
			log_route(ep, a, r);
		/* Indices are small and dense (fi_av_insert hands them out in
		 * order); a huge one is not worth a table. */
		if (!ep->av_shared && a < (fi_addr_t(1) << 26)) {
			std::lock_guard g(ep->mtx);
			/* An fi_av_remove since decide() read the entry: a may
			 * name another peer by now; cached, this route would
			 * outlive the removal's clearing.  Decide again next time. */
			if (ep->route_gen.load(std::memory_order_relaxed) == gen)
				table_for(ep, a)->v[a].store(r, std::memory_order_relaxed);
		}
		if (r == R_BAD)
			return err;
		if (r == R_TCP)
			ep->tcp_hot.store(ep->hot_calls, std::memory_order_relaxed);
		*out = ep->sub[r == R_SHM ? part_shm : part_tcp];
		return 0;
	});
}

bool tcp_source_ok(void *arg, fi_addr_t a) noexcept
{
	auto *ep = static_cast<wx_ep *>(arg);
	route r = R_NONE;
	if (route_table *t = ep->routes.load(std::memory_order_acquire); t && a < t->n)
		r = route(t->v[a].load(std::memory_order_relaxed));
	if (r == R_NONE || r == R_BAD) {
		unsigned char buf[addr_max];
		parts p;
		r = classify(ep, a, buf, p);
	}
	if (r != R_SHM)
		return true;
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
		       "a tcp connection names fi_addr %" PRIu64 ", a peer on this host that we reach through shm, "
		       "as its source: its messages are not attributed to that peer\n",
		       uint64_t(a));
	return false;
}

void route_removed(void *arg, fi_addr_t a) noexcept
{
	auto *ep = static_cast<wx_ep *>(arg);
	/* Under the lock route_slow caches under: a decision it made before
	 * this removal is either cleared here or, seeing the new generation,
	 * never cached.  (Called under the AV's watcher lock, which is never
	 * taken under ours, as tcp's own notice does.) */
	guard_void("wireup route removed", [&] {
		std::lock_guard g(ep->mtx);
		ep->route_gen.fetch_add(1, std::memory_order_release);
		route_table *t = ep->routes.load(std::memory_order_acquire);
		if (t && a < t->n)
			t->v[a].store(R_NONE, std::memory_order_relaxed);
	});
}

void free_routes(wx_ep *ep) noexcept
{
	ep->routes.store(nullptr, std::memory_order_relaxed);
	ep->old_routes.clear();
}

} // namespace wu::wireup
