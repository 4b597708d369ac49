/* tcp provider endpoints: RDM (lazy connections keyed by the peer's
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
#include "config.h"
#ifdef WU_HAVE_PMIX
#include "pmix_glue/wireup.h"
#endif
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
#include "core/fid.h"
#include "core/info.h"
#include "core/log.h"
#include "core/param.h"
#include "core/shim.h"
#include "eq/eq.h"
#include "prov/common/atomic.h"
#include "prov/tcp/auth.h"
#include "prov/tcp/frame.h"

namespace wu::tcp {
namespace {

constexpr size_t max_iov = 4;
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

int64_t now_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

int64_t now_ms()
{
	return now_ns() / 1000000;
}

std::atomic<uint64_t> st_refused{0}, st_bad_frames{0}, st_connects{0}, st_rndv{0}, st_staged{0},
	st_timeouts{0}, st_silent{0};

fi_provider *P() noexcept
{
	return prov_desc();
}

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

std::string addr_text(const std::string &k)
{
	char buf[INET6_ADDRSTRLEN + 8] = "?";
	if (k.size() == sizeof(sockaddr_in)) {
		sockaddr_in s;
		memcpy(&s, k.data(), sizeof s);
		inet_ntop(AF_INET, &s.sin_addr, buf, sizeof buf);
		return std::string(buf) + ":" + std::to_string(ntohs(s.sin_port));
	}
	if (k.size() == sizeof(sockaddr_in6)) {
		sockaddr_in6 s;
		memcpy(&s, k.data(), sizeof s);
		inet_ntop(AF_INET6, &s.sin6_addr, buf, sizeof buf);
		return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s.sin6_port));
	}
	return buf;
}

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

/* ---------------------------------------------------------------- */
/* Process-wide connection-management thread.                        */

struct watch {
	void (*fn)(void *arg, uint32_t events) noexcept = nullptr;
	void *arg = nullptr;
};

class cm_engine {
public:
	static cm_engine &get()
	{
		/* Never destroyed: the thread may still be in epoll_wait at exit.
		 * A fork()ed child has no copy of the thread: it starts its own
		 * (the parent's engine is abandoned there). */
		static std::mutex m;
		static cm_engine *e = nullptr;
		static pid_t owner = 0;
		std::lock_guard<std::mutex> g(m);
		if (!e || owner != getpid()) {
			e = new cm_engine();
			owner = getpid();
		}
		return *e;
	}
	void add(watch *w, int fd, uint32_t ev)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		live_.insert(w);
		epoll_event e{};
		e.events = ev;
		e.data.ptr = w;
		if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &e) && errno == EEXIST)
			epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	void mod(watch *w, int fd, uint32_t ev)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		epoll_event e{};
		e.events = ev;
		e.data.ptr = w;
		epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &e);
	}
	/* After del returns the watch's function is not running and will not
	 * run again (callers must not hold an endpoint lock). */
	void del(watch *w, int fd)
	{
		std::lock_guard<std::recursive_mutex> g(mtx_);
		if (fd >= 0)
			epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
		live_.erase(w);
	}

private:
	cm_engine()
	{
		epfd_ = epoll_create1(EPOLL_CLOEXEC);
		if (epfd_ < 0)
			throw std::system_error(errno, std::generic_category(), "epoll_create1");
		std::thread([this] { run(); }).detach();
	}
	void run() noexcept
	{
		epoll_event ev[16];
		for (;;) {
			int n = epoll_wait(epfd_, ev, 16, -1);
			if (n < 0 && errno != EINTR)
				return;
			for (int i = 0; i < n; i++) {
				std::lock_guard<std::recursive_mutex> g(mtx_);
				auto *w = static_cast<watch *>(ev[i].data.ptr);
				if (live_.count(w))
					w->fn(w->arg, ev[i].events);
			}
		}
	}
	int epfd_ = -1;
	std::recursive_mutex mtx_;
	std::unordered_set<watch *> live_;
};

/* ---------------------------------------------------------------- */
/* Operations, connections, endpoint.                                */

/* OP_ATOMIC: fi_atomic family; OP_FETCH: fetch and compare families (old values come back). */
enum op_kind : uint8_t { OP_SEND, OP_RECV, OP_WRITE, OP_READ, OP_ATOMIC, OP_FETCH };

struct op {
	op_kind kind;
	bool tagged = false;
	bool want_comp = true; /* success completion to the CQ */
	void *context = nullptr;
	uint64_t flags = 0;
	iovec iov[max_iov];
	size_t iov_cnt = 0;
	size_t len = 0;
	fi_addr_t addr = FI_ADDR_UNSPEC;
	uint64_t tag = 0, ignore = 0, data = 0;
	uint64_t id = 0;
	size_t used = 0; /* FI_MULTI_RECV: bytes consumed */
	int busy = 0;    /* FI_MULTI_RECV: bodies still landing in it */
	bool discard = false; /* swallows a message dropped by FI_DISCARD */
};

/* A receive that a header matched, or an unexpected message's buffer. */
struct unexp {
	std::string peer;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	bool tagged = false, has_data = false;
	uint64_t tag = 0, data = 0;
	size_t len = 0;
	std::unique_ptr<char[]> buf;
	bool done = false;     /* body fully arrived */
	op *claimed = nullptr; /* matched before its body arrived */
	size_t claim_off = 0;
	struct conn *from = nullptr;
	bool rts = false;  /* a rendezvous request: no body here, the sender waits for CTS */
	uint64_t rts_id = 0;
	void *claim_ctx = nullptr; /* FI_PEEK | FI_CLAIM: the fi_context it is held for */
	int claim_err = 0;         /* its connection died before FI_CLAIM took it */
	uint64_t credit = 0;       /* eager-window bytes it holds, given back when freed */
	uint64_t credit_conn = 0;  /* serial of the connection they go back to */
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
	int fd = -1;
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
	std::unique_ptr<char[]> rbuf{new char[rbuf_size]};
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
	uint64_t serial = 0;  /* unique in the endpoint: CREDIT finds its connection by it */
	/* Eager window (frame.h): what the peer lets us send without RTS, what
	 * it announced, and the bytes of ours it holds that we have not given back. */
	uint64_t tx_credit = 0, tx_window = 0;
	uint64_t rx_out = 0;      /* window bytes received and not yet given back */
	uint64_t credit_owed = 0; /* of those, released here: they go with the next frame */
	/* Handshake (auth.h): nothing leaves an outgoing connection before the
	 * peer's CHALLENGE; a MSG connect keeps its private data until then. */
	auth::nonces an;
	bool chal_wait = false;
	std::string cm_param;
};

struct pcomp {
	fid_cq *cq = nullptr;
	fid_cntr *cntr = nullptr;
	cq::completion c;
	int err = 0;
	size_t olen = 0;
	std::string err_data;
};

struct tcp_connreq;

struct tcp_ep {
	fid_ep ep; /* first */
	uint32_t magic;
	prov::domain *dom;
	fi_info *info;
	fi_ep_type type;
	std::mutex mtx;
	bool enabled = false;
	fid_cq *tx_cq = nullptr, *rx_cq = nullptr;
	bool tx_sel = false, rx_sel = false;
	fid_cntr *c_send = nullptr, *c_recv = nullptr, *c_read = nullptr, *c_write = nullptr,
		 *c_rread = nullptr, *c_rwrite = nullptr;
	fid_av *av = nullptr;
	fid_eq *eq = nullptr;
	sockaddr_storage src{};
	socklen_t srclen = 0;
	std::string self; /* listening address key (RDM) */
	int lfd = -1;
	int epfd = -1;
	std::unordered_map<std::string, conn *> peers;
	std::vector<conn *> conns;
	std::vector<conn *> dead;
	std::deque<op *> rq_msg, rq_tag;
	std::deque<unexp *> ux_msg, ux_tag;
	std::unordered_set<unexp *> claimed_ux; /* FI_PEEK | FI_CLAIM, awaiting FI_CLAIM */
	std::vector<pcomp> comps;
	bool flushing = false;
	size_t min_multi_recv = 64;
	uint64_t next_id = 1;
	uint64_t next_token = 1;
	size_t rndv_size = 65536;
	uint64_t eager_window = 0; /* FI_TCP_EAGER_WINDOW: announced to every peer */
	uint64_t next_serial = 1;
	int conn_timeout_ms = 10000;
	int linger_ms = 10000; /* FI_TCP_LINGER: ep_close waits this long for a stalled peer */
	size_t tx_inflight = 0, rx_posted = 0;
	auth::key key;
	/* MSG */
	conn *mc = nullptr;
	tcp_connreq *cr = nullptr;
	bool connected = false, shut = false;
	bool backlog = false; /* some connection stopped with bytes staged */
	watch autow; /* FI_PROGRESS_AUTO: engine watch on epfd */
	bool auto_progress = false;
	bool want_auto = false; /* fi_trywait on a bound CQ/counter: the application blocks */
	int atfd = -1; /* FI_PROGRESS_AUTO: wakes the engine at next_deadline */
	watch atw;
	/* RDM: listening address of each fi_addr used so far (fi_av_remove
	 * drops the entry and closes that peer's connection). */
	struct fa_entry {
		std::string key;
		uint64_t stamp = 0; /* av::entry_stamp when looked up (shared AVs) */
	};
	std::unordered_map<fi_addr_t, fa_entry> fa_peer;
	bool av_watched = false;
	bool av_shared = false; /* other processes may change entries (av::is_shared) */
	/* Connect timeout: earliest deadline of a connection still being
	 * set up (0: none); MSG arms tfd so the cm thread notices. */
	int64_t next_deadline = 0;
	int tfd = -1;
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
bool stale(tcp_ep *ep, fi_addr_t addr, uint64_t stamp)
{
	return ep->av_shared && av::entry_stamp(ep->av, addr) != stamp;
}

struct tcp_pep {
	fid_pep pep; /* first */
	uint32_t magic;
	prov::fabric *fab;
	fi_info *info;
	fid_eq *eq = nullptr;
	int lfd = -1;
	bool listening = false;
	watch w;
	std::mutex mtx;
	std::unordered_set<tcp_connreq *> reqs;
	int tfd = -1; /* sweeps requests whose CONNREQ never came (FI_TCP_CONN_TIMEOUT) */
	watch tw;
	int timeout_ms = 0;
	bool paused = false; /* not accepting: the EQ has no room (cm thread only) */
	auth::key key;
};

struct tcp_connreq {
	fid fid_; /* first: what CONNREQ's info->handle points at */
	uint32_t magic;
	tcp_pep *pep;
	int fd;
	watch w;
	std::string in; /* header + private data being read */
	sockaddr_storage peer{};
	socklen_t peerlen = 0;
	bool reported = false;
	int64_t born = 0; /* accepted at (now_ms) */
	auth::nonces an;  /* ours from CHALLENGE, the connector's from CONNREQ */
};

tcp_ep *ep_of(fid_ep *e) noexcept
{
	if (!e)
		return nullptr;
	auto *t = container_of_fid<tcp_ep>(e);
	return t->magic == ep_magic ? t : nullptr;
}
tcp_ep *ep_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_EP)
		return nullptr;
	return ep_of(reinterpret_cast<fid_ep *>(f));
}

/* ---- completions ---- */

void push_comp(tcp_ep *ep, fid_cq *cq, fid_cntr *cntr, const cq::completion &c, int err = 0,
	       size_t olen = 0, const void *err_data = nullptr, size_t err_len = 0)
{
	if (!cq && !cntr)
		return;
	/* Nothing queued ahead and nobody posting: a CQ that takes no other
	 * lock gets it now, sparing the hand-off through flush (latency). */
	if (!err && !cntr && ep->comps.empty() && !ep->flushing && cq::post_is_leaf(cq) &&
	    cq::post(cq, c) == 0)
		return;
	pcomp p;
	p.cq = cq;
	p.cntr = cntr;
	p.c = c;
	p.err = err;
	p.olen = olen;
	if (err_len)
		p.err_data.assign(static_cast<const char *>(err_data), err_len);
	ep->comps.push_back(std::move(p));
}

/* Posts collected completions; called without ep->mtx.  One thread posts
 * at a time so a CQ sees an endpoint's completions in order. */
void flush(tcp_ep *ep) noexcept
{
	for (;;) {
		std::vector<pcomp> batch;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			if (ep->comps.empty() || ep->flushing)
				return;
			ep->flushing = true;
			batch.swap(ep->comps);
		}
		std::vector<pcomp> retry;
		for (pcomp &p : batch) {
			if (p.cq) {
				int r = p.err ? cq::post_error(p.cq, p.c, p.err, -p.err, p.olen,
							       p.err_data.empty() ? nullptr : p.err_data.data(),
							       p.err_data.size())
					      : cq::post(p.cq, p.c);
				if (r == -FI_EOVERRUN) {
					retry.push_back(std::move(p));
					continue;
				}
			}
			if (p.cntr) {
				if (p.err)
					cntr::add_err(p.cntr, 1);
				else
					cntr::add(p.cntr, 1);
			}
		}
		std::lock_guard<std::mutex> g(ep->mtx);
		ep->flushing = false;
		if (!retry.empty()) {
			/* CQ full: keep them, in order, for the next progress call. */
			retry.insert(retry.end(), std::make_move_iterator(ep->comps.begin()),
				     std::make_move_iterator(ep->comps.end()));
			ep->comps.swap(retry);
			return;
		}
		if (ep->comps.empty()) {
			batch.clear(); /* hand the storage back: no allocation next time */
			ep->comps.swap(batch);
			return;
		}
	}
}

fid_cntr *tx_cntr(tcp_ep *ep, const op *o)
{
	switch (o->kind) {
	case OP_SEND: return ep->c_send;
	case OP_WRITE:
	case OP_ATOMIC: return ep->c_write;
	case OP_READ:
	case OP_FETCH: return ep->c_read;
	default: return ep->c_recv;
	}
}

uint64_t op_comp_flags(const op *o)
{
	switch (o->kind) {
	case OP_SEND: return FI_SEND | (o->tagged ? FI_TAGGED : FI_MSG);
	case OP_RECV: return FI_RECV | (o->tagged ? FI_TAGGED : FI_MSG);
	case OP_WRITE: return FI_RMA | FI_WRITE;
	case OP_READ: return FI_RMA | FI_READ;
	case OP_ATOMIC: return FI_ATOMIC | FI_WRITE;
	case OP_FETCH: return FI_ATOMIC | FI_READ;
	}
	return 0;
}

