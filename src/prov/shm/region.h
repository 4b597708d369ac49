/* SPDX-License-Identifier: BSD-3-Clause */
/* The shm provider's transport: one shared-memory region per endpoint in
 * /dev/shm, which peers attach to post into.  This header is the contract
 * between the transport (region.cpp, queue, bounce pool, cross-memory
 * copy, wake-up, liveness) and the provider above it (the protocol:
 * which kind of message, acknowledgements, matching).  It knows nothing
 * of fabric objects.
 *
 * A region holds, after a versioned header:
 *  - the receive queue: a bounded lock-free multi-producer single-consumer
 *    ring of 64-byte cells (any attached peer pushes, the owner pops);
 *  - the owner's bounce buffers: fixed-size slots the owner fills with a
 *    medium message's payload before it pushes a cell naming the slot;
 *    the receiver copies the payload out and hands the slot back with
 *    bounce_release (an atomic flag in the owner's region);
 *  - a wake-up word (futex) the owner sleeps on and posters wake.
 *
 * Security: regions are created with core/shm_object.h (O_EXCL, mode 0600, our
 * uid); attach checks the owner, the mode, the size, the magic, the
 * version and every layout field before anything in it is trusted, and
 * refuses with a log line naming the region.  Another user's process can
 * neither open nor (having opened) make us trust a region.  A process of
 * our user can write anything there: the consumer holds the queue's shared
 * words to what is possible (queue.cpp), and a region it shrinks is an
 * error instead of a SIGBUS (busguard.cpp): a peer's is dead, ours logged.
 *
 * Liveness: the header records the owner's pid and its start time
 * (/proc/<pid>/stat field 22), so a recycled pid is not taken for the
 * owner.  A region whose owner is gone is stale: create() of the same name
 * reclaims it, peer::alive() tells a waiting sender or receiver that
 * its transfer will never finish, and reap_stale_once() removes it. */
#ifndef WU_PROV_SHM_REGION_H
#define WU_PROV_SHM_REGION_H

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cerrno>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "core/fd.h"
#include "core/owned.h"

/* fi_errno.h has no name for EEXIST (the value create() returns for a name
 * a live process owns). */
#ifndef FI_EEXIST
#define FI_EEXIST EEXIST
#endif

namespace wu::shm_tp {

struct region_hdr;
struct region_ctl;

/* Log lines of the transport name this provider (the core's until set). */
void set_log_provider(const fi_provider *prov) noexcept;

/* Longest region name, without the NUL: characters of [A-Za-z0-9._-]
 * only.  Names are the core of the endpoints' FI_ADDR_STR addresses, and
 * short enough that a first cell to a peer can carry the sender's name in
 * the 48 bytes after cell::sender. */
constexpr size_t name_max = 47;

/* One queue cell: a cache line.  seq is the queue's; the rest is the
 * protocol's, except that kind == 0 is never a valid message. */
struct alignas(64) cell {
	std::atomic<uint64_t> seq;
	uint8_t kind;     /* the provider's message kind (non-zero) */
	uint8_t flags;    /* the provider's */
	uint16_t inline_len; /* payload bytes in data[] */
	uint32_t sender;  /* the protocol's: who sent it, as the receiver knows the sender */
	uint64_t tag;
	uint64_t cq_data;
	uint64_t len;     /* whole message length */
	uint64_t arg;     /* bounce slot / remote address / operation id: the protocol's */
	unsigned char data[16];
};
static_assert(sizeof(cell) == 64);
constexpr size_t inline_max = sizeof(cell::data);

/* Sizes a region is created with (FI_SHM_* parameters feed these). */
struct layout {
	uint32_t queue_cells = 1024;    /* power of two */
	uint32_t bounce_slots = 64;
	uint32_t bounce_size = 16384;   /* bytes per slot */
};

class region;
struct proc_ref; /* a peer's process, for single copy (bind_proc below) */

/* Our own region.  One thread at a time pops and waits (the endpoint's
 * progress, under its lock); bounce_get/put may race with receivers'
 * releases. */
class region {
public:
	/* Creates (or reclaims, if stale) /dev/shm/<name>; -FI_EEXIST when a
	 * live process owns that name, -FI_EINVAL for a bad name or layout. */
	static int create(const char *name, const layout &l, region **out) noexcept;
	/* Unmaps and unlinks. */
	~region();

