/* SPDX-License-Identifier: BSD-3-Clause */
/* Event queues (fi_eq(3)) and wait sets.
 *
 * An EQ is a power-of-two ring of 64-byte slots (payloads up to 56 bytes
 * inline, larger ones on the heap) plus a separate error queue, all behind
 * one lock, biased to the first thread that uses it (core/sync.h).  Blocking
 * readers spin briefly, then sleep on a futex word that writers bump only
 * when a sleeper registered, so an unwatched write is lock, copy, unlock.  Native wait objects (eventfd, mutex+cond, wait set) are kept in
 * step with the queue's "something to report" level only when they exist
 * or were handed out, so they cost nothing otherwise.
 *
 * The struct behind a fid_eq (the shell) outlives fi_close: its ops are
 * switched to ones that return -FI_EBADF and it is parked in a bounded
 * quarantine, so calls on a closed handle fail instead of touching freed
 * memory. */
#include "eq/eq.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/err_rec.h"
#include "core/fd.h"
#include "core/fid.h"
#include "core/hash.h"
#include "core/info.h"
#include "core/log.h"
#include "core/owned.h"
#include "core/shim.h"
#include "core/wait.h"
#include "core/sync.h"

namespace wu {

namespace eqd {

namespace {
long membarrier(int cmd) noexcept
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

bool membarrier_register() noexcept
{
	long q = membarrier(MEMBARRIER_CMD_QUERY);
	return q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	       membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}
} // namespace

bool membarrier_ready() noexcept
{
	static const bool ready = [] {
		bool ok = membarrier_register();
		if (!ok)
			WU_INFO(&core_prov, FI_LOG_CORE,
				"membarrier(2) private expedited is unavailable: queue locks are "
				"not biased\n");
		return ok;
	}();
	return ready;
}

void membarrier_all() noexcept
{
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return;
	/* A forked child starts unregistered. */
	if (membarrier_register() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return;
	WU_WARN(&core_prov, FI_LOG_CORE,
		"membarrier(2) failed (%s) while revoking a biased queue lock\n", strerror(errno));
}

} // namespace eqd

namespace {

using lock_guard = eqd::lock_guard<eqd::biased_lock>;
using waitobj::eventfd_drain;
using waitobj::eventfd_set;
using waitobj::make_eventfd;
using waitobj::mutex_cond;

struct eq_impl;
struct wait_impl;

/* What the application's fid_eq / fid_wait points at. */
using eq_shell = waitobj::shell<fid_eq, eq_impl>;
using wait_shell = waitobj::shell<fid_wait, wait_impl>;

struct alignas(64) slot {
	uint32_t event;
	uint32_t len;
	union {
		unsigned char inl[eq_inline_bytes];
		unsigned char *heap;
	};
};
static_assert(sizeof(slot) == eq_slot_bytes);

using err_rec = err_record<fi_eq_err_entry>;

constexpr size_t cm_header = sizeof(fi_eq_cm_entry);
constexpr size_t initial_slots = 64;
constexpr size_t old_err_entry_bytes = offsetof(fi_eq_err_entry, err_data_size);

bool is_cm_event(uint32_t event) noexcept
{
	return event == FI_CONNREQ || event == FI_CONNECTED || event == FI_SHUTDOWN;
}

/* ---- closed handles ---- */

/* Closed shells stay valid memory for the next quarantine_max closes. */
constexpr size_t quarantine_max = 16384;

constinit waitobj::graveyard<eq_shell, quarantine_max> eq_graves;
constinit waitobj::graveyard<wait_shell, quarantine_max> wait_graves;

/* ---- wait sets ---- */

struct wait_impl {
	wait_shell *shell = nullptr;
	fi_wait_obj obj = FI_WAIT_UNSPEC;
	std::mutex m;
	size_t members = 0; /* attached EQs */
	size_t ready = 0;   /* attached EQs with something to report */
	eqd::wake_word ww;
	unique_fd efd;
	std::unique_ptr<mutex_cond> mc;
	child_ref parent; /* on the fabric, dropped when this closes */

	/* An attached EQ's level changed (called under that EQ's lock). */
	void adjust(bool up) noexcept
	{
		bool wake = false;
		{
			std::lock_guard g(m);
			bool was = ready > 0;
			ready = up ? ready + 1 : ready - 1;
			bool now = ready > 0;
			if (now && !was) {
				if (efd >= 0)
					eventfd_set(efd);
				wake = ww.bump_locked();
				if (mc)
					mc->broadcast();
			} else if (!now && was && efd >= 0) {
				eventfd_drain(efd);
			}
		}
		if (wake)
			ww.wake();
	}