/* Completes a transmit-side op (send/write/read) and frees it. */
void complete_tx(tcp_ep *ep, op *o, int err)
{
	cq::completion c;
	c.op_context = o->context;
	c.flags = op_comp_flags(o);
	c.len = o->kind == OP_READ ? o->len : 0;
	fid_cq *cq = (err || o->want_comp) ? ep->tx_cq : nullptr;
	if (err)
		c.len = 0;
	push_comp(ep, cq, tx_cntr(ep, o), c, err);
	if (ep->tx_inflight)
		ep->tx_inflight--;
	delete o;
}

fi_addr_t src_of(tcp_ep *ep, conn *c)
{
	if (ep->type != FI_EP_RDM || !ep->av)
		return FI_ADDR_NOTAVAIL;
	if (c && c->src == FI_ADDR_NOTAVAIL && !c->peer.empty()) {
		c->src = av::reverse(ep->av, c->peer.data(), c->peer.size());
		if (c->src != FI_ADDR_NOTAVAIL)
			ep->fa_peer.emplace(c->src, tcp_ep::fa_entry{c->peer, ep->av_shared ? av::entry_stamp(ep->av, c->src) : 0});
	}
	return c ? c->src : FI_ADDR_NOTAVAIL;
}

/* Completes a receive of len bytes at buf (olen: bytes truncated). */
void complete_rx(tcp_ep *ep, op *o, void *buf, size_t len, fi_addr_t src, bool tagged, uint64_t tag,
		 bool has_data, uint64_t data, size_t olen, int err, bool release)
{
	if (o->discard) [[unlikely]] {
		if (release) {
			if (ep->rx_posted)
				ep->rx_posted--;
			delete o;
		}
		return;
	}
	cq::completion c;
	c.op_context = o->context;
	c.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0);
	c.len = len;
	c.buf = buf;
	c.data = has_data ? data : 0;
	c.tag = tagged ? tag : 0;
	c.src_addr = src == FI_ADDR_NOTAVAIL || !ep->av ? FI_ADDR_NOTAVAIL : av::source_id(ep->av, src);
	if (release && (o->flags & FI_MULTI_RECV))
		c.flags |= FI_MULTI_RECV;
	push_comp(ep, (err || o->want_comp) ? ep->rx_cq : nullptr, ep->c_recv, c, err, olen);
	if (release) {
		if (ep->rx_posted)
			ep->rx_posted--;
		delete o;
	}
}

size_t op_room(const op *o)
{
	return o->len - o->used;
}

/* A multi-recv buffer is released once less than min_multi_recv is left. */
bool multi_spent(tcp_ep *ep, const op *o)
{
	return op_room(o) < ep->min_multi_recv;
}

/* ---- matching ---- */

bool tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
	return ((want ^ got) & ~ignore) == 0;
}

bool directed(tcp_ep *ep)
{
	return ep->type == FI_EP_RDM && (ep->info->caps & FI_DIRECTED_RECV);
}

bool recv_matches(tcp_ep *ep, op *o, bool tagged, uint64_t tag, fi_addr_t src)
{
	if (tagged && !tag_match(o->tag, o->ignore, tag))
		return false;
	if (directed(ep) && o->addr != FI_ADDR_UNSPEC && o->addr != src)
		return false;
	return true;
}

/* Points tgt at [off, off+n) of the op's iovecs; returns the count. */
size_t slice(const op *o, size_t off, size_t n, iovec *tgt)
{
	size_t k = 0;
	for (size_t i = 0; i < o->iov_cnt && n; i++) {
		size_t l = o->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = std::min(l - off, n);
		tgt[k].iov_base = static_cast<char *>(o->iov[i].iov_base) + off;
		tgt[k].iov_len = take;
		k++;
		n -= take;
		off = 0;
	}
	return k;
}

size_t copy_to_op(op *o, size_t off, const char *src, size_t n)
{
	iovec t[max_iov];
	size_t k = slice(o, off, n, t), done = 0;
	for (size_t i = 0; i < k; i++) {
		memcpy(t[i].iov_base, src + done, t[i].iov_len);
		done += t[i].iov_len;
	}
	return done;
}

/* ---- transmit ---- */

void conn_fail(tcp_ep *ep, conn *c, int err, const char *why, bool quiet_cm = false);
void progress_locked(tcp_ep *ep);

void want_out(tcp_ep *ep, conn *c, bool on)
{
	if (c->want_out == on || c->fd < 0)
		return;
	c->want_out = on;
	if (!c->in_epoll)
		return; /* polled directly: the flag is applied when it is registered again */
	epoll_event e{};
	e.events = EPOLLIN | (on ? uint32_t(EPOLLOUT) : 0u);
	e.data.ptr = c;
	epoll_ctl(ep->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

void tx_done(tcp_ep *ep, conn *c, txitem *t)
{
	switch (t->after) {
	case AFTER_COMPLETE:
		complete_tx(ep, t->o, 0);
		break;
	case AFTER_PENDING:
		c->pending[t->o->id] = t->o;
		break;
	case AFTER_CLOSE:
		delete t;
		conn_fail(ep, c, 0, nullptr);
		return;
	case AFTER_NONE:
		break;
	}
	delete t;
}

/* Drops the first n bytes (fewer than t->left) of an item: partial write. */
void advance(txitem *t, size_t n)
{
	t->left -= n;
	int k = 0;
	while (n > 0) {
		if (n >= t->iov[k].iov_len) {
			n -= t->iov[k].iov_len;
			k++;
		} else {
			t->iov[k].iov_base = static_cast<char *>(t->iov[k].iov_base) + n;
			t->iov[k].iov_len -= n;
			n = 0;
		}
	}
	memmove(t->iov, t->iov + k, (t->cnt - k) * sizeof(iovec));
	t->cnt -= k;
}

/* The region a read response is sent from was closed (fi_close(mr) returned):
 * no byte more is read from it.  Not started, the response becomes an
 * FI_EACCES one; partly written, its frame cannot be finished, so the
 * connection fails (the initiator's operations complete in error).  False
 * if the connection died. */
bool revoke_read(tcp_ep *ep, conn *c, txitem *t)
{
	frame::header h;
	if (frame::decode(t->hdr, frame::hdr_size, h) != frame::error::ok || t->left < frame::hdr_size + h.len) {
		conn_fail(ep, c, FI_EIO, "a region was closed while a read response was being sent from it");
		return false;
	}
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "RMA read from key 0x%llx: the region was closed before the reply\n",
		       (unsigned long long)t->mref.key);
	h.data = FI_EACCES;
	h.len = 0;
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	t->mref = {};
	return true;
}

/* Writes what the connection may send now, several queued frames per
 * sendmsg.  False if the connection died. */
bool flush_tx(tcp_ep *ep, conn *c)
{
	constexpr size_t batch_iov = 64;
	while (!c->txq.empty()) {
		iovec v[batch_iov];
		size_t k = 0, items = 0;
		for (txitem *t : c->txq) {
			bool may = c->state == C_READY || (t->control && c->state != C_CONNECTING &&
							     c->state != C_LOST && c->state != C_CLOSED && !c->chal_wait);
			if (!may || k + size_t(t->cnt) > batch_iov || (t->mref.serial && items))
				break;
			memcpy(v + k, t->iov, size_t(t->cnt) * sizeof(iovec));
			k += size_t(t->cnt);
			items++;
			if (t->mref.serial)
				break; /* a read response goes in a write of its own, under its guard */
		}
		if (!items)
			break;
		std::optional<mr::guard> g;
		if (c->txq.front()->mref.serial) {
			g.emplace(c->txq.front()->mref);
			if (!*g) {
				if (!revoke_read(ep, c, c->txq.front()))
					return false;
				continue;
			}
		}
		msghdr m{};
		m.msg_iov = v;
		m.msg_iovlen = k;
		ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		g.reset();
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				want_out(ep, c, true);
				return true;
			}
			conn_fail(ep, c, FI_EIO, strerror(errno));
			return false;
		}
		size_t left = size_t(n);
		for (; items; items--) {
			txitem *t = c->txq.front();
			if (left < t->left) {
				if (left)
					advance(t, left);
				want_out(ep, c, true);
				return true;
			}
			left -= t->left;
			c->txq.pop_front();
			tx_done(ep, c, t);
			if (c->state == C_CLOSED)
				return false;
		}
	}
	if (c->state != C_CONNECTING) /* EPOLLOUT also says the connect completed */
		want_out(ep, c, false);
	return true;
}

txitem *make_item(const frame::header &h, const iovec *iov, size_t cnt)
{
	auto *t = new txitem();
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	for (size_t i = 0; i < cnt; i++) {
		if (!iov[i].iov_len)
			continue;
		t->iov[t->cnt++] = iov[i];
		t->left += iov[i].iov_len;
	}
	return t;
}

/* payload null with plen > 0: the caller fills t->owned. */
txitem *control_item(frame::header h, const void *payload = nullptr, size_t plen = 0)
{
	h.len = plen;
	auto *t = new txitem();
	frame::encode(h, t->hdr);
	t->iov[0] = {t->hdr, frame::hdr_size};
	t->cnt = 1;
	t->left = frame::hdr_size;
	if (plen) {
		t->owned.reset(new char[plen]);
		if (payload)
			memcpy(t->owned.get(), payload, plen);
		t->iov[1] = {t->owned.get(), plen};
		t->cnt = 2;
		t->left += plen;
	}
	t->control = true;
	return t;
}

txitem *control_item(uint8_t type, uint64_t id, uint64_t data, const void *payload = nullptr,
		     size_t plen = 0)
{
	frame::header h;
	h.type = type;
	h.id = id;
	h.data = data;
	return control_item(h, payload, plen);
}

/* Queues an item and tries to write at once (the common, latency path). */
bool enqueue(tcp_ep *ep, conn *c, txitem *t)
{
	bool idle = c->txq.empty();
	c->txq.push_back(t);
	if (idle && c->fd >= 0)
		return flush_tx(ep, c);
	return true;
}

/* ---- eager window (frame.h) ---- */

/* Queues a CREDIT frame with every owed window byte. */
void queue_credit(conn *c)
{
	frame::header h;
	h.type = frame::CREDIT;
	h.data = c->credit_owed;
	c->rx_out -= c->credit_owed;
	c->credit_owed = 0;
	c->txq.push_back(control_item(h));
}

/* This side no longer holds n window bytes that came over c.  They go back
 * with the next frame sent to that peer (do_send), or at once when half the
 * window is owed, so that a peer we never answer is not left without one.
 * now = false only queues that CREDIT (written on the next progress pass),
 * for callers walking the unexpected queues that a failing write would
 * change under them. */
void give_credit(tcp_ep *ep, conn *c, uint64_t n, bool now)
{
	if (!n || c->state != C_READY)
		return;
	c->credit_owed += n;
	if (c->credit_owed < ep->eager_window / 2)
		return;
	bool idle = c->txq.empty();
	queue_credit(c);
	if (!now)
		want_out(ep, c, true);
	else if (idle && c->fd >= 0)
		flush_tx(ep, c);
}

/* Frees an unexpected message; window bytes it held go back to the
 * connection they came over, if it still lives. */
void free_unexp(tcp_ep *ep, unexp *u)
{
	if (u->credit)
		for (conn *c : ep->conns)
			if (c->serial == u->credit_conn) {
				give_credit(ep, c, u->credit, false);
				break;
			}
	delete u;
}

/* May this send of n bytes skip the rendezvous?  Takes the window bytes. */
bool take_credit(conn *c, uint64_t n)
{
	if (c->state != C_READY || n > c->tx_credit)
		return false;
	c->tx_credit -= n;
	return true;
}

/* ---- connections ---- */

void set_direct(tcp_ep *ep, bool on);

conn *new_conn(tcp_ep *ep, int fd, bool outgoing, conn_state st)
{
	if (ep->direct)
		set_direct(ep, false); /* progress decides again with this one counted */
	auto *c = new conn();
	c->fd = fd;
	c->ep = ep;
	c->outgoing = outgoing;
	c->state = st;
	epoll_event e{};
	e.events = EPOLLIN | (st == C_CONNECTING ? uint32_t(EPOLLOUT) : 0u);
	c->want_out = st == C_CONNECTING;
	e.data.ptr = c;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &e)) {
		int err = errno;
		delete c;
		throw std::system_error(err, std::generic_category(), "epoll_ctl");
	}
	c->in_epoll = true;
	c->serial = ep->next_serial++;
	ep->conns.push_back(c);
	return c;
}

void post_cm_error(tcp_ep *ep, int err, const std::string &data)
{
	if (!ep->eq)
		return;
	fi_eq_err_entry e{};
	e.fid = &ep->ep.fid;
	e.context = ep->ep.fid.context;
	e.err = err;
	e.prov_errno = err;
	e.err_data = data.empty() ? nullptr : const_cast<char *>(data.data());
	e.err_data_size = data.size();
	eq_post_error(ep->eq, &e);
}

void post_cm_event(tcp_ep *ep, uint32_t event, const void *data, size_t len)
{
	if (!ep->eq)
		return;
	std::vector<char> buf(sizeof(fi_eq_cm_entry) + len);
	fi_eq_cm_entry ent{};
	ent.fid = &ep->ep.fid;
	ent.info = nullptr;
	memcpy(buf.data(), &ent, sizeof ent);
	if (len)
		memcpy(buf.data() + sizeof ent, data, len);
	eq_post(ep->eq, event, buf.data(), buf.size());
}

/* Messages held by FI_PEEK | FI_CLAIM that still needed connection c (a
 * rendezvous, or a body still arriving) fail when FI_CLAIM takes them. */
void forget_claims(tcp_ep *ep, conn *c, int err)
{
	for (unexp *u : ep->claimed_ux) {
		if (u->from != c)
			continue;
		u->from = nullptr;
		if (u->rts || !u->done) {
			u->claim_err = err;
			if (c->ux == u)
				c->ux = nullptr; /* the claim owns it, not the body */
		}
	}
}

/* Closes a connection: error completions for every operation that
 * involved it, FI_SHUTDOWN for a MSG endpoint.  The object is freed at
 * the end of the progress pass. */
