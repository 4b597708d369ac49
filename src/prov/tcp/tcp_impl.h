/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider internals shared by its files (conn, reader, proto, recv,
 * comp, rma, progress, msg_cm, ep, pep): the structs and the functions one
 * file calls in another.  tcp_ep.h is the provider's face to tcp_prov.cpp
 * and the tests.
 *
 * tcp provider endpoints: RDM (lazy connections keyed by the peer's
 * listening address, job-key handshake, simultaneous-connect tie-break) and
 * MSG (passive endpoints, CONNREQ/CONNECTED/SHUTDOWN through the EQ), one
 * data path for both: eager frames read straight into posted buffers,
 * unexpected queues, tagged matching, RMA through MR keys.
 *
 * Concurrency: one mutex per endpoint guards all of its state.  Completions
 * are collected under it and posted to CQs/counters after it is released,
 * so a CQ that calls our progress function while holding its own lock
 * cannot deadlock with us; only a CQ whose post takes nothing but its own
 * spin lock (cq::post_is_leaf) is posted to directly, when nothing is
 * queued ahead.  Data progress is manual (CQ/counter reads call
 * ep_progress); connection management for MSG runs on one process-wide
 * thread (cm_engine) so fi_eq_sread sees CONNREQ/CONNECTED/SHUTDOWN without
 * the application driving a CQ.  Lock order: engine -> endpoint -> CQ. */
#ifndef WU_PROV_TCP_TCP_IMPL_H
#define WU_PROV_TCP_TCP_IMPL_H

#include "prov/tcp/tcp_ep.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "av/av.h"
#include "core/addr.h"
#include "core/fd.h"
#include "core/owned.h"
#include "core/fid.h"
#include "core/info.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "eq/eq.h"
#include "prov/common/atomic.h"
#include "prov/common/cm_engine.h"
#include "prov/common/comp_batch.h"
#include "prov/common/ep_base.h"
#include "prov/common/match.h"
#include "prov/common/progress.h"
#include "prov/common/rx.h"
#include "prov/common/srx.h"
#include "prov/common/xfer.h"
#include "prov/tcp/auth.h"
#include "prov/tcp/frame.h"

