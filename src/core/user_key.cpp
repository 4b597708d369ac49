/* SPDX-License-Identifier: BSD-3-Clause */
/* The user's key file (user_key.h). */
#include "config.h"

#include "core/user_key.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"
#include "core/sha256.h"

namespace wu::user_key {

namespace {

std::string hex(const unsigned char *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	std::string s;
	for (size_t i = 0; i < n; i++) {
		s += d[p[i] >> 4];
		s += d[p[i] & 15];
	}
	return s;
}

int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* mkdir -p of path's directory, each new level 0700. */
void make_parent(const std::string &path)
{
	for (size_t i = 1; i < path.size(); i++) {
		if (path[i] != '/')
			continue;
		std::string d = path.substr(0, i);
		if (mkdir(d.c_str(), 0700) && errno != EEXIST)
			return;
	}
}

/* Reads an existing key file; -FI_ENOENT if there is none. */
int read_key_file(const std::string &path, key &out, const fi_provider *prov)
{
	unique_fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0) {
		int err = errno;
		if (err == ENOENT)
			return -FI_ENOENT;
		WU_WARN(prov, FI_LOG_EP_CTRL, "job key file %s: cannot open: %s (set FI_TCP_JOB_KEY, or fix the file)\n",
			path.c_str(), strerror(err));
		return -FI_EACCES;
	}
	struct stat st;
	const char *why = nullptr;
	char buf[2 * key_len + 2];
	ssize_t n = -1;
	if (fstat(fd, &st))
		why = "cannot stat it";
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid())
		why = "owned by another user";
	else if (st.st_mode & 077)
		why = "readable or writable by other users (chmod 600 it, and make a new key: it may be known)";
	else if ((n = read(fd, buf, sizeof buf)) != ssize_t(2 * key_len + 1) || buf[2 * key_len] != '\n')
		why = "not 64 hex digits and a newline";
	fd.reset();
	for (size_t i = 0; !why && i < key_len; i++) {
		int hi = unhex(buf[2 * i]), lo = unhex(buf[2 * i + 1]);
		if (hi < 0 || lo < 0)
			why = "not 64 hex digits and a newline";
		else
			out.b[i] = (unsigned char)(hi << 4 | lo);
	}
	if (why) {
		WU_WARN(prov, FI_LOG_EP_CTRL,
			"job key file %s refused: %s; tcp endpoints need a safe key (or FI_TCP_JOB_KEY)\n", path.c_str(),
			why);
		explicit_bzero(out.b, key_len);
		return -FI_EACCES;
	}
	out.set = true;
	return 0;
}

/* Writes a new key to a private temporary file, then links it in place:
 * the name appears only complete, and only if nobody made one first. */
int create_key_file(const std::string &path, const fi_provider *prov)
{
	make_parent(path);
	unsigned char k[key_len];
	if (!random_bytes(k, sizeof k, prov))
		return -FI_EOTHER;
	std::string text = hex(k, sizeof k) + "\n";
	explicit_bzero(k, sizeof k);
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	unique_fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (fd < 0) {
		WU_WARN(prov, FI_LOG_EP_CTRL, "job key file %s: cannot create: %s (set FI_TCP_JOB_KEY or FI_TCP_JOB_KEY_FILE)\n",
			path.c_str(), strerror(errno));
		return -FI_EACCES;
	}
	bool ok = fchmod(fd, 0600) == 0 && write(fd, text.data(), text.size()) == ssize_t(text.size()) &&
		  fsync(fd) == 0;
	explicit_bzero(&text[0], text.size());
	fd.reset();
	if (ok && link(tmp.c_str(), path.c_str()) && errno != EEXIST)
		ok = false;
	int err = errno;
	unlink(tmp.c_str());
	if (!ok) {
		WU_WARN(prov, FI_LOG_EP_CTRL, "job key file %s: cannot write: %s\n", path.c_str(), strerror(err));
		return -FI_EACCES;
	}
	return 0;
}

} // namespace

bool random_bytes(unsigned char *out, size_t n, const fi_provider *prov)
{
	if (crypto::random_bytes(out, n))
		return true;
	WU_WARN(prov, FI_LOG_EP_CTRL, "no random bytes from getrandom: %s\n", strerror(errno));
	return false;
}

std::string file_path()
{
	/* The tcp provider defines the variable (fi_info -e lists it there);
	 * read here directly so that shm gets the same file without tcp. */
	const char *set = getenv("FI_TCP_JOB_KEY_FILE");
	if (set && *set)
		return set;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg && *xdg == '/')
		return std::string(xdg) + "/wireup/tcp-job-key";
	const char *home = getenv("HOME");
	std::string h = home && *home == '/' ? home : "";
	if (h.empty()) {
		passwd pw, *res = nullptr;
		char buf[4096];
		if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir)
			h = res->pw_dir;
	}
	if (h.empty())
		return "";
	return h + "/.config/wireup/tcp-job-key";
}

int read_or_create(const std::string &path, key &out, const fi_provider *prov)
{
	int r = read_key_file(path, out, prov);
	if (r != -FI_ENOENT)
		return r;
	if ((r = create_key_file(path, prov)))
		return r;
	r = read_key_file(path, out, prov);
	return r == -FI_ENOENT ? -FI_EACCES : r;
}

const key &of_process(const fi_provider *prov)
{
	static key k;
	static std::once_flag once;
	std::call_once(once, [prov] {
		std::string path = file_path();
		if (path.empty() || read_or_create(path, k, prov) != 0)
			k.set = false; /* logged by read_or_create */
	});
	return k;
}

} // namespace wu::user_key