void conn_fail(tcp_ep *ep, conn *c, int err, const char *why, bool quiet_cm)
{
	if (c->state == C_CLOSED)
		return;
	conn_state was = c->state;
	if (why)
		WU_WARN(P(), FI_LOG_EP_DATA, "connection to %s closed: %s\n",
			c->peer.empty() ? "(unidentified peer)" : addr_text(c->peer).c_str(), why);
	c->state = C_CLOSED;
	if (c->fd >= 0) {
		if (c->in_epoll)
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
		c->in_epoll = false;
		if (!c->cm_watched) {
			close(c->fd);
			c->fd = -1;
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
		delete t;
	}
	c->txq.clear();
	for (auto &p : c->pending)
		complete_tx(ep, p.second, e);
	c->pending.clear();
	forget_claims(ep, c, e);
	if (c->in_body) {
		if (c->bk == B_RECV && c->rop) {
			op *o = c->rop;
			bool multi = o->flags & FI_MULTI_RECV;
			bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
			complete_rx(ep, o, c->seg, c->body_into - c->body_left, src_of(ep, c),
				    c->h.flags & frame::F_TAGGED, c->h.tag, false, 0, 0, e, release);
		} else if (c->bk == B_UNEXP && c->ux) {
			unexp *u = c->ux;
			if (u->claimed) {
				op *o = u->claimed;
				bool multi = o->flags & FI_MULTI_RECV;
				bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
				complete_rx(ep, o, nullptr, 0, u->src, u->tagged, u->tag, false, 0, 0, e, release);
				delete u;
			} else {
				auto &q = u->tagged ? ep->ux_tag : ep->ux_msg;
				q.erase(std::remove(q.begin(), q.end(), u), q.end());
				delete u;
			}
		} else if (c->bk == B_READRESP && c->rop) {
			complete_tx(ep, c->rop, e);
		} else if (c->bk == B_RNDV && c->rop) {
			op *o = c->rop;
			bool multi = o->flags & FI_MULTI_RECV;
			bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
			complete_rx(ep, o, c->seg, c->body_into - c->body_left, c->rv.src, c->rv.tagged, c->rv.tag,
				    false, 0, 0, e, release);
		}
		c->in_body = false;
		c->rop = nullptr;
		c->ux = nullptr;
	}
	/* Receives cleared for a rendezvous from here will get no data. */
	for (auto &p : c->rv_wait) {
		op *o = p.second.o;
		bool multi = o->flags & FI_MULTI_RECV;
		bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
		complete_rx(ep, o, nullptr, 0, p.second.src, p.second.tagged, p.second.tag, false, 0, 0, e, release);
	}
	c->rv_wait.clear();
	/* Rendezvous requests from here can no longer be served: drop them. */
	for (auto *q : {&ep->ux_msg, &ep->ux_tag})
		for (auto it = q->begin(); it != q->end();) {
			if ((*it)->rts && (*it)->from == c) {
				delete *it;
				it = q->erase(it);
			} else {
				++it;
			}
		}
	/* Unexpected messages whose bodies came from here stay (they are whole). */
	for (unexp *u : ep->ux_msg)
		if (u->from == c)
			u->from = nullptr;
	for (unexp *u : ep->ux_tag)
		if (u->from == c)
			u->from = nullptr;
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
		if (c->fd >= 0 && !c->cm_watched) {
			close(c->fd);
			c->fd = -1;
		}
		if (!c->cm_watched)
			delete c;
	}
	ep->dead.clear();
}

/* FI_PROGRESS_AUTO: nobody may call progress, so a timer wakes the cm
 * thread at next_deadline. */
void arm_auto_timer(tcp_ep *ep)
{
	if (ep->atfd < 0)
		return;
	itimerspec its{};
	if (ep->next_deadline) {
		int64_t ms = std::max<int64_t>(ep->next_deadline - now_ms(), 0) + 1;
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = long(ms % 1000) * 1000000L;
	}
	timerfd_settime(ep->atfd, 0, &its, nullptr);
}

/* Starts the connect timeout of an outgoing connection. */
void arm_deadline(tcp_ep *ep, conn *c)
{
	if (ep->conn_timeout_ms <= 0)
		return;
	c->deadline = now_ms() + ep->conn_timeout_ms;
	if (!ep->next_deadline || c->deadline < ep->next_deadline) {
		ep->next_deadline = c->deadline;
		arm_auto_timer(ep);
	}
}

bool setting_up(const conn *c)
{
	return c->state == C_CONNECTING || c->state == C_HELLO_WAIT || c->state == C_CM_WAIT ||
	       c->state == C_LOST || c->state == C_ACCEPTING || c->state == C_BACKOFF;
}

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
		close(c->fd);
		c->fd = -1;
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

conn *new_backoff_conn(tcp_ep *ep)
{
	auto *c = new conn();
	c->ep = ep;
	c->outgoing = true;
	c->state = C_BACKOFF;
	c->serial = ep->next_serial++;
	ep->conns.push_back(c);
	return c;
}

void retry_connect(tcp_ep *ep, conn *c)
{
	const sockaddr *sa = reinterpret_cast<const sockaddr *>(c->peer.data());
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return conn_fail(ep, c, FI_ENOMEM, "socket() failed");
	set_nonblock_nodelay(fd);
	local_cc(fd, sa);
	int r = connect(fd, sa, socklen_t(c->peer.size()));
	if (r && errno != EINPROGRESS) {
		int err = errno;
		close(fd);
		if (err == ECONNREFUSED)
			return backoff(ep, c);
		return conn_fail(ep, c, FI_ECONNREFUSED, strerror(err));
	}
	c->fd = fd;
	c->state = r == 0 ? C_HELLO_WAIT : C_CONNECTING;
	c->want_out = c->state == C_CONNECTING;
	epoll_event e{};
	e.events = EPOLLIN | (c->want_out ? uint32_t(EPOLLOUT) : 0u);
	e.data.ptr = c;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &e))
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
		"dropped an incoming connection from %s to %s: no complete handshake within FI_TCP_CONN_TIMEOUT "
		"(%d ms)\n",
		peer_of_fd(c->fd).c_str(), addr_text(ep->self).c_str(), ep->conn_timeout_ms);
	conn_fail(ep, c, FI_ETIMEDOUT, nullptr);
}

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
			continue;
		}
		if (c->deadline <= now) {
			st_timeouts.fetch_add(1, std::memory_order_relaxed);
			std::string why = "no answer within FI_TCP_CONN_TIMEOUT (" + std::to_string(ep->conn_timeout_ms) + " ms)";
			conn_fail(ep, c, FI_ETIMEDOUT, c->msg ? nullptr : why.c_str());
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

/* Outgoing RDM connection to a listening address. */
conn *connect_to(tcp_ep *ep, const std::string &key)
{
	const sockaddr *sa = reinterpret_cast<const sockaddr *>(key.data());
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		throw fi_error(FI_ENOMEM);
	set_nonblock_nodelay(fd);
	int r = connect(fd, sa, socklen_t(key.size()));
	if (r && errno != EINPROGRESS) {
		int err = errno;
		close(fd);
		fd = -1;
		if (err != ECONNREFUSED || ep->conn_timeout_ms <= 0) {
			WU_WARN(P(), FI_LOG_EP_DATA, "connect to %s: %s\n", addr_text(key).c_str(), strerror(err));
			return nullptr;
		}
	}
	st_connects.fetch_add(1, std::memory_order_relaxed);
	if (fd >= 0)
		local_cc(fd, sa);
	conn *c = fd < 0 ? new_backoff_conn(ep) : new_conn(ep, fd, true, r == 0 ? C_HELLO_WAIT : C_CONNECTING);
	c->peer = key;
	c->in_map = true;
	arm_deadline(ep, c);
	ep->peers[key] = c;
	c->chal_wait = true; /* HELLO answers the peer's CHALLENGE (on_challenge) */
	if (c->state == C_BACKOFF)
		backoff(ep, c);
	return c;
}

/* The connection to use for fi_addr (RDM) or the MSG connection. */
conn *conn_for(tcp_ep *ep, fi_addr_t addr, int *err)
{
	if (ep->type == FI_EP_MSG) {
		if (!ep->mc || !ep->connected || ep->mc->state == C_CLOSED) {
			*err = ep->shut ? FI_ECONNRESET : FI_ENOTCONN;
			return nullptr;
		}
		return ep->mc;
	}
	if (!ep->av) {
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
		uint64_t stamp = ep->av_shared ? av::entry_stamp(ep->av, addr) : 0;
		unsigned char buf[av::max_blob];
		size_t n = av::addr_of(ep->av, addr, buf, sizeof buf);
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

/* ---- receive side ---- */

bool protocol_error(tcp_ep *ep, conn *c, const char *what)
{
	st_bad_frames.fetch_add(1, std::memory_order_relaxed);
	std::string why = std::string("malformed frame from the wire (") + what + ")";
	conn_fail(ep, c, FI_EIO, why.c_str());
	return false;
}

void start_body(conn *c, body_kind k, size_t into, size_t discard)
{
	c->body_err = 0;
	c->in_body = true;
	c->bk = k;
	c->body_into = into;
	c->body_trunc = discard;
	c->body_left = into;
	c->discard_left = discard;
}

op *find_recv(tcp_ep *ep, bool tagged, uint64_t tag, fi_addr_t src)
{
	auto &q = tagged ? ep->rq_tag : ep->rq_msg;
	for (auto it = q.begin(); it != q.end(); ++it)
		if (recv_matches(ep, *it, tagged, tag, src))
			return *it;
	return nullptr;
}

void remove_recv(tcp_ep *ep, op *o)
{
	auto &q = o->tagged ? ep->rq_tag : ep->rq_msg;
	auto it = std::find(q.begin(), q.end(), o);
	if (it != q.end())
		q.erase(it);
}

/* A header for a message (eager MSG frame) arrived. */
void on_msg(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	bool tagged = h.flags & frame::F_TAGGED;
	uint64_t credit = 0;
	if (h.flags & frame::F_CREDIT) {
		if (h.len > ep->eager_window - std::min(c->rx_out, ep->eager_window))
			return (void)protocol_error(ep, c, "eager message beyond the window this side announced");
		credit = h.len;
		c->rx_out += credit;
	}
	fi_addr_t src = (directed(ep) || (ep->info->caps & FI_SOURCE)) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
	if (directed(ep) && src == FI_ADDR_NOTAVAIL)
		src = src_of(ep, c);
	op *o = find_recv(ep, tagged, h.tag, src);
	if (o) {
		size_t room = op_room(o);
		size_t into = std::min<size_t>(room, h.len);
		c->rop = o;
		c->tgt_cnt = slice(o, o->used, into, c->tgt);
		c->seg = c->tgt_cnt ? c->tgt[0].iov_base : o->iov[0].iov_base;
		if (!(o->flags & FI_MULTI_RECV)) {
			remove_recv(ep, o);
		} else {
			o->used += into; /* reserve the segment now: later frames land after it */
			o->busy++;
			if (multi_spent(ep, o))
				remove_recv(ep, o);
		}
		start_body(c, B_RECV, into, h.len - into);
		/* Straight into the user's buffer: nothing held here.  (After
		 * start_body: should the CREDIT write fail, the connection's
		 * failure completes this receive.) */
		give_credit(ep, c, credit, true);
		return;
	}
	auto *u = new unexp();
	u->peer = c->peer;
	u->from = c;
	u->credit = credit;
	u->credit_conn = c->serial;
	u->src = src;
	u->tagged = tagged;
	u->tag = h.tag;
	u->has_data = h.flags & frame::F_CQ_DATA;
	u->data = h.data;
	u->len = h.len;
	if (h.len) {
		u->buf.reset(new char[h.len]);
		st_staged.fetch_add(h.len, std::memory_order_relaxed);
	}
	(tagged ? ep->ux_tag : ep->ux_msg).push_back(u);
	c->ux = u;
	c->tgt[0] = {u->buf.get(), size_t(h.len)};
	c->tgt_cnt = h.len ? 1 : 0;
	start_body(c, B_UNEXP, h.len, 0);
}

/* Clears a rendezvous: remembers where its data lands, writes CTS. */
void grant(tcp_ep *ep, conn *c, uint64_t send_id, const rndv_rx &r)
{
	uint64_t token = ep->next_token++;
	if (c->rts_held)
		c->rts_held--;
	c->rv_wait.emplace(token, r);
	frame::header h;
	h.type = frame::CTS;
	h.id = send_id;
	h.aux = token;
	auto *t = make_item(h, nullptr, 0);
	t->control = true;
	enqueue(ep, c, t);
}

/* Takes [o->used, +into) of a receive for a message of len bytes (like
 * on_msg does for eager bodies); returns the offset. */
size_t take_recv(tcp_ep *ep, op *o, size_t into)
{
	size_t off = o->used;
	if (!(o->flags & FI_MULTI_RECV)) {
		remove_recv(ep, o);
	} else {
		o->used += into;
		o->busy++;
		if (multi_spent(ep, o))
			remove_recv(ep, o);
	}
	return off;
}

/* RTS: a receive that matches is cleared at once, else the request waits
 * in the unexpected queue (no buffer) until one is posted. */
void on_rts(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	if (c->rts_held >= frame::max_queued)
		return (void)protocol_error(ep, c, "more rendezvous requests waiting than allowed");
	c->rts_held++;
	rndv_rx r;
	r.tagged = h.flags & frame::F_TAGGED;
	r.has_data = h.flags & frame::F_CQ_DATA;
	r.tag = h.tag;
	r.data = h.data;
	r.len = size_t(h.aux);
	r.src = (directed(ep) || (ep->info->caps & FI_SOURCE)) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
	if (op *o = find_recv(ep, r.tagged, h.tag, r.src)) {
		r.o = o;
		r.into = std::min(op_room(o), r.len);
		r.off = take_recv(ep, o, r.into);
		grant(ep, c, h.id, r);
		return;
	}
	auto *u = new unexp();
	u->peer = c->peer;
	u->from = c;
	u->src = r.src;
	u->tagged = r.tagged;
	u->tag = h.tag;
	u->has_data = r.has_data;
	u->data = h.data;
	u->len = r.len;
	u->rts = true;
	u->rts_id = h.id;
	(r.tagged ? ep->ux_tag : ep->ux_msg).push_back(u);
}

/* CTS: the receiver is ready; the payload goes from the send buffer. */
void on_cts(tcp_ep *ep, conn *c)
{
	auto it = c->pending.find(c->h.id);
	if (it == c->pending.end() || it->second->kind != OP_SEND)
		return (void)protocol_error(ep, c, "CTS for an unknown send");
	op *o = it->second;
	c->pending.erase(it);
	frame::header h;
	h.type = frame::RDATA;
	h.flags = frame::F_LAST;
	h.len = o->len;
	h.id = o->id;
	h.aux = c->h.aux;
	txitem *t = make_item(h, o->iov, o->iov_cnt);
	t->o = o;
	t->after = AFTER_COMPLETE;
	enqueue(ep, c, t);
}

/* RDATA: the body lands in the receive cleared for its token. */
void on_rdata(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	auto it = c->rv_wait.find(h.aux);
	if (it == c->rv_wait.end() || h.len != it->second.len || !(h.flags & frame::F_LAST))
		return (void)protocol_error(ep, c, "RDATA for no cleared rendezvous");
	c->rv = it->second;
	c->rv_wait.erase(it);
	op *o = c->rv.o;
	c->rop = o;
	c->tgt_cnt = slice(o, c->rv.off, c->rv.into, c->tgt);
	c->seg = c->tgt_cnt ? c->tgt[0].iov_base : (o->iov_cnt ? o->iov[0].iov_base : nullptr);
	start_body(c, B_RNDV, c->rv.into, h.len - c->rv.into);
}

void read_conn(tcp_ep *ep, conn *c);

/* Moves queued (non-handshake) sends from one connection to another. */
void move_queue(conn *from, conn *to)
{
	for (txitem *t : from->txq) {
		if (t->control && !t->o) {
			delete t;
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

/* ---- handshake (auth.h) ---- */

/* An accepted connection speaks first: CHALLENGE with a fresh nonce. */
void send_challenge(tcp_ep *ep, conn *c)
{
	if (!auth::random_bytes(c->an.acc, sizeof c->an.acc))
		return conn_fail(ep, c, FI_EOTHER, "no random nonce for the handshake");
	frame::header h;
	h.type = frame::CHALLENGE;
	enqueue(ep, c, control_item(h, c->an.acc, sizeof c->an.acc));
}

/* The peer's CHALLENGE on an outgoing connection: answer with HELLO (RDM)
 * or CONNREQ (MSG), our nonce and our proof of the key over both nonces. */
void on_challenge(tcp_ep *ep, conn *c)
{
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
			"refused a connection from %s to %s: its handshake does not prove our job key (another "
			"user or job, or processes of one job with different FI_TCP_JOB_KEY values)\n",
			peer_of_fd(c->fd).c_str(), addr_text(ep->self).c_str());
		frame::header h;
		h.type = frame::HELLO_ACK;
		h.data = frame::ack_bad_proof;
		txitem *t = control_item(h);
		t->after = AFTER_CLOSE;
		enqueue(ep, c, t);
		return;
	}
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
			if (existing->state == C_LOST || existing->state == C_BACKOFF)
				conn_fail(ep, existing, 0, nullptr);
		}
		ep->peers[key] = c;
		c->in_map = true;
	}
	c->state = C_READY;
	c->tx_window = c->tx_credit = c->h.aux;
	/* The ack goes first, then whatever was queued for this peer. */
	c->txq.push_front(ack_item(ep, c, 0));
	flush_tx(ep, c);
}

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
	"the peer's answer does not prove our job key (another user or job listens there, or the "
	"processes were started with different FI_TCP_JOB_KEY values)";

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
		close(c->fd);
		c->fd = -1;
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

/* ATOMIC with its operands staged in c->small (decode checked the
 * operation and the length): check the region, apply, answer. */
void on_atomic(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	frame::atomic_desc d = frame::unpack_atomic(h.data);
	size_t n = size_t(d.count) * atomic::size_of(d.datatype);
	/* fi_mr(3): fetching needs FI_REMOTE_READ, updating FI_REMOTE_WRITE. */
	bool reads = d.family != uint8_t(atomic::kind::write), writes = d.op != FI_ATOMIC_READ;
	uint64_t access = (reads ? FI_REMOTE_READ : 0) | (writes ? FI_REMOTE_WRITE : 0);
	frame::header r;
	r.type = frame::ATOMIC_RESP;
	r.id = h.id;
	mr::ref ref;
	void *p = mr::check(ep->dom, h.tag, h.aux, n, access, ref);
	std::optional<mr::guard> g;
	if (p)
		g.emplace(ref); /* fi_close(mr) waits for the update; closed, it does not happen */
	if (!p || !*g) {
		WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
			       "atomic on key 0x%llx, address 0x%llx, %zu bytes: no registered region allows %s\n",
			       (unsigned long long)h.tag, (unsigned long long)h.aux, n,
			       reads && writes ? "FI_REMOTE_READ | FI_REMOTE_WRITE"
			       : reads	       ? "FI_REMOTE_READ"
					       : "FI_REMOTE_WRITE");
		r.data = FI_EACCES;
		enqueue(ep, c, control_item(r));
		return;
	}
	size_t rlen = frame::atomic_resp_len(d);
	txitem *t = control_item(r, nullptr, rlen);
	const char *operand = c->small.data();
	atomic::apply(d.op, d.datatype, p, writes ? operand : nullptr,
		      atomic::operands(d.op) == 2 ? operand + n : nullptr, rlen ? t->owned.get() : nullptr, d.count);
	g.reset();
	enqueue(ep, c, t);
	mr::remote_access(ep->dom, h.tag, access);
	if (writes)
		push_comp(ep, nullptr, ep->c_rwrite, cq::completion{});
	if (reads)
		push_comp(ep, nullptr, ep->c_rread, cq::completion{});
}

void finish_body(tcp_ep *ep, conn *c)
{
	c->in_body = false;
	const frame::header &h = c->h;
	bool tagged = h.flags & frame::F_TAGGED;
	bool has_data = h.flags & frame::F_CQ_DATA;
	switch (c->bk) {
	case B_RECV: {
		op *o = c->rop;
		c->rop = nullptr;
		bool multi = o->flags & FI_MULTI_RECV;
		bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
		fi_addr_t src = (ep->info->caps & FI_SOURCE) || directed(ep) ? src_of(ep, c) : FI_ADDR_NOTAVAIL;
		complete_rx(ep, o, c->seg, c->body_into, src, tagged, h.tag, has_data, h.data, c->body_trunc,
			    c->body_trunc ? FI_ETRUNC : 0, release);
		break;
	}
	case B_UNEXP: {
		unexp *u = c->ux;
		c->ux = nullptr;
		u->done = true;
		u->from = nullptr;
		if (op *o = u->claimed) {
			bool multi = o->flags & FI_MULTI_RECV;
			size_t room = multi ? u->len : o->len;
			size_t into = std::min(room, u->len);
			copy_to_op(o, u->claim_off, u->buf.get(), into);
			iovec first[max_iov];
			size_t k = slice(o, u->claim_off, into, first);
			bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
			complete_rx(ep, o, k ? first[0].iov_base : o->iov[0].iov_base, into, u->src, u->tagged,
				    u->tag, u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0,
				    release);
			free_unexp(ep, u);
		}
		break;
	}
	case B_WRITE: {
		if (c->body_err) {
			/* Its region was closed while the body arrived (body_target_live). */
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
				       "RMA write to key 0x%llx: the region was closed while the data arrived\n",
				       (unsigned long long)h.tag);
			enqueue(ep, c, control_item(frame::WRITE_ACK, h.id, uint64_t(c->body_err)));
			break;
		}
		enqueue(ep, c, control_item(frame::WRITE_ACK, h.id, 0));
		mr::remote_access(ep->dom, h.tag, FI_REMOTE_WRITE);
		cq::completion cc;
		cc.flags = FI_RMA | FI_REMOTE_WRITE | (has_data ? FI_REMOTE_CQ_DATA : 0);
		cc.data = h.data;
		cc.len = h.len;
		push_comp(ep, has_data ? ep->rx_cq : nullptr, ep->c_rwrite, cc);
		break;
	}
	case B_READRESP: {
		op *o = c->rop;
		c->rop = nullptr;
		complete_tx(ep, o, c->body_trunc ? FI_ETRUNC : 0);
		break;
	}
	case B_RNDV: {
		op *o = c->rop;
		c->rop = nullptr;
		bool multi = o->flags & FI_MULTI_RECV;
		bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
		const rndv_rx &r = c->rv;
		complete_rx(ep, o, c->seg, c->body_into, r.src, r.tagged, r.tag, r.has_data, r.data, c->body_trunc,
			    c->body_trunc ? FI_ETRUNC : 0, release);
		break;
	}
	case B_SMALL:
		switch (h.type) {
		case frame::HELLO:
			on_hello(ep, c);
			break;
		case frame::CHALLENGE:
			on_challenge(ep, c);
			break;
		case frame::HELLO_ACK:
			on_hello_ack(ep, c);
			break;
		case frame::ACCEPT:
			if (!cm_answer_proven(ep, c))
				break;
			c->state = C_READY;
			c->tx_window = c->tx_credit = h.aux;
			ep->connected = true;
			post_cm_event(ep, FI_CONNECTED, c->small.data() + frame::accept_auth,
				      c->small.size() - frame::accept_auth);
			flush_tx(ep, c);
			break;
		case frame::REJECT:
			if (!cm_answer_proven(ep, c))
				break;
			post_cm_error(ep, FI_ECONNREFUSED, c->small.substr(frame::accept_auth));
			conn_fail(ep, c, FI_ECONNREFUSED, nullptr, true);
			break;
		}
		break;
	case B_ATOMIC:
		on_atomic(ep, c);
		break;
	case B_DISCARD:
	case B_NONE:
		break;
	}
	c->bk = B_NONE;
}