namespace wu::tcp::detail {

using prov::max_iov;

constexpr size_t rbuf_size = 64 * 1024;

/* Bodies at least this large skip the staging buffer (readv into the
 * destination) once it is drained. */
constexpr size_t direct_read_min = 4096;

/* With at most this many connections, all established, progress reads the
 * sockets directly: one recv finds and takes a message where epoll_wait
 * plus recv cost two system calls on the latency path.  epoll_wait then
 * runs only every epoll_interval_ns, for the listener (new peers). */
constexpr size_t direct_poll_max = 4;

constexpr int64_t epoll_interval_ns = 20000;

/* Size of the first socket read of a progress pass (see read_conn). */
constexpr size_t first_read = 8192;

/* Sends up to this size go out as one flat buffer (header + payload). */
constexpr size_t small_send_max = 256;

constexpr uint32_t ep_magic = 0x57555445;  /* "WUTE" */

constexpr uint32_t pep_magic = 0x57555450; /* "WUTP" */

constexpr uint32_t cr_magic = 0x57555443;  /* "WUTC" */

inline int64_t now_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

inline int64_t now_ms()
{
	return now_ns() / 1000000;
}

inline std::atomic<uint64_t> st_refused{0}, st_bad_frames{0}, st_connects{0}, st_rndv{0}, st_staged{0},
	st_timeouts{0}, st_silent{0};

inline fi_provider *P() noexcept
{
	return prov_desc();
}

/* The process-wide connection-management thread (prov/common/cm_engine.h). */
using prov::cm_engine;
using prov::watch;

/* ---------------------------------------------------------------- */
/* Operations, connections, endpoint.                                */

using prov::op_kind;
using prov::OP_SEND;
using prov::OP_RECV;
using prov::OP_WRITE;
using prov::OP_READ;
using prov::OP_ATOMIC;
using prov::OP_FETCH;

/* The operation record (prov/common/rx.h): receives, sends, RMA, atomics. */
using prov::op;
using prov::new_op;
using prov::slice;
using prov::copy_to_op;

/* An unexpected message (the matching engine's cookie for it): its staged
 * body, or a rendezvous request.  Each endpoint lists its own (live). */
struct unexp {
	unexp *prev = nullptr, *next = nullptr; /* the endpoint's live list */
	match::unexpected *qe = nullptr; /* its entry in the engine (queued or held) */
	bool held = false;               /* FI_PEEK | FI_CLAIM holds it */
	std::string peer;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	bool tagged = false, has_data = false;
	uint64_t tag = 0, data = 0;
	size_t len = 0;
	owned<char[]> buf; /* not unique_ptr: tcp_ep embeds an unexp (owned.h) */
	bool done = false;     /* body fully arrived */
	op *claimed = nullptr; /* matched before its body arrived */
	size_t claim_off = 0, claim_into = 0;
	struct conn *from = nullptr;
	bool rts = false;  /* a rendezvous request: no body here, the sender waits for CTS */
	uint64_t rts_id = 0;
	int claim_err = 0;         /* its connection died before FI_CLAIM took it */
	uint64_t credit = 0;       /* eager-window bytes it holds, given back when freed */
	uint64_t credit_conn = 0;  /* serial of the connection they go back to */
	uint64_t ux_cost = 0;      /* outside the window: its share of that connection's ux_held */
	bool counted = false;      /* a message: one of that connection's ux_count */
};

/* A rendezvous this side cleared (CTS written): where its RDATA lands. */
struct rndv_rx {
	op *o = nullptr;
	size_t off = 0;  /* offset in o's buffer */
	size_t into = 0; /* bytes that fit */
	size_t len = 0;  /* message length */
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	bool tagged = false, has_data = false;
	uint64_t tag = 0, data = 0;
};

enum tx_after : uint8_t {
	AFTER_NONE,
	AFTER_COMPLETE, /* send done: complete the op */
	AFTER_PENDING,  /* RMA: wait for WRITE_ACK / READ_RESP */
	AFTER_CLOSE,    /* refusal: close the connection once written */
};

struct txitem {
	unsigned char hdr[frame::hdr_size];
	iovec iov[max_iov + 1];
	int cnt = 0;
	size_t left = 0;
	op *o = nullptr;
	tx_after after = AFTER_NONE;
	bool control = false; /* may go out before the handshake completes */
	std::unique_ptr<char[]> owned;
	mr::ref mref; /* READ_RESP: the region its payload is read from */
};

enum conn_state : uint8_t {
	C_CONNECTING, /* outgoing connect in flight */
	C_HELLO_WAIT, /* outgoing, HELLO sent, waiting for HELLO_ACK */
	C_ACCEPTING,  /* incoming, waiting for HELLO */
	C_CM_WAIT,    /* MSG active side: CONNREQ sent, waiting ACCEPT/REJECT */
	C_READY,
	C_LOST,       /* lost a simultaneous connect: placeholder for queued sends */
	C_BACKOFF,    /* outgoing RDM connect refused: no socket, dialed again at retry_at */
	C_CLOSED,
};

/* B_READRESP also takes ATOMIC_RESP's old values; B_ATOMIC stages ATOMIC operands in small. */
enum body_kind : uint8_t { B_NONE, B_RECV, B_UNEXP, B_WRITE, B_READRESP, B_SMALL, B_DISCARD, B_RNDV, B_ATOMIC };

struct tcp_ep;

struct conn {
	unique_fd fd;
	tcp_ep *ep = nullptr;
	conn_state state = C_CONNECTING;
	bool outgoing = false;
	bool in_map = false;
	bool want_out = false;
	bool in_epoll = false; /* registered in ep->epfd (not while polled directly) */
	bool msg = false; /* the connection of a MSG endpoint */
	std::string peer;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	std::deque<txitem *> txq;
	std::unordered_map<uint64_t, op *> pending; /* RMA ops awaiting replies, sends awaiting CTS */
	std::unordered_map<uint64_t, rndv_rx> rv_wait; /* CTS written, RDATA not yet here */
	rndv_rx rv;                                    /* the RDATA body being read */
	/* receive side */
	std::unique_ptr<char[]> rbuf = std::make_unique_for_overwrite<char[]>(rbuf_size);
	size_t rpos = 0, rend = 0;
	bool drained = false; /* a read this pass came back short: the socket is empty */
	bool in_body = false;
	frame::header h;
	body_kind bk = B_NONE;
	iovec tgt[max_iov];
	size_t tgt_cnt = 0;
	size_t body_into = 0;    /* bytes of this body that land in tgt */
	size_t body_trunc = 0;   /* bytes of this body dropped (truncation) */
	size_t body_left = 0;    /* bytes still to land in tgt */
	size_t discard_left = 0; /* then bytes to drop */
	op *rop = nullptr;
	unexp *ux = nullptr;
	void *seg = nullptr; /* where this body starts in rop's buffer */
	int body_err = 0;
	mr::ref wref; /* B_WRITE: the region the body lands in */
	size_t rts_held = 0; /* RTS received here and not yet cleared (grant) */
	std::string small;
	watch cmw; /* MSG: the cm engine's watch on this fd */
	bool cm_watched = false;
	int64_t deadline = 0; /* outgoing: connect + handshake must end by then (now_ms) */
	int64_t retry_at = 0; /* C_BACKOFF */
	int retry_ms = 0;     /* C_BACKOFF: the current backoff step */
	/* A TCP connect to the peer succeeded once: its listener existed, so a
	 * refusal now means it is gone, not that it does not listen yet. */
	bool reached = false;
	uint64_t serial = 0;  /* unique in the endpoint: CREDIT finds its connection by it */
	/* Eager window (frame.h): what the peer lets us send without RTS, what
	 * it announced, and the bytes of ours it holds that we have not given back. */
	uint64_t tx_credit = 0, tx_window = 0;
	uint64_t rx_out = 0;      /* window bytes received and not yet given back */
	/* Unexpected messages outside the window held here (bytes + ux_overhead
	 * each): past FI_TCP_UNEXP_LIMIT this connection is not read until
	 * receives take some (TCP flow control then holds the sender). */
	uint64_t ux_held = 0;
	/* Unexpected messages from it held here, window or not: past
	 * FI_TCP_UNEXP_MSGS it is not read either (a flood of small ones). */
	uint64_t ux_count = 0;
	bool rx_paused = false;
	bool rx_ended = false; /* the peer shut its side: what is left is bounded, read it all */
	uint64_t credit_owed = 0; /* of those, released here: they go with the next frame */
	/* Handshake (auth.h): nothing leaves an outgoing connection before the
	 * peer's CHALLENGE; a MSG connect keeps its private data until then. */
	auth::session an;
	bool chal_wait = false;
	std::string cm_param;
	/* Incoming, not authenticated yet: in ep->unauth; from_ip is the
	 * source address it counts against (FI_TCP_AUTH_PENDING_PER_ADDR). */
	bool unauth = false;
	std::string from_ip;
};

struct tcp_connreq;
struct tcp_ep;

/* What an endpoint holds for incoming connections that have not proven the
 * job key yet (issue 32: a flood of idle connections must not take the
 * job's descriptors): FI_TCP_AUTH_TIMEOUT to do it, at most
 * FI_TCP_AUTH_PENDING of them, FI_TCP_AUTH_PENDING_PER_ADDR from one
 * source address; the oldest is closed to make room. */
struct auth_limits {
	int timeout_ms = 30000;
	size_t pending = 64, per_addr = 16;
	static auth_limits from_params();
	/* Zero counts replaced by their defaults for a process allowed
	 * fd_limit descriptors. */
	auth_limits resolve(size_t fd_limit) const;
};
/* The process's soft RLIMIT_NOFILE. */
size_t descriptor_limit();

/* Of the pending connections whose source addresses are `from` (oldest
 * first), which to close (their indices) so that one more from `ip` fits `lim`. */
std::vector<size_t> over_auth_limits(const std::vector<const std::string *> &from, const std::string &ip,
				     const auth_limits &lim);
/* Counts and logs (rate limited) a connection closed to make room. */
void note_unauth_drop(const std::string &from, const std::string &to, const auth_limits &lim);
/* A connection's source address without its port (over_auth_limits). */
std::string source_ip(const sockaddr_storage &ss, socklen_t len);

/* The endpoint as the matching engine's transport (recv.cpp). */
struct ep_transport final : prov::rx_transport {
	tcp_ep *ep = nullptr;
	void start(match::engine &e, match::recv *r, const match::message &m, size_t off, size_t into) override;
	void drop(match::engine &e, const match::message &m) override;
	fi_addr_t resolve(const match::message &m) override;
	prov::rx_info describe(const match::message &m) override;
	void hold(const match::message &m) override;
};

struct tcp_ep {
	fid_ep ep; /* first */
	uint32_t magic;
	/* Lock, info, bindings, enable state, completions (prov/common/ep_base.h). */
	prov::ep_base b;
	sockaddr_storage src{};
	socklen_t srclen = 0;
	std::string self; /* listening address key (RDM) */
	unique_fd lfd;
	unique_fd epfd;
	std::unordered_map<std::string, conn *> peers;
	std::vector<conn *> conns;
	std::vector<conn *> dead;
	/* conns.size(), stored under the lock wherever it changes and read
	 * without it (sub_ops::busy): 0 means only the listener needs progress. */
	std::atomic<size_t> n_conns{0};
	/* Receive matching: the endpoint's own engine, or the one of the
	 * shared receive context it is bound to (prov/common/srx.h; srx.cpp). */
	prov::rx_ctx own_rx;
	prov::rx_ctx *rx = &own_rx;
	prov::srx *srx = nullptr;
	owned<ep_transport> tp = make_owned<ep_transport>(); /* by pointer: tcp_ep stays standard-layout */
	unexp ux_live; /* list head: this endpoint's unexpected messages (queued or held) */
	uint64_t next_id = 1;
	uint64_t next_token = 1;
	size_t rndv_size = 65536;
	uint64_t eager_window = 0; /* FI_TCP_EAGER_WINDOW: announced to every peer */
	uint64_t ux_limit = 0;     /* FI_TCP_UNEXP_LIMIT: per connection, 0 = none */
	uint64_t ux_msgs = 0;      /* FI_TCP_UNEXP_MSGS: per connection, 0 = none */
	uint64_t next_serial = 1;
	int conn_timeout_ms = 10000;
	auth_limits alim;
	std::deque<conn *> unauth; /* incoming, not authenticated yet, oldest first */
	int linger_ms = 10000; /* FI_TCP_LINGER: ep_close waits this long for a stalled peer */
	size_t tx_inflight = 0;
	auth::key key;
	/* MSG */
	/* A socket taken from a passive endpoint (fi_endpoint with info->handle
	 * a bound, not listening pep, as fi_getinfo(3) allows): src is its
	 * address and fi_connect connects from it. */
	unique_fd bound;
	conn *mc = nullptr;
	tcp_connreq *cr = nullptr;
	bool connected = false, shut = false;
	bool backlog = false; /* some connection stopped with bytes staged */
	prov::auto_runner autop; /* FI_PROGRESS_AUTO: epfd and a next_deadline timer on the engine */
	bool want_auto = false; /* fi_trywait on a bound CQ/counter: the application blocks */
	/* RDM: listening address of each fi_addr used so far (fi_av_remove
	 * drops the entry and closes that peer's connection). */
	struct fa_entry {
		std::string key;
		uint64_t stamp = 0; /* av::entry_stamp when looked up (shared AVs) */
	};
	std::unordered_map<fi_addr_t, fa_entry> fa_peer;
	/* Connect timeout: earliest deadline of a connection still being
	 * set up (0: none); MSG arms tfd so the cm thread notices. */
	int64_t next_deadline = 0;
	unique_fd tfd;
	watch tw;
	bool direct = false;	/* connections polled directly (poll_direct) */
	int64_t last_epoll = 0; /* now_ns of the last epoll_wait while direct */
	unsigned busy_passes = 0; /* direct passes in a row that read something */
	uint64_t reads = 0;	/* successful socket reads (direct polling's "found data") */
	/* RDM: the connection the last send to last_fa used (conn_for); reset
	 * whenever connections are reaped or the AV drops an address. */
	fi_addr_t last_fa = FI_ADDR_NOTAVAIL;
	conn *last_conn = nullptr;
	uint64_t last_stamp = 0;
};

/* For a shared AV: has another process removed or replaced fi_addr's
 * entry since it was looked up (stamp)? */
inline bool stale(tcp_ep *ep, fi_addr_t addr, uint64_t stamp)
{
	return ep->b.av_shared && av::entry_stamp(ep->b.av, addr) != stamp;
}

struct tcp_pep {
	fid_pep pep; /* first */
	uint32_t magic;
	prov::fabric *fab;
	child_ref parent; /* on fab->children */
	fi_info *info;
	fid_eq *eq = nullptr;
	prov::bound_ref eq_ref; /* holds the binding of eq */
	unique_fd lfd;
	bool listening = false;
	watch w;
	std::mutex mtx;
	std::unordered_set<tcp_connreq *> reqs;
	unique_fd tfd; /* sweeps requests whose CONNREQ never came (FI_TCP_AUTH_TIMEOUT) */
	watch tw;
	auth_limits alim; /* from fi_listen on; its timeout_ms sweeps requests not yet reported */
	uint64_t next_seq = 0; /* orders requests by age */
	bool paused = false; /* not accepting: the EQ has no room (cm thread only) */
	auth::key key;
};

struct tcp_connreq {
	fid fid_; /* first: what CONNREQ's info->handle points at */
	uint32_t magic;
	tcp_pep *pep;
	unique_fd fd;
	watch w;
	std::string in; /* header + private data being read */
	sockaddr_storage peer{};
	socklen_t peerlen = 0;
	bool reported = false;
	int64_t born = 0; /* accepted at (now_ms) */
	uint64_t seq = 0;  /* order of acceptance */
	std::string from_ip; /* source address without port */
	auth::session an;  /* ours from CHALLENGE, the connector's from CONNREQ */
};

inline tcp_ep *ep_of(fid_ep *e) noexcept
{
	if (!e)
		return nullptr;
	auto *t = container_of_fid<tcp_ep>(e);
	return t->magic == ep_magic ? t : nullptr;
}

inline tcp_ep *ep_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_EP)
		return nullptr;
	return ep_of(reinterpret_cast<fid_ep *>(f));
}

