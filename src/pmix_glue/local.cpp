/* SPDX-License-Identifier: BSD-3-Clause */
/* Node-local peers without exchange (core/launcher.h's local_format): the
 * notes of ranks whose endpoint could not take its computed name.
 *
 * A note is /dev/shm/wu<uid>.x<job id>.<rank>, mode 0600: a header naming
 * the writer (pid and start time, so that a note left by a crashed process
 * is recognised) and the rank's endpoint record (wire.h).  It is written to
 * a temporary name and renamed, so a reader never sees half of one, before
 * the rank's publish returns: in modex the fence orders it before every
 * read.  Readers trust only notes of their own user. */
#include "pmix_glue/session_impl.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"
#include "pmix_glue/wire.h"

namespace wu::pmix {

namespace detail {

namespace {

constexpr uint32_t note_magic = 0x31585557; /* "WUX1" */

struct note_hdr {
	uint32_t magic;
	uint32_t pid;
	uint64_t start; /* the writer's start time (clock ticks after boot) */
};
static_assert(sizeof(note_hdr) == 16);

std::string note_path(const std::string &ns, uint32_t rank)
{
	char b[96];
	snprintf(b, sizeof b, "/dev/shm/wu%u.x%016llx.%u", unsigned(getuid()),
		 (unsigned long long)wire::job_id(ns), rank);
	return b;
}

/* Field 22 of /proc/<pid>/stat, 0 when the process is gone. */
uint64_t start_time(pid_t pid)
{
	char path[40], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
	unique_fd fd(open(path, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	fd.reset();
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the command may hold spaces */
	if (!p)
		return 0;
	unsigned long long v = 0;
	/* After ")": state is field 3; start time is field 22. */
	int field = 2;
	for (const char *q = p + 1; *q && field < 22; q++)
		if (*q == ' ' && ++field == 22)
			v = strtoull(q + 1, nullptr, 10);
	return v;
}

bool writer_alive(const note_hdr &h)
{
	if (h.pid == 0 || (kill(pid_t(h.pid), 0) != 0 && errno != EPERM))
		return false;
	return start_time(pid_t(h.pid)) == h.start;
}

/* 0 with the note's bytes, -FI_ENOENT when there is none, -FI_EPERM when
 * it belongs to another user or may be written by others (ignored). */
int read_note(const std::string &path, std::vector<uint8_t> &out)
{
	unique_fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
	if (fd < 0)
		return errno == ENOENT ? -FI_ENOENT : errno == ELOOP ? -FI_EPERM : -FI_EIO;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077))
		return -FI_EPERM;
	out.resize(sizeof(note_hdr) + sizeof(wire::ep_hdr) + 256);
	ssize_t n = read(fd, out.data(), out.size());
	fd.reset();
	if (n < 0)
		return -FI_EIO;
	out.resize(size_t(n));
	return 0;
}

/* Writes {hdr, this rank's ep record} to path: a fresh random temporary
 * name, created exclusively (one another user could predict, it could
 * create first: issue 32), then renamed, so a reader never sees half. */
int write_file(const session &s, uint32_t magic, const std::string &path, uint32_t addr_format,
	       const void *name, size_t len)
{
	note_hdr h{magic, uint32_t(getpid()), start_time(getpid())};
	auto rec = wire::encode_ep(addr_format, s.job, s.rank, name, len);
	std::vector<uint8_t> buf(sizeof h + rec.size());
	memcpy(buf.data(), &h, sizeof h);
	memcpy(buf.data() + sizeof h, rec.data(), rec.size());
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
		rnd = uint64_t(start_time(getpid())) ^ uint64_t(getpid()) << 32;
	char sfx[40];
	snprintf(sfx, sizeof sfx, ".%d.%016llx.tmp", int(getpid()), (unsigned long long)rnd);
	std::string tmp = path + sfx;
	unique_fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	bool ok = fd >= 0 && write(fd, buf.data(), buf.size()) == ssize_t(buf.size());
	int err = errno;
	fd.reset();
	if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
		ok = false;
		err = errno;
	}
	if (!ok) {
		unlink(tmp.c_str());
		errno = err; /* for the caller's log line */
		return -FI_EIO;
	}
	return 0;
}

/* Removes path when this process wrote it (another may have taken the
 * name since). */
void drop_own(std::string &path, uint32_t magic)
{
	if (path.empty())
		return;
	std::vector<uint8_t> note;
	note_hdr h{};
	if (read_note(path, note) == 0 && note.size() >= sizeof h) {
		memcpy(&h, note.data(), sizeof h);
		if (h.magic == magic && h.pid == uint32_t(getpid()))
			unlink(path.c_str());
	}
	path.clear();
}

constexpr uint32_t card_magic = 0x31435557; /* "WUC1" */

std::string card_path(const std::string &ns, uint32_t rank)
{
	char b[96];
	snprintf(b, sizeof b, "/dev/shm/wu%u.c%016llx.%u", unsigned(getuid()),
		 (unsigned long long)wire::job_id(ns), rank);
	return b;
}

} // namespace

bool is_local_peer(const session &s, const std::string &ns, uint32_t rank)
{
	return ns == s.nspace && rank != s.rank &&
	       std::binary_search(s.local_peers.begin(), s.local_peers.end(), rank);
}

const local_format *computed_here(const session &s, const std::string &ns, uint32_t rank,
				  uint32_t addr_format)
{
	const local_format *f = local_format_for(addr_format);
	/* Itself: what it published; unpublished (launcher), its own record. */
	bool self = ns == s.nspace && rank == s.rank && s.published && s.own_format == addr_format;
	return f && (self || is_local_peer(s, ns, rank)) ? f : nullptr;
}

int local_name(session &s, const local_format &f, const std::string &ns, uint32_t rank,
	       std::vector<uint8_t> &out)
{
	if (ns == s.nspace && rank == s.rank && s.published && s.own_format == f.addr_format) {
		out = s.own_name; /* what this process published, note or not */
		s.local_computed++;
		return 0;
	}
	std::string path = note_path(ns, rank);
	std::vector<uint8_t> note;
	int r = read_note(path, note);
	if (r == -FI_EPERM) {
		WU_WARN_SPARSE(&pmix_prov, FI_LOG_AV,
			       "wire-up: %s is not a note of this user (owner or mode), ignored\n",
			       path.c_str());
	} else if (r == 0) {
		note_hdr h{};
		if (note.size() >= sizeof h)
			memcpy(&h, note.data(), sizeof h);
		if (note.size() < sizeof h || h.magic != note_magic) {
			WU_WARN(&pmix_prov, FI_LOG_AV,
				"wire-up: note %s of local rank %u is not a Wireup note (%zu bytes); rank %u is not inserted\n",
				path.c_str(), rank, note.size(), rank);
			return -FI_EINVAL;
		}
		if (writer_alive(h)) {
			std::vector<uint8_t> rec(note.begin() + sizeof h, note.end());
			const uint8_t *nm;
			size_t n;
			std::string why;
			if (int e = wire::check_ep(rec, f.addr_format, wire::job_id(ns), rank, &nm, &n,
						   why)) {
				WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: note %s of local rank %u: %s\n",
					path.c_str(), rank, why.c_str());
				return e;
			}
			out.assign(nm, nm + n);
			s.local_noted++;
			return 0;
		}
		WU_INFO(&pmix_prov, FI_LOG_AV,
			"wire-up: note %s was left by process %u, which is gone; rank %u's computed address is used\n",
			path.c_str(), h.pid, rank);
	}
	uint8_t buf[256];
	long n = f.local_addr(ns.c_str(), rank, buf, sizeof buf);
	if (n <= 0) {
		WU_WARN(&pmix_prov, FI_LOG_AV,
			"wire-up: the address of local rank %u of %s cannot be computed (%s)\n", rank,
			ns.c_str(), fi_strerror(n < 0 ? int(-n) : FI_EINVAL));
		return n < 0 ? int(n) : -FI_EINVAL;
	}
	out.assign(buf, buf + n);
	s.local_computed++;
	return 0;
}

