/* SPDX-License-Identifier: BSD-3-Clause */
/* ucx provider internals: the domain (one UCP context, the registered
 * regions), the RDM endpoint (one UCP worker), and what runs under its lock.
 *
 * Every UCP call on a worker runs under the endpoint's lock (the worker is
 * UCS_THREAD_MODE_SINGLE), so UCP's callbacks, which run inside
 * ucp_worker_progress, ucp_request_cancel or an initiation, find the lock
 * held and only push completions (ep_base::push); they are posted once the
 * lock is released (ep_base::flush).
 *
 * Files: ucx_prov.cpp (descriptor, getinfo, fabric, domain, AV), ep.cpp
 * (the endpoint object, progress, auto progress), msg.cpp (msg and tagged,
 * peek/claim, cancel), rma.cpp (regions, rkeys, read and write),
 * status.cpp (ucs_status_t to fabric errno), ucx_addr.cpp (addresses). */
#ifndef WU_PROV_UCX_UCX_EP_H
#define WU_PROV_UCX_UCX_EP_H

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include <rdma/fi_endpoint.h>

#include "core/fid.h"
#include "core/free_list.h"
#include "core/log.h"
#include "prov/common/ep_base.h"
#include "prov/common/progress.h"
#include "prov/common/xfer.h"
#include "prov/ucx/ucx.h"
#include "prov/ucx/ucx_addr.h"
#include "prov/ucx/ucx_dl.h" /* last: UCX calls go through the loaded table */