template <class F>
ssize_t ep_call(fid_ep *e, const char *where, F &&fn) noexcept
{
	return guard(where, [&]() -> ssize_t {
		tcp_ep *ep = ep_of(e);
		if (!ep)
			return -FI_EINVAL;
		return fn(ep);
	});
}

/* ---------------------------------------------------------------- */
/* Functions one file calls in another.                               */

/* conn.cpp */
std::string addr_key(const void *a, size_t len);
std::string addr_text(const std::string &k);
void set_nonblock_nodelay(int fd);
void local_cc(int fd, const sockaddr *peer);
conn *new_conn(tcp_ep *ep, int fd, bool outgoing, conn_state st);
void post_cm_error(tcp_ep *ep, int err, const std::string &data);
void post_cm_event(tcp_ep *ep, uint32_t event, const void *data, size_t len);
void conn_fail(tcp_ep *ep, conn *c, int err, const char *why, bool quiet_cm = false);
void authenticated(tcp_ep *ep, conn *c);
void reap(tcp_ep *ep);
inline void conns_changed(tcp_ep *ep)
{
	ep->n_conns.store(ep->conns.size(), std::memory_order_relaxed);
}
void arm_auto_timer(tcp_ep *ep);
void arm_deadline(tcp_ep *ep, conn *c, int ms);
void note_progress(tcp_ep *ep, conn *c);
void tcp_connected(tcp_ep *ep, conn *c);
/* Why a connection to a peer that once accepted and now refuses failed. */
inline constexpr const char *refused_after_answer = "refused after it had answered: its endpoint is gone";
inline void arm_deadline(tcp_ep *ep, conn *c)
{
	arm_deadline(ep, c, ep->conn_timeout_ms);
}
/* A new incoming connection (accept_all): counted against FI_TCP_AUTH_*,
 * the oldest pending ones closed to make room, its deadline armed. */