void drop_note(session &s)
{
	drop_own(s.note_path, note_magic);
	drop_own(s.card_path, card_magic);
}

int write_card(session &s, uint32_t addr_format, const void *name, size_t len)
{
	std::string path = card_path(s.nspace, s.rank);
	if (int r = write_file(s, card_magic, path, addr_format, name, len)) {
		WU_WARN(&pmix_prov, FI_LOG_CORE,
			"wire-up: rank %u cannot leave its card %s for its node's first rank (%s): remote ranks fetch its address on its own\n",
			s.rank, path.c_str(), strerror(errno));
		return r;
	}
	s.card_path = path;
	return 0;
}

int read_card(const session &s, uint32_t rank, uint32_t addr_format, std::vector<uint8_t> &out)
{
	std::string path = card_path(s.nspace, rank);
	std::vector<uint8_t> card;
	int r = read_note(path, card);
	if (r == -FI_ENOENT)
		return r;
	if (r) {
		WU_WARN_SPARSE(&pmix_prov, FI_LOG_AV,
			       "wire-up: %s is not a card of this user (owner or mode), ignored\n",
			       path.c_str());
		return r;
	}
	note_hdr h{};
	if (card.size() >= sizeof h)
		memcpy(&h, card.data(), sizeof h);
	if (card.size() < sizeof h || h.magic != card_magic) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: %s is not a Wireup card (%zu bytes), ignored\n",
			path.c_str(), card.size());
		return -FI_EINVAL;
	}
	if (!writer_alive(h))
		return -FI_ENOENT; /* left by a process that is gone: not yet written */
	std::vector<uint8_t> rec(card.begin() + sizeof h, card.end());
	const uint8_t *nm;
	size_t n;
	std::string why;
	if (int e = wire::check_ep(rec, addr_format, s.job, rank, &nm, &n, why)) {
		WU_WARN(&pmix_prov, FI_LOG_AV, "wire-up: card %s of local rank %u: %s, ignored\n",
			path.c_str(), rank, why.c_str());
		return e;
	}
	out.assign(nm, nm + n);
	return 0;
}