/* A validated header: decide where its body goes. */
void on_header(tcp_ep *ep, conn *c)
{
	const frame::header &h = c->h;
	auto small = [&] {
		c->small.assign(h.len, '\0');
		c->tgt[0] = {c->small.data(), size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		start_body(c, B_SMALL, h.len, 0);
	};
	switch (c->state) {
	case C_ACCEPTING:
		if (h.type != frame::HELLO || ep->type != FI_EP_RDM)
			return (void)protocol_error(ep, c, "expected HELLO");
		return small();
	case C_HELLO_WAIT:
		if (c->chal_wait ? h.type != frame::CHALLENGE : h.type != frame::HELLO_ACK)
			return (void)protocol_error(ep, c, c->chal_wait ? "expected CHALLENGE" : "expected HELLO_ACK");
		return small();
	case C_CM_WAIT:
		if (!c->chal_wait && h.type == frame::CONNREQ && h.len == 0) {
			/* The passive endpoint reported the request: the answer is
			 * now up to its application, which may take its time (as
			 * with libfabric's tcp), so FI_TCP_CONN_TIMEOUT no longer runs. */
			c->deadline = 0;
			return;
		}
		if (c->chal_wait ? h.type != frame::CHALLENGE : h.type != frame::ACCEPT && h.type != frame::REJECT)
			return (void)protocol_error(ep, c, c->chal_wait ? "expected CHALLENGE" : "expected ACCEPT or REJECT");
		return small();
	case C_READY:
		break;
	default:
		return (void)protocol_error(ep, c, "frame in an unexpected state");
	}
	/* A peer that does not read its replies cannot queue more requests. */
	if ((h.type == frame::WRITE || h.type == frame::READ_REQ || h.type == frame::ATOMIC) &&
	    c->txq.size() >= frame::max_queued)
		return (void)protocol_error(ep, c, "requests while too many replies wait for the peer to read them");
	switch (h.type) {
	case frame::MSG:
		return on_msg(ep, c);
	case frame::CREDIT:
		if (h.data > c->tx_window - c->tx_credit)
			return (void)protocol_error(ep, c, "CREDIT gives back more than was sent");
		c->tx_credit += h.data;
		return;
	case frame::RTS:
		return on_rts(ep, c);
	case frame::CTS:
		return on_cts(ep, c);
	case frame::RDATA:
		return on_rdata(ep, c);
	case frame::WRITE: {
		void *p = mr::check(ep->dom, h.tag, h.aux, h.len, FI_REMOTE_WRITE, c->wref);
		if (!p && h.len) {
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
				       "RMA write to key 0x%llx, address 0x%llx, %llu bytes: no such registered region\n",
				       (unsigned long long)h.tag, (unsigned long long)h.aux,
				       (unsigned long long)h.len);
			enqueue(ep, c, control_item(frame::WRITE_ACK, h.id, FI_EACCES));
			return start_body(c, B_DISCARD, 0, h.len);
		}
		c->tgt[0] = {p, size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		return start_body(c, B_WRITE, h.len, 0);
	}
	case frame::READ_REQ: {
		mr::ref ref;
		void *p = mr::check(ep->dom, h.tag, h.aux, h.data, FI_REMOTE_READ, ref);
		if (!p && h.data) {
			WU_WARN_SPARSE(P(), FI_LOG_EP_DATA,
				       "RMA read from key 0x%llx, address 0x%llx, %llu bytes: no such registered region\n",
				       (unsigned long long)h.tag, (unsigned long long)h.aux,
				       (unsigned long long)h.data);
			enqueue(ep, c, control_item(frame::READ_RESP, h.id, FI_EACCES));
			return;
		}
		frame::header r;
		r.type = frame::READ_RESP;
		r.id = h.id;
		r.len = h.data;
		iovec v = {p, size_t(h.data)};
		txitem *t = make_item(r, &v, 1);
		if (h.data)
			t->mref = ref;
		enqueue(ep, c, t);
		mr::remote_access(ep->dom, h.tag, FI_REMOTE_READ);
		push_comp(ep, nullptr, ep->c_rread, cq::completion{});
		return;
	}
	case frame::ATOMIC:
		/* Staged whole: the operation runs once its operands are here. */
		c->small.resize(h.len);
		c->tgt[0] = {c->small.data(), size_t(h.len)};
		c->tgt_cnt = h.len ? 1 : 0;
		return start_body(c, B_ATOMIC, h.len, 0);
	case frame::WRITE_ACK:
	case frame::READ_RESP:
	case frame::ATOMIC_RESP: {
		auto it = c->pending.find(h.id);
		if (it == c->pending.end())
			return (void)protocol_error(ep, c, "reply for an unknown operation");
		op *o = it->second;
		bool fits = h.type == frame::WRITE_ACK	? o->kind == OP_WRITE
			    : h.type == frame::READ_RESP ? o->kind == OP_READ
							 : o->kind == OP_ATOMIC || o->kind == OP_FETCH;
		if (!fits)
			return (void)protocol_error(ep, c, "reply of the wrong kind");
		/* An atomic's old values fill its result buffers exactly. */
		if (h.type == frame::ATOMIC_RESP && !h.data && h.len != o->len)
			return (void)protocol_error(ep, c, "atomic response of the wrong length");
		c->pending.erase(it);
		if (h.type == frame::WRITE_ACK || h.data) {
			complete_tx(ep, o, int(h.data));
			return;
		}
		size_t into = std::min<size_t>(o->len, h.len);
		c->rop = o;
		c->tgt_cnt = slice(o, 0, into, c->tgt);
		return start_body(c, B_READRESP, into, h.len - into);
	}
	default:
		return (void)protocol_error(ep, c, "frame type not expected on a data connection");
	}
}

void consume_iov(iovec *v, size_t &cnt, size_t n)
{
	size_t k = 0;
	while (n && k < cnt) {
		if (n >= v[k].iov_len) {
			n -= v[k].iov_len;
			k++;
		} else {
			v[k].iov_base = static_cast<char *>(v[k].iov_base) + n;
			v[k].iov_len -= n;
			n = 0;
		}
	}
	while (k < cnt && v[k].iov_len == 0)
		k++;
	memmove(v, v + k, (cnt - k) * sizeof(iovec));
	cnt -= k;
}

/* Reads from the socket into the staging buffer: >0 bytes, 0 would block,
 * -1 the connection failed (already handled). */
ssize_t fill(tcp_ep *ep, conn *c, size_t most = rbuf_size)
{
	if (c->rpos == c->rend)
		c->rpos = c->rend = 0;
	else if (c->rend == rbuf_size) {
		memmove(c->rbuf.get(), c->rbuf.get() + c->rpos, c->rend - c->rpos);
		c->rend -= c->rpos;
		c->rpos = 0;
	}
	size_t want = std::min(rbuf_size - c->rend, most);
	ssize_t n = recv(c->fd, c->rbuf.get() + c->rend, want, MSG_DONTWAIT);
	if (n > 0) {
		c->rend += size_t(n);
		c->drained = size_t(n) < want;
		ep->reads++;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	int err = n < 0 ? errno : 0;
	/* A peer that ends its connection between two frames (EOF, or a reset
	 * because it exited with bytes unread) is a job ending, not a fault:
	 * info.  Mid-frame it is a real failure and stays a warning. */
	bool between = !c->in_body && c->rend == c->rpos;
	if ((n == 0 || err == ECONNRESET) && between && c->state == C_READY) {
		if (!c->msg)
			WU_INFO(P(), FI_LOG_EP_DATA, "connection to %s closed by the peer%s\n",
				c->peer.empty() ? "(unidentified peer)" : addr_text(c->peer).c_str(),
				n == 0 ? "" : " (reset)");
		conn_fail(ep, c, FI_ECONNRESET, nullptr);
	} else if (n == 0) {
		conn_fail(ep, c, FI_ECONNRESET,
			  c->msg || c->state != C_READY ? nullptr : "peer closed the connection mid-message");
	} else {
		conn_fail(ep, c, FI_EIO, strerror(err));
	}
	return -1;
}

/* An RMA write body lands only under a live guard on its region: once
 * fi_close(mr) returned, the rest of the body is dropped and the write
 * fails with FI_EACCES at the initiator (finish_body). */
bool body_target_live(conn *c, std::optional<mr::guard> &g)
{
	if (c->bk != B_WRITE)
		return true;
	g.emplace(c->wref);
	if (*g)
		return true;
	g.reset();
	c->discard_left += c->body_left;
	c->body_left = 0;
	c->tgt_cnt = 0;
	c->body_err = FI_EACCES;
	return false;
}

void read_conn(tcp_ep *ep, conn *c)
{
	/* A short read empties the socket: asking again would only cost an
	 * EAGAIN on the latency path (epoll or the next pass finds more). */
	c->drained = false;
	/* The pass's first read is small: a message that fits arrives whole,
	 * and the body of a larger one mostly skips the staging buffer. */
	size_t most = first_read;
	for (int budget = 256;; budget--) {
		if (c->state == C_CLOSED || c->state == C_LOST)
			return;
		if (budget == 0) {
			/* Frames may sit in the staging buffer with nothing left in
			 * the socket, so epoll will not report them: revisit. */
			ep->backlog = true;
			return;
		}
		if (!c->in_body) {
			if (c->rend - c->rpos < frame::hdr_size) {
				if (c->drained)
					return;
				/* Awaiting RDATA: take just a header, so that a payload
				 * behind it goes straight to the receive. */
				if (!c->rv_wait.empty() && c->rend == c->rpos)
					most = frame::hdr_size;
				ssize_t n = fill(ep, c, most);
				most = rbuf_size;
				if (n <= 0)
					return;
				continue;
			}
			frame::header h;
			frame::error e = frame::decode(c->rbuf.get() + c->rpos, c->rend - c->rpos, h);
			if (e != frame::error::ok) {
				protocol_error(ep, c, frame::to_string(e));
				return;
			}
			c->rpos += frame::hdr_size;
			c->h = h;
			on_header(ep, c);
			continue;
		}
		if (c->body_left) {
			size_t avail = c->rend - c->rpos;
			if (avail) {
				size_t n = std::min(avail, c->body_left);
				size_t done = 0;
				std::optional<mr::guard> g;
				if (!body_target_live(c, g))
					continue;
				for (size_t i = 0; i < c->tgt_cnt && done < n; i++) {
					size_t t = std::min(c->tgt[i].iov_len, n - done);
					memcpy(c->tgt[i].iov_base, c->rbuf.get() + c->rpos + done, t);
					done += t;
				}
				g.reset();
				consume_iov(c->tgt, c->tgt_cnt, n);
				c->rpos += n;
				c->body_left -= n;
				continue;
			}
			if (c->drained)
				return;
			if (c->body_left >= direct_read_min) {
				/* Zero-copy: straight into the destination. */
				size_t want = 0;
				for (size_t i = 0; i < c->tgt_cnt; i++)
					want += c->tgt[i].iov_len;
				std::optional<mr::guard> g;
				if (!body_target_live(c, g))
					continue;
				ssize_t n = readv(c->fd, c->tgt, int(c->tgt_cnt));
				g.reset();
				if (n > 0) {
					c->drained = size_t(n) < want;
					ep->reads++;
					consume_iov(c->tgt, c->tgt_cnt, size_t(n));
					c->body_left -= size_t(n);
					budget++;
					continue;
				}
				if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
					return;
				conn_fail(ep, c, n == 0 ? FI_ECONNRESET : FI_EIO,
					  n == 0 ? "peer closed the connection mid-message" : strerror(errno));
				return;
			}
			if (fill(ep, c, most) <= 0)
				return;
			most = rbuf_size;
			continue;
		}
		if (c->discard_left) {
			size_t avail = c->rend - c->rpos;
			if (avail) {
				size_t n = std::min(avail, c->discard_left);
				c->rpos += n;
				c->discard_left -= n;
				continue;
			}
			if (c->drained || fill(ep, c) <= 0)
				return;
			continue;
		}
		finish_body(ep, c);
	}
}

void accept_all(tcp_ep *ep)
{
	for (;;) {
		int fd = accept4(ep->lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		set_nonblock_nodelay(fd);
		local_cc(fd, nullptr);
		conn *c = new_conn(ep, fd, false, C_ACCEPTING);
		arm_deadline(ep, c);
		send_challenge(ep, c);
	}
}

void connect_done(tcp_ep *ep, conn *c)
{
	int err = 0;
	socklen_t l = sizeof err;
	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err == ECONNREFUSED && may_retry(c))
		return backoff(ep, c);
	if (err) {
		conn_fail(ep, c, FI_ECONNREFUSED,
			  c->msg ? nullptr : (std::string("connect: ") + strerror(err)).c_str());
		return;
	}
	c->state = c->msg ? C_CM_WAIT : C_HELLO_WAIT;
	flush_tx(ep, c);
}

/* Few connections, all established, nobody else waiting on epfd. */
bool poll_direct(tcp_ep *ep)
{
	if (ep->auto_progress || ep->conns.empty() || ep->conns.size() > direct_poll_max)
		return false;
	for (conn *c : ep->conns)
		if (c->state != C_READY || c->fd < 0)
			return false;
	return true;
}

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
			e.events = EPOLLIN | (c->want_out ? uint32_t(EPOLLOUT) : 0u);
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
			std::lock_guard<std::mutex> g(ep->mtx);
			progress_locked(ep);
			any = !ep->comps.empty();
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
			std::lock_guard<std::mutex> g(ep->mtx);
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
			for (auto *q : {&ep->ux_msg, &ep->ux_tag})
				for (unexp *u : *q)
					if (u->src == fa)
						u->src = FI_ADDR_NOTAVAIL;
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
			std::lock_guard<std::mutex> g(ep->mtx);
			progress_locked(ep);
			more = ep->backlog;
		}
		flush(ep);
	}
}

