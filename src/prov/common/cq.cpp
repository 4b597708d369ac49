/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues (fi_cq(3)) for every provider.
 *
 * A CQ is a power-of-two ring of wu::cq::completion records (each format's
 * entry is a prefix of one, so a read is a fixed-size copy) plus an error
 * queue, behind one spin lock.  The ring starts small and doubles up to the
 * size asked for; a full CQ refuses with -FI_EOVERRUN and the provider
 * retries, so nothing is ever dropped.  An error entry keeps its place in
 * the stream: reads return what was posted before it, then -FI_EAVAIL.
 *
 * Blocking reads sleep on a futex word that posters bump only when a
 * sleeper registered (and, with FI_CQ_COND_THRESHOLD, only once enough
 * entries are queued).  With manual progress, sread calls the bound
 * endpoints' progress functions: first in a short spin, then once per
 * sleep slice; providers with their own thread post and wake instead.
 *
 * The struct behind a fid_cq (the shell) outlives fi_close with ops that
 * return -FI_EBADF, as for EQs. */
#include "prov/common/cq.h"
#include "prov/common/idle_yield.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <new>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/err_rec.h"
#include "core/fid.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/owned.h"
#include "core/shim.h"
#include "eq/eq.h"
#include "core/sync.h"
#include "prov/common/cq_detail.h"