	const char *name() const noexcept;
	/* Pops the next cell into *out; false when the queue is empty. */
	bool pop(cell *out) noexcept;
	/* Pops the next cell's bytes after seq (sizeof(cell) - 8) into
	 * body: pop without a second copy for a caller with its own type. */
	bool pop_body(void *body) noexcept;
	static constexpr size_t body_size = sizeof(cell) - sizeof(cell::seq);
	/* The head cell is published (pop would return it): a look at one
	 * word, inline, for the popper between two pops. */
	bool ready() const noexcept
	{
		return cells_[head_ & mask_].seq.load(std::memory_order_acquire) == pub_seq_;
	}
	/* Nothing to pop and not armed (wait_arm), as far as a look without
	 * the popper's lock tells: a thread that finds it so may skip taking
	 * the lock to pop. */
	bool idle() const noexcept;
	/* Sleeps until a cell is pushed or timeout_ms passes (-1: forever);
	 * returns at once when the queue is not empty (no lost wake-ups). */
	void wait(int timeout_ms) noexcept;
	/* An eventfd-like descriptor for FI_WAIT_FD (readable when cells are
	 * waiting), or -1 when the transport offers none.  Posters write to it
	 * only while the owner is armed (wait_arm), so poll it after
	 * wait_arm() returned true, as fi_trywait is used. */
	int wait_fd() const noexcept;
	/* fi_trywait: drains wait_fd and announces that the owner sleeps on
	 * it; false (not armed) when cells are already waiting.  The next pop
	 * or wait disarms. */
	bool wait_arm() noexcept;
	/* Cells skipped because their producer died between reserving and
	 * publishing them (see queue.cpp). */
	uint64_t skipped() const noexcept { return skipped_; }

	/* Bounce slots (ours): a free slot index or -1; its memory; and the
	 * receiver's release is seen by slot_free(). */
	int bounce_get() noexcept;
	void *bounce_addr(int slot) noexcept;
	size_t bounce_size() const noexcept;
	void bounce_put(int slot) noexcept; /* return a slot we took but did not send */
	bool slot_free(int slot) const noexcept; /* released (or never taken)? */
	uint32_t bounce_slots() const noexcept { return nslots_; }

	region(const region &) = delete;
	region &operator=(const region &) = delete;
	region() noexcept = default; /* empty: create() fills one (public for try_make) */

private:
	friend struct region_access;
	char name_[name_max + 1] = {};
	unsigned char *base_ = nullptr;
	size_t size_ = 0;
	dev_t dev_ = 0;  /* of the object we created: unlink only that one */
	ino_t ino_ = 0;
	pid_t creator_ = 0; /* a forked child neither unlinks nor pops */
	region_hdr *hdr_ = nullptr;
	region_ctl *ctl_ = nullptr;
	cell *cells_ = nullptr;
	std::atomic<uint32_t> *flags_ = nullptr; /* one per slot, 64 bytes apart */
	unsigned char *bounce_ = nullptr;
	uint32_t mask_ = 0, shift_ = 0, nslots_ = 0, slot_size_ = 0;
	uint32_t hint_ = 0;
	uint64_t head_ = 0;
	uint64_t pub_seq_ = 0; /* a published head cell's seq (advance() keeps it) */
	uint64_t skipped_ = 0;
	uint64_t stall_head_ = ~0ull; /* head whose producer we are watching */
	uint64_t stall_next_ns_ = 0;  /* when to check its liveness next */
	bool armed_ = false; /* we set ctl->sleeping; clear it on the next pop */
	unique_fd wake_fd_;
	uint32_t empty_pops_ = 0;      /* audit() every so many */
	mutable std::atomic<uint32_t> idle_looks_{0}; /* idle() looks at the tail every so many */
	mutable std::atomic<bool> audit_due_{false};  /* idle() saw the tail off a free head */
	uint64_t hole_head_ = ~0ull, hole_tail_ = 0; /* a hole seen once, confirmed on the next audit */
	std::atomic<bool> broken_{false}; /* the object shrank under us (busguard.cpp) */
	bool broken_told_ = false;
	bool check_stall(uint64_t s) noexcept;
	bool audit() noexcept;
	/* head_ and armed_ change under the popper's lock and are read by
	 * idle() without it. */
	void advance() noexcept;
	void set_armed(bool a) noexcept { std::atomic_ref<bool>(armed_).store(a, std::memory_order_relaxed); }
};

/* A peer's region, attached for posting into it and for reading its
 * bounce slots. */
class peer {
public:
	/* Attaches /dev/shm/<name> after every check above: -FI_ENOENT (no
	 * such region), -FI_EACCES (not ours / bad mode), -FI_EINVAL (corrupt
	 * header, other version; logged naming the region), -FI_EHOSTDOWN
	 * (stale: its owner is gone), -FI_EAGAIN (its owner is still creating
	 * it: try again). */
	static int attach(const char *name, peer **out) noexcept;
	~peer(); /* unmaps */