	bool has_ready() noexcept
	{
		std::lock_guard g(m);
		return ready > 0;
	}

	int wait(int timeout) noexcept
	{
		eqd::deadline d(timeout);
		for (;;) {
			uint32_t s = 0;
			{
				std::lock_guard g(m);
				if (ready)
					return 0;
				if (timeout == 0 || d.passed())
					return -FI_ETIMEDOUT;
				if (obj != FI_WAIT_YIELD)
					s = ww.enter_locked();
			}
			if (obj == FI_WAIT_YIELD) {
				sched_yield();
				continue;
			}
			int rc = ww.sleep(s, d);
			std::lock_guard g(m);
			ww.sleepers--;
			if (ready)
				return 0;
			if (rc == EINTR)
				return -FI_EINTR;
			if (rc == ETIMEDOUT)
				return -FI_ETIMEDOUT;
		}
	}
};

/* ---- event queues ---- */

enum : uint32_t {
	hook_fd = 1,  /* eventfd handed out: mirror the level on it */
	hook_set = 2, /* attached to a wait set */
};

struct eq_impl {
	eq_shell *shell = nullptr;
	fid_fabric *fabric = nullptr;
	uint32_t api_version = 0;
	uint64_t flags = 0;
	fi_wait_obj wait_obj = FI_WAIT_NONE;
	size_t limit = 0;

	eqd::biased_lock lk;
	std::unique_ptr<slot[]> ring;
	size_t mask = 0;
	uint64_t head = 0;
	uint64_t tail = 0;
	size_t nerr = 0;
	bool overrun = false;
	bool signaled = false;
	uint32_t hooks = 0;
	eqd::wake_word ww;
	/* Bumped under lk for every new event, error or overrun, and read
	 * without it by a spinning sread: a store, not a read-modify-write. */
	std::atomic<uint64_t> news{0};
	std::deque<err_rec> errs;
	std::unique_ptr<unsigned char[]> owned_err; /* err_data handed out by readerr */

	unique_fd efd;
	std::unique_ptr<mutex_cond> mc;
	wait_impl *set = nullptr;
	std::atomic<int> binds{0};
	child_ref parent; /* on the fabric, dropped when this closes */

	~eq_impl()
	{
		for (uint64_t i = head; i != tail; i++)
			release(ring[i & mask]);
	}

	static unsigned char *payload(slot &s) noexcept
	{
		return s.len > eq_inline_bytes ? s.heap : s.inl;
	}

	static const fid *fid_of(slot &s) noexcept
	{
		fid *f = nullptr;
		if (s.len >= sizeof f)
			memcpy(&f, payload(s), sizeof f);
		return f;
	}

	/* An event dropped unread: its heap payload and a CONNREQ's info. */
	static void release(slot &s) noexcept
	{
		if (s.event == FI_CONNREQ && s.len >= cm_header) {
			fi_info *info;
			memcpy(&info, payload(s) + offsetof(fi_eq_cm_entry, info), sizeof info);
			/* Nobody will fi_accept or fi_reject a request dropped
			 * unread: its provider frees it through its close op. */
			if (info && info->handle && info->handle->fclass == FI_CLASS_CONNREQ &&
			    info->handle->ops && info->handle->ops->close)
				info->handle->ops->close(info->handle);
			info_free(info);
		}
		if (s.len > eq_inline_bytes)
			free(s.heap);
	}

	bool level() const noexcept { return head != tail || nerr || overrun; }

	size_t room() noexcept
	{
		lock_guard g(lk);
		size_t used = size_t(tail - head) + nerr;
		return overrun || used >= limit ? 0 : limit - used;
	}

	/* After any change to the queue, under lk. */
	void sync_level() noexcept
	{
		if (!hooks) [[likely]]
			return;
		bool now = level();
		if (now == signaled)
			return;
		signaled = now;
		if (hooks & hook_fd) {
			if (now)
				eventfd_set(efd);
			else
				eventfd_drain(efd);
		}
		if (hooks & hook_set)
			set->adjust(now);
	}

	/* Under lk: bump the futex word if someone sleeps on it. */
	bool note_new_locked() noexcept
	{
		news.store(news.load(std::memory_order_relaxed) + 1, std::memory_order_release);
		sync_level();
		return ww.bump_locked();
	}

	void after_new(bool wake) noexcept
	{
		if (wake | (mc != nullptr)) [[unlikely]] {
			if (wake)
				ww.wake();
			if (mc)
				mc->broadcast();
		}
	}