void admit_incoming(tcp_ep *ep, conn *c, const sockaddr_storage &from, socklen_t len);
/* An outgoing RDM connection the peer closed before its handshake ended
 * (it may have been dropped as the oldest of a flood of unauthenticated
 * connections): dialed again within FI_TCP_CONN_TIMEOUT.  False if it is
 * not such a connection. */
bool redial_closed(tcp_ep *ep, conn *c);
bool may_retry(const conn *c);
void backoff(tcp_ep *ep, conn *c);
void check_deadlines(tcp_ep *ep);
conn *conn_for(tcp_ep *ep, fi_addr_t addr, int *err);
void send_challenge(tcp_ep *ep, conn *c);
void on_challenge(tcp_ep *ep, conn *c);
void on_hello(tcp_ep *ep, conn *c);
void on_hello_ack(tcp_ep *ep, conn *c);
bool cm_answer_proven(tcp_ep *ep, conn *c);

/* comp.cpp */
void push_comp(tcp_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err = 0,
	       size_t olen = 0, const void *err_data = nullptr, size_t err_len = 0);
void flush(tcp_ep *ep) noexcept;
void complete_tx(tcp_ep *ep, op *o, int err);
fi_addr_t src_of(tcp_ep *ep, conn *c);
/* A receive's completion on ep (prov::complete_rx). */
inline void complete_rx(tcp_ep *ep, op *o, const prov::rx_end &e)
{
	prov::complete_rx(ep->b, o, e);
}