namespace wu::ucx {

inline fi_provider *P() { return prov_desc(); }

/* ucs_status_t to a negative fabric errno (0 for UCS_OK), with a log line
 * naming the UCX status; the only place that mapping lives (status.cpp). */
int fi_err(ucs_status_t s, const char *where) noexcept;

inline constexpr size_t max_iov = 8;

/* A registered region (rma.cpp): what a peer's rkey request is answered from. */
struct region {
	ucp_mem_h memh = nullptr;
	std::vector<char> rkey; /* packed */
	uint64_t base = 0;	/* remote address of byte 0 (FI_MR_VIRT_ADDR: its address) */
	uint64_t addr = 0;	/* its address here */
	size_t len = 0;
	uint64_t access = 0;
};

/* The caps that need UCP_FEATURE_RMA. */
inline constexpr uint64_t rma_caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

inline constexpr uint32_t domain_magic = 0x57554358; /* "WUCX" */

struct ucx_domain {
	prov::domain d; /* first: the fid */
	uint32_t magic = domain_magic;
	ucp_context_h ctx = nullptr;
	bool rma = true; /* UCP_FEATURE_RMA: the domain's caps name RMA */
	/* Room for UCP's request before each op (ucp_context_query's
	 * request_size, rounded up to op_align; 0: UCP allocates its own). */
	size_t req_pre = 0;
	std::mutex mr_lock;
	std::unordered_map<uint64_t, region> regions; /* by fi_mr_key */
};
ucx_domain *ucx_domain_of(prov::domain *d) noexcept;

struct ucx_ep;

/* One peer this endpoint sent to (by fi_addr): its UCP endpoint, made on
 * first use. */
struct peer {
	ucx_ep *owner = nullptr;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	ucp_ep_h ep = nullptr;
	uint32_t id = 0;
	/* The id our msg and tagged messages to it carry: ours, or 0 when
	 * its address lacks addr_flag_id. */
	uint32_t send_id = 0;
	/* UCP completes a send at once (UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL)
	 * only through its short protocol, whose limit it does not publish:
	 * learned here.  Sends of imm_from bytes or more skip the attempt
	 * (which costs as much as a send), but for one in 256, in case a full
	 * queue taught it; imm_ok is the longest that went, so a refusal at
	 * or below it (a full queue) teaches nothing, nor do the first few
	 * before any went (UCP refuses every size while it wires up). */
	size_t imm_from = SIZE_MAX, imm_ok = 0;
	uint8_t imm_skips = 0, imm_cold = 0;
	bool imm_try(size_t len) noexcept { return len < imm_from || ++imm_skips == 0; }
	void imm_went(size_t len) noexcept
	{
		if (len > imm_ok) [[unlikely]] {
			imm_ok = len;
			if (len >= imm_from) /* (imm_from is always above imm_ok) */
				imm_from = SIZE_MAX;
		}
	}
	void imm_refused(size_t len) noexcept
	{
		if (imm_ok == 0 && ++imm_cold < 16)
			return;
		if (len > imm_ok && len < imm_from)
			imm_from = len;
	}
	bool dead = false;
	/* Remote regions (rma.cpp), by key: rkey unpacked on this ep. */
	struct rkey_ent {
		ucp_rkey_h rkey = nullptr;
		uint64_t base = 0; /* the target's region, as its answer says */
		uint64_t addr = 0;
		size_t len = 0;
		uint64_t access = 0;
		int err = 0; /* the target refused the key */
		bool asked = false;
		std::vector<struct op *> waiting; /* RMA waiting for the answer */
	};
	std::unordered_map<uint64_t, rkey_ent> rkeys;
};

enum class op_kind : uint8_t { SEND, RECV, RMA, CTRL_RX, CTRL_TX };

/* What one use of an op sets: put back in one assignment when the op is
 * kept for reuse (free_op). */
struct op_state {
	void *context = nullptr;
	uint64_t flags = 0;
	size_t len = 0;	     /* bytes asked for */
	void *req = nullptr; /* UCP's request while in flight */
	peer *to = nullptr;  /* sends and RMA: whom */
	uint64_t raddr = 0, rkey_key = 0; /* RMA waiting for an rkey */
	size_t iov_cnt = 0;
	ucp_tag_recv_info_t info{};
	int fail = 0;	     /* set before a cancel: the error it completes with instead */
	uint32_t src_id = 0; /* a directed receive's sender id, else 0 */
	bool tagged = false;
	bool want_comp = false; /* set by every send and RMA */
	bool write = false;	/* RMA */
	bool ureq = false;	/* UCP's request is the room before this op (request_in_room) */
};

/* Bytes that resize() leaves as they are: an op's copy is written over
 * at once, and zeroing it first cost as much as the copy. */
template <class T>
struct no_zero_alloc : std::allocator<T> {
	template <class U>
	struct rebind {
		using other = no_zero_alloc<U>;
	};
	no_zero_alloc() = default;
	template <class U>
	no_zero_alloc(const no_zero_alloc<U> &) noexcept
	{
	}
	template <class U>
	void construct(U *p) noexcept
	{
		::new (static_cast<void *>(p)) U;
	}
	template <class U, class... A>
	void construct(U *p, A &&...a)
	{
		::new (static_cast<void *>(p)) U(std::forward<A>(a)...);
	}
};
using byte_buf = std::vector<char, no_zero_alloc<char>>;

/* One operation UCP holds a request for. */
struct op : op_state {
	ucx_ep *ep = nullptr;
	op_kind kind = op_kind::SEND;
	ucp_dt_iov_t iov[max_iov];
	byte_buf copy; /* inject payload, control message, discard buffer */
	/* RMA waiting for an rkey: the transfer to start. */
	std::vector<iovec> liov;
	op *prev = nullptr, *next = nullptr; /* in ucx_ep::live, or the spare list */
	/* A receive not yet given to UCP (ucx_ep::deferred): its tag and mask. */
	op *dnext = nullptr;
	uint64_t ptag = 0, pmask = 0;
	size_t pre = 0; /* bytes allocated before it (ucx_domain::req_pre) */
};
inline constexpr size_t op_align = 64;

/* The ops UCP holds, linked through the ops themselves: no allocation or
 * hashing on the data path. */
struct op_list {
	op *head = nullptr;
	struct iterator {
		op *o;
		op *operator*() const noexcept { return o; }
		iterator &operator++() noexcept
		{
			o = o->next;
			return *this;
		}
		bool operator!=(const iterator &x) const noexcept { return o != x.o; }
	};
	iterator begin() const noexcept { return {head}; }
	iterator end() const noexcept { return {nullptr}; }
	void insert(op *o) noexcept
	{
		o->prev = nullptr;
		o->next = head;
		if (head)
			head->prev = o;
		head = o;
	}
	void erase(op *o) noexcept
	{
		(o->prev ? o->prev->next : head) = o->next;
		if (o->next)
			o->next->prev = o->prev;
		o->prev = o->next = nullptr;
	}
	std::vector<op *> snapshot() const
	{
		std::vector<op *> v;
		for (op *o = head; o; o = o->next)
			v.push_back(o);
		return v;
	}
};

inline constexpr size_t spare_max = 64;
/* An op's allocation has room before it (new_op_alloc): ops go through delete_op. */
void delete_op(op *o) noexcept;
struct op_deleter {
	void operator()(op *o) const noexcept { delete_op(o); }
};

inline constexpr uint32_t ep_magic = 0x55435845; /* "UCXE" */

/* FI_SOURCE: what a sender id resolved to, so that a receive completion
 * does not search the AV (and re-check the address) per message.
 * Direct-mapped by id; filled on first sight (found entries only: an id
 * the AV does not hold yet is looked up again next time), an fi_addr's
 * slots dropped by fi_av_remove's notice, and each use checked against
 * the AV's change count (av::change_count: any insert, remove or user id
 * change, here or by another process of a shared AV, moves it). */
struct source_cache {
	static constexpr size_t n = 256;
	struct ent {
		uint32_t id = 0; /* 0: empty (no sender has id 0) */
		fi_addr_t addr = FI_ADDR_NOTAVAIL;
		fi_addr_t src = FI_ADDR_NOTAVAIL; /* what completions report (av::source_id) */
		uint64_t gen = 0;		  /* the change count it was found at */
	};
	ent e[n];
	ent &slot(uint32_t id) noexcept { return e[(id ^ (id >> 8)) & (n - 1)]; }
	void drop(fi_addr_t a) noexcept
	{
		for (ent &x : e)
			if (x.id && x.addr == a)
				x = ent{};
	}
};

/* The peers sent to last, by fi_addr (direct-mapped over ucx_ep::peers,
 * which owns them): a send finds its UCP endpoint without hashing.  A
 * slot is dropped with its peer; a peer whose UCP endpoint went (failed)
 * is not taken from it. */
struct peer_cache {
	static constexpr size_t n = 64;
	peer *e[n] = {};
	peer *find(fi_addr_t a) const noexcept
	{
		peer *p = e[a & (n - 1)];
		return p && p->addr == a && p->ep ? p : nullptr;
	}
	void put(peer *p) noexcept { e[p->addr & (n - 1)] = p; }
	void drop(const peer *p) noexcept
	{
		if (e[p->addr & (n - 1)] == p)
			e[p->addr & (n - 1)] = nullptr;
	}
	void clear() noexcept
	{
		for (peer *&p : e)
			p = nullptr;
	}
};

struct ucx_ep {
	fid_ep ep; /* first */
	uint32_t magic = ep_magic;
	prov::ep_base b;
	ucx_domain *dom = nullptr;
	ucp_worker_h worker = nullptr;
	uint32_t id = 0; /* our sender id */
	std::vector<char> name; /* our address */
	std::unordered_map<fi_addr_t, std::unique_ptr<peer>> peers;
	peer_cache pc; /* over peers */
	source_cache sources; /* FI_SOURCE (source_of) */
	const uint64_t *av_gen = nullptr; /* av::change_count of the bound AV, from fi_enable */
	/* Peers whose sender id we answered rkey requests from (no AV entry needed). */
	std::unordered_map<uint32_t, ucp_ep_h> repliers;
	op_list live;		      /* every op UCP holds */
	free_list<op, &op::next, op_deleter> spare; /* freed ops kept for reuse (up to spare_max) */
	std::vector<void *> closes;  /* ucp_ep_close_nbx requests still running */
	/* Claimed messages (FI_PEEK | FI_CLAIM), by the context of the peek. */
	std::unordered_map<void *, std::pair<ucp_tag_message_h, ucp_tag_recv_info_t>> claimed;
	op *ctrl = nullptr; /* the posted receive of control messages */
	/* Small receives posted while progress is manual, in posting order,
	 * given to UCP by the next progress or receive call (flush_rx): the
	 * ucp_tag_recv_nbx of the receive a ping-pong reposts runs after the
	 * send that follows it, while the answer is on its way, not before. */
	op *deferred = nullptr;
	op **deferred_tail = &deferred;
	/* The receive being posted (post_recv): its callback, when UCP runs
	 * it inside the call, clears this to say o and its request are gone. */
	op *posting = nullptr;
	ucp_datatype_t small_dt = 0; /* msg.cpp: receives of up to small_recv bytes */
	size_t tx_busy = 0, rx_busy = 0;
	bool directed = false;
	/* Receives match the sender id field too (id_mask), as 0: nobody
	 * needs the id here (no FI_SOURCE or FI_DIRECTED_RECV, so the
	 * address lacks addr_flag_id). */
	uint64_t rx_id_mask = 0;
	bool want_auto = false;
	bool peer_errors = true; /* FI_UCX_PEER_ERRORS */
	bool told_no_peer_errors = false;
	int linger_ms = 250; /* FI_UCX_LINGER */
	bool closing = false; /* fi_close: callbacks free their ops, post nothing */
	int efd = -1;
	prov::auto_runner autop;
};

/* fi_ops_domain::endpoint (ep.cpp). */
int ep_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) noexcept;