	/* Pushes c (seq is set here); -FI_EAGAIN when the ring is full,
	 * -FI_EHOSTDOWN when its owner is gone.  Wakes a sleeping owner. */
	int push(const cell &c) noexcept;
	/* Reads / releases slot of the peer's bounce buffers. */
	const void *bounce_addr(uint32_t slot) const noexcept;
	void bounce_release(uint32_t slot) noexcept;
	/* Bytes in each of the peer's slots (its layout, checked at attach):
	 * what a length read from one of its cells is held to. */
	size_t bounce_size() const noexcept { return slot_size_; }

	pid_t pid() const noexcept;
	/* Is the owner still the process that created the region? */
	bool alive() const noexcept;
	const char *name() const noexcept { return name_; }
	/* cma_usable against this peer, reading one byte of its region where
	 * the owner maps it (a known address of the peer). */
	bool cma_probe(const char **why) const noexcept;
	/* The owner's process for single copy (bind_proc), bound on first
	 * use, under the caller's lock as every use of a peer; nullptr when
	 * it is not (cma_error(): bind_proc's failure). */
	const proc_ref *proc() noexcept;
	int cma_error() const noexcept { return proc_err_; }
	/* cma_read / cma_write (below) with the owner's process; cma_error()
	 * when there is none. */
	ssize_t cma_read(const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept;
	ssize_t cma_write(const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept;
	/* For a run of copies checked once around the whole run (split.cpp:
	 * each pidfd poll is a system call): the owner's process is bound and
	 * has not exited; and one copy without those checks. */
	bool cma_alive() noexcept;
	ssize_t cma_copy_unchecked(bool write, const iovec *local, size_t lcnt, const iovec *remote,
				   size_t rcnt) noexcept;
	/* Bytes of this process's memory the attachment costs beyond the
	 * shared pages (the object and the mapping's bookkeeping). */
	static size_t own_bytes() noexcept { return sizeof(peer); }

	peer(const peer &) = delete;
	peer &operator=(const peer &) = delete;
	peer() noexcept = default; /* empty: attach() fills one (public for try_make) */

private:
	char name_[name_max + 1] = {};
	unsigned char *base_ = nullptr;
	size_t size_ = 0;
	std::atomic<bool> broken_{false}; /* the object shrank under us (busguard.cpp) */
	region_ctl *ctl_ = nullptr;
	cell *cells_ = nullptr;
	std::atomic<uint32_t> *flags_ = nullptr;
	const unsigned char *bounce_ = nullptr;
	uint32_t mask_ = 0, shift_ = 0, nslots_ = 0, slot_size_ = 0;
	pid_t pid_ = 0;
	uint64_t start_ = 0;
	uint64_t owner_base_ = 0;
	char wake_name_[32] = {};
	std::shared_ptr<const proc_ref> proc_; /* once bound */
	int proc_err_ = 0; /* bind_proc's last failure */
};

/* reap_stale (region_impl.h) the first time a process calls it: the
 * provider does before its first region, so that regions of processes
 * killed by a signal (they cannot unlink their own) go with the next
 * process of the user that opens an endpoint on the node. */
void reap_stale_once(int age_s) noexcept;

/* Single copy with cross-memory attach (process_vm_readv/_writev).  Probe
 * once per process: false (and the reason, logged once by the caller)
 * when the kernel refuses (ptrace scope, another user, seccomp).  Without a
 * known address it reads one byte at address 0: the kernel checks the
 * permission before the address, so EFAULT means allowed. */
bool cma_usable(pid_t peer, const char **why) noexcept;
/* A process single copy may address: a pid names whatever process holds
 * it now, and once the peer has exited and been reaped another user's
 * process may hold it.  So the copy goes through a pidfd opened on the
 * pid and then checked against the start time the region header gives
 * (so it names the owner itself): it tells when the owner has exited,
 * and its pid is the owner's for as long as it has not (cma.cpp).  One
 * per process, shared by every peer of ours that names it.
 *
 * The process pid that started at start (start_time): 0, or -FI_EHOSTDOWN
 * (gone: pid names no process or another one), -FI_ENOSYS (no pidfd_open:
 * no single copy) or another negative errno (logged). */
int bind_proc(pid_t pid, uint64_t start, std::shared_ptr<const proc_ref> *out) noexcept;
/* Has it exited (or can its pidfd not tell)? */
bool proc_exited(const proc_ref &p) noexcept;
/* Bytes copied, or -errno.  Short copies are retried inside.
 * -FI_EHOSTDOWN when the process has exited: before the copy (nothing
 * was copied), or during it (what was read may be another process's:
 * the caller discards it). */
ssize_t cma_read(const proc_ref &p, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept;
ssize_t cma_write(const proc_ref &p, const iovec *local, size_t lcnt, const iovec *remote, size_t rcnt) noexcept;

} // namespace wu::shm_tp

#endif