/* recv.cpp */
bool directed(tcp_ep *ep);
void forget_claims(tcp_ep *ep, conn *c, int err);
void ux_link(tcp_ep *ep, unexp *u);
void ux_unlink(unexp *u);
bool rx_done(tcp_ep *ep, op *o);
int rx_arrive(tcp_ep *ep, bool tagged, const match::message &m, match::match_result *res);
void drop_conn_unexp(tcp_ep *ep, conn *c);
void av_forget_unexp(tcp_ep *ep, fi_addr_t fa);
/* c's peer is gone (c broke after its handshake, or its address refused
 * us for FI_TCP_CONN_TIMEOUT): receives directed at it fail with
 * FI_EHOSTDOWN (rx_ctx::peer_down).  After conn_fail(c). */
void peer_gone(tcp_ep *ep, conn *c);
/* c finished its handshake: its peer is alive (rx_ctx::peer_up). */
void peer_back(tcp_ep *ep, conn *c);
void free_rx_state(tcp_ep *ep);
op *cancel_recv(tcp_ep *ep, void *context);
/* The FI_ECANCELED completion of a receive taken off its engine by fi_cancel. */
void complete_canceled(tcp_ep *ep, op *o);
void ux_queued(tcp_ep *ep, unexp *u, match::unexpected *qe);
void ux_unqueue(tcp_ep *ep, match::unexpected *qe);
void ux_drop(tcp_ep *ep, unexp *u);
/* Every receive of an endpoint (the msg and tagged tables' recv slot):
 * FI_PEEK/FI_CLAIM/FI_DISCARD on fi_trecvmsg, else posted to the engine
 * (or the bound srx's). */