	/* Under lk, when the queue is full. */
	bool grow() noexcept
	{
		size_t cap = mask + 1;
		auto n = try_make_array<slot>(cap * 2);
		if (!n)
			return false;
		size_t count = 0;
		for (uint64_t i = head; i != tail; i++)
			n[count++] = ring[i & mask];
		ring = std::move(n);
		mask = cap * 2 - 1;
		head = 0;
		tail = count;
		return true;
	}

	/* Under lk: the capacity check shared by events and errors. */
	bool full_locked(bool &wake) noexcept
	{
		if (overrun)
			return true;
		if ((tail - head) + nerr < limit)
			return false;
		overrun = true;
		WU_WARN(&core_prov, FI_LOG_EQ,
			"event queue %p overran (size %zu); it is now unusable: open it with a larger "
			"fi_eq_attr.size and read events sooner\n",
			static_cast<void *>(&shell->fid), limit);
		wake = note_new_locked();
		return true;
	}

	ssize_t push(uint32_t event, const void *buf, size_t len) noexcept
	{
		unsigned char *heap = nullptr;
		if (len > eq_inline_bytes) {
			heap = static_cast<unsigned char *>(malloc(len));
			if (!heap)
				return -FI_ENOMEM;
			memcpy(heap, buf, len);
		}
		bool wake = false;
		ssize_t ret = static_cast<ssize_t>(len);
		{
			lock_guard g(lk);
			if (full_locked(wake)) {
				ret = -FI_EOVERRUN;
			} else if (tail - head == mask + 1 && !grow()) {
				ret = -FI_ENOMEM;
			} else {
				slot &s = ring[tail & mask];
				s.event = event;
				s.len = static_cast<uint32_t>(len);
				if (heap)
					s.heap = heap;
				else if (len == sizeof(fi_eq_entry)) [[likely]]
					memcpy(s.inl, buf, sizeof(fi_eq_entry)); /* inlined moves */
				else
					memcpy(s.inl, buf, len);
				tail++;
				heap = nullptr;
				wake = note_new_locked();
			}
		}
		if (heap) [[unlikely]]
			free(heap);
		after_new(wake);
		return ret;
	}

	int push_error(const fi_eq_err_entry &e) noexcept
	{
		err_rec rec;
		rec.e = e;
		if (int r = rec.keep_data(e.err_data, e.err_data_size))
			return r;
		bool wake = false;
		int ret = 0;
		{
			lock_guard g(lk);
			if (full_locked(wake)) {
				ret = -FI_EOVERRUN;
			} else {
				errs.push_back(std::move(rec)); /* strong guarantee if it throws */
				nerr++;
				wake = note_new_locked();
			}
		}
		after_new(wake);
		return ret;
	}

	/* Under lk.  *to_free receives a consumed heap payload. */
	ssize_t read_locked(uint32_t *event, void *buf, size_t len, uint64_t flags,
			    unsigned char **to_free) noexcept
	{
		if (nerr)
			return -FI_EAVAIL;
		if (head == tail)
			return overrun ? -FI_EAVAIL : -FI_EAGAIN;
		slot &s = ring[head & mask];
		/* Connection events may be cut after the cm header; anything else
		 * must fit whole. */
		size_t need = is_cm_event(s.event) ? std::min<size_t>(s.len, cm_header) : s.len;
		if (len < need)
			return -FI_ETOOSMALL;
		size_t n = std::min<size_t>(len, s.len);
		if (n == sizeof(fi_eq_entry)) [[likely]]
			memcpy(buf, s.inl, sizeof(fi_eq_entry));
		else
			memcpy(buf, payload(s), n);
		*event = s.event;
		if (!(flags & FI_PEEK)) {
			if (s.len > eq_inline_bytes)
				*to_free = s.heap;
			head++;
			sync_level();
		}
		return static_cast<ssize_t>(n);
	}

	ssize_t read(uint32_t *event, void *buf, size_t len, uint64_t flags) noexcept
	{
		unsigned char *to_free = nullptr;
		ssize_t r;
		{
			lock_guard g(lk);
			r = read_locked(event, buf, len, flags, &to_free);
		}
		if (to_free) [[unlikely]]
			free(to_free);
		return r;
	}

	/* Spins this long for an event before sleeping: on this kind of VM an
	 * idle vCPU takes tens of microseconds to wake, so a reply that comes
	 * quickly is seen without anyone sleeping. */
	static constexpr long spin_ns = 50 * 1000;