namespace wu {

/* ======================= shared pieces (cq_detail.h) ======================= */
namespace compl_detail {

void progress_set::lock() noexcept
{
	for (unsigned n = 0;; n++) {
		if (!busy_.load(std::memory_order_relaxed) &&
		    !busy_.exchange(true, std::memory_order_acquire))
			return;
		if (n < 64)
			eqd::cpu_relax();
		else
			sched_yield();
	}
}

int progress_set::add(progress_fn p)
{
	lock();
	struct unlocker {
		progress_set *s;
		~unlocker() { s->unlock(); }
	} u{this};
	if (p.fn) {
		auto it = std::find_if(fns_.begin(), fns_.end(), [&](const entry &e) {
			return e.p.fn == p.fn && e.p.arg == p.arg;
		});
		if (it != fns_.end())
			it->refs++;
		else
			fns_.push_back({p, 1}); /* may throw: nothing changed yet */
		set_one();
	}
	binds_.fetch_add(1, std::memory_order_acq_rel);
	return 0;
}

int progress_set::remove(progress_fn p) noexcept
{
	/* Taking the lock also waits for a progress call in flight, so the
	 * endpoint may free itself once this returns. */
	lock();
	int ret = 0;
	if (binds_.load(std::memory_order_relaxed) <= 0) {
		ret = -FI_EINVAL;
	} else if (p.fn) {
		auto it = std::find_if(fns_.begin(), fns_.end(), [&](const entry &e) {
			return e.p.fn == p.fn && e.p.arg == p.arg;
		});
		if (it == fns_.end()) {
			ret = -FI_EINVAL;
		} else if (--it->refs == 0) {
			fns_.erase(it);
			set_one();
		}
	}
	if (!ret)
		binds_.fetch_sub(1, std::memory_order_acq_rel);
	unlock();
	return ret;
}

int progress_set::block_all() noexcept
{
	if (!has_fns())
		return 0;
	/* Holding the list lock keeps the endpoints alive (remove waits). */
	lock();
	int ret = 0;
	for (const entry &e : fns_)
		if (e.p.block)
			if (int r = e.p.block(e.p.arg); r && !ret)
				ret = r;
	unlock();
	return ret;
}

void progress_set::run_all() noexcept
{
	for (const entry &e : fns_)
		e.p.fn(e.p.arg);
}

void progress_set::set_one() noexcept
{
	one_ = fns_.size() == 1 ? fns_[0].p : progress_fn{};
	nfn_.store(static_cast<int>(fns_.size()), std::memory_order_release);
}

using waitobj::eventfd_drain;
using waitobj::eventfd_set;

native_wait::~native_wait()
{
	if (set_eq_) {
		int r = fi_close(&set_eq_->fid);
		if (r)
			WU_WARN(&core_prov, FI_LOG_CQ, "closing the wait-set attachment failed: %s\n",
				fi_strerror(-r));
	}
}

int native_wait::init(prov::domain *dom, int obj, fid_wait *set, const char *what) noexcept
{
	switch (obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
		break;
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
		efd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		if (efd_ < 0) {
			int e = errno;
			WU_WARN(&core_prov, FI_LOG_CQ, "%s: eventfd failed: %s\n", what, strerror(e));
			return -e;
		}
		break;
	case FI_WAIT_MUTEX_COND:
		mc_ = try_make<waitobj::mutex_cond>();
		if (!mc_) {
			WU_WARN(&core_prov, FI_LOG_CQ, "%s: no memory for the mutex and condition\n", what);
			return -FI_ENOMEM;
		}
		break;
	case FI_WAIT_SET: {
		if (!set || !is_wait(&set->fid)) {
			WU_WARN(&core_prov, FI_LOG_CQ,
				"%s: FI_WAIT_SET needs wait_set from fi_wait_open on this fabric\n", what);
			return -FI_EINVAL;
		}
		/* The wait set follows EQ levels; a hidden EQ attached to it
		 * carries ours (one event while we have something to report). */
		fi_eq_attr ea{};
		ea.size = 4;
		ea.wait_obj = FI_WAIT_SET;
		ea.wait_set = set;
		int r = eq_open(&dom->fab->fid, dom->api_version, &ea, &set_eq_, nullptr);
		if (r) {
			set_eq_ = nullptr;
			WU_WARN(&core_prov, FI_LOG_CQ, "%s: attaching to the wait set failed: %s\n", what,
				fi_strerror(-r));
			return r;
		}
		hooks_.store(hook_set, std::memory_order_relaxed);
		break;
	}
	default:
		WU_WARN(&core_prov, FI_LOG_CQ,
			"%s: wait_obj %d is not a wait object (FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_SET, "
			"FI_WAIT_FD, FI_WAIT_POLLFD, FI_WAIT_MUTEX_COND or FI_WAIT_YIELD)\n",
			what, obj);
		return -FI_EINVAL;
	}
	obj_ = static_cast<fi_wait_obj>(obj);
	return 0;
}

void native_wait::set_level(bool up) noexcept
{
	uint32_t h = hooks_.load(std::memory_order_relaxed);
	if (!h || up == signaled_) [[likely]]
		return;
	signaled_ = up;
	if (h & hook_fd) {
		if (up)
			eventfd_set(efd_);
		else
			eventfd_drain(efd_);
	}
	if (h & hook_set) {
		if (up) {
			fi_eq_entry e{};
			ssize_t r = eq_post(set_eq_, FI_NOTIFY, &e, sizeof e);
			if (r < 0)
				WU_WARN(&core_prov, FI_LOG_CQ, "signaling the wait set failed: %s\n",
					fi_strerror(static_cast<int>(-r)));
		} else {
			uint32_t ev;
			fi_eq_entry e;
			(void)fi_eq_read(set_eq_, &ev, &e, sizeof e, 0);
		}
	}
}

void native_wait::expose_fd_locked(bool level) noexcept
{
	uint32_t h = hooks_.load(std::memory_order_relaxed);
	if (h & hook_fd)
		return;
	/* From now on the fd follows the level, starting from the present one
	 * (with a wait set attached, signaled_ already is that level). */
	hooks_.store(h | hook_fd, std::memory_order_relaxed);
	signaled_ = level;
	if (level)
		eventfd_set(efd_);
}

} // namespace compl_detail

/* ================================ CQ ================================ */
namespace cq {
namespace {

using compl_detail::native_wait;
using compl_detail::progress_set;
using eqd::lock_guard;
using eqd::spinlock;

/* Each fi_cq_*_entry is a prefix of completion: a read copies esize bytes. */
static_assert(offsetof(completion, op_context) == offsetof(fi_cq_tagged_entry, op_context));
static_assert(offsetof(completion, flags) == offsetof(fi_cq_tagged_entry, flags));
static_assert(offsetof(completion, len) == offsetof(fi_cq_tagged_entry, len));
static_assert(offsetof(completion, buf) == offsetof(fi_cq_tagged_entry, buf));
static_assert(offsetof(completion, data) == offsetof(fi_cq_tagged_entry, data));
static_assert(offsetof(completion, tag) == offsetof(fi_cq_tagged_entry, tag));
static_assert(sizeof(fi_cq_entry) == 8 && sizeof(fi_cq_msg_entry) == 24 &&
	      sizeof(fi_cq_data_entry) == 40 && sizeof(fi_cq_tagged_entry) == 48);

/* fi_cq_err_entry as libfabric 1.17 lays it out (before src_addr). */
constexpr size_t err_entry_117 = offsetof(fi_cq_err_entry, src_addr);
static_assert(err_entry_117 == 80 && sizeof(fi_cq_err_entry) == 88);

constexpr size_t initial_slots = 256;
/* sread with progress functions: spin this long calling them before
 * sleeping, then sleep in slices this long between calls. */
constexpr long progress_spin_ns = 50 * 1000;
constexpr long progress_slice_ns = 1000 * 1000;

struct cq_impl;

using cq_shell = waitobj::shell<fid_cq, cq_impl>;

struct err_rec : err_record<fi_cq_err_entry> {
	uint64_t pos = 0; /* ring position it was posted at: reads stop there */
};

size_t entry_size(fi_cq_format f) noexcept
{
	switch (f) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(fi_cq_tagged_entry);
	default:
		return sizeof(fi_cq_entry);
	}
}

struct cq_impl {
	cq_shell *shell = nullptr;
	prov::domain *dom = nullptr;
	child_ref parent; /* on dom->children */
	uint32_t api_version = 0;
	fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
	size_t esize = sizeof(fi_cq_entry);
	bool cond_threshold = false;
	bool leaf = false; /* post_is_leaf(), fixed at open */
	size_t limit = 0; /* entries + errors allowed at once */