ssize_t do_recv(tcp_ep *ep, const prov::msg_xfer &x);
ssize_t peek_claim(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags);

/* proto.cpp */
void want_out(tcp_ep *ep, conn *c, bool on);
/* The epoll events a connection waits for (EPOLLIN unless paused). */
uint32_t conn_events(const conn *c);
/* Stops / resumes reading c (FI_TCP_UNEXP_LIMIT). */
void rx_pause(tcp_ep *ep, conn *c);
void rx_resume(tcp_ep *ep, conn *c);
/* Bytes of per-message bookkeeping an unexpected message is charged beside its payload. */
inline constexpr uint64_t ux_overhead = 64;
/* Whether c holds more unexpected messages than the endpoint takes from one
 * peer (FI_TCP_UNEXP_LIMIT bytes, FI_TCP_UNEXP_MSGS messages): it is not
 * read then, and read again once both are back to half. */
inline bool ux_over(const tcp_ep *ep, const conn *c) noexcept
{
	return (ep->ux_limit && c->ux_held > ep->ux_limit) || (ep->ux_msgs && c->ux_count >= ep->ux_msgs);
}
inline bool ux_half(const tcp_ep *ep, const conn *c) noexcept
{
	return (!ep->ux_limit || c->ux_held <= ep->ux_limit / 2) && (!ep->ux_msgs || c->ux_count <= ep->ux_msgs / 2);
}
bool flush_tx(tcp_ep *ep, conn *c);
txitem *make_item(const frame::header &h, const iovec *iov, size_t cnt);
txitem *control_item(frame::header h, const void *payload = nullptr, size_t plen = 0);
txitem *control_item(uint8_t type, uint64_t id, uint64_t data, const void *payload = nullptr,
		     size_t plen = 0);