	/* Without lk: until news moves past seen or the slice runs out. */
	void spin(uint64_t seen, const eqd::deadline &until) const noexcept
	{
		for (unsigned n = 1; news.load(std::memory_order_acquire) == seen; n++) {
			if (!(n % 64) && until.passed())
				return;
			eqd::cpu_relax();
		}
	}

	ssize_t sread(uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags) noexcept
	{
		eqd::deadline d(timeout);
		bool yield = wait_obj == FI_WAIT_YIELD;
		bool registered = false, spun = false;
		int rc = 0;
		for (;;) {
			bool give_up = rc != 0 || timeout == 0 || d.passed();
			unsigned char *to_free = nullptr;
			ssize_t r;
			uint32_t s = 0;
			uint64_t seen = 0;
			{
				lock_guard g(lk);
				if (registered) {
					ww.sleepers--;
					registered = false;
				}
				r = read_locked(event, buf, len, flags, &to_free);
				if (r == -FI_EAGAIN && !give_up && !yield && !spun) {
					seen = news.load(std::memory_order_relaxed);
				} else if (r == -FI_EAGAIN && !give_up && !yield) {
					/* The futex, even when the eventfd mirrors the level:
					 * waking a poll()er measured several times slower. */
					registered = true;
					s = ww.enter_locked();
				}
			}
			if (to_free)
				free(to_free);
			if (r != -FI_EAGAIN || give_up)
				return r;
			if (yield) {
				sched_yield();
				continue;
			}
			if (!spun) {
				spun = true;
				spin(seen, eqd::slice(d, spin_ns));
				continue;
			}
			/* Spurious and stale wake-ups loop with the same deadline. */
			rc = ww.sleep(s, d);
		}
	}

	ssize_t readerr(fi_eq_err_entry *buf) noexcept
	{
		bool new_rules = api_version >= FI_VERSION(1, 5);
		err_rec rec;
		lock_guard g(lk);
		if (nerr) {
			rec = std::move(errs.front());
			errs.pop_front();
			nerr--;
			sync_level();
		} else if (overrun && head == tail) {
			/* Overrun is fatal: every later read reports it again. */
			rec.e.fid = &shell->fid.fid;
			rec.e.context = shell->fid.fid.context;
			rec.e.err = FI_EOVERRUN;
		} else {
			return -FI_EAGAIN;
		}
		fi_eq_err_entry out = rec.take(buf, new_rules, owned_err);
		size_t bytes = new_rules ? sizeof out : old_err_entry_bytes;
		memcpy(buf, &out, bytes);
		return static_cast<ssize_t>(bytes);
	}

	size_t purge(const fid *f) noexcept
	{
		size_t dropped = 0;
		lock_guard g(lk);
		uint64_t w = head;
		for (uint64_t r = head; r != tail; r++) {
			slot &s = ring[r & mask];
			if (fid_of(s) == f) {
				release(s);
				dropped++;
			} else {
				if (w != r)
					ring[w & mask] = s;
				w++;
			}
		}
		tail = w;
		for (auto it = errs.begin(); it != errs.end();) {
			if (it->e.fid == f) {
				it = errs.erase(it);
				nerr--;
				dropped++;
			} else {
				++it;
			}
		}
		sync_level();
		return dropped;
	}

	/* The eventfd becomes visible: from now on it follows the level. */
	void expose_fd() noexcept
	{
		lock_guard g(lk);
		if (hooks & hook_fd)
			return;
		hooks |= hook_fd;
		signaled = level();
		if (signaled)
			eventfd_set(efd);
	}