	spinlock lk;
	std::unique_ptr<completion[]> ring;
	size_t mask = 0;
	uint64_t head = 0;
	uint64_t tail = 0;
	std::deque<err_rec> errs;
	/* errs.size() and errs.front().pos (none: no_err), kept beside the
	 * deque: its own empty()/size() cost several loads on every post and
	 * read. */
	size_t nerr = 0;
	static constexpr uint64_t no_err = UINT64_MAX;
	uint64_t err_at = no_err;
	eqd::wake_word ww;
	size_t want = SIZE_MAX;	     /* smallest threshold among sleepers */
	uint64_t sig_gen = 0;	     /* bumped by fi_cq_signal */
	bool sig_pending = false;     /* a signal nobody was waiting for */
	std::unique_ptr<unsigned char[]> owned_err;

	native_wait nw;
	progress_set prog;

	bool level() const noexcept { return head != tail || nerr; }

	/* head, tail and nerr change under lk, as relaxed atomic stores, so
	 * that read() may look at them without it: an empty look is the
	 * common poll, and a stale one only costs that poll. */
	template <class T> static void put(T &f, T v) noexcept
	{
		std::atomic_ref<T>(f).store(v, std::memory_order_relaxed);
	}
	template <class T> static T peek(const T &f) noexcept
	{
		return std::atomic_ref<T>(const_cast<T &>(f)).load(std::memory_order_relaxed);
	}
	bool surely_empty() const noexcept { return peek(tail) == peek(head) && peek(nerr) == 0; }

	/* Entries readable before the first error; 0 with an error on top. */
	size_t readable() const noexcept
	{
		return static_cast<size_t>(std::min(tail, err_at) - head);
	}

	bool grow() noexcept
	{
		size_t cap = mask + 1;
		auto n = try_make_array<completion>(cap * 2);
		if (!n)
			return false;
		size_t count = 0;
		for (uint64_t i = head; i != tail; i++)
			n[count++] = ring[i & mask];
		/* error positions are absolute: shift them with the ring */
		for (err_rec &r : errs)
			r.pos -= head;
		if (nerr)
			err_at -= head;
		ring = std::move(n);
		mask = cap * 2 - 1;
		put(head, uint64_t(0));
		put(tail, uint64_t(count));
		return true;
	}

	/* Under lk, after something was queued: who must be woken. */
	bool note_new_locked(bool error) noexcept
	{
		if (nw.mirrored()) [[unlikely]]
			nw.set_level(true);
		if (!ww.sleepers) [[likely]]
			return false;
		if (!error && readable() < want)
			return false; /* FI_CQ_COND_THRESHOLD not reached yet */
		return ww.bump_locked();
	}

	void after_new(bool wake) noexcept
	{
		if (wake) [[unlikely]]
			ww.wake();
		nw.broadcast();
	}

	/* The common post (room in the ring, nobody to wake or mirror to)
	 * makes no call, so it saves no registers: the rest is post_slow. */
	int post(const completion &c) noexcept
	{
		lk.lock();
		if (tail - head >= std::min(limit - nerr, mask) || has_watchers_locked()) [[unlikely]]
			return post_slow(c);
		ring[tail & mask] = c;
		put(tail, tail + 1);
		lk.unlock();
		return 0;
	}