/* Our endpoint behind f, nullptr when it is none (inline: every data
 * call starts here). */
inline ucx_ep *ep_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_EP)
		return nullptr;
	auto *ep = container_of_fid<ucx_ep>(reinterpret_cast<fid_ep *>(f));
	return ep->magic == ep_magic ? ep : nullptr;
}
inline ucx_ep *ep_of(fid_ep *e) noexcept
{
	return e ? ep_of(&e->fid) : nullptr;
}

/* Under b.mtx: gives the deferred receives to UCP, in order.  Before
 * anything UCP matches against (progress, a probe, a receive posted
 * another way), so that receives match in the order they were posted. */
void post_deferred(ucx_ep *ep);
inline void flush_rx(ucx_ep *ep)
{
	if (ep->deferred)
		post_deferred(ep);
}

/* Under b.mtx: runs the worker until it has nothing more to do. */
void progress_locked(ucx_ep *ep);
/* The progress function CQs and counters call. */
void progress_cb(void *arg) noexcept;

/* Under b.mtx: the peer of fi_addr a, its UCP endpoint made now if need be;
 * nullptr with *err set when a names no address or UCX refuses it. */
peer *peer_for(ucx_ep *ep, fi_addr_t a, const char *where, int *err);
/* Under b.mtx, what every send and RMA checks last: an inject that may
 * not be one (bad_inject: len bytes against inject_size, logged), room
 * for one more transmit (progressed once when there is none: else
 * -FI_EAGAIN), and the peer of fi_addr a into *p.  0 or a negative errno. */
