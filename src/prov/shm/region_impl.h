/* SPDX-License-Identifier: BSD-3-Clause */
/* The bytes of a region (region.h), shared by its parts and by the tests
 * that corrupt them on purpose.  Nothing here is trusted when read from a
 * peer's object until validate() has passed on a private copy. */
#ifndef WU_PROV_SHM_REGION_IMPL_H
#define WU_PROV_SHM_REGION_IMPL_H

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "prov/shm/region.h"

namespace wu::shm_tp {

constexpr uint64_t region_magic = 0x31514d4853555721ull; /* "!WUSHMQ1" */
constexpr uint32_t region_version = 1;

/* Limits a header must respect (they bound what a mapping may cost). */
constexpr uint32_t min_queue_cells = 2, max_queue_cells = 1u << 20;
constexpr uint32_t max_bounce_slots = 1u << 16;
constexpr uint32_t min_bounce_size = 64, max_bounce_size = 1u << 24;
constexpr uint64_t max_region_bytes = 1ull << 32;
constexpr size_t flag_stride = 64; /* one release flag per cache line */

/* The first 32 bytes mean the same in every version, so that a region of
 * another version whose owner died can still be recognised as stale. */
struct region_hdr {
	uint64_t magic;       /* stored last, with release, when the region is ready */
	uint32_t version;
	int32_t owner_pid;
	uint64_t owner_start; /* /proc/<pid>/stat field 22 */
	uint32_t owner_uid;
	uint32_t hdr_size;    /* sizeof(region_hdr) */
	/* -- version 1 -- */
	uint64_t total_size;  /* == the object's size */
	uint32_t queue_cells; /* power of two */
	uint32_t bounce_slots;
	uint32_t bounce_size; /* multiple of 64 */
	uint32_t owner_pidns; /* low bits of the owner's pid namespace inode (0: unknown, older
			       * libraries): only regions of our pid namespace are swept */
	uint64_t ctl_off;     /* region_ctl */
	uint64_t queue_off;   /* cells */
	uint64_t flags_off;   /* bounce release flags */
	uint64_t bounce_off;  /* bounce slots, page aligned */
	uint64_t owner_base;  /* where the owner maps the region (cma probe) */
	char name[name_max + 1];
	char wake_name[32];   /* abstract unix socket of wait_fd, or "" */
};

/* What changes while the region lives, one concern per cache line. */
struct region_ctl {
	alignas(64) std::atomic<uint64_t> tail; /* next position to reserve (helped along) */
	alignas(64) std::atomic<uint32_t> wake_word; /* the futex */
	std::atomic<uint32_t> sleeping; /* sleep_futex | sleep_fd while the owner sleeps */
};

constexpr uint32_t sleep_futex = 1, sleep_fd = 2;

/* A cell's seq: [lap:40][state:2][pid:22].  The lap is position >> log2
 * (cells), compared modulo 2^40.  free(L): producers of lap L may reserve
 * it; resv(L, pid): pid reserved it and is writing; pub(L): ready to pop.
 * Reserving is one CAS on the cell, so the reservation names the producer
 * and a reservation never published can be judged by its producer's
 * liveness (queue.cpp). */
namespace cellseq {
constexpr uint64_t lap_bits = 40, pid_bits = 22;
constexpr uint64_t lap_mask = (1ull << lap_bits) - 1, pid_mask = (1ull << pid_bits) - 1;
enum : uint64_t { st_free = 0, st_resv = 1, st_pub = 2 };
constexpr uint64_t make(uint64_t lap, uint64_t st, uint64_t pid)
{
	return ((lap & lap_mask) << 24) | (st << 22) | (pid & pid_mask);
}
constexpr uint64_t lap(uint64_t s) { return s >> 24; }
constexpr uint64_t state(uint64_t s) { return (s >> 22) & 3; }
constexpr uint64_t pid(uint64_t s) { return s & pid_mask; }
} // namespace cellseq

/* The layout a region of these sizes has; 0 when l is not acceptable. */
uint64_t layout_of(const layout &l, region_hdr &h) noexcept;
/* nullptr when h (a private copy) describes a region of `size` bytes we
 * may use; else why not. */
const char *validate(const region_hdr &h, uint64_t size) noexcept;
/* The start time of pid (/proc/<pid>/stat field 22); 0 when it is gone
 * or a zombie. */
uint64_t start_time(pid_t pid) noexcept;
/* Is pid still the process that started at `start`? */
bool owner_alive(pid_t pid, uint64_t start) noexcept;
/* This process's pid namespace as region_hdr::owner_pidns records it. */
uint32_t pidns_id() noexcept;
/* Unlinks every region of this user in /dev/shm (of our pid namespace)
 * whose owner has exited and that was created at least age_s seconds ago
 * (none when age_s < 0); how many went. */
size_t reap_stale(int age_s) noexcept;
/* Whether a name is one region.h accepts. */
bool valid_name(const char *name) noexcept;

const fi_provider *log_prov() noexcept;

/* Region mappings guarded against SIGBUS (busguard.cpp): a fault in
 * [base, base + size) maps zeros there and sets *broken. */
void guard_add(const void *base, size_t size, std::atomic<bool> *broken) noexcept;
void guard_remove(const void *base) noexcept;

} // namespace wu::shm_tp

#endif