	/* Under lk: a sleeper, a mirrored level or a mutex/cond wait object. */
	bool has_watchers_locked() const noexcept
	{
		return ww.sleepers || nw.mirrored() || nw.obj() == FI_WAIT_MUTEX_COND;
	}

	/* post() past its common case; called with lk held, releases it. */
	[[gnu::noinline]] int post_slow(const completion &c) noexcept
	{
		int r = -FI_EOVERRUN;
		bool wake = false;
		/* Full, or no memory now to grow: the provider retries. */
		if ((tail - head) + nerr < limit && (tail - head != mask + 1 || grow())) {
			ring[tail & mask] = c;
			put(tail, tail + 1);
			wake = note_new_locked(false);
			r = 0;
		}
		lk.unlock();
		if (r == 0)
			after_new(wake);
		return r;
	}

	int post_error(err_rec &&rec) noexcept
	{
		bool wake;
		{
			lock_guard g(lk);
			if ((tail - head) + nerr >= limit)
				return -FI_EOVERRUN;
			rec.pos = tail;
			try {
				errs.push_back(std::move(rec));
			} catch (...) {
				return -FI_ENOMEM;
			}
			put(nerr, nerr + 1);
			if (nerr == 1)
				err_at = tail;
			wake = note_new_locked(true);
		}
		after_new(wake);
		return 0;
	}

	/* Under lk: copies n entries out. */
	void copy_out(void *buf, size_t n, fi_addr_t *src) noexcept
	{
		auto *out = static_cast<unsigned char *>(buf);
		for (size_t i = 0; i < n; i++) {
			const completion &c = ring[(head + i) & mask];
			switch (esize) { /* constant sizes: inlined moves */
			case sizeof(fi_cq_tagged_entry):
				memcpy(out, &c, sizeof(fi_cq_tagged_entry));
				break;
			case sizeof(fi_cq_data_entry):
				memcpy(out, &c, sizeof(fi_cq_data_entry));
				break;
			case sizeof(fi_cq_msg_entry):
				memcpy(out, &c, sizeof(fi_cq_msg_entry));
				break;
			default:
				memcpy(out, &c, sizeof(fi_cq_entry));
				break;
			}
			out += esize;
			if (src)
				src[i] = c.src_addr;
		}
		put(head, head + n);
		if (nw.mirrored()) [[unlikely]] /* nothing to mirror: not even the level to compute */
			nw.set_level(level());
	}

	/* Under lk.  min: entries needed (threshold), 0 to take what is there. */
	ssize_t read_locked(void *buf, size_t count, fi_addr_t *src, size_t min) noexcept
	{
		size_t avail = readable();
		if (avail == 0)
			return nerr ? -FI_EAVAIL : -FI_EAGAIN;
		if (avail < min)
			return -FI_EAGAIN;
		size_t n = std::min(count, avail);
		copy_out(buf, n, src);
		return static_cast<ssize_t>(n);
	}

	[[gnu::always_inline]] ssize_t read(void *buf, size_t count, fi_addr_t *src) noexcept
	{
		prog.run();
		ssize_t r = -FI_EAGAIN;
		if (!surely_empty()) {
			lock_guard g(lk);
			r = read_locked(buf, count, src, 0);
		}
		idle_yield::polled(r != -FI_EAGAIN); /* may yield: not under lk */
		return r;
	}

	ssize_t sread(void *buf, size_t count, fi_addr_t *src, const void *cond, int timeout) noexcept
	{
		size_t threshold = 1;
		if (cond_threshold && cond) {
			size_t c;
			memcpy(&c, cond, sizeof c);
			threshold = std::clamp<size_t>(c, 1, std::max<size_t>(1, std::min(count, limit)));
		}
		eqd::deadline d(timeout);
		const bool yield = nw.yields();
		timespec spin_until = eqd::slice(d, progress_spin_ns).at;
		bool registered = false;
		bool give_up = timeout == 0;
		uint64_t gen = 0;
		bool first = true;
		for (;;) {
			prog.run();
			uint32_t s = 0;
			bool manual = prog.has_fns();
			bool spinning = false;
			{
				lock_guard g(lk);
				if (first) {
					gen = sig_gen;
					first = false;
				}
				if (registered) {
					registered = false;
					if (--ww.sleepers == 0)
						want = SIZE_MAX;
				}
				if (sig_gen != gen)
					give_up = true; /* fi_cq_signal while we slept */
				if (!give_up && d.passed())
					give_up = true;
				ssize_t r = read_locked(buf, count, src, give_up ? 0 : threshold);
				if (r != -FI_EAGAIN)
					return r;
				if (sig_pending) {
					sig_pending = false;
					return -FI_EAGAIN;
				}
				if (give_up)
					return -FI_EAGAIN;
				spinning = manual && eqd::before(eqd::now_mono(), spin_until);
				if (!yield && !spinning) {
					s = ww.enter_locked();
					want = std::min(want, threshold);
					registered = true;
				}
			}
			if (spinning) {
				eqd::cpu_relax();
				continue;
			}
			if (yield) {
				sched_yield();
				continue;
			}
			int rc = ww.sleep(s, manual ? eqd::slice(d, progress_slice_ns) : d);
			if (rc == EINTR)
				give_up = true; /* a signal handler ran: return to the caller */
		}
	}

