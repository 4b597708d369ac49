/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive queue of a region (region.h): a bounded lock-free ring of
 * 64-byte cells, many producers (attached peers) and one consumer (the
 * owner), and its wake-up.
 *
 * A cell's seq says, for lap L of the ring (region_impl.h cellseq):
 * free(L) -> resv(L, pid) -> pub(L) -> free(L + 1).  A producer reserves
 * the cell at the tail with one CAS free(L) -> resv(L, its pid), then
 * moves the tail on; anyone who finds the tail's cell already reserved
 * moves the tail on for it, so a producer that dies right after reserving
 * holds nobody up but the consumer.  It writes the body and publishes
 * with a release store of pub(L).
 *
 * A producer killed between reserving and publishing: the consumer finds
 * the head cell resv(L, pid) and sees it stay so.  Every 10 ms of such a
 * stall it looks at that pid; once the pid is gone (or a zombie) nobody
 * can write the cell any more, so it is skipped: CAS to free(L + 1),
 * counted in skipped(), logged.  The message it would have carried is
 * lost with its sender, whose other transfers the protocol fails by the
 * sender's liveness.  A producer that is alive, however slow, is waited
 * for: skipping it would let its late writes land in a cell another
 * producer owns.  (A pid recycled within the stall could keep the head
 * waiting; pids are not reused that fast.)
 *
 * The tail and the cells are in memory every process of our user may
 * write (issue 32): one that writes garbage there must not silence the
 * queue for good.  The consumer's head is private and the truth; audit()
 * (every 256 empty pops, and before sleeping) holds the shared words to
 * what an honest queue can show -- the head cell free, reserved or
 * published at the head's lap, the tail within [head, head + cells] and,
 * when the head cell is free, at the head -- and puts right what it
 * cannot be (tail back to the head, the head cell freed), with a log line.
 * A tail moved ahead leaves a free cell before the published ones: seen
 * twice at the same head and tail, that cell is skipped like a dead
 * producer's.
 *
 * Wake-up: the owner, before sleeping, sets ctl->sleeping and re-checks
 * the head; a producer, after publishing, reads ctl->sleeping.  With a
 * sequentially consistent fence on the owner's side and sequentially
 * consistent publish and load on the producer's, either the owner sees the
 * cell or the producer sees the flag; only then does it make a system
 * call (a futex wake, and a byte to the owner's wake-up socket when the
 * owner sleeps in poll on wait_fd). */
#include "prov/shm/region_impl.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstring>
#include <mutex>

#include <rdma/fi_errno.h>

#include "core/log.h"