bool enqueue(tcp_ep *ep, conn *c, txitem *t);
void free_unexp(tcp_ep *ep, unexp *u);
void on_msg(tcp_ep *ep, conn *c);
void grant(tcp_ep *ep, conn *c, uint64_t send_id, const rndv_rx &r);
void on_rts(tcp_ep *ep, conn *c);
void on_cts(tcp_ep *ep, conn *c);
void on_rdata(tcp_ep *ep, conn *c);
void own_payload(txitem *t, const iovec *iov, size_t cnt, size_t total);
conn *tx_conn(tcp_ep *ep, fi_addr_t dest, ssize_t *err);
void queue_pending(tcp_ep *ep, conn *c, txitem *t, op *o);
uint64_t msg_limit(const tcp_ep *ep);
ssize_t too_long(const tcp_ep *ep, const char *what, size_t total);
ssize_t do_send(tcp_ep *ep, const prov::msg_xfer &x);

/* reader.cpp */
bool protocol_error(tcp_ep *ep, conn *c, const char *what);
void start_body(conn *c, body_kind k, size_t into, size_t discard);
void read_conn(tcp_ep *ep, conn *c);
void accept_all(tcp_ep *ep);
void connect_done(tcp_ep *ep, conn *c);

/* rma.cpp */
void on_atomic(tcp_ep *ep, conn *c);
ssize_t do_rma(tcp_ep *ep, const prov::rma_xfer &x);
ssize_t do_atomic(tcp_ep *ep, const prov::atomic_xfer &a);
int atomic_valid(const char *where, atomic::kind k, fi_datatype dt, fi_op op, size_t *count);

/* progress.cpp */
void set_direct(tcp_ep *ep, bool on);
void progress_locked(tcp_ep *ep);
void progress_cb(void *arg) noexcept;
void av_removed(void *arg, fi_addr_t fa) noexcept;
void auto_progress(tcp_ep *ep);
void start_auto(tcp_ep *ep);
/* Under ep->b.mtx, enabled: true when finish_auto must follow, without it. */
bool begin_auto_locked(tcp_ep *ep);
void finish_auto(tcp_ep *ep);

/* msg_cm.cpp */
int put_name(const void *a, size_t n, void *addr, size_t *addrlen);
int open_listener(tcp_ep *ep);
bool take_sockaddr(const void *addr, size_t len, sockaddr_storage &out, socklen_t &outlen);
/* fi_endpoint with info->handle = pep f: takes its bound socket into fd
 * and its address into ss/l.  -FI_EINVAL when f is not a tcp pep,
 * -FI_EOPBADSTATE when it listens (logged). */
int take_pep_socket(fid *f, unique_fd &fd, sockaddr_storage &ss, socklen_t &l) noexcept;
bool write_all(int fd, const void *p, size_t n);
extern fi_ops_cm ep_cm_ops;

/* ep.cpp */
uint64_t tx_flags(tcp_ep *ep);

/* srx.cpp (the shared receive context itself: prov/common/srx.h) */
int srx_attach(tcp_ep *ep, prov::srx *srx, uint64_t flags);
void srx_detach(tcp_ep *ep);

/* pep.cpp */
void free_connreq(tcp_connreq *cr);
/* fi_getopt / fi_setopt of FI_OPT_CM_DATA_SIZE (endpoints and passive
 * endpoints alike): -FI_ENOPROTOOPT for another option. */
int cm_data_getopt(int name, void *val, size_t *len) noexcept;
int cm_data_setopt(int name, const void *val, size_t len) noexcept;

} // namespace wu::tcp::detail

#endif