int tx_checks(ucx_ep *ep, const char *where, bool bad_inject, size_t len, fi_addr_t a, peer **p);
/* Under b.mtx: a UCP endpoint to a worker address (err mode PEER). */
ucp_ep_h connect(ucx_ep *ep, const void *worker, peer *p, const char *where, int *err);
/* Under b.mtx: the fi_addr of a sender id, FI_ADDR_NOTAVAIL when the AV
 * has none: from the cache while the AV's change count is what it was
 * (inline: once per received message), else source_lookup. */
fi_addr_t source_lookup(ucx_ep *ep, uint32_t id) noexcept;
inline fi_addr_t source_of(ucx_ep *ep, uint32_t id) noexcept
{
	if (ep->av_gen && id) [[likely]] {
		const source_cache::ent &s = ep->sources.slot(id);
		if (s.id == id && s.gen == __atomic_load_n(ep->av_gen, __ATOMIC_ACQUIRE)) [[likely]]
			return s.src;
	}
	return source_lookup(ep, id);
}

/* Ops bookkeeping (under b.mtx): from and back to the spare list inline
 * (once per message each), the rest out of line. */
op *new_op_alloc(ucx_ep *ep, op_kind k);
void free_op_slow(op *o) noexcept;
void delete_op(op *o) noexcept;
inline op *new_op(ucx_ep *ep, op_kind k)
{
	op *o = ep->spare.pop();
	if (!o) [[unlikely]]
		return new_op_alloc(ep, k);
	o->ep = ep;
	o->kind = k;
	ep->live.insert(o);
	return o;
}
inline void free_op(op *o) noexcept
{
	ucx_ep *ep = o->ep;
	/* An op whose room holds UCP's request stays allocated: UCP still
	 * marks the request done after the callback that freed the op
	 * returns.  progress's trim and close_worker delete it later. */
	if ((ep->spare.size() >= spare_max || ep->closing) && !o->ureq) [[unlikely]] {
		free_op_slow(o);
		return;
	}
	ep->live.erase(o);
	/* The state in one assignment, not *o = op{}: that builds and moves
	 * a whole op per message; the buffers keep their capacity for reuse
	 * (an inject's copy allocates once).  From a constant: a temporary
	 * made GCC emit rep stos. */
	static constexpr op_state blank{};
	static_cast<op_state &>(*o) = blank;
	o->copy.clear();
	o->liov.clear();
	ep->spare.push(o);
}
/* An inject's payload: the count buffers of iov (len bytes in all) into
 * o->copy, since the caller's are free on return. */