	bool has_events() noexcept
	{
		lock_guard g(lk);
		return level();
	}
};

eq_impl *impl_of(fid_eq *eq) noexcept
{
	return container_of_fid<eq_shell>(eq)->impl;
}

wait_impl *impl_of(fid_wait *w) noexcept
{
	return container_of_fid<wait_shell>(w)->impl;
}

/* ---- ops tables ---- */

int eq_close(fid *f);
int eq_control(fid *f, int command, void *arg);
ssize_t eq_read(fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags);
ssize_t eq_readerr(fid_eq *eq, fi_eq_err_entry *buf, uint64_t flags);
ssize_t eq_write(fid_eq *eq, uint32_t event, const void *buf, size_t len, uint64_t flags);
ssize_t eq_sread(fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
		 uint64_t flags);
const char *eq_strerror(fid_eq *eq, int prov_errno, const void *err_data, char *buf, size_t len);

fi_ops eq_fi_ops = {
	sizeof(fi_ops),		     eq_close, WU_NOSYS(fi_ops, bind), eq_control,
	WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

fi_ops_eq eq_ops = {
	sizeof(fi_ops_eq), eq_read, eq_readerr, eq_write, eq_sread, eq_strerror,
};

/* A closed handle: everything is -FI_EBADF. */
struct closed_eq {
	static constexpr fi_log_subsys subsys = FI_LOG_EQ;
	static constexpr const char *warning = "call on a closed event queue or wait set\n";
	static constexpr const char *text = "event queue is closed";
	static constexpr bool zero_u64 = false;
};
#define WU_BADF(ops_type, slot) (&waitobj::badf<closed_eq, decltype(ops_type::slot)>::fn)

constinit fi_ops dead_fi_ops = waitobj::dead_fi_ops<closed_eq>();

fi_ops_eq dead_eq_ops = {
	sizeof(fi_ops_eq),	  WU_BADF(fi_ops_eq, read),  WU_BADF(fi_ops_eq, readerr),
	WU_BADF(fi_ops_eq, write), WU_BADF(fi_ops_eq, sread), waitobj::dead_strerror<closed_eq, fid_eq>,
};

fi_ops_wait dead_wait_ops = {sizeof(fi_ops_wait), WU_BADF(fi_ops_wait, wait)};

bool valid_read_args(const char *what, uint32_t *event, void *buf, uint64_t flags,
		     ssize_t *err) noexcept
{
	if (!event || !buf) {
		WU_WARN(&core_prov, FI_LOG_EQ, "%s: %s is NULL\n", what, event ? "buf" : "event");
		*err = -FI_EINVAL;
		return false;
	}
	if (flags & ~FI_PEEK) {
		WU_WARN(&core_prov, FI_LOG_EQ, "%s: flags 0x%llx are not supported (only FI_PEEK)\n",
			what, static_cast<unsigned long long>(flags & ~FI_PEEK));
		*err = -FI_EBADFLAGS;
		return false;
	}
	return true;
}

ssize_t eq_read(fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	return WU_GUARD({
		if (event && buf && !(flags & ~FI_PEEK)) [[likely]]
			return impl_of(eq)->read(event, buf, len, flags);
		ssize_t err;
		valid_read_args("fi_eq_read", event, buf, flags, &err);
		return err;
	});
}

ssize_t eq_sread(fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags)
{
	return WU_GUARD({
		ssize_t err;
		if (!valid_read_args("fi_eq_sread", event, buf, flags, &err))
			return err;
		eq_impl *q = impl_of(eq);
		if (q->wait_obj == FI_WAIT_NONE || q->wait_obj == FI_WAIT_SET) {
			WU_WARN(&core_prov, FI_LOG_EQ,
				"fi_eq_sread: not allowed on an EQ opened with %s; use fi_eq_read%s\n",
				q->wait_obj == FI_WAIT_NONE ? "FI_WAIT_NONE" : "FI_WAIT_SET",
				q->wait_obj == FI_WAIT_SET ? " after fi_wait on the wait set" : "");
			return static_cast<ssize_t>(-FI_ENOSYS);
		}
		return q->sread(event, buf, len, timeout, flags);
	});
}

ssize_t eq_readerr(fid_eq *eq, fi_eq_err_entry *buf, uint64_t flags)
{
	return WU_GUARD({
		if (!buf) {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_readerr: buf is NULL\n");
			return static_cast<ssize_t>(-FI_EINVAL);
		}
		if (flags) {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_readerr: flags 0x%llx are not defined\n",
				static_cast<unsigned long long>(flags));
			return static_cast<ssize_t>(-FI_EBADFLAGS);
		}
		return impl_of(eq)->readerr(buf);
	});
}

ssize_t check_event_buf(const char *what, const void *buf, size_t len) noexcept
{
	if (!buf || !len) {
		WU_WARN(&core_prov, FI_LOG_EQ, "%s: %s\n", what, buf ? "len is 0" : "buf is NULL");
		return -FI_EINVAL;
	}
	if (len > eq_max_event_bytes) {
		WU_WARN(&core_prov, FI_LOG_EQ, "%s: event of %zu bytes is larger than the %zu allowed\n",
			what, len, eq_max_event_bytes);
		return -FI_EMSGSIZE;
	}
	return 0;
}

ssize_t eq_write(fid_eq *eq, uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	return WU_GUARD({
		eq_impl *q = impl_of(eq);
		/* one test for the common case, the reasons only when it fails */
		bool ok = (q->flags & FI_WRITE) && !flags && buf && len - 1 < eq_max_event_bytes;
		if (ok) [[likely]]
			return q->push(event, buf, len);
		if (!(q->flags & FI_WRITE)) {
			WU_WARN(&core_prov, FI_LOG_EQ,
				"fi_eq_write: the EQ was opened without FI_WRITE in fi_eq_attr.flags\n");
			return static_cast<ssize_t>(-FI_EACCES);
		}
		if (flags) [[unlikely]] {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_write: flags 0x%llx are not defined\n",
				static_cast<unsigned long long>(flags));
			return static_cast<ssize_t>(-FI_EBADFLAGS);
		}
		if (ssize_t e = check_event_buf("fi_eq_write", buf, len)) [[unlikely]]
			return e;
		return q->push(event, buf, len);
	});
}

const char *eq_strerror(fid_eq *, int prov_errno, const void *, char *buf, size_t len)
{
	return waitobj::queue_strerror(prov_errno, buf, len);
}

void expose_fd(void *owner) noexcept
{
	static_cast<eq_impl *>(owner)->expose_fd();
}

constexpr waitobj::names eq_names = {FI_LOG_EQ, "an EQ", "EQ", "EQs", true};

int eq_control(fid *f, int command, void *arg)
{
	return WU_GUARD({
		eq_impl *q = container_of_fid<eq_shell>(f)->impl;
		return waitobj::control(command, arg, eq_names, q->wait_obj, q->efd, q->mc.get(),
					expose_fd, q);
	});
}

void detach_from_set(eq_impl *q) noexcept
{
	if (!q->set)
		return;
	{
		lock_guard g(q->lk);
		if (q->signaled)
			q->set->adjust(false);
		q->hooks &= ~hook_set;
	}
	std::lock_guard g(q->set->m);
	q->set->members--;
}

int eq_close(fid *f)
{
	return WU_GUARD({
		auto *sh = container_of_fid<eq_shell>(f);
		eq_impl *q = sh->impl;
		if (int b = q->binds.load(std::memory_order_acquire)) {
			WU_WARN(&core_prov, FI_LOG_EQ,
				"fi_close(EQ %p): %d object(s) (AV, endpoint, ...) are still bound to it; "
				"close them first\n",
				static_cast<void *>(f), b);
			return -FI_EBUSY;
		}
		detach_from_set(q);
		waitobj::retire(sh, eq_graves, &dead_fi_ops, &dead_eq_ops);
		return 0;
	});
}

/* ---- wait set ops ---- */

int wait_close(fid *f);
int wait_control(fid *f, int command, void *arg);
int wait_wait(fid_wait *w, int timeout);

fi_ops wait_fi_ops = {
	sizeof(fi_ops),		     wait_close, WU_NOSYS(fi_ops, bind), wait_control,
	WU_NOSYS(fi_ops, ops_open), WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

fi_ops_wait wait_ops = {sizeof(fi_ops_wait), wait_wait};

int wait_wait(fid_wait *w, int timeout)
{
	return WU_GUARD(return impl_of(w)->wait(timeout););
}

constexpr waitobj::names wait_names = {FI_LOG_EQ, "a wait set", "wait set", "wait sets", false};

int wait_control(fid *f, int command, void *arg)
{
	return WU_GUARD({
		wait_impl *w = container_of_fid<wait_shell>(f)->impl;
		return waitobj::control(command, arg, wait_names, w->obj, w->efd, w->mc.get(), nullptr,
					nullptr);
	});
}

int wait_close(fid *f)
{
	return WU_GUARD({
		auto *sh = container_of_fid<wait_shell>(f);
		wait_impl *w = sh->impl;
		{
			std::lock_guard g(w->m);
			if (w->members) {
				WU_WARN(&core_prov, FI_LOG_EQ,
					"fi_close(wait set %p): %zu event queue(s) still use it; close them "
					"first\n",
					static_cast<void *>(f), w->members);
				return -FI_EBUSY;
			}
		}
		waitobj::retire(sh, wait_graves, &dead_fi_ops, &dead_wait_ops);
		return 0;
	});
}

bool valid_wait_obj(int w) noexcept
{
	return w >= FI_WAIT_NONE && w <= FI_WAIT_POLLFD;
}

int open_eq(fid_fabric *fabric, uint32_t api_version, fi_eq_attr *attr, fid_eq **eqp,
	    void *context, child_ref parent)
{
	if (!fabric || !attr || !eqp) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_open: %s is NULL\n",
			!fabric ? "fabric" : !attr ? "attr" : "eq");
		return -FI_EINVAL;
	}
	*eqp = nullptr;
	constexpr uint64_t known = FI_WRITE | FI_AFFINITY;
	if (attr->flags & ~known) {
		WU_WARN(&core_prov, FI_LOG_EQ,
			"fi_eq_open: fi_eq_attr.flags 0x%llx are not defined (only FI_WRITE, FI_AFFINITY)\n",
			static_cast<unsigned long long>(attr->flags & ~known));
		return -FI_EBADFLAGS;
	}
	if (attr->size > eq_max_size) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_open: fi_eq_attr.size %zu is above the limit %zu\n",
			attr->size, eq_max_size);
		return -FI_EINVAL;
	}
	int wobj; /* read as int: an out-of-range enum value is the caller's to send */
	memcpy(&wobj, &attr->wait_obj, sizeof wobj);
	if (!valid_wait_obj(wobj)) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_open: fi_eq_attr.wait_obj %d is not a wait object\n",
			wobj);
		return -FI_EINVAL;
	}
	wait_impl *set = nullptr;
	if (attr->wait_obj == FI_WAIT_SET) {
		if (!attr->wait_set || !is_wait(&attr->wait_set->fid)) {
			WU_WARN(&core_prov, FI_LOG_EQ,
				"fi_eq_open: FI_WAIT_SET needs fi_eq_attr.wait_set from fi_wait_open\n");
			return -FI_EINVAL;
		}
		set = impl_of(attr->wait_set);
	}
	if ((attr->flags & FI_AFFINITY) &&
	    (attr->signaling_vector < 0 || attr->signaling_vector >= sysconf(_SC_NPROCESSORS_CONF)))
		WU_INFO(&core_prov, FI_LOG_EQ,
			"fi_eq_open: signaling_vector %d is not a CPU here; ignored (it is a hint)\n",
			attr->signaling_vector);

	auto q = std::make_unique<eq_impl>();
	q->fabric = fabric;
	q->api_version = api_version;
	q->flags = attr->flags;
	q->wait_obj = attr->wait_obj;
	q->parent = std::move(parent);
	q->limit = attr->size ? attr->size : eq_default_size;
	size_t slots = std::min(pow2_ceil(q->limit), initial_slots);
	q->ring = std::make_unique<slot[]>(slots);
	q->mask = slots - 1;
	if (q->wait_obj == FI_WAIT_FD || q->wait_obj == FI_WAIT_POLLFD) {
		int e = make_eventfd();
		if (e < 0) {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_open: eventfd failed: %s\n", strerror(-e));
			return e;
		}
		q->efd.reset(e);
	}
	if (q->wait_obj == FI_WAIT_MUTEX_COND)
		q->mc = std::make_unique<mutex_cond>();

	if (set) {
		std::lock_guard g(set->m);
		set->members++;
		q->set = set;
		q->hooks = hook_set;
	}
	*eqp = waitobj::publish<fid_eq>(std::move(q), FI_CLASS_EQ, context, &eq_fi_ops, &eq_ops);
	return 0;
}