	int signal() noexcept
	{
		bool wake = false;
		{
			lock_guard g(lk);
			sig_gen++;
			wake = ww.bump_locked();
			if (!wake)
				sig_pending = true;
		}
		if (wake)
			ww.wake();
		return 0;
	}

	void wake() noexcept
	{
		bool w = false;
		{
			lock_guard g(lk);
			w = ww.bump_locked();
		}
		if (w)
			ww.wake();
	}

	ssize_t readerr(fi_cq_err_entry *buf) noexcept
	{
		const bool new_rules = api_version >= FI_VERSION(1, 5);
		const bool has_src = api_version >= FI_VERSION(1, 20);
		lock_guard g(lk);
		if (!nerr)
			return -FI_EAGAIN;
		err_rec rec = std::move(errs.front());
		errs.pop_front();
		put(nerr, nerr - 1);
		err_at = nerr ? errs.front().pos : no_err;
		nw.set_level(level());
		fi_cq_err_entry out = rec.take(buf, new_rules, owned_err);
		/* An old binary's struct ends at 80 bytes: never write past it. */
		memcpy(buf, &out, has_src ? sizeof out : err_entry_117);
		return 1;
	}

	bool has_events() noexcept
	{
		lock_guard g(lk);
		return level();
	}
};

constinit compl_detail::graveyard<cq_shell> graves;

cq_impl *impl_of(fid_cq *cq) noexcept
{
	return container_of_fid<cq_shell>(cq)->impl;
}

/* ---- ops ---- */

int cq_close(fid *f);
int cq_control(fid *f, int command, void *arg);
ssize_t cq_read(fid_cq *cq, void *buf, size_t count);
ssize_t cq_readfrom(fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr);
ssize_t cq_readerr(fid_cq *cq, fi_cq_err_entry *buf, uint64_t flags);
ssize_t cq_sread(fid_cq *cq, void *buf, size_t count, const void *cond, int timeout);
ssize_t cq_sreadfrom(fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
		     int timeout);
int cq_signal(fid_cq *cq);
const char *cq_strerror(fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len);

fi_ops cq_fi_ops = {
	sizeof(fi_ops),		     cq_close, WU_NOSYS(fi_ops, bind), cq_control,
	WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

fi_ops_cq cq_ops = {
	sizeof(fi_ops_cq), cq_read,	cq_readfrom, cq_readerr, cq_sread,
	cq_sreadfrom,	   cq_signal, cq_strerror,
};

/* A closed handle: everything is -FI_EBADF. */
struct closed_cq {
	static constexpr fi_log_subsys subsys = FI_LOG_CQ;
	static constexpr const char *warning = "call on a closed completion queue\n";
	static constexpr const char *text = "completion queue is closed";
	static constexpr bool zero_u64 = false;
};
#define WU_CQ_BADF(ops_type, slot) (&waitobj::badf<closed_cq, decltype(ops_type::slot)>::fn)

constinit fi_ops dead_fi_ops = waitobj::dead_fi_ops<closed_cq>();

fi_ops_cq dead_cq_ops = {
	sizeof(fi_ops_cq),
	WU_CQ_BADF(fi_ops_cq, read),
	WU_CQ_BADF(fi_ops_cq, readfrom),
	WU_CQ_BADF(fi_ops_cq, readerr),
	WU_CQ_BADF(fi_ops_cq, sread),
	WU_CQ_BADF(fi_ops_cq, sreadfrom),
	WU_CQ_BADF(fi_ops_cq, signal),
	waitobj::dead_strerror<closed_cq, fid_cq>,
};

ssize_t bad_read_args(const char *what, void *buf, size_t count) noexcept
{
	(void)count;
	WU_WARN(&core_prov, FI_LOG_CQ, "%s: buf is NULL with count %zu\n", what, count);
	(void)buf;
	return -FI_EINVAL;
}

ssize_t cq_read(fid_cq *cq, void *buf, size_t count)
{
	return WU_GUARD({
		if (!buf && count) [[unlikely]]
			return bad_read_args("fi_cq_read", buf, count);
		return impl_of(cq)->read(buf, count, nullptr);
	});
}

ssize_t cq_readfrom(fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
	return WU_GUARD({
		if (!buf && count) [[unlikely]]
			return bad_read_args("fi_cq_readfrom", buf, count);
		return impl_of(cq)->read(buf, count, src_addr);
	});
}

ssize_t check_sread(const char *what, cq_impl *q, void *buf, size_t count) noexcept
{
	if (!buf || !count) {
		WU_WARN(&core_prov, FI_LOG_CQ, "%s: %s\n", what, buf ? "count is 0" : "buf is NULL");
		return -FI_EINVAL;
	}
	if (!q->nw.can_block()) {
		WU_WARN(&core_prov, FI_LOG_CQ,
			"%s: not allowed on a CQ opened with %s; use fi_cq_read%s\n", what,
			q->nw.obj() == FI_WAIT_NONE ? "FI_WAIT_NONE" : "FI_WAIT_SET",
			q->nw.obj() == FI_WAIT_SET ? " after fi_wait on the wait set" : "");
		return -FI_ENOSYS;
	}
	return 0;
}

ssize_t cq_sread(fid_cq *cq, void *buf, size_t count, const void *cond, int timeout)
{
	return WU_GUARD({
		cq_impl *q = impl_of(cq);
		if (ssize_t e = check_sread("fi_cq_sread", q, buf, count))
			return e;
		return q->sread(buf, count, nullptr, cond, timeout);
	});
}

ssize_t cq_sreadfrom(fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
		     int timeout)
{
	return WU_GUARD({
		cq_impl *q = impl_of(cq);
		if (ssize_t e = check_sread("fi_cq_sreadfrom", q, buf, count))
			return e;
		return q->sread(buf, count, src_addr, cond, timeout);
	});
}

ssize_t cq_readerr_impl(fid_cq *cq, fi_cq_err_entry *buf, uint64_t flags)
{
	if (!buf) {
		WU_WARN(&core_prov, FI_LOG_CQ, "fi_cq_readerr: buf is NULL\n");
		return static_cast<ssize_t>(-FI_EINVAL);
	}
	if (flags) {
		WU_WARN(&core_prov, FI_LOG_CQ, "fi_cq_readerr: flags 0x%llx are not defined\n",
			static_cast<unsigned long long>(flags));
		return static_cast<ssize_t>(-FI_EBADFLAGS);
	}
	return impl_of(cq)->readerr(buf);
}

ssize_t cq_readerr(fid_cq *cq, fi_cq_err_entry *buf, uint64_t flags)
{
	return WU_GUARD(return cq_readerr_impl(cq, buf, flags););
}

int cq_signal_impl(fid_cq *cq)
{
	cq_impl *q = impl_of(cq);
	if (q->nw.obj() == FI_WAIT_NONE) {
		WU_WARN(&core_prov, FI_LOG_CQ,
			"fi_cq_signal: the CQ was opened with FI_WAIT_NONE; nobody can wait on it\n");
		return -FI_ENOSYS;
	}
	return q->signal();
}

int cq_signal(fid_cq *cq)
{
	return WU_GUARD(return cq_signal_impl(cq););
}

const char *cq_strerror(fid_cq *, int prov_errno, const void *, char *buf, size_t len)
{
	return waitobj::queue_strerror(prov_errno, buf, len);
}

void expose_fd(void *owner) noexcept
{
	auto *q = static_cast<cq_impl *>(owner);
	lock_guard g(q->lk);
	q->nw.expose_fd_locked(q->level());
}

constexpr waitobj::names cq_names = {FI_LOG_CQ, "a CQ", "CQ", "a CQ", true};

int cq_control(fid *f, int command, void *arg)
{
	return WU_GUARD({
		cq_impl *q = container_of_fid<cq_shell>(f)->impl;
		return q->nw.control(command, arg, cq_names, expose_fd, q);
	});
}

int cq_close_impl(fid *f)
{
	auto *sh = container_of_fid<cq_shell>(f);
	cq_impl *q = sh->impl;
	if (int b = q->prog.binds()) {
		WU_WARN(&core_prov, FI_LOG_CQ,
			"fi_close(CQ %p): %d endpoint or poll-set binding(s) still use it; close the "
			"endpoints (fi_poll_del for a poll set) first\n",
			static_cast<void *>(f), b);
		return -FI_EBUSY;
	}
	waitobj::retire(sh, graves, &dead_fi_ops, &dead_cq_ops);
	return 0;
}

int cq_close(fid *f)
{
	return WU_GUARD(return cq_close_impl(f););
}

bool leaf_wait(fi_wait_obj w) noexcept
{
	switch (w) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
		return true;
	default:
		return false; /* a wait set's EQ or a mutex/cond: other locks */
	}
}

int open_cq(prov::domain *dom, fi_cq_attr *attr, fid_cq **cqp, void *context)
{
	if (!dom || !attr || !cqp) {
		WU_WARN(&core_prov, FI_LOG_CQ, "fi_cq_open: %s is NULL or invalid\n",
			!dom ? "domain" : !attr ? "attr" : "cq");
		return -FI_EINVAL;
	}
	*cqp = nullptr;
	const fi_provider *prov = dom->fab->hooks->prov;
	if (attr->flags & ~FI_AFFINITY) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cq_open: fi_cq_attr.flags 0x%llx are not supported (only FI_AFFINITY)\n",
			static_cast<unsigned long long>(attr->flags & ~FI_AFFINITY));
		return -FI_EBADFLAGS;
	}
	if (attr->size > max_size) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cq_open: fi_cq_attr.size %zu is above the %zu entries supported\n", attr->size,
			max_size);
		return -FI_EINVAL;
	}
	int fmt, wobj, wcond; /* read as int: out-of-range enum values are the caller's */
	memcpy(&fmt, &attr->format, sizeof fmt);
	memcpy(&wobj, &attr->wait_obj, sizeof wobj);
	memcpy(&wcond, &attr->wait_cond, sizeof wcond);
	if (fmt < FI_CQ_FORMAT_UNSPEC || fmt > FI_CQ_FORMAT_TAGGED) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cq_open: fi_cq_attr.format %d is not a CQ format (FI_CQ_FORMAT_UNSPEC, "
			"CONTEXT, MSG, DATA or TAGGED)\n",
			fmt);
		return -FI_EINVAL;
	}
	if (wcond != FI_CQ_COND_NONE && wcond != FI_CQ_COND_THRESHOLD) {
		WU_WARN(prov, FI_LOG_CQ,
			"fi_cq_open: fi_cq_attr.wait_cond %d is not FI_CQ_COND_NONE or "
			"FI_CQ_COND_THRESHOLD\n",
			wcond);
		return -FI_EINVAL;
	}
	if ((attr->flags & FI_AFFINITY) &&
	    (attr->signaling_vector < 0 || attr->signaling_vector >= sysconf(_SC_NPROCESSORS_CONF)))
		WU_INFO(prov, FI_LOG_CQ,
			"fi_cq_open: signaling_vector %d is not a CPU here; ignored (it is a hint)\n",
			attr->signaling_vector);

	auto q = std::make_unique<cq_impl>();
	if (int r = q->nw.init(dom, wobj, attr->wait_set, "fi_cq_open"))
		return r;
	q->dom = dom;
	q->parent = child_ref(dom->children);
	q->api_version = dom->api_version;
	q->format = fmt == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : static_cast<fi_cq_format>(fmt);
	q->esize = entry_size(q->format);
	q->cond_threshold = wcond == FI_CQ_COND_THRESHOLD;
	q->leaf = leaf_wait(q->nw.obj());
	q->limit = attr->size ? std::max(attr->size, min_size) : default_size;
	size_t slots = std::min(pow2_ceil(q->limit), initial_slots);
	q->ring = std::make_unique<completion[]>(slots);
	q->mask = slots - 1;

	*cqp = waitobj::publish<fid_cq>(std::move(q), FI_CLASS_CQ, context, &cq_fi_ops, &cq_ops);
	return 0;
}