void gather(op *o, const iovec *iov, size_t count, size_t len);
/* Transmit-side completion of o (send or RMA; err a positive FI_E* or 0);
 * frees o. */
void complete_tx(op *o, int err);
/* The one place a transmit op (send, put, get, the flush after a put)
 * learns its fate.  tx_issued: UCP's answer r to o's initiation; 0 when
 * done now (o completed), 1 when in flight (o holds the request, its
 * callback ends in tx_done), or the negative errno of a refusal (logged,
 * naming where), o still the caller's.  tx_done: the status a callback
 * got (where names the operation in the log line of a failure). */
int tx_issued(op *o, ucs_status_ptr_t r, const char *where);
void tx_done(op *o, ucs_status_t s, const char *where);

/* msg.cpp */
ssize_t do_send(ucx_ep *ep, const prov::msg_xfer &x);
ssize_t do_recv(ucx_ep *ep, const prov::msg_xfer &x);
/* The endpoint's data ops (prov::ep_ops over do_send, do_recv, do_rma and
 * the short paths of fi_inject and fi_recv), made in msg.cpp so that the
 * short paths inline into the entry points. */
struct data_tables {
	fi_ops_msg *msg;
	fi_ops_rma *rma;
	fi_ops_tagged *tagged;
	fi_ops_atomic *atomic;
};
data_tables data_ops() noexcept;
/* The receive datatype of up to 4 KiB that keeps a truncated message's
 * first bytes (0 when UCX refused it). */
ucp_datatype_t small_datatype() noexcept;
int cancel_locked(ucx_ep *ep, void *context);
/* A peer died: its directed receives fail (the worker's UCP fails its sends). */
void fail_directed(ucx_ep *ep, uint32_t id);

/* rma.cpp */
ssize_t do_rma(ucx_ep *ep, const prov::rma_xfer &x);
/* Posts the receive of control messages (rkey requests and answers). */
int post_ctrl(ucx_ep *ep);
/* At close: rkeys and repliers go. */
void free_rma(ucx_ep *ep) noexcept;
void peer_rma_failed(ucx_ep *ep, peer *p, int err);
extern fi_ops_mr mr_ops;
int close_regions(ucx_domain *d) noexcept;

} // namespace wu::ucx

#endif