void auto_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp auto progress", [&] { auto_progress(static_cast<tcp_ep *>(arg)); });
}

void auto_timer(tcp_ep *ep)
{
	uint64_t ticks;
	ssize_t r = read(ep->atfd, &ticks, sizeof ticks);
	(void)r;
	auto_progress(ep);
	std::lock_guard<std::mutex> g(ep->mtx);
	arm_auto_timer(ep);
}

void auto_timer_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp auto progress timer", [&] { auto_timer(static_cast<tcp_ep *>(arg)); });
}

/* Starts auto progress once the endpoint is enabled (fi_enable, or
 * fi_connect / fi_accept for MSG) if its domain asked for it.  Called
 * without ep->mtx: the engine calls into the endpoint under its own lock. */
bool begin_auto_locked(tcp_ep *ep)
{
	if (ep->auto_progress ||
	    (ep->dom->info->domain_attr->data_progress != FI_PROGRESS_AUTO && !ep->want_auto))
		return false;
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (tfd < 0)
		throw fi_error(FI_ENOMEM);
	ep->atfd = tfd;
	ep->auto_progress = true;
	ep->autow = {auto_event, ep};
	ep->atw = {auto_timer_event, ep};
	if (ep->direct)
		set_direct(ep, false); /* the engine only sees sockets in epfd */
	return true;
}

/* Without ep->mtx: the engine calls into the endpoint under its own lock. */
void finish_auto(tcp_ep *ep)
{
	cm_engine::get().add(&ep->autow, ep->epfd, EPOLLIN);
	cm_engine::get().add(&ep->atw, ep->atfd, EPOLLIN);
	/* Fire once now: the timer pass progresses what arrived before the
	 * watch and arms itself for deadlines set before now. */
	itimerspec its{};
	its.it_value.tv_nsec = 1;
	timerfd_settime(ep->atfd, 0, &its, nullptr);
}

void start_auto(tcp_ep *ep)
{
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		if (!begin_auto_locked(ep))
			return;
	}
	finish_auto(ep);
}

/* progress_fn::block: the application is about to sleep on a bound CQ's or
 * counter's wait object (fi_trywait returned 0), where manual progress
 * would never run: this endpoint switches to auto progress for good.  A
 * try-lock, since a thread binding this endpoint holds ep->mtx while it
 * waits for the CQ's progress list that our caller holds. */
int block_cb(void *arg) noexcept
{
	return guard("fi_trywait", [&]() -> int {
		auto *ep = static_cast<tcp_ep *>(arg);
		{
			std::unique_lock<std::mutex> g(ep->mtx, std::try_to_lock);
			if (!g.owns_lock())
				return -FI_EAGAIN;
			if (!ep->want_auto)
				WU_INFO(P(), FI_LOG_EP_DATA,
					"endpoint %p: the application blocks on a CQ/counter wait object; "
					"data progress is automatic from now on\n",
					static_cast<void *>(ep));
			ep->want_auto = true;
			if (!ep->enabled || !begin_auto_locked(ep))
				return 0;
		}
		finish_auto(ep);
		return 0;
	});
}

/* The cm engine's view of a MSG connection: drive the handshake, then
 * notice a peer that goes away while nobody reads the CQ (FI_SHUTDOWN). */
void msg_cm_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp cm", [&] {
		auto *c = static_cast<conn *>(arg);
		tcp_ep *ep = c->ep;
		conn_state st;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
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
			std::lock_guard<std::mutex> g(ep->mtx);
			progress_locked(ep);
		}
		flush(ep);
	});
}

/* ---- data-path entry points ---- */

size_t iov_total(const iovec *iov, size_t cnt)
{
	size_t t = 0;
	for (size_t i = 0; i < cnt; i++) /* saturates: a wrapped sum would pass the length checks */
		t = iov[i].iov_len > SIZE_MAX - t ? SIZE_MAX : t + iov[i].iov_len;
	return t;
}

/* The iovecs' bytes one after another at dst; returns how many. */
size_t gather(char *dst, const iovec *iov, size_t cnt)
{
	size_t off = 0;
	for (size_t i = 0; i < cnt; i++) {
		memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return off;
}

/* FI_INJECT: the item sends its own copy, so the caller's buffer is free
 * when the call returns. */
void own_payload(txitem *t, const iovec *iov, size_t cnt, size_t total)
{
	t->owned.reset(new char[total ? total : 1]);
	gather(t->owned.get(), iov, cnt);
	t->cnt = 1;
	if (total)
		t->iov[t->cnt++] = {t->owned.get(), total};
}

/* Under ep->mtx: the connection a new transmit to dest goes on, or nullptr
 * with *err (-FI_EOPBADSTATE before fi_enable, -FI_EAGAIN while tx_attr->size
 * operations are in flight even after a progress pass, or conn_for's error). */
conn *tx_conn(tcp_ep *ep, fi_addr_t dest, ssize_t *err)
{
	if (!ep->enabled) {
		*err = -FI_EOPBADSTATE;
		return nullptr;
	}
	if (ep->tx_inflight >= ep->info->tx_attr->size) {
		progress_locked(ep);
		if (ep->tx_inflight >= ep->info->tx_attr->size) {
			*err = -FI_EAGAIN;
			return nullptr;
		}
	}
	int e = 0;
	conn *c = conn_for(ep, dest, &e);
	if (!c)
		*err = -e;
	return c;
}

/* Under ep->mtx: queues a request whose op completes on the target's reply. */
void queue_pending(tcp_ep *ep, conn *c, txitem *t, op *o)
{
	t->o = o;
	t->after = AFTER_PENDING;
	ep->tx_inflight++;
	enqueue(ep, c, t);
	reap(ep);
}

/* max_msg_size: what the endpoint's info says, never above what a frame carries. */
uint64_t msg_limit(const tcp_ep *ep)
{
	return std::min<uint64_t>(ep->info->ep_attr->max_msg_size, frame::max_payload);
}

ssize_t too_long(const tcp_ep *ep, const char *what, size_t total)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s of %zu bytes: above max_msg_size (%llu)\n", what, total,
		       (unsigned long long)msg_limit(ep));
	return -FI_EMSGSIZE;
}