namespace wu::shm_tp {

namespace {

constexpr uint64_t stall_check_ns = 10'000'000;
constexpr int push_spin_max = 1 << 20; /* a ring this busy is "full" */

/* getpid() is a system call; posting needs it on every push. */
std::atomic<pid_t> cached_pid{0};
std::once_flag pid_once;

void forget_pid()
{
	cached_pid.store(0, std::memory_order_relaxed);
}

pid_t my_pid() noexcept
{
	pid_t p = cached_pid.load(std::memory_order_relaxed);
	if (__builtin_expect(p != 0, 1))
		return p;
	try {
		std::call_once(pid_once, [] { pthread_atfork(nullptr, nullptr, forget_pid); });
	} catch (...) {
		return getpid();
	}
	p = getpid();
	cached_pid.store(p, std::memory_order_relaxed);
	return p;
}

/* One socket per process to post wake-up bytes from, whatever the number
 * of peers. */
std::atomic<int> post_sock{-1};

int post_socket() noexcept
{
	int s = post_sock.load(std::memory_order_acquire);
	if (s >= 0)
		return s;
	unique_fd n(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (n < 0)
		return -1;
	if (!post_sock.compare_exchange_strong(s, n.get(), std::memory_order_acq_rel))
		return s; /* another thread's socket won: ours closes */
	return n.release(); /* post_sock keeps it for the process */
}

uint64_t now_ns() noexcept
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

/* The region is shared with other processes: no FUTEX_PRIVATE_FLAG. */
void futex_wait(std::atomic<uint32_t> *w, uint32_t v, int timeout_ms) noexcept
{
	timespec ts{}, *tp = nullptr;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = long(timeout_ms % 1000) * 1'000'000;
		tp = &ts;
	}
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), FUTEX_WAIT, v, tp, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t> *w) noexcept
{
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void copy_body(cell *dst, const cell *src) noexcept
{
	memcpy(reinterpret_cast<unsigned char *>(dst) + sizeof(cell::seq),
	       reinterpret_cast<const unsigned char *>(src) + sizeof(cell::seq), sizeof(cell) - sizeof(cell::seq));
}

} // namespace

int peer::push(const cell &c) noexcept
{
	using namespace cellseq;
	if (__builtin_expect(broken_.load(std::memory_order_relaxed), 0))
		return -FI_EHOSTDOWN;
	const uint64_t me = uint64_t(my_pid());
	uint64_t pos = ctl_->tail.load(std::memory_order_relaxed);
	for (int spin = 0; spin < push_spin_max; spin++) {
		cell *x = &cells_[pos & mask_];
		uint64_t L = (pos >> shift_) & lap_mask;
		uint64_t s = x->seq.load(std::memory_order_acquire);
		if (s == make(L, st_free, 0)) {
			if (!x->seq.compare_exchange_strong(s, make(L, st_resv, me), std::memory_order_acquire,
							    std::memory_order_relaxed))
				continue; /* someone else took it: look again */
			uint64_t p = pos;
			ctl_->tail.compare_exchange_strong(p, pos + 1, std::memory_order_relaxed);
			copy_body(x, &c);
			/* Publish and look at the owner's sleep flag in that order
			 * (the wake-up protocol above): a sequentially consistent
			 * exchange and load, one locked instruction rather than a
			 * store and a full fence (cheaper on x86). */
			(void)x->seq.exchange(make(L, st_pub, 0), std::memory_order_seq_cst);
			if (uint32_t sl = ctl_->sleeping.load(std::memory_order_seq_cst)) {
				if (sl & sleep_futex) {
					ctl_->wake_word.fetch_add(1, std::memory_order_relaxed);
					futex_wake(&ctl_->wake_word);
				}
				if ((sl & sleep_fd) && wake_name_[0]) {
					int ps = post_socket();
					sockaddr_un a{};
					a.sun_family = AF_UNIX;
					size_t len = strnlen(wake_name_, sizeof wake_name_ - 1);
					memcpy(a.sun_path + 1, wake_name_, len);
					char b = 1;
					/* A full socket is already readable: EAGAIN is fine. */
					if (ps >= 0)
						sendto(ps, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr *>(&a),
						       socklen_t(offsetof(sockaddr_un, sun_path) + 1 + len));
				}
			}
			/* Shrunk while we wrote: the cell went nowhere. */
			return __builtin_expect(broken_.load(std::memory_order_relaxed), 0) ? -FI_EHOSTDOWN : 0;
		}
		if (lap(s) == L && state(s) != st_free) {
			/* Reserved at this lap: the tail is behind; move it on. */
			if (ctl_->tail.compare_exchange_strong(pos, pos + 1, std::memory_order_relaxed))
				pos++;
			continue;
		}
		if (lap(s) == ((L - 1) & lap_mask) && state(s) != st_free) {
			uint64_t t = ctl_->tail.load(std::memory_order_relaxed);
			if (t != pos) {
				pos = t;
				continue;
			}
			/* Full.  Only now is the owner's liveness worth a look. */
			return alive() ? -FI_EAGAIN : -FI_EHOSTDOWN;
		}
		pos = ctl_->tail.load(std::memory_order_relaxed);
	}
	return alive() ? -FI_EAGAIN : -FI_EHOSTDOWN;
}

/* The head cell is reserved (seq s) and not published: true when it was
 * skipped (its producer is dead) or changed, so the caller looks again. */
bool region::check_stall(uint64_t s) noexcept
{
	using namespace cellseq;
	uint64_t now = now_ns();
	if (stall_head_ != head_) {
		stall_head_ = head_;
		stall_next_ns_ = now + stall_check_ns;
		return false;
	}
	if (now < stall_next_ns_)
		return false;
	stall_next_ns_ = now + stall_check_ns;
	pid_t p = pid_t(pid(s));
	if (start_time(p) != 0)
		return false; /* alive: it will publish */
	cell *x = &cells_[head_ & mask_];
	uint64_t L = (head_ >> shift_) & lap_mask;
	if (!x->seq.compare_exchange_strong(s, make(L + 1, st_free, 0), std::memory_order_acq_rel))
		return true;
	WU_WARN(log_prov(), FI_LOG_EP_DATA,
		"shm: region %s: process %d died while posting to it; its message is lost, cell skipped\n", name_,
		int(p));
	advance();
	skipped_++;
	return true;
}

bool region::audit() noexcept
{
	using namespace cellseq;
	if (__builtin_expect(broken_.load(std::memory_order_relaxed), 0)) {
		if (!broken_told_)
			WU_WARN(log_prov(), FI_LOG_EP_DATA,
				"shm: region %s was shrunk by a process of this user (ftruncate); this endpoint receives nothing more\n",
				name_);
		broken_told_ = true;
		return false;
	}
	cell *x = &cells_[head_ & mask_];
	uint64_t L = (head_ >> shift_) & lap_mask;
	uint64_t t = ctl_->tail.load(std::memory_order_acquire);
	uint64_t s = x->seq.load(std::memory_order_acquire);
	if (lap(s) != L || state(s) > st_pub || (state(s) != st_resv && pid(s) != 0)) {
		if (!x->seq.compare_exchange_strong(s, make(L, st_free, 0), std::memory_order_acq_rel))
			return true; /* changed meanwhile: look again */
		WU_WARN(log_prov(), FI_LOG_EP_DATA,
			"shm: region %s: queue cell %" PRIu64 " holds %#" PRIx64
			", impossible at the head (a process of this user wrote into the region); freed\n",
			name_, head_, s);
		s = make(L, st_free, 0);
	}
	bool impossible = t - head_ > uint64_t(mask_) + 1;
	bool hole = !impossible && t != head_ && s == make(L, st_free, 0);
	if (hole && (hole_head_ != head_ || hole_tail_ != t)) {
		hole_head_ = head_; /* maybe a producer between its steps: look again later */
		hole_tail_ = t;
		return false;
	}
	hole_head_ = ~0ull;
	if (hole) {
		/* Nobody will write this cell: skip it, as a dead producer's. */
		if (!x->seq.compare_exchange_strong(s, make(L + 1, st_free, 0), std::memory_order_acq_rel))
			return true;
		WU_WARN(log_prov(), FI_LOG_EP_DATA,
			"shm: region %s: the queue's tail %" PRIu64 " is past the free head cell %" PRIu64
			" (a process of this user wrote into the region); cell skipped\n",
			name_, t, head_);
		advance();
		skipped_++;
		return true;
	}
	if (!impossible)
		return false;
	if (!ctl_->tail.compare_exchange_strong(t, head_, std::memory_order_acq_rel))
		return true;
	WU_WARN(log_prov(), FI_LOG_EP_DATA,
		"shm: region %s: the queue's tail was %" PRIu64 " with the head at %" PRIu64
		" of %u cells (a process of this user wrote into the region); reset to the head\n",
		name_, t, head_, mask_ + 1);
	return true;
}

void region::advance() noexcept
{
	using namespace cellseq;
	uint64_t h = head_ + 1;
	std::atomic_ref<uint64_t>(head_).store(h, std::memory_order_relaxed);
	pub_seq_ = make((h >> shift_) & lap_mask, st_pub, 0);
}

bool region::idle() const noexcept
{
	using namespace cellseq;
	/* Another thread may pop meanwhile (under the endpoint's lock): a
	 * stale head gives a wrong answer either way, never a torn one. */
	if (std::atomic_ref<bool>(const_cast<bool &>(armed_)).load(std::memory_order_relaxed))
		return false;
	uint64_t h = std::atomic_ref<uint64_t>(const_cast<uint64_t &>(head_)).load(std::memory_order_relaxed);
	const cell *x = &cells_[h & mask_];
	uint64_t L = (h >> shift_) & lap_mask;
	if (x->seq.load(std::memory_order_acquire) != make(L, st_free, 0))
		return false;
	/* A shrunk region is to be reported, and a tail away from a free head
	 * is junk (or a producer between its steps): not idle, so that the
	 * popper looks and audits.  The tail only every 256th look: producers
	 * write its cache line on every push, and reading it on each empty
	 * poll doubled the 8 B latency. */
	if (broken_.load(std::memory_order_relaxed))
		return false;
	uint32_t n = idle_looks_.load(std::memory_order_relaxed) + 1;
	idle_looks_.store(n, std::memory_order_relaxed); /* a racy count is fine: only a rate */
	if (__builtin_expect(n % 256 != 0, 1) || ctl_->tail.load(std::memory_order_relaxed) == h)
		return true;
	audit_due_.store(true, std::memory_order_relaxed);
	return false;
}

bool region::pop(cell *out) noexcept
{
	if (!out)
		return false;
	uint64_t h = head_;
	if (!pop_body(reinterpret_cast<unsigned char *>(out) + sizeof(cell::seq)))
		return false;
	out->seq.store(h, std::memory_order_relaxed);
	return true;
}

bool region::pop_body(void *body) noexcept
{
	using namespace cellseq;
	if (__builtin_expect(armed_, 0)) {
		ctl_->sleeping.store(0, std::memory_order_relaxed);
		set_armed(false);
	}
	for (;;) {
		cell *x = &cells_[head_ & mask_];
		uint64_t L = (head_ >> shift_) & lap_mask;
		uint64_t s = x->seq.load(std::memory_order_acquire);
		if (s == make(L, st_pub, 0)) {
			memcpy(body, reinterpret_cast<const unsigned char *>(x) + sizeof(cell::seq), body_size);
			x->seq.store(make(L + 1, st_free, 0), std::memory_order_release);
			advance();
			return true;
		}
		if (lap(s) == L && state(s) == st_resv && check_stall(s))
			continue;
		if (__builtin_expect(++empty_pops_ % 256 == 0 || audit_due_.load(std::memory_order_relaxed), 0)) {
			audit_due_.store(false, std::memory_order_relaxed);
			if (audit())
				continue;
		}
		return false;
	}
}

void region::wait(int timeout_ms) noexcept
{
	using namespace cellseq;
	uint64_t deadline = timeout_ms >= 0 ? now_ns() + uint64_t(timeout_ms) * 1'000'000ull : 0;
	for (;;) {
		cell *x = &cells_[head_ & mask_];
		uint64_t L = (head_ >> shift_) & lap_mask;
		uint64_t s = x->seq.load(std::memory_order_acquire);
		if (s == make(L, st_pub, 0))
			return;
		int slice = timeout_ms;
		if (lap(s) == L && state(s) == st_resv) {
			/* Its producer is writing it, or died doing so: nap and
			 * look again rather than sleep past the stall check. */
			if (check_stall(s))
				continue;
			slice = 1;
		}
		if (timeout_ms >= 0) {
			uint64_t now = now_ns();
			if (now >= deadline)
				return;
			int left = int((deadline - now + 999'999) / 1'000'000);
			if (slice < 0 || slice > left)
				slice = left;
		}
		if (audit())
			continue;
		if (hole_head_ == head_ && (slice < 0 || slice > 1))
			slice = 1; /* confirm the hole soon */
		uint32_t v = ctl_->wake_word.load(std::memory_order_relaxed);
		ctl_->sleeping.store(sleep_futex | (armed_ ? sleep_fd : 0), std::memory_order_relaxed);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (x->seq.load(std::memory_order_acquire) != s) {
			ctl_->sleeping.store(armed_ ? sleep_fd : 0, std::memory_order_relaxed);
			continue;
		}
		futex_wait(&ctl_->wake_word, v, slice);
		ctl_->sleeping.store(armed_ ? sleep_fd : 0, std::memory_order_relaxed);
		if (slice == timeout_ms)
			return; /* woken (or a spurious wake-up): the caller looks */
	}
}

bool region::wait_arm() noexcept
{
	using namespace cellseq;
	if (wake_fd_ < 0)
		return false;
	char buf[64];
	while (recv(wake_fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) {
	}
	set_armed(true);
	ctl_->sleeping.store(sleep_fd, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_seq_cst);
	cell *x = &cells_[head_ & mask_];
	uint64_t L = (head_ >> shift_) & lap_mask;
	if (x->seq.load(std::memory_order_acquire) != make(L, st_free, 0)) {
		ctl_->sleeping.store(0, std::memory_order_relaxed);
		set_armed(false);
		return false;
	}
	return true;
}

} // namespace wu::shm_tp