int open_wait(fid_fabric *fabric, fi_wait_attr *attr, fid_wait **waitp, child_ref parent)
{
	if (!fabric || !attr || !waitp) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_wait_open: %s is NULL\n",
			!fabric ? "fabric" : !attr ? "attr" : "waitset");
		return -FI_EINVAL;
	}
	*waitp = nullptr;
	if (attr->flags) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_wait_open: fi_wait_attr.flags must be 0 (got 0x%llx)\n",
			static_cast<unsigned long long>(attr->flags));
		return -FI_EBADFLAGS;
	}
	int wobj;
	memcpy(&wobj, &attr->wait_obj, sizeof wobj);
	switch (wobj) {
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
		break;
	default:
		WU_WARN(&core_prov, FI_LOG_EQ,
			"fi_wait_open: wait_obj %d is not usable for a wait set (FI_WAIT_UNSPEC, "
			"FI_WAIT_FD, FI_WAIT_MUTEX_COND or FI_WAIT_YIELD)\n",
			wobj);
		return -FI_EINVAL;
	}
	auto w = std::make_unique<wait_impl>();
	w->obj = attr->wait_obj;
	w->parent = std::move(parent);
	if (w->obj == FI_WAIT_FD) {
		int e = make_eventfd();
		if (e < 0) {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_wait_open: eventfd failed: %s\n", strerror(-e));
			return e;
		}
		w->efd.reset(e);
	}
	if (w->obj == FI_WAIT_MUTEX_COND)
		w->mc = std::make_unique<mutex_cond>();
	*waitp = waitobj::publish<fid_wait>(std::move(w), FI_CLASS_WAIT, nullptr, &wait_fi_ops, &wait_ops);
	return 0;
}

