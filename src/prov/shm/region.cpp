/* SPDX-License-Identifier: BSD-3-Clause */
/* Regions: create, reclaim, attach and every check before a peer's region
 * is trusted (region.h); the queue is in queue.cpp, cross-memory copy in
 * cma.cpp. */
#include "prov/shm/region_impl.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"
#include "core/shm_object.h"

namespace wu::shm_tp {

namespace {

std::atomic<const fi_provider *> the_prov{nullptr};

constexpr auto subsys = FI_LOG_EP_CTRL;

/* An object still being created (size 0, or no magic yet) is taken as
 * stale by a would-be creator only after this long: its creator died
 * between O_EXCL and the magic. */
constexpr time_t creating_grace_s = 5;

/* Regions this process created, unlinked at normal exit (a process that
 * forgets to close its endpoints leaves nothing in /dev/shm).  A forked
 * child inherits the list but not the regions: entries carry the creator. */
struct live_entry {
	char name[name_max + 1];
	pid_t pid;
	dev_t dev;
	ino_t ino;
	live_entry *next;
};
std::mutex live_lock;
live_entry *live_head = nullptr;
bool exit_hook = false;

/* Unlinks name when it is still the object (dev, ino): a stale reclaimer
 * may have replaced it. */
void unlink_if_same(const char *name, dev_t dev, ino_t ino) noexcept
{
	char path[sizeof "/dev/shm/" + name_max];
	snprintf(path, sizeof path, "/dev/shm/%s", name);
	struct stat sb{};
	if (stat(path, &sb) == 0 && sb.st_dev == dev && sb.st_ino == ino)
		shm_unlink(name);
}

void unlink_live_at_exit()
{
	std::lock_guard<std::mutex> g(live_lock);
	pid_t me = getpid();
	for (live_entry *e = live_head; e; e = e->next)
		if (e->pid == me)
			unlink_if_same(e->name, e->dev, e->ino);
}

void live_add(const char *name, dev_t dev, ino_t ino) noexcept
{
	auto e = try_make<live_entry>();
	if (!e)
		return; /* still unlinked on close */
	snprintf(e->name, sizeof e->name, "%s", name);
	e->pid = getpid();
	e->dev = dev;
	e->ino = ino;
	std::lock_guard<std::mutex> g(live_lock);
	if (!exit_hook)
		exit_hook = atexit(unlink_live_at_exit) == 0;
	e->next = live_head;
	live_head = e.release(); /* the list owns it until live_remove */
}

void live_remove(dev_t dev, ino_t ino) noexcept
{
	std::lock_guard<std::mutex> g(live_lock);
	for (live_entry **p = &live_head; *p; p = &(*p)->next) {
		if ((*p)->dev == dev && (*p)->ino == ino && (*p)->pid == getpid()) {
			std::unique_ptr<live_entry> gone(*p);
			*p = gone->next;
			return;
		}
	}
}

/* Reads the version-stable head of name's object.  1: stale (reclaim it),
 * 0: live or being created (leave it), <0: not ours or corrupt (refused,
 * logged). */
int judge_existing(int fd, const char *name) noexcept
{
	struct stat sb{};
	if (fstat(fd, &sb) != 0)
		return -FI_EACCES;
	region_hdr h{};
	ssize_t n = sb.st_size >= 32 ? pread(fd, &h, 32, 0) : 0;
	bool started = n == 32 && h.owner_pid > 0 && h.owner_start != 0;
	if (started && h.magic != 0 && h.magic != region_magic) {
		WU_WARN(log_prov(), subsys,
			"shm: region %s exists and is not a Wireup shm region (bad magic); not reclaimed\n", name);
		return -FI_EEXIST;
	}
	if (started)
		return owner_alive(h.owner_pid, h.owner_start) ? 0 : 1;
	/* Its creator has not written its pid yet, or died before it did. */
	return time(nullptr) - sb.st_ctime > creating_grace_s ? 1 : 0;
}

/* Unlinks a stale object, once: the reclaimers of one name serialise on
 * the old object's flock and unlink only while the name still refers to
 * it, so none unlinks the region another has just created in its place. */
void reclaim(int fd, const char *name) noexcept
{
	if (flock(fd, LOCK_EX) != 0)
		return;
	struct stat sb{};
	if (fstat(fd, &sb) == 0 && judge_existing(fd, name) == 1) {
		WU_INFO(log_prov(), subsys, "shm: region %s is stale (its owner is gone); reclaimed\n", name);
		unlink_if_same(name, sb.st_dev, sb.st_ino);
	}
	flock(fd, LOCK_UN);
}

/* The abstract unix socket wait_fd() is, recorded in the header for
 * posters (who send one byte while the owner sleeps armed).  Abstract
 * names have no permissions: anyone in our network namespace may send to
 * it.  That is safe because a byte carries nothing: it only makes the
 * owner look at its own queue, whose cells only our user can write, and
 * wait_arm drains it.  The name is random (getrandom) and exists only in
 * our 0600 region, so nobody can bind it first to steal our wake-ups, and
 * a stranger who guessed it could only wake us for nothing. */
int make_wake_socket(char (&wake_name)[32]) noexcept
{
	unique_fd s(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (s < 0)
		return -1;
	for (int attempt = 0; attempt < 4; attempt++) {
		uint64_t r[2] = {};
		if (getrandom(r, sizeof r, 0) != sizeof r)
			return -1;
		snprintf(wake_name, sizeof wake_name, "wu-shm-%016" PRIx64 "%08" PRIx32, r[0], uint32_t(r[1]));
		sockaddr_un a{};
		a.sun_family = AF_UNIX;
		size_t len = strlen(wake_name);
		memcpy(a.sun_path + 1, wake_name, len);
		if (bind(s, reinterpret_cast<sockaddr *>(&a), socklen_t(offsetof(sockaddr_un, sun_path) + 1 + len)) == 0)
			return s.release();
		if (errno != EADDRINUSE)
			break;
	}
	wake_name[0] = 0;
	return -1;
}

} // namespace

void set_log_provider(const fi_provider *prov) noexcept
{
	the_prov.store(prov, std::memory_order_relaxed);
}

const fi_provider *log_prov() noexcept
{
	const fi_provider *p = the_prov.load(std::memory_order_relaxed);
	return p ? p : &core_prov;
}

uint64_t start_time(pid_t pid) noexcept
{
	if (pid <= 0)
		return 0;
	char path[32], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
	ssize_t n;
	{
		unique_fd fd(open(path, O_RDONLY | O_CLOEXEC));
		if (fd < 0)
			return 0;
		n = read(fd, buf, sizeof buf - 1);
	}
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The command name (field 2) may hold spaces and parentheses: fields
	 * are counted from the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	char state = 0;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return 0;
		if (field == 3)
			state = *p;
		if (field == 22) {
			if (state == 'Z' || state == 'X')
				return 0; /* killed, not yet reaped: gone for us */
			return strtoull(p, nullptr, 10);
		}
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

bool owner_alive(pid_t pid, uint64_t start) noexcept
{
	/* Regions are one user's, and a user sees its own processes in /proc
	 * even under hidepid. */
	return start != 0 && start_time(pid) == start;
}

uint32_t pidns_id() noexcept
{
	struct stat sb{};
	if (stat("/proc/self/ns/pid", &sb) != 0)
		return 0;
	return uint32_t(sb.st_ino) ? uint32_t(sb.st_ino) : 1;
}

namespace {

/* Whether a stat describes a finished region file of user me that is at
 * least age_s seconds old at now (by name before opening, and again on the
 * opened object). */
bool swept_file(const struct stat &sb, uid_t me, time_t now, int age_s) noexcept
{
	return S_ISREG(sb.st_mode) && sb.st_uid == me && (sb.st_mode & 07777) == 0600 &&
	       sb.st_size >= off_t(sizeof(region_hdr)) && now - sb.st_ctime >= age_s;
}

/* Whether the object name (open as fd) is a finished region of user me,
 * created in our pid namespace by a process that has exited.  Anything else
 * (another user's, a note, a region being created, a live or foreign-pid-
 * namespace owner, whose pid we cannot judge) is left alone, quietly. */
bool dead_region(int fd, const char *name, uint32_t ns, int age_s, uid_t me, time_t now) noexcept
{
	struct stat sb{};
	if (fstat(fd, &sb) != 0 || !swept_file(sb, me, now, age_s))
		return false;
	region_hdr h{};
	if (pread(fd, &h, sizeof h, 0) != ssize_t(sizeof h))
		return false;
	return h.magic == region_magic && h.version == region_version && h.hdr_size == sizeof h &&
	       h.owner_uid == me && h.owner_pidns == ns && h.owner_pid > 0 &&
	       !strncmp(h.name, name, sizeof h.name) && !owner_alive(h.owner_pid, h.owner_start);
}

} // namespace

size_t reap_stale(int age_s) noexcept
{
	uint32_t ns = pidns_id();
	if (!ns || age_s < 0)
		return 0;
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	const uid_t me = geteuid();
	const time_t now = time(nullptr);
	char prefix[32];
	int pl = snprintf(prefix, sizeof prefix, "wu%u.", unsigned(me));
	size_t gone = 0;
	while (dirent *e = readdir(d)) {
		if (strncmp(e->d_name, prefix, size_t(pl)) || !valid_name(e->d_name))
			continue;
		/* A region too young, not ours or not a region file is passed over
		 * by one stat of its name, not an open: every endpoint's first sweep
		 * reads the whole directory, which holds every rank's region of the
		 * node (dead_region checks again on the open object). */
		struct stat pre{};
		if (fstatat(dirfd(d), e->d_name, &pre, AT_SYMLINK_NOFOLLOW) != 0 || !swept_file(pre, me, now, age_s))
			continue;
		unique_fd fd(shm_open(e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0));
		if (fd < 0 || !dead_region(fd, e->d_name, ns, age_s, me, now))
			continue;
		struct stat before{}, after{};
		char path[sizeof "/dev/shm/" + sizeof e->d_name];
		snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
		fstat(fd, &before);
		reclaim(fd, e->d_name);
		gone += stat(path, &after) != 0 || after.st_ino != before.st_ino;
	}
	closedir(d);
	if (gone)
		WU_INFO(log_prov(), subsys, "shm: removed %zu regions of this user's exited processes from /dev/shm\n",
			gone);
	return gone;
}

void reap_stale_once(int age_s) noexcept
{
	/* A forked child is another process: it sweeps again. */
	static std::atomic<pid_t> swept_by{0};
	if (pid_t me = getpid(); swept_by.exchange(me) != me)
		reap_stale(age_s);
}

int region::create(const char *name, const layout &l, region **out) noexcept
{
	if (!out || !valid_name(name))
		return -FI_EINVAL;
	*out = nullptr;
	region_hdr h{};
	uint64_t size = layout_of(l, h);
	if (!size) {
		WU_WARN(log_prov(), subsys, "shm: region %s: layout out of range\n", name);
		return -FI_EINVAL;
	}
	unique_fd fd;
	for (int attempt = 0;; attempt++) {
		int r = shm_object::create_excl(name);
		if (r >= 0) {
			fd.reset(r);
			break;
		}
		if (r != -EEXIST || attempt == 3) {
			WU_WARN(log_prov(), subsys, "shm: region %s: cannot create: %s\n", name, strerror(-r));
			return r == -EEXIST ? -FI_EEXIST : -FI_EACCES;
		}
		int o = shm_object::open_ours(name, false, log_prov(), subsys, "shm region");
		if (o == -FI_ENOENT)
			continue; /* gone meanwhile */
		if (o < 0)
			return -FI_EEXIST; /* someone else's object: logged */
		unique_fd old(o);
		int j = judge_existing(old, name);
		if (j < 0)
			return j;
		if (j == 0)
			return -FI_EEXIST;
		reclaim(old, name);
	}
	struct stat sb{};
	if (fstat(fd, &sb) != 0)
		return -FI_EIO;
	/* The pid first, so a creator dying from here on leaves a region
	 * judged stale by its pid rather than by the grace period. */
	h.version = region_version;
	h.owner_pid = getpid();
	h.owner_start = start_time(h.owner_pid);
	h.owner_uid = geteuid();
	h.owner_pidns = pidns_id();
	if (!h.owner_start || pwrite(fd, &h, 32, 0) != 32) {
		shm_unlink(name);
		return -FI_EIO;
	}
	/* Allocate every page now: /dev/shm running full must be an error
	 * here, not a SIGBUS when a peer first touches a bounce slot. */
	if (int e = posix_fallocate(fd, 0, off_t(size))) {
		WU_WARN(log_prov(), subsys, "shm: region %s: cannot allocate %" PRIu64 " bytes in /dev/shm: %s\n",
			name, size, strerror(e));
		shm_unlink(name);
		return e == ENOSPC ? -FI_ENOMEM : -FI_EIO;
	}
	void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		shm_unlink(name);
		return -FI_ENOMEM;
	}
	auto r = try_make<region>();
	if (!r) {
		munmap(m, size);
		shm_unlink(name);
		return -FI_ENOMEM;
	}
	r->base_ = static_cast<unsigned char *>(m);
	r->size_ = size;
	guard_add(m, size, &r->broken_);
	r->dev_ = sb.st_dev;
	r->ino_ = sb.st_ino;
	r->creator_ = h.owner_pid;
	snprintf(r->name_, sizeof r->name_, "%s", name);
	r->wake_fd_.reset(make_wake_socket(h.wake_name));
	h.owner_base = reinterpret_cast<uintptr_t>(m);
	snprintf(h.name, sizeof h.name, "%s", name);
	r->hdr_ = reinterpret_cast<region_hdr *>(r->base_);
	/* The shared objects start their lives in the new mapping (construct_at:
	 * placement, nothing owned; the mapping is). */
	r->ctl_ = std::construct_at(reinterpret_cast<region_ctl *>(r->base_ + h.ctl_off));
	r->cells_ = reinterpret_cast<cell *>(r->base_ + h.queue_off);
	for (uint32_t i = 0; i < h.queue_cells; i++)
		std::construct_at(&r->cells_[i].seq, cellseq::make(0, cellseq::st_free, 0));
	r->flags_ = reinterpret_cast<std::atomic<uint32_t> *>(r->base_ + h.flags_off);
	for (uint32_t i = 0; i < h.bounce_slots; i++)
		std::construct_at(reinterpret_cast<std::atomic<uint32_t> *>(r->base_ + h.flags_off + i * flag_stride),
				  0u);
	r->bounce_ = r->base_ + h.bounce_off;
	r->mask_ = h.queue_cells - 1;
	r->shift_ = uint32_t(__builtin_ctz(h.queue_cells));
	r->pub_seq_ = cellseq::make(0, cellseq::st_pub, 0);
	r->nslots_ = h.bounce_slots;
	r->slot_size_ = h.bounce_size;
	uint64_t magic = h.magic = 0;
	memcpy(r->hdr_, &h, sizeof h);
	magic = region_magic;
	/* Last: a peer that sees the magic sees everything above. */
	__atomic_store_n(&r->hdr_->magic, magic, __ATOMIC_RELEASE);
	live_add(name, sb.st_dev, sb.st_ino);
	*out = r.release(); /* the caller's owned<region> */
	return 0;
}

region::~region()
{
	if (creator_ == getpid()) {
		unlink_if_same(name_, dev_, ino_);
		live_remove(dev_, ino_);
	}
	if (base_) {
		guard_remove(base_);
		munmap(base_, size_);
	}
}

const char *region::name() const noexcept
{
	return name_;
}

int region::wait_fd() const noexcept
{
	return wake_fd_;
}

int region::bounce_get() noexcept
{
	for (uint32_t i = 0; i < nslots_; i++) {
		uint32_t s = (hint_ + i) % nslots_;
		auto *f = reinterpret_cast<std::atomic<uint32_t> *>(reinterpret_cast<unsigned char *>(flags_) +
								    size_t(s) * flag_stride);
		uint32_t zero = 0;
		if (f->load(std::memory_order_relaxed) == 0 &&
		    f->compare_exchange_strong(zero, 1, std::memory_order_acquire)) {
			hint_ = s + 1;
			return int(s);
		}
	}
	return -1;
}

void *region::bounce_addr(int slot) noexcept
{
	if (slot < 0 || uint32_t(slot) >= nslots_)
		return nullptr;
	return bounce_ + size_t(slot) * slot_size_;
}

size_t region::bounce_size() const noexcept
{
	return slot_size_;
}

void region::bounce_put(int slot) noexcept
{
	if (slot < 0 || uint32_t(slot) >= nslots_)
		return;
	reinterpret_cast<std::atomic<uint32_t> *>(reinterpret_cast<unsigned char *>(flags_) +
						  size_t(slot) * flag_stride)
		->store(0, std::memory_order_release);
}

bool region::slot_free(int slot) const noexcept
{
	if (slot < 0 || uint32_t(slot) >= nslots_)
		return false;
	return reinterpret_cast<std::atomic<uint32_t> *>(reinterpret_cast<unsigned char *>(flags_) +
							 size_t(slot) * flag_stride)
		       ->load(std::memory_order_acquire) == 0;
}

int peer::attach(const char *name, peer **out) noexcept
{
	if (!out || !valid_name(name))
		return -FI_EINVAL;
	*out = nullptr;
	int o = shm_object::open_ours(name, false, log_prov(), subsys, "shm region");
	if (o < 0)
		return o; /* -FI_ENOENT quietly, -FI_EACCES logged */
	unique_fd fd(o);
	struct stat sb{};
	if (fstat(fd, &sb) != 0)
		return -FI_EACCES;
	if (sb.st_size < off_t(sizeof(region_hdr))) {
		/* Just created, or its creator died before sizing it. */
		if (time(nullptr) - sb.st_ctime > creating_grace_s) {
			WU_WARN(log_prov(), subsys, "shm: region %s was never finished by its creator; refused\n", name);
			return -FI_EHOSTDOWN;
		}
		return -FI_EAGAIN;
	}
	if (uint64_t(sb.st_size) > max_region_bytes) {
		WU_WARN(log_prov(), subsys, "shm: region %s: %lld bytes is larger than any region; refused\n", name,
			(long long)sb.st_size);
		return -FI_EINVAL;
	}
	size_t size = size_t(sb.st_size);
	void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -FI_ENOMEM;
	auto *base = static_cast<unsigned char *>(m);
	/* Shrunk before we read its header: zeros, refused below. */
	std::atomic<bool> shrunk{false};
	guard_add(m, size, &shrunk);
	auto unmap = [&] {
		guard_remove(m);
		munmap(m, size);
	};
	/* A private copy: the owner may change the shared one under us. */
	region_hdr h{};
	h.magic = __atomic_load_n(reinterpret_cast<uint64_t *>(base), __ATOMIC_ACQUIRE);
	memcpy(reinterpret_cast<unsigned char *>(&h) + 8, base + 8, sizeof h - 8);
	if (h.magic == 0) {
		int32_t pid = h.owner_pid;
		unmap();
		if (pid > 0 && h.owner_start && !owner_alive(pid, h.owner_start))
			return -FI_EHOSTDOWN;
		return -FI_EAGAIN;
	}
	if (const char *why = validate(h, size)) {
		WU_WARN(log_prov(), subsys, "shm: region %s: %s; refused\n", name, why);
		unmap();
		return -FI_EINVAL;
	}
	if (h.owner_uid != geteuid()) {
		WU_WARN(log_prov(), subsys, "shm: region %s: created by uid %u, not by this user; refused\n", name,
			unsigned(h.owner_uid));
		unmap();
		return -FI_EACCES;
	}
	if (!owner_alive(h.owner_pid, h.owner_start)) {
		unmap();
		return -FI_EHOSTDOWN;
	}
	auto p = try_make<peer>();
	if (!p) {
		unmap();
		return -FI_ENOMEM;
	}
	guard_remove(m);
	guard_add(m, size, &p->broken_);
	if (shrunk.load(std::memory_order_relaxed))
		p->broken_.store(true, std::memory_order_relaxed);
	snprintf(p->name_, sizeof p->name_, "%s", name);
	p->base_ = base;
	p->size_ = size;
	p->ctl_ = reinterpret_cast<region_ctl *>(base + h.ctl_off);
	p->cells_ = reinterpret_cast<cell *>(base + h.queue_off);
	p->flags_ = reinterpret_cast<std::atomic<uint32_t> *>(base + h.flags_off);
	p->bounce_ = base + h.bounce_off;
	p->mask_ = h.queue_cells - 1;
	p->shift_ = uint32_t(__builtin_ctz(h.queue_cells));
	p->nslots_ = h.bounce_slots;
	p->slot_size_ = h.bounce_size;
	p->pid_ = h.owner_pid;
	p->start_ = h.owner_start;
	p->owner_base_ = h.owner_base;
	memcpy(p->wake_name_, h.wake_name, sizeof p->wake_name_);
	*out = p.release(); /* the caller's owner */
	return 0;
}

peer::~peer()
{
	if (base_) {
		guard_remove(base_);
		munmap(base_, size_);
	}
}

const void *peer::bounce_addr(uint32_t slot) const noexcept
{
	if (slot >= nslots_)
		return nullptr;
	return bounce_ + size_t(slot) * slot_size_;
}

void peer::bounce_release(uint32_t slot) noexcept
{
	if (slot >= nslots_) {
		WU_WARN(log_prov(), FI_LOG_EP_DATA, "shm: region %s: release of bounce slot %u of %u; ignored\n",
			name_, slot, nslots_);
		return;
	}
	reinterpret_cast<std::atomic<uint32_t> *>(reinterpret_cast<unsigned char *>(flags_) +
						  size_t(slot) * flag_stride)
		->store(0, std::memory_order_release);
}

pid_t peer::pid() const noexcept
{
	return pid_;
}

bool peer::alive() const noexcept
{
	/* Once bound, its pidfd knows (a start time only tells processes
	 * apart that did not start in the same clock tick). */
	if (broken_.load(std::memory_order_relaxed))
		return false;
	return proc_ ? !proc_exited(*proc_) : owner_alive(pid_, start_);
}

} // namespace wu::shm_tp