ssize_t do_send(tcp_ep *ep, const iovec *iov, size_t cnt, fi_addr_t dest, uint64_t tag, uint64_t data,
		uint64_t flags, void *ctx, bool tagged, bool inject_api)
{
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	size_t total = iov_total(iov, cnt);
	if ((inject_api || (flags & FI_INJECT)) && total > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	if (total > msg_limit(ep))
		return too_long(ep, "send", total);
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, dest, &err);
		if (!c)
			return err;
		/* Owed window bytes ride in the same write as this frame. */
		bool idle = c->txq.empty();
		if (c->credit_owed && c->state == C_READY)
			queue_credit(c);
		auto send_item = [&](txitem *t) {
			c->txq.push_back(t);
			if (idle && c->fd >= 0)
				flush_tx(ep, c);
		};
		frame::header h;
		h.type = frame::MSG;
		h.flags = (tagged ? frame::F_TAGGED : 0) | ((flags & FI_REMOTE_CQ_DATA) ? frame::F_CQ_DATA : 0);
		h.tag = tagged ? tag : 0;
		h.data = (flags & FI_REMOTE_CQ_DATA) ? data : 0;
		h.len = total;
		bool inject = inject_api || (flags & FI_INJECT);
		/* Receivers take at most max_eager bytes outside their window. */
		size_t plain = ep->rndv_size ? std::min<size_t>(ep->rndv_size, frame::max_eager) : frame::max_eager;
		bool large = !inject && total > plain;
		if (large && take_credit(c, total)) {
			h.flags |= frame::F_CREDIT; /* eager within the peer's window */
		} else if (large) {
			/* Rendezvous: RTS now, the payload once the receiver clears it. */
			auto *o = new op();
			o->kind = OP_SEND;
			o->tagged = tagged;
			o->context = ctx;
			o->flags = flags;
			for (size_t i = 0; i < cnt; i++)
				o->iov[i] = iov[i];
			o->iov_cnt = cnt;
			o->len = total;
			o->id = ep->next_id++;
			o->want_comp = !ep->tx_sel || (flags & FI_COMPLETION);
			h.type = frame::RTS;
			h.len = 0;
			h.aux = total;
			h.id = o->id;
			txitem *t = make_item(h, nullptr, 0);
			t->o = o;
			t->after = AFTER_PENDING;
			ep->tx_inflight++;
			st_rndv.fetch_add(1, std::memory_order_relaxed);
			send_item(t);
			reap(ep);
			post = !ep->comps.empty();
			goto sent;
		}
		{
		bool want_comp = !inject_api && (!ep->tx_sel || (flags & FI_COMPLETION));
		size_t early = 0; /* bytes the fast path wrote */
		int early_err = 0;
		if (c->state == C_READY && c->txq.empty() && c->fd >= 0) {
			/* Nothing queued: write now, and when the kernel takes it
			 * all, complete with nothing allocated or queued. */
			unsigned char hb[frame::hdr_size + small_send_max];
			frame::encode(h, hb);
			ssize_t n;
			if (total <= small_send_max) {
				/* One flat buffer: cheaper for the kernel than an iovec. */
				size_t off = frame::hdr_size + gather(reinterpret_cast<char *>(hb) + frame::hdr_size, iov, cnt);
				n = send(c->fd, hb, off, MSG_NOSIGNAL | MSG_DONTWAIT);
			} else {
				iovec v[max_iov + 1];
				int k = 0;
				v[k++] = {hb, frame::hdr_size};
				for (size_t i = 0; i < cnt; i++)
					if (iov[i].iov_len)
						v[k++] = iov[i];
				msghdr m{};
				m.msg_iov = v;
				m.msg_iovlen = size_t(k);
				n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			}
			if (n >= 0 && size_t(n) == frame::hdr_size + total) {
				cq::completion cc;
				cc.op_context = ctx;
				cc.flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
				push_comp(ep, want_comp ? ep->tx_cq : nullptr, ep->c_send, cc);
				post = !ep->comps.empty();
				goto sent;
			}
			if (n > 0)
				early = size_t(n);
			else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				early_err = errno;
		}
		txitem *t = make_item(h, iov, cnt);
		if (inject_api || (flags & FI_INJECT))
			own_payload(t, iov, cnt, total);
		auto *o = new op();
		o->kind = OP_SEND;
		o->tagged = tagged;
		o->context = ctx;
		o->flags = flags;
		o->len = total;
		o->want_comp = want_comp;
		t->o = o;
		t->after = AFTER_COMPLETE;
		ep->tx_inflight++;
		if (early_err) {
			/* The connection broke: the send completes in error with it. */
			c->txq.push_back(t);
			conn_fail(ep, c, FI_EIO, strerror(early_err));
		} else if (early) {
			advance(t, early); /* the rest goes out as the socket drains */
			c->txq.push_back(t);
			want_out(ep, c, true);
		} else {
			send_item(t);
		}
		reap(ep);
		post = !ep->comps.empty();
		}
	}
sent:
	if (post)
		flush(ep);
	return 0;
}

ssize_t do_recv(tcp_ep *ep, const iovec *iov, size_t cnt, fi_addr_t src, uint64_t tag, uint64_t ignore,
		uint64_t flags, void *ctx, bool tagged)
{
	if (cnt > max_iov || (cnt && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (tagged || cnt != 1))
		return -FI_EINVAL;
	bool post = false; /* completions to post once unlocked */
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		if (!ep->enabled)
			return -FI_EOPBADSTATE;
		if (ep->rx_posted >= ep->info->rx_attr->size)
			return -FI_EAGAIN;
		auto *o = new op();
		o->kind = OP_RECV;
		o->tagged = tagged;
		o->context = ctx;
		o->flags = flags;
		for (size_t i = 0; i < cnt; i++)
			o->iov[i] = iov[i];
		o->iov_cnt = cnt;
		o->len = iov_total(iov, cnt);
		o->addr = directed(ep) ? src : FI_ADDR_UNSPEC;
		o->tag = tag;
		o->ignore = ignore;
		o->want_comp = !ep->rx_sel || (flags & FI_COMPLETION);
		ep->rx_posted++;
		bool multi = flags & FI_MULTI_RECV;
		auto &q = tagged ? ep->ux_tag : ep->ux_msg;
		for (auto it = q.begin(); it != q.end();) {
			unexp *u = *it;
			if (u->src == FI_ADDR_NOTAVAIL && ep->av && !u->peer.empty())
				u->src = av::reverse(ep->av, u->peer.data(), u->peer.size());
			if (!recv_matches(ep, o, tagged, u->tag, u->src)) {
				++it;
				continue;
			}
			it = q.erase(it);
			size_t into = std::min(op_room(o), u->len);
			size_t off = o->used;
			if (multi) {
				o->used += into;
				o->busy++;
			}
			if (u->rts) {
				rndv_rx r;
				r.o = o;
				r.off = off;
				r.into = into;
				r.len = u->len;
				r.src = u->src;
				r.tagged = u->tagged;
				r.has_data = u->has_data;
				r.tag = u->tag;
				r.data = u->data;
				grant(ep, u->from, u->rts_id, r);
				delete u;
				if (!multi || multi_spent(ep, o))
					goto posted;
				continue;
			}
			if (!u->done) {
				u->claimed = o;
				u->claim_off = off;
				if (!multi)
					goto posted;
			} else {
				copy_to_op(o, off, u->buf.get(), into);
				iovec first[max_iov];
				size_t k = slice(o, off, into, first);
				bool release = !multi || (--o->busy == 0 && multi_spent(ep, o));
				complete_rx(ep, o, k ? first[0].iov_base : o->iov[0].iov_base, into, u->src, u->tagged,
					    u->tag, u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0,
					    release);
				free_unexp(ep, u);
				if (release || !multi)
					goto posted;
			}
			if (multi && multi_spent(ep, o))
				goto posted; /* released by the bodies still landing */
		}
		(tagged ? ep->rq_tag : ep->rq_msg).push_back(o);
	posted:
		post = !ep->comps.empty();
	}
	if (post)
		flush(ep);
	return 0;
}

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

/* Hands an unexpected message to a (non multi-recv) receive, as do_recv
 * does for a match: a rendezvous is cleared, a body still arriving lands
 * when it is whole, a whole one is copied now. */
void deliver_unexp(tcp_ep *ep, op *o, unexp *u)
{
	size_t into = std::min(o->len, u->len);
	if (u->claim_err || (u->rts && !u->from)) {
		complete_rx(ep, o, nullptr, 0, u->src, true, u->tag, false, 0, 0,
			    u->claim_err ? u->claim_err : FI_ECONNRESET, true);
		delete u;
		return;
	}
	if (u->rts) {
		rndv_rx r;
		r.o = o;
		r.into = into;
		r.len = u->len;
		r.src = u->src;
		r.tagged = u->tagged;
		r.has_data = u->has_data;
		r.tag = u->tag;
		r.data = u->data;
		grant(ep, u->from, u->rts_id, r);
		delete u;
		return;
	}
	if (!u->done) {
		u->claimed = o; /* finish_body completes and frees both */
		u->claim_off = 0;
		return;
	}
	copy_to_op(o, 0, u->buf.get(), into);
	iovec first[max_iov];
	size_t k = slice(o, 0, into, first);
	complete_rx(ep, o, k ? first[0].iov_base : o->iov[0].iov_base, into, u->src, u->tagged, u->tag,
		    u->has_data, u->data, u->len - into, u->len > into ? FI_ETRUNC : 0, true);
	free_unexp(ep, u);
}

op *new_claim_recv(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags, bool discard)
{
	auto *o = new op();
	o->kind = OP_RECV;
	o->tagged = true;
	o->context = m->context;
	o->flags = flags & ~(FI_PEEK | FI_CLAIM | FI_DISCARD);
	o->discard = discard;
	if (!discard) {
		for (size_t i = 0; i < m->iov_count; i++)
			o->iov[i] = m->msg_iov[i];
		o->iov_cnt = m->iov_count;
		o->len = iov_total(m->msg_iov, m->iov_count);
	}
	o->want_comp = !ep->rx_sel || (flags & FI_COMPLETION);
	ep->rx_posted++;
	return o;
}

/* The completion a peek or a discard reports: the message's metadata,
 * no buffer (length 0 once discarded). */
cq::completion peek_comp(tcp_ep *ep, void *ctx, const unexp *u, bool discarded)
{
	cq::completion c;
	c.op_context = ctx;
	c.flags = FI_RECV | FI_TAGGED | (u && u->has_data ? FI_REMOTE_CQ_DATA : 0);
	if (!u)
		return c;
	c.len = discarded ? 0 : u->len;
	c.tag = u->tag;
	c.data = u->has_data ? u->data : 0;
	c.src_addr = u->src == FI_ADDR_NOTAVAIL || !ep->av ? FI_ADDR_NOTAVAIL : av::source_id(ep->av, u->src);
	return c;
}

/* FI_PEEK [| FI_CLAIM | FI_DISCARD]: the first unexpected tagged message
 * that would match; FI_ENOMSG error completion when there is none. */
void peek_locked(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	op probe;
	probe.kind = OP_RECV;
	probe.tagged = true;
	probe.tag = m->tag;
	probe.ignore = m->ignore;
	probe.addr = directed(ep) ? m->addr : FI_ADDR_UNSPEC;
	auto it = ep->ux_tag.begin();
	for (; it != ep->ux_tag.end(); ++it) {
		unexp *u = *it;
		if (u->src == FI_ADDR_NOTAVAIL && ep->av && !u->peer.empty())
			u->src = av::reverse(ep->av, u->peer.data(), u->peer.size());
		if (recv_matches(ep, &probe, true, u->tag, u->src))
			break;
	}
	if (it == ep->ux_tag.end()) {
		push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, nullptr, false), FI_ENOMSG);
		return;
	}
	unexp *u = *it;
	bool discard = flags & FI_DISCARD;
	push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, u, discard));
	if (!discard && !(flags & FI_CLAIM))
		return;
	ep->ux_tag.erase(it);
	if (discard)
		return deliver_unexp(ep, new_claim_recv(ep, m, flags, true), u);
	u->claim_ctx = m->context;
	ep->claimed_ux.insert(u);
	static_cast<fi_context *>(m->context)->internal[0] = u;
}

/* FI_CLAIM [| FI_DISCARD]: takes the message an FI_PEEK | FI_CLAIM with
 * this fi_context held. */
ssize_t claim_locked(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	auto *u = static_cast<unexp *>(static_cast<fi_context *>(m->context)->internal[0]);
	auto it = ep->claimed_ux.find(u);
	if (it == ep->claimed_ux.end() || u->claim_ctx != m->context) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"fi_trecvmsg(FI_CLAIM): the context holds no claimed message; pass the fi_context of a "
			"successful FI_PEEK | FI_CLAIM, unchanged\n");
		return -FI_EINVAL;
	}
	if (ep->rx_posted >= ep->info->rx_attr->size)
		return -FI_EAGAIN;
	ep->claimed_ux.erase(it);
	static_cast<fi_context *>(m->context)->internal[0] = nullptr;
	bool discard = flags & FI_DISCARD;
	if (discard)
		push_comp(ep, ep->rx_cq, nullptr, peek_comp(ep, m->context, u, true));
	deliver_unexp(ep, new_claim_recv(ep, m, flags, discard), u);
	return 0;
}

ssize_t peek_claim(tcp_ep *ep, const fi_msg_tagged *m, uint64_t flags)
{
	const char *bad = nullptr;
	if (!(ep->info->caps & FI_TAGGED))
		bad = "the endpoint was opened without FI_TAGGED";
	else if (!(flags & (FI_PEEK | FI_CLAIM)))
		bad = "FI_DISCARD needs FI_PEEK or FI_CLAIM";
	else if (flags & FI_MULTI_RECV)
		bad = "FI_MULTI_RECV does not combine with FI_PEEK / FI_CLAIM";
	else if ((flags & FI_CLAIM) && !m->context)
		bad = "FI_CLAIM needs a struct fi_context as the context";
	else if (m->iov_count > max_iov || (m->iov_count && !m->msg_iov))
		bad = "bad iov";
	if (bad) {
		WU_WARN(P(), FI_LOG_EP_DATA, "fi_trecvmsg(FI_PEEK/FI_CLAIM/FI_DISCARD): %s\n", bad);
		return (ep->info->caps & FI_TAGGED) ? -FI_EINVAL : -FI_EOPNOTSUPP;
	}
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		if (!ep->enabled)
			return -FI_EOPBADSTATE;
		if (flags & FI_PEEK) {
			peek_locked(ep, m, flags);
		} else if (ssize_t r = claim_locked(ep, m, flags)) {
			return r;
		}
	}
	flush(ep);
	return 0;
}