cq_impl *live(fid_cq *cq, const char *what) noexcept
{
	if (!cq || !is_cq(&cq->fid)) [[unlikely]] {
		WU_WARN(&core_prov, FI_LOG_CQ, "%s: not an open completion queue\n", what);
		return nullptr;
	}
	return impl_of(cq);
}

} // namespace

bool is_cq(const fid *f) noexcept
{
	return f && f->fclass == FI_CLASS_CQ && f->ops == &cq_fi_ops;
}

int open(prov::domain *dom, fi_cq_attr *attr, fid_cq **cq, void *context) noexcept
{
	return WU_GUARD(return open_cq(dom, attr, cq, context););
}

int domain_cq_open(fid_domain *domain, fi_cq_attr *attr, fid_cq **cq, void *context) noexcept
{
	return open(prov::domain_of(domain), attr, cq, context);
}

int bind_impl(fid *f, progress_fn progress)
{
	if (!is_cq(f)) {
		WU_WARN(&core_prov, FI_LOG_CQ, "bind: %p is not an open completion queue\n",
			static_cast<void *>(f));
		return -FI_EINVAL;
	}
	return impl_of(reinterpret_cast<fid_cq *>(f))->prog.add(progress);
}

int bind(fid *f, progress_fn progress) noexcept
{
	return WU_GUARD(return bind_impl(f, progress););
}