eq_impl *live_eq(fid_eq *eq, const char *what) noexcept
{
	if (!eq || !is_eq(&eq->fid)) {
		WU_WARN(&core_prov, FI_LOG_EQ, "%s: not an open event queue\n", what);
		return nullptr;
	}
	return impl_of(eq);
}

} // namespace

bool is_eq(const struct fid *f) noexcept
{
	return f && f->fclass == FI_CLASS_EQ && f->ops == &eq_fi_ops;
}

bool is_wait(const struct fid *f) noexcept
{
	return f && f->fclass == FI_CLASS_WAIT && f->ops == &wait_fi_ops;
}

int eq_open(struct fid_fabric *fabric, uint32_t api_version, struct fi_eq_attr *attr,
	    struct fid_eq **eq, void *context, child_ref parent) noexcept
{
	return WU_GUARD(return open_eq(fabric, api_version, attr, eq, context, std::move(parent)););
}

int wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset,
	      child_ref parent) noexcept
{
	return WU_GUARD(return open_wait(fabric, attr, waitset, std::move(parent)););
}

int trywait(struct fid_fabric *, struct fid **fids, int count) noexcept
{
	return WU_GUARD({
		if (count < 0 || (count > 0 && !fids)) {
			WU_WARN(&core_prov, FI_LOG_EQ, "fi_trywait: fids is NULL or count < 0\n");
			return -FI_EINVAL;
		}
		for (int i = 0; i < count; i++) {
			fid *f = fids[i];
			if (is_eq(f)) {
				if (impl_of(reinterpret_cast<fid_eq *>(f))->has_events())
					return -FI_EAGAIN;
			} else if (is_wait(f)) {
				if (impl_of(reinterpret_cast<fid_wait *>(f))->has_ready())
					return -FI_EAGAIN;
			} else {
				WU_WARN(&core_prov, FI_LOG_EQ,
					"fi_trywait: fids[%d] is not an open EQ or wait set\n", i);
				return -FI_EINVAL;
			}
		}
		return 0;
	});
}