ssize_t do_rma(tcp_ep *ep, bool write, const iovec *iov, size_t cnt, fi_addr_t peer,
	       const fi_rma_iov *rma, size_t rma_cnt, uint64_t data, uint64_t flags, void *ctx, bool inject_api)
{
	if (cnt > max_iov || (cnt && !iov) || rma_cnt != 1 || !rma)
		return -FI_EINVAL;
	size_t total = iov_total(iov, cnt);
	if (total != rma->len && !(write && total <= rma->len))
		return -FI_EINVAL;
	if (total > msg_limit(ep))
		return too_long(ep, write ? "RMA write" : "RMA read", total);
	if ((inject_api || (flags & FI_INJECT)) && total > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, peer, &err);
		if (!c)
			return err;
		auto *o = new op();
		o->kind = write ? OP_WRITE : OP_READ;
		o->context = ctx;
		o->flags = flags;
		for (size_t i = 0; i < cnt; i++)
			o->iov[i] = iov[i];
		o->iov_cnt = cnt;
		o->len = total;
		o->id = ep->next_id++;
		o->want_comp = !inject_api && (!ep->tx_sel || (flags & FI_COMPLETION));
		frame::header h;
		h.id = o->id;
		h.tag = rma->key;
		h.aux = rma->addr;
		txitem *t;
		if (write) {
			h.type = frame::WRITE;
			h.len = total;
			if (flags & FI_REMOTE_CQ_DATA) {
				h.flags = frame::F_CQ_DATA;
				h.data = data;
			}
			t = make_item(h, iov, cnt);
			if (inject_api || (flags & FI_INJECT))
				own_payload(t, iov, cnt, total);
		} else {
			h.type = frame::READ_REQ;
			h.data = total;
			t = make_item(h, nullptr, 0);
		}
		queue_pending(ep, c, t, o);
	}
	flush(ep);
	return 0;
}

/* ---- atomics (fi_atomic(3)) ---- */

/* An atomic call refused before anything was queued: says why, once in a while. */
ssize_t refuse(const char *where, ssize_t err, const char *why)
{
	WU_WARN_SPARSE(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(int(-err)));
	return err;
}

/* Elements over an ioc list as byte iovecs of elements of size bytes;
 * false for a malformed list (no entries, too many, NULL addresses). */
bool ioc_bytes(const fi_ioc *v, size_t cnt, size_t size, iovec *out, size_t &elems)
{
	if (!v || !cnt || cnt > max_iov)
		return false;
	elems = 0;
	for (size_t i = 0; i < cnt; i++) {
		if ((!v[i].addr && v[i].count) || v[i].count > atomic::max_bytes)
			return false;
		out[i] = {v[i].addr, v[i].count * size};
		elems += v[i].count;
	}
	return true;
}

size_t ioc_count(const fi_ioc *v, size_t cnt)
{
	size_t n = 0;
	for (size_t i = 0; v && i < cnt; i++)
		n += v[i].count;
	return n;
}

/* One call of the fi_atomic(3) families: m as given (ATOMIC_READ ignores
 * its operands), with the compare buffers of the compare family and the
 * result buffers of fetch and compare. */
struct atomic_call {
	const char *where;
	atomic::kind k;
	const fi_msg_atomic *m;
	uint64_t flags;
	const fi_ioc *cmp = nullptr;
	size_t cmp_cnt = 0;
	fi_ioc *res = nullptr;
	size_t res_cnt = 0;
	bool inject_api = false;
};

ssize_t do_atomic(tcp_ep *ep, const atomic_call &a)
{
	const fi_msg_atomic *m = a.m;
	if (!m)
		return refuse(a.where, -FI_EINVAL, "msg is NULL");
	const char *why = nullptr;
	size_t max = 0;
	if (int r = atomic::check(m->datatype, m->op, a.k, &max, &why))
		return refuse(a.where, r, why);
	if (a.flags & FI_TAGGED)
		return refuse(a.where, -FI_EOPNOTSUPP, "atomics on tagged receive buffers (FI_TAGGED) are not supported");
	if (a.flags & FI_REMOTE_CQ_DATA)
		return refuse(a.where, -FI_EOPNOTSUPP, "remote CQ data is not carried by atomics");
	size_t size = atomic::size_of(m->datatype);
	bool fetch = a.k != atomic::kind::write;
	unsigned nops = atomic::operands(m->op);
	/* Operands (and compare values) go out as one payload. */
	iovec v[2 * max_iov];
	size_t k = 0, count = 0, n = 0;
	if (nops) {
		if (!ioc_bytes(m->msg_iov, m->iov_count, size, v, count))
			return refuse(a.where, -FI_EINVAL, "operand iocs missing, NULL or more than iov_limit");
		k = m->iov_count;
	}
	if (nops == 2) {
		if (!ioc_bytes(a.cmp, a.cmp_cnt, size, v + k, n) || n != count)
			return refuse(a.where, -FI_EINVAL, "compare iocs missing, NULL, too many or not matching the operands");
		k += a.cmp_cnt;
	}
	iovec rv[max_iov];
	if (fetch) {
		if (!ioc_bytes(a.res, a.res_cnt, size, rv, n) || (nops && n != count))
			return refuse(a.where, -FI_EINVAL, "result iocs missing, NULL, too many or not matching the operands");
		count = n; /* ATOMIC_READ: the results say how many */
	}
	if (!count)
		return refuse(a.where, -FI_EINVAL, "count is 0");
	if (count > max)
		return refuse(a.where, -FI_EMSGSIZE, "more elements than fi_atomicvalid's count");
	if (!m->rma_iov || m->rma_iov_count != 1 || m->rma_iov->count != count)
		return refuse(a.where, -FI_EINVAL, "needs one remote ioc of as many elements as the operands");
	size_t bytes = count * size;
	if ((a.inject_api || (a.flags & FI_INJECT)) && bytes > ep->info->tx_attr->inject_size)
		return refuse(a.where, -FI_EINVAL, "FI_INJECT operands above inject_size");
	{
		std::lock_guard<std::mutex> g(ep->mtx);
		ssize_t err = 0;
		conn *c = tx_conn(ep, m->addr, &err);
		if (!c)
			return err;
		auto *o = new op();
		o->kind = fetch ? OP_FETCH : OP_ATOMIC;
		o->context = m->context;
		o->flags = a.flags;
		if (fetch) {
			for (size_t i = 0; i < a.res_cnt; i++)
				o->iov[i] = rv[i];
			o->iov_cnt = a.res_cnt;
			o->len = bytes;
		}
		o->id = ep->next_id++;
		o->want_comp = !a.inject_api && (!ep->tx_sel || (a.flags & FI_COMPLETION));
		frame::header h;
		h.type = frame::ATOMIC;
		h.id = o->id;
		h.tag = m->rma_iov->key;
		h.aux = m->rma_iov->addr;
		frame::atomic_desc d;
		d.op = uint8_t(m->op);
		d.datatype = uint8_t(m->datatype);
		d.family = uint8_t(a.k);
		d.count = uint32_t(count);
		h.data = frame::pack(d);
		h.len = bytes * nops;
		/* Always a copy: the caller's buffers are free at once (FI_INJECT
		 * costs nothing more) and compare values need no second iovec run. */
		txitem *t = make_item(h, nullptr, 0);
		own_payload(t, v, k, h.len);
		t->left += h.len;
		queue_pending(ep, c, t, o);
	}
	flush(ep);
	return 0;
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

uint64_t tx_flags(tcp_ep *ep)
{
	return ep->info->tx_attr->op_flags;
}
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

/* fi_ops_rma */
ssize_t r_read(fid_ep *e, void *buf, size_t len, void *, fi_addr_t src, uint64_t addr, uint64_t key,
	       void *ctx) noexcept
{
	return ep_call(e, "fi_read", [&](tcp_ep *ep) {
		iovec v{buf, len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, false, &v, 1, src, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}
ssize_t r_readv(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t src, uint64_t addr,
		uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_readv", [&](tcp_ep *ep) {
		fi_rma_iov r{addr, iov_total(iov, cnt), key};
		return do_rma(ep, false, iov, cnt, src, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}
ssize_t r_readmsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_readmsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_rma(ep, false, m->msg_iov, m->iov_count, m->addr, m->rma_iov, m->rma_iov_count, 0, flags,
			      m->context, false);
	});
}
ssize_t r_write(fid_ep *e, const void *buf, size_t len, void *, fi_addr_t dest, uint64_t addr, uint64_t key,
		void *ctx) noexcept
{
	return ep_call(e, "fi_write", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}
ssize_t r_writev(fid_ep *e, const iovec *iov, void **, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_writev", [&](tcp_ep *ep) {
		fi_rma_iov r{addr, iov_total(iov, cnt), key};
		return do_rma(ep, true, iov, cnt, dest, &r, 1, 0, tx_flags(ep), ctx, false);
	});
}
ssize_t r_writemsg(fid_ep *e, const fi_msg_rma *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_writemsg", [&](tcp_ep *ep) -> ssize_t {
		if (!m)
			return -FI_EINVAL;
		return do_rma(ep, true, m->msg_iov, m->iov_count, m->addr, m->rma_iov, m->rma_iov_count, m->data,
			      flags, m->context, false);
	});
}
ssize_t r_inject(fid_ep *e, const void *buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key) noexcept
{
	return ep_call(e, "fi_inject_write", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, 0, 0, nullptr, true);
	});
}
ssize_t r_writedata(fid_ep *e, const void *buf, size_t len, void *, uint64_t data, fi_addr_t dest,
		    uint64_t addr, uint64_t key, void *ctx) noexcept
{
	return ep_call(e, "fi_writedata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, data, tx_flags(ep) | FI_REMOTE_CQ_DATA, ctx, false);
	});
}
ssize_t r_injectdata(fid_ep *e, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t addr,
		     uint64_t key) noexcept
{
	return ep_call(e, "fi_inject_writedata", [&](tcp_ep *ep) {
		iovec v{const_cast<void *>(buf), len};
		fi_rma_iov r{addr, len, key};
		return do_rma(ep, true, &v, 1, dest, &r, 1, data, FI_REMOTE_CQ_DATA, nullptr, true);
	});
}

/* fi_ops_atomic */
using atomic::kind;

/* The fi_msg_atomic of the non-msg calls: one remote ioc over all operands. */
fi_msg_atomic atomic_msg(const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, const fi_rma_ioc *rma,
			 fi_datatype dt, fi_op op, void *ctx)
{
	return {.msg_iov = iov, .desc = desc, .iov_count = cnt, .addr = dest, .rma_iov = rma, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = ctx, .data = 0};
}

ssize_t a_write(fid_ep *e, const void *buf, size_t count, void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		return do_atomic(ep, {"fi_atomic", kind::write, &m, tx_flags(ep)});
	});
}
ssize_t a_writev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_addr_t dest, uint64_t addr,
		 uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		return do_atomic(ep, {"fi_atomicv", kind::write, &m, tx_flags(ep)});
	});
}
ssize_t a_writemsg(fid_ep *e, const fi_msg_atomic *m, uint64_t flags) noexcept
{
	return ep_call(e, "fi_atomicmsg",
		       [&](tcp_ep *ep) { return do_atomic(ep, {"fi_atomicmsg", kind::write, m, flags}); });
}
ssize_t a_inject(fid_ep *e, const void *buf, size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		 fi_datatype dt, fi_op op) noexcept
{
	return ep_call(e, "fi_inject_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, nullptr, 1, dest, &r, dt, op, nullptr);
		atomic_call a{"fi_inject_atomic", kind::write, &m, FI_INJECT};
		a.inject_api = true;
		return do_atomic(ep, a);
	});
}
ssize_t a_readwrite(fid_ep *e, const void *buf, size_t count, void *desc, void *result, void *result_desc,
		    fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_fetch_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count}, res{result, count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		atomic_call a{"fi_fetch_atomic", kind::fetch, &m, tx_flags(ep)};
		a.res = &res;
		a.res_cnt = 1;
		(void)result_desc;
		return do_atomic(ep, a);
	});
}
ssize_t a_readwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, fi_ioc *resultv, void **,
		     size_t result_cnt, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
		     void *ctx) noexcept
{
	return ep_call(e, "fi_fetch_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(resultv, result_cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		atomic_call a{"fi_fetch_atomicv", kind::fetch, &m, tx_flags(ep)};
		a.res = resultv;
		a.res_cnt = result_cnt;
		return do_atomic(ep, a);
	});
}
ssize_t a_readwritemsg(fid_ep *e, const fi_msg_atomic *m, fi_ioc *resultv, void **, size_t result_cnt,
		       uint64_t flags) noexcept
{
	return ep_call(e, "fi_fetch_atomicmsg", [&](tcp_ep *ep) {
		atomic_call a{"fi_fetch_atomicmsg", kind::fetch, m, flags};
		a.res = resultv;
		a.res_cnt = result_cnt;
		return do_atomic(ep, a);
	});
}
ssize_t a_compwrite(fid_ep *e, const void *buf, size_t count, void *desc, const void *compare, void *,
		    void *result, void *, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
		    void *ctx) noexcept
{
	return ep_call(e, "fi_compare_atomic", [&](tcp_ep *ep) {
		fi_ioc v{const_cast<void *>(buf), count}, cmp{const_cast<void *>(compare), count}, res{result, count};
		fi_rma_ioc r{addr, count, key};
		fi_msg_atomic m = atomic_msg(&v, &desc, 1, dest, &r, dt, op, ctx);
		atomic_call a{"fi_compare_atomic", kind::compare, &m, tx_flags(ep), &cmp, 1, &res, 1};
		return do_atomic(ep, a);
	});
}
ssize_t a_compwritev(fid_ep *e, const fi_ioc *iov, void **desc, size_t cnt, const fi_ioc *comparev, void **,
		     size_t compare_cnt, fi_ioc *resultv, void **, size_t result_cnt, fi_addr_t dest, uint64_t addr,
		     uint64_t key, fi_datatype dt, fi_op op, void *ctx) noexcept
{
	return ep_call(e, "fi_compare_atomicv", [&](tcp_ep *ep) {
		fi_rma_ioc r{addr, ioc_count(iov, cnt), key};
		fi_msg_atomic m = atomic_msg(iov, desc, cnt, dest, &r, dt, op, ctx);
		atomic_call a{"fi_compare_atomicv", kind::compare, &m,	   tx_flags(ep),
			      comparev,		    compare_cnt,   resultv, result_cnt};
		return do_atomic(ep, a);
	});
}
ssize_t a_compwritemsg(fid_ep *e, const fi_msg_atomic *m, const fi_ioc *comparev, void **, size_t compare_cnt,
		       fi_ioc *resultv, void **, size_t result_cnt, uint64_t flags) noexcept
{
	return ep_call(e, "fi_compare_atomicmsg", [&](tcp_ep *ep) {
		atomic_call a{"fi_compare_atomicmsg", kind::compare, m, flags, comparev, compare_cnt, resultv, result_cnt};
		return do_atomic(ep, a);
	});
}