void consume_card(const session &s, uint32_t rank) noexcept
{
	/* read_card checked the file is this user's; /dev/shm is sticky, so
	 * no one else can have swapped it since. */
	try {
		unlink(card_path(s.nspace, rank).c_str());
	} catch (...) {
		/* no memory for the path: the card stays until its owner exits */
	}
}

int note_own(session &s, uint32_t addr_format, const void *name, size_t len)
{
	const local_format *f = local_format_for(addr_format);
	if (!f)
		return 0;
	if (f->computable(s.nspace.c_str(), s.rank, name, len)) {
		drop_own(s.note_path, note_magic);
		return 0;
	}
	std::string path = note_path(s.nspace, s.rank);
	std::vector<uint8_t> old;
	if (read_note(path, old) == 0 && old.size() >= sizeof(note_hdr)) {
		note_hdr h;
		memcpy(&h, old.data(), sizeof h);
		if (h.magic == note_magic && h.pid != uint32_t(getpid()) && writer_alive(h)) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"wire-up: rank %u: live process %u holds the note %s: two processes run as rank %u of %s\n",
				s.rank, h.pid, path.c_str(), s.rank, s.nspace.c_str());
			return -FI_EADDRINUSE;
		}
	}
	if (int r = write_file(s, note_magic, path, addr_format, name, len)) {
		WU_WARN(&pmix_prov, FI_LOG_CORE,
			"wire-up: rank %u's endpoint did not take its computed name and its note %s cannot be written (%s): local peers cannot reach it\n",
			s.rank, path.c_str(), strerror(errno));
		return r;
	}
	WU_INFO(&pmix_prov, FI_LOG_CORE,
		"wire-up: rank %u's endpoint did not take its computed name; local peers read it from %s\n",
		s.rank, path.c_str());
	s.note_path = path;
	return 0;
}

} // namespace detail
} // namespace wu::pmix