ssize_t eq_post(struct fid_eq *eq, uint32_t event, const void *buf, size_t len) noexcept
{
	return WU_GUARD({
		eq_impl *q = live_eq(eq, "eq_post");
		if (!q)
			return static_cast<ssize_t>(-FI_EBADF);
		if (ssize_t e = check_event_buf("eq_post", buf, len))
			return e;
		return q->push(event, buf, len);
	});
}

size_t eq_room(struct fid_eq *eq, size_t *size) noexcept
{
	return guard_or(__func__, size_t{0}, [&]() -> size_t {
		eq_impl *q = live_eq(eq, "eq_room");
		if (size)
			*size = q ? q->limit : 0;
		return q ? q->room() : 0;
	});
}

int eq_post_error(struct fid_eq *eq, const struct fi_eq_err_entry *err) noexcept
{
	return WU_GUARD({
		eq_impl *q = live_eq(eq, "eq_post_error");
		if (!q)
			return -FI_EBADF;
		if (!err || err->err <= 0) {
			WU_WARN(&core_prov, FI_LOG_EQ,
				"eq_post_error: entry is NULL or its err is not a positive FI_E* code\n");
			return -FI_EINVAL;
		}
		return q->push_error(*err);
	});
}

size_t eq_purge(struct fid_eq *eq, const struct fid *f) noexcept
{
	return guard_or(__func__, size_t{0}, [&]() -> size_t {
		eq_impl *q = live_eq(eq, "eq_purge");
		return q ? q->purge(f) : 0;
	});
}

int eq_bind(struct fid *bfid) noexcept
{
	if (!is_eq(bfid)) {
		WU_WARN(&core_prov, FI_LOG_EQ, "bind: %p is not an open event queue\n",
			static_cast<const void *>(bfid));
		return -FI_EINVAL;
	}
	impl_of(reinterpret_cast<fid_eq *>(bfid))->binds.fetch_add(1, std::memory_order_acq_rel);
	return 0;
}

int eq_unbind(struct fid *bfid) noexcept
{
	if (!is_eq(bfid))
		return -FI_EINVAL;
	auto &b = impl_of(reinterpret_cast<fid_eq *>(bfid))->binds;
	int cur = b.load(std::memory_order_relaxed);
	while (cur > 0 && !b.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel))
		;
	return cur > 0 ? 0 : -FI_EINVAL;
}

} // namespace wu