/* fi_atomicvalid and friends: what atomic::check says, count included. */
int atomic_valid(fid_ep *e, const char *where, kind k, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return int(ep_call(e, where, [&](tcp_ep *) -> ssize_t {
		if (!count)
			return refuse(where, -FI_EINVAL, "count is NULL");
		const char *why = nullptr;
		int r = atomic::check(dt, op, k, count, &why);
		if (r == -FI_EOPNOTSUPP) {
			/* An expected answer (MPICH probes every pair at MPI_Init),
			 * not a fault: info, so that it prints nothing by default. */
			WU_INFO(P(), FI_LOG_EP_DATA, "%s: %s (%s)\n", where, why, fi_strerror(FI_EOPNOTSUPP));
			return r;
		}
		return r ? refuse(where, r, why) : 0;
	}));
}
int a_writevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_atomicvalid", kind::write, dt, op, count);
}
int a_readwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_fetch_atomicvalid", kind::fetch, dt, op, count);
}
int a_compwritevalid(fid_ep *e, fi_datatype dt, fi_op op, size_t *count) noexcept
{
	return atomic_valid(e, "fi_compare_atomicvalid", kind::compare, dt, op, count);
}

fi_ops_msg msg_ops = {sizeof(fi_ops_msg), m_recv,	m_recvv,     m_recvmsg,   m_send,
		      m_sendv,		  m_sendmsg, m_inject, m_senddata, m_injectdata};
fi_ops_tagged tagged_ops = {sizeof(fi_ops_tagged), t_recv,	  t_recvv,   t_recvmsg,	 t_send,
			    t_sendv,		   t_sendmsg, t_inject, t_senddata, t_injectdata};
fi_ops_rma rma_ops = {sizeof(fi_ops_rma), r_read,	 r_readv,    r_readmsg,	  r_write,
		      r_writev,		  r_writemsg, r_inject, r_writedata, r_injectdata};

fi_ops_atomic atomic_ops = {sizeof(fi_ops_atomic), a_write,	      a_writev,	    a_writemsg,	  a_inject,
			    a_readwrite,	   a_readwritev,    a_readwritemsg, a_compwrite, a_compwritev,
			    a_compwritemsg,	   a_writevalid,    a_readwritevalid, a_compwritevalid};
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
			cleared.insert(p.second.o);
	for (op *o : ep->rq_msg)
		cleared.erase(o);
	for (op *o : ep->rq_tag)
		cleared.erase(o);
	for (op *o : cleared)
		delete o;
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
	for (op *o : ep->rq_msg)
		delete o;
	for (op *o : ep->rq_tag)
		delete o;
	std::unordered_set<op *> claimed;
	for (unexp *u : ep->ux_msg)
		delete u;
	for (unexp *u : ep->ux_tag)
		delete u;
	for (unexp *u : ep->claimed_ux)
		delete u;
	ep->claimed_ux.clear();
	ep->rq_msg.clear();
	ep->rq_tag.clear();
	ep->ux_msg.clear();
	ep->ux_tag.clear();
}

void free_connreq(tcp_connreq *cr);

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
			op *found = nullptr;
			for (auto *q : {&ep->rq_msg, &ep->rq_tag}) {
				for (auto it = q->begin(); it != q->end(); ++it) {
					if ((*it)->context == context && (*it)->busy == 0) {
						found = *it;
						q->erase(it);
						break;
					}
				}
				if (found)
					break;
			}
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
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
		close(fd);
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
		close(ep->lfd);
	}
	epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &e);
	ep->lfd = fd;
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

int ep_setname(fid *f, void *addr, size_t len) noexcept
{
	return guard("fi_setname", [&]() -> int {
		tcp_ep *ep = ep_of(f);
		if (!ep)
			return -FI_EINVAL;
		std::lock_guard<std::mutex> g(ep->mtx);
		if (ep->enabled)
			return -FI_EOPBADSTATE;
		sockaddr_storage ss;
		socklen_t l;
		if (!take_sockaddr(addr, len, ss, l))
			return -FI_EINVAL;
		sockaddr_storage old = ep->src;
		socklen_t oldl = ep->srclen;
		ep->src = ss;
		ep->srclen = l;
		if (ep->type == FI_EP_RDM) {
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
		std::lock_guard<std::mutex> g(ep->mtx);
		if (ep->type == FI_EP_RDM)
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
		std::lock_guard<std::mutex> g(ep->mtx);
		if (ep->type != FI_EP_MSG || !ep->mc || ep->mc->peer.empty())
			return -FI_ENOTCONN;
		return put_name(ep->mc->peer.data(), ep->mc->peer.size(), addr, len);
	});
}

int ep_connect(fid_ep *e, const void *addr, const void *param, size_t paramlen) noexcept
{
	return guard("fi_connect", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep || ep->type != FI_EP_MSG || !addr)
			return -FI_EINVAL;
		if (paramlen > frame::max_cm_data || (paramlen && !param))
			return -FI_EINVAL;
		sockaddr_storage ss;
		socklen_t l;
		size_t alen = ep->info->dest_addrlen ? ep->info->dest_addrlen : sizeof(sockaddr_in6);
		if (!take_sockaddr(addr, alen, ss, l) && !take_sockaddr(addr, sizeof(sockaddr_in), ss, l))
			return -FI_EINVAL;
		conn *c;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			if (!ep->eq)
				return -FI_ENOEQ;
			if (!ep->enabled)
				ep->enabled = true; /* fi_connect enables, as libfabric's providers do */
			if (ep->mc)
				return -FI_EISCONN;
			int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -FI_ENOMEM;
			set_nonblock_nodelay(fd);
			int r = connect(fd, reinterpret_cast<sockaddr *>(&ss), l);
			if (r && errno != EINPROGRESS) {
				int err = errno;
				close(fd);
				WU_WARN(P(), FI_LOG_EP_CTRL, "fi_connect to %s: %s\n",
					addr_text(addr_key(&ss, l)).c_str(), strerror(err));
				return err == ECONNREFUSED ? -FI_ECONNREFUSED : -FI_EINVAL;
			}
			st_connects.fetch_add(1, std::memory_order_relaxed);
			local_cc(fd, reinterpret_cast<sockaddr *>(&ss));
			c = new_conn(ep, fd, true, r == 0 ? C_CM_WAIT : C_CONNECTING);
			c->msg = true;
			c->peer = addr_key(&ss, l);
			ep->mc = c;
			arm_deadline(ep, c);
			if (c->deadline) {
				ep->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
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

int ep_accept(fid_ep *e, const void *param, size_t paramlen) noexcept
{
	return guard("fi_accept", [&]() -> int {
		tcp_ep *ep = ep_of(e);
		if (!ep || ep->type != FI_EP_MSG)
			return -FI_EINVAL;
		if (paramlen > frame::max_cm_data || (paramlen && !param))
			return -FI_EINVAL;
		conn *c;
		{
			std::lock_guard<std::mutex> g(ep->mtx);
			if (!ep->cr) {
				WU_WARN(P(), FI_LOG_EP_CTRL,
					"fi_accept: the endpoint was not opened from a FI_CONNREQ's info\n");
				return -FI_EINVAL;
			}
			if (!ep->eq)
				return -FI_ENOEQ;
			if (ep->mc)
				return -FI_EISCONN;
			ep->enabled = true;
			tcp_connreq *cr = ep->cr;
			c = new_conn(ep, cr->fd, false, C_READY);
			c->msg = true;
			c->peer = addr_key(&cr->peer, cr->peerlen);
			frame::header req; /* checked when it arrived */
			if (frame::decode(cr->in.data(), cr->in.size(), req) == frame::error::ok)
				c->tx_window = c->tx_credit = req.aux;
			c->an = cr->an;
			cr->fd = -1;
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
		if (!ep || ep->type != FI_EP_MSG)
			return -FI_EINVAL;
		std::lock_guard<std::mutex> g(ep->mtx);
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

fi_ops ep_fi_ops = {
	sizeof(fi_ops), ep_close, ep_bind, ep_control, WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr),
	WU_NOSYS(fi_ops, ops_set),
};
fi_ops_ep ep_ops = {
	sizeof(fi_ops_ep), ep_cancel, ep_getopt, ep_setopt, WU_NOSYS(fi_ops_ep, tx_ctx),
	WU_NOSYS(fi_ops_ep, rx_ctx), ep_rx_left, ep_tx_left,
};
fi_ops_cm ep_cm_ops = {
	sizeof(fi_ops_cm), ep_setname, ep_getname, ep_getpeer, ep_connect, WU_NOSYS(fi_ops_cm, listen),
	ep_accept, WU_NOSYS(fi_ops_cm, reject), ep_shutdown, WU_NOSYS(fi_ops_cm, join),
};

/* ---- passive endpoints ---- */

tcp_pep *pep_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_PEP)
		return nullptr;
	auto *p = container_of_fid<tcp_pep>(reinterpret_cast<fid_pep *>(f));
	return p->magic == pep_magic ? p : nullptr;
}

void free_connreq(tcp_connreq *cr)
{
	if (cr->fd >= 0)
		close(cr->fd);
	cr->magic = 0;
	delete cr;
}

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
						"(another user or job, or processes with different FI_TCP_JOB_KEY values)\n",
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
 * backlog instead. */
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
	long ms = pep->timeout_ms ? std::max(pep->timeout_ms / 4, 5) : 0;
	itimerspec its{};
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (ms % 1000) * 1000000L;
	its.it_interval = its.it_value;
	timerfd_settime(pep->tfd, 0, &its, nullptr);
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
			int fd = accept4(pep->lfd, reinterpret_cast<sockaddr *>(&ss), &l, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0)
				return;
			set_nonblock_nodelay(fd);
			local_cc(fd, reinterpret_cast<sockaddr *>(&ss));
			auto *cr = new tcp_connreq();
			cr->fid_.fclass = FI_CLASS_CONNREQ;
			cr->fid_.ops = &connreq_fi_ops;
			cr->magic = cr_magic;
			cr->pep = pep;
			cr->fd = fd;
			cr->peer = ss;
			cr->peerlen = l;
			cr->born = now_ms();
			cr->w = {connreq_event, cr};
			/* The connector proves the key over this nonce in its CONNREQ. */
			frame::header ch;
			ch.type = frame::CHALLENGE;
			ch.len = auth::nonce_len;
			char chal[frame::hdr_size + auth::nonce_len];
			frame::encode(ch, chal);
			bool ok = auth::random_bytes(cr->an.acc, auth::nonce_len);
			if (ok) {
				memcpy(chal + frame::hdr_size, cr->an.acc, auth::nonce_len);
				ok = write_all(fd, chal, sizeof chal);
			}
			if (!ok) {
				close(fd);
				delete cr;
				continue;
			}
			{
				std::lock_guard<std::mutex> g(pep->mtx);
				pep->reqs.insert(cr);
			}
			cm_engine::get().add(&cr->w, fd, EPOLLIN);
		}
	});
}

/* Drops connection requests still without a whole CONNREQ frame after
 * FI_TCP_CONN_TIMEOUT: a silent or stalled client holds nothing for long. */
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
	if (!pep->timeout_ms)
		return;
	int64_t now = now_ms();
	std::vector<tcp_connreq *> old;
	{
		std::lock_guard<std::mutex> g(pep->mtx);
		for (auto it = pep->reqs.begin(); it != pep->reqs.end();) {
			if (!(*it)->reported && now - (*it)->born >= pep->timeout_ms) {
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
			"FI_TCP_CONN_TIMEOUT (%d ms)\n",
			addr_text(addr_key(&cr->peer, cr->peerlen)).c_str(), pep->timeout_ms);
		cm_engine::get().del(&cr->w, cr->fd);
		free_connreq(cr);
	}
}

void pep_sweep_event(void *arg, uint32_t) noexcept
{
	guard_void("tcp connreq timeout", [&] { pep_sweep(static_cast<tcp_pep *>(arg)); });
}

/* Starts pep_sweep every quarter of FI_TCP_CONN_TIMEOUT (0: never). */
void start_pep_sweep(tcp_pep *pep)
{
	pep->timeout_ms = std::max(0, param::get_int(P(), "conn_timeout").value);
	/* Created even with no timeout: pep_pause uses it to resume. */
	pep->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (pep->tfd < 0)
		throw fi_error(FI_ENOMEM);
	pep_sweep_period(pep);
	pep->tw = {pep_sweep_event, pep};
	cm_engine::get().add(&pep->tw, pep->tfd, EPOLLIN);
}

int pep_close(fid *f) noexcept
{
	return guard("fi_close(pep)", [&]() -> int {
		tcp_pep *pep = pep_of(f);
		if (!pep)
			return -FI_EINVAL;
		/* The timer first: it may resume the listen watch. */
		if (pep->tfd >= 0) {
			cm_engine::get().del(&pep->tw, pep->tfd);
			close(pep->tfd);
		}
		if (pep->listening)
			cm_engine::get().del(&pep->w, pep->lfd);
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
		if (pep->eq) {
			eq_purge(pep->eq, &pep->pep.fid);
			eq_unbind(&pep->eq->fid);
		}
		if (pep->lfd >= 0)
			close(pep->lfd);
		info_free(pep->info);
		pep->fab->children.put();
		pep->magic = 0;
		delete pep;
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
		int r = eq_bind(bfid);
		if (r)
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
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -FI_ENOMEM;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, reinterpret_cast<sockaddr *>(&ss), l)) {
			close(fd);
			return -FI_EADDRINUSE;
		}
		close(pep->lfd);
		pep->lfd = fd;
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
	if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	size_t v = frame::max_cm_data;
	if (*len < sizeof v) {
		*len = sizeof v;
		return -FI_ETOOSMALL;
	}
	memcpy(val, &v, sizeof v);
	*len = sizeof v;
	return 0;
}

int pep_setopt(fid *f, int level, int name, const void *val, size_t len) noexcept
{
	if (!pep_of(f) || !val)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	size_t v;
	if (len != sizeof v)
		return -FI_EINVAL;
	memcpy(&v, val, sizeof v);
	return v <= frame::max_cm_data ? 0 : -FI_EINVAL;
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

fi_provider *prov_desc() noexcept;

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
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -FI_ENOMEM;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, reinterpret_cast<sockaddr *>(&ss), l)) {
		int err = errno;
		WU_WARN(P(), FI_LOG_EP_CTRL, "fi_passive_ep: cannot bind %s: %s\n",
			addr_text(addr_key(&ss, l)).c_str(), strerror(err));
		close(fd);
		return err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EADDRNOTAVAIL;
	}
	auto *pep = new tcp_pep();
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = &pep_fi_ops;
	pep->pep.ops = &pep_ops;
	pep->pep.cm = &pep_cm_ops;
	pep->magic = pep_magic;
	pep->fab = fab;
	pep->info = info_dup(info);
	pep->lfd = fd;
	pep->key = key;
	if (!pep->info) {
		close(fd);
		delete pep;
		return -FI_ENOMEM;
	}
	fab->children.get();
	*out = &pep->pep;
	return 0;
}

} // namespace wu::tcp
