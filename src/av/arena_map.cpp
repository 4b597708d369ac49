/* SPDX-License-Identifier: BSD-3-Clause */
/* Mapping the arena of an AV: private (anonymous memory) or named (a
 * POSIX shm object that other processes open), and releasing it. */
#include "av/av_impl.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <new>

#include "core/fd.h"
#include "core/log.h"
#include "core/shm_object.h"

namespace wu::av::detail {

/* ---- arenas ---- */

namespace {

/* Unmaps r and frees it (no unlink: see arena_release). */
struct arena_unmap {
	void operator()(arena *r) const noexcept
	{
		std::unique_ptr<arena> gone(r);
		if (r->base && r->base != MAP_FAILED)
			munmap(r->base, r->size);
	}
};

/* An arena this file is still setting up: unmapped on an error. */
using new_arena = std::unique_ptr<arena, arena_unmap>;

/* An arena set up: from now on released as the AV's. */
arena_ptr done(new_arena r)
{
	return arena_ptr(r.release());
}

} // namespace

void init_header(arena &r, uint64_t max_slots, uint32_t blob_size, uint32_t addr_format,
		 fi_av_type type, bool shared)
{
	header &h = *r.hdr;
	h.version = region_version;
	h.addr_format = addr_format;
	h.max_slots = max_slots;
	h.blob_size = blob_size;
	h.is_shared = shared;
	h.total_bytes = r.size;
	h.av_type = type;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	if (shared) {
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(&h.lock, &ma);
	pthread_mutexattr_destroy(&ma);
	h.attached = 1;
}

/* Makes the records of the first count slots resident now, at open: an
 * application that declares count inserts that many, and the first insert
 * then pays no page faults (2+ us each here).  Never more than 64 MiB. */
void populate_records(arena &r, uint64_t count)
{
	size_t len = std::min<uint64_t>(count, uint64_t{1} << 23) * 8;
	if (!len)
		return;
	len = (len + 4095) & ~size_t(4095);
#ifdef MADV_POPULATE_WRITE
	if (madvise(r.rec, len, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	for (size_t off = 0; off < len; off += 4096)
		__atomic_fetch_or(reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(r.rec) + off), 0,
				  __ATOMIC_RELAXED);
}

arena_ptr private_region(uint64_t max_slots, uint32_t blob_size, uint32_t addr_format, fi_av_type type,
			  uint64_t count)
{
	new_arena r(std::make_unique<arena>().release());
	r->size = arena::layout(*r, max_slots, blob_size);
	r->base = mmap(nullptr, r->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->base == MAP_FAILED)
		throw std::bad_alloc();
	arena::layout(*r, max_slots, blob_size);
	init_header(*r, max_slots, blob_size, addr_format, type, false);
	r->hdr->magic = region_magic;
	populate_records(*r, count);
	return done(std::move(r));
}

std::string shm_name_of(const char *name)
{
	std::string s = "/wireup-av-";
	for (const char *p = name; *p && s.size() < 200; p++)
		s += (*p == '/' || *p <= ' ') ? '_' : *p;
	return s;
}

/* Creates or opens the named AV's shm object.  The creator publishes the
 * magic last, so openers never see a half-initialised header. */
int shared_region(const av_obj *a, const char *name, bool read_only, uint64_t count,
		  uint32_t blob_size, fi_av_type type, void *hint, arena_ptr *out)
{
	std::string sn = shm_name_of(name);
	new_arena r(std::make_unique<arena>().release());
	r->shared = true;
	r->read_only = read_only;
	r->shm_name = sn;
	uint64_t max_slots = shared_slots;
	while (max_slots < count)
		max_slots <<= 1;
	bool created = false;
	unique_fd fd;
	const std::string what = std::string("fi_av_open(\"") + name + "\")";
	if (!read_only) {
		/* O_EXCL: an object that already exists is opened below, and
		 * trusted only once it is shown to be ours. */
		fd.reset(shm_object::create_excl(sn.c_str()));
		created = fd >= 0;
		if (fd < 0 && fd != -EEXIST) {
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s): %s\n", name, sn.c_str(),
				strerror(-fd));
			return -FI_EACCES;
		}
	}
	if (fd < 0) {
		fd.reset(shm_object::open_ours(sn.c_str(), read_only, a->prov, FI_LOG_AV, what.c_str()));
		if (fd == -FI_ENOENT) {
			/* MPICH probes for a read-only AV at MPI_Init, before anyone
			 * created it: an expected answer, not a warning. */
			if (read_only)
				WU_INFO(a->prov, FI_LOG_AV,
					"fi_av_open: named AV \"%s\" (%s) does not exist; FI_READ opens only an AV another process created\n",
					name, sn.c_str());
			else
				WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) was removed while opening it\n",
					name, sn.c_str());
		}
		if (fd < 0)
			return fd;
	}
	const int prot = read_only ? PROT_READ : PROT_READ | PROT_WRITE;
	if (created) {
		r->size = arena::layout(*r, max_slots, blob_size);
		if (ftruncate(fd, off_t(r->size)) != 0) {
			int e = errno;
			shm_unlink(sn.c_str());
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s): sizing it failed: %s\n", name,
				sn.c_str(), strerror(e));
			return -FI_ENOMEM;
		}
		r->base = mmap(hint, r->size, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
		fd.reset();
		if (r->base == MAP_FAILED) {
			int e = errno;
			shm_unlink(sn.c_str());
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s): mapping it failed: %s\n", name,
				sn.c_str(), strerror(e));
			return -FI_ENOMEM;
		}
		arena::layout(*r, max_slots, blob_size);
		init_header(*r, max_slots, blob_size, a->fmt->addr_format, type, true);
		__atomic_store_n(&r->hdr->magic, region_magic, __ATOMIC_RELEASE);
		*out = done(std::move(r));
		return 0;
	}
	/* Wait (bounded) for the creator to size and initialise it. */
	struct stat sb{};
	for (int i = 0; i < 5000; i++) {
		if (fstat(fd, &sb) == 0 && size_t(sb.st_size) >= 4096)
			break;
		usleep(1000);
	}
	if (size_t(sb.st_size) < 4096) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" was never initialised by its creator\n",
			name);
		return -FI_EIO;
	}
	r->size = size_t(sb.st_size);
	r->base = mmap(hint, r->size, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
	fd.reset();
	if (r->base == MAP_FAILED) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s): mapping it failed: %s\n", name,
			sn.c_str(), strerror(errno));
		return -FI_ENOMEM;
	}
	auto *h = static_cast<header *>(r->base);
	for (int i = 0; i < 5000 && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != region_magic; i++)
		usleep(1000);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != region_magic || h->version != region_version) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) is not a Wireup AV of this version\n",
			name, sn.c_str());
		return -FI_EINVAL;
	}
	if (h->addr_format != a->fmt->addr_format) {
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_open: named AV \"%s\" holds address format %u, this domain uses %u\n", name,
			h->addr_format, a->fmt->addr_format);
		return -FI_EINVAL;
	}
	/* Every field is checked before one is used as a size or an index.
	 * Checked on a copy; writers may be changing it, so a failure is
	 * retried a few times before it is believed. */
	header copy;
	const char *why = nullptr;
	for (int i = 0; i < 3; i++) {
		memcpy(static_cast<void *>(&copy), h, sizeof copy);
		why = validate_header(copy, r->size, blob_size);
		if (!why)
			break;
		usleep(1000);
	}
	if (why) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_open: named AV \"%s\" (%s) is corrupt: %s; refused\n", name,
			sn.c_str(), why);
		return -FI_EINVAL;
	}
	arena::layout(*r, copy.max_slots, blob_size);
	if (!read_only) {
		wlock lk(*r);
		h->attached++;
	}
	*out = done(std::move(r));
	return 0;
}

void arena_release::operator()(arena *r) const noexcept
{
	new_arena gone(r);
	if (r->shared && !r->read_only) {
		bool last;
		try {
			wlock lk(*r);
			last = --r->hdr->attached == 0;
		} catch (...) {
			/* The lock is broken: leave the object to the others. */
			WU_WARN(&core_prov, FI_LOG_AV, "fi_close(av): named AV %s: its lock failed; not unlinked\n",
				r->shm_name.c_str());
			return;
		}
		if (last)
			shm_unlink(r->shm_name.c_str());
	}
}

} // namespace wu::av::detail