int unbind(fid *f, progress_fn progress) noexcept
{
	if (!is_cq(f)) {
		WU_WARN(&core_prov, FI_LOG_CQ, "unbind: %p is not an open completion queue\n",
			static_cast<void *>(f));
		return -FI_EINVAL;
	}
	int r = impl_of(reinterpret_cast<fid_cq *>(f))->prog.remove(progress);
	if (r)
		WU_WARN(&core_prov, FI_LOG_CQ, "unbind: CQ %p has no such binding\n",
			static_cast<void *>(f));
	return r;
}

int post(fid_cq *cq, const completion &c) noexcept
{
	cq_impl *q = live(cq, "cq::post");
	if (!q) [[unlikely]]
		return -FI_EBADF;
	return q->post(c);
}

bool post_is_leaf(fid_cq *cq) noexcept
{
	cq_impl *q = cq && is_cq(&cq->fid) ? impl_of(cq) : nullptr;
	return q && q->leaf;
}

int post_if_leaf(fid_cq *cq, const completion &c) noexcept
{
	cq_impl *q = cq && is_cq(&cq->fid) ? impl_of(cq) : nullptr;
	if (!q || !q->leaf)
		return 1;
	return q->post(c);
}

int post_error_impl(fid_cq *cq, const completion &c, int err, int prov_errno, size_t olen,
	       const void *err_data, size_t err_data_size)
{
	cq_impl *q = live(cq, "cq::post_error");
	if (!q)
		return -FI_EBADF;
	if (err <= 0) {
		WU_WARN(&core_prov, FI_LOG_CQ,
			"cq::post_error: err %d is not a positive FI_E* code\n", err);
		return -FI_EINVAL;
	}
	err_rec rec;
	rec.e.op_context = c.op_context;
	rec.e.flags = c.flags;
	rec.e.len = c.len;
	rec.e.buf = c.buf;
	rec.e.data = c.data;
	rec.e.tag = c.tag;
	rec.e.olen = olen;
	rec.e.err = err;
	rec.e.prov_errno = prov_errno;
	rec.e.src_addr = c.src_addr;
	if (int r = rec.keep_data(err_data, err_data_size))
		return r;
	return q->post_error(std::move(rec));
}

int post_error(fid_cq *cq, const completion &c, int err, int prov_errno, size_t olen,
	       const void *err_data, size_t err_data_size) noexcept
{
	return WU_GUARD(return post_error_impl(cq, c, err, prov_errno, olen, err_data, err_data_size););
}

void wake(fid_cq *cq) noexcept
{
	if (cq_impl *q = live(cq, "cq::wake"))
		q->wake();
}

int trywait(fid *f) noexcept
{
	if (!is_cq(f))
		return -FI_EINVAL;
	cq_impl *q = impl_of(reinterpret_cast<fid_cq *>(f));
	if (q->has_events())
		return -FI_EAGAIN;
	if (int r = q->prog.block_all())
		return r;
	/* Something may have completed while the hooks ran. */
	return q->has_events() ? -FI_EAGAIN : 0;
}

int pending(fid *f) noexcept
{
	if (!is_cq(f))
		return -FI_EINVAL;
	cq_impl *q = impl_of(reinterpret_cast<fid_cq *>(f));
	q->prog.run();
	lock_guard g(q->lk);
	return q->level() ? 1 : 0;
}

} // namespace cq
} // namespace wu
