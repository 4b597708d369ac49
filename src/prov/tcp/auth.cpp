/* The tcp provider's job key and handshake proofs (auth.h). */
#include "config.h"

#include "prov/tcp/auth.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <rdma/fi_errno.h>

#include "core/fd.h"
#include "core/log.h"
#include "core/param.h"
#include "prov/tcp/tcp_ep.h"
#ifdef WU_HAVE_PMIX
#include "pmix_glue/wireup.h"
#endif

namespace wu::tcp::auth {

namespace {

fi_provider *P() noexcept { return prov_desc(); }

constexpr char label[] = "wireup-tcp-auth-v2"; /* v2: both ends in every proof */

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
int read_key_file(const std::string &path, key &out)
{
	unique_fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0) {
		int err = errno;
		if (err == ENOENT)
			return -FI_ENOENT;
		WU_WARN(P(), FI_LOG_EP_CTRL, "job key file %s: cannot open: %s (set FI_TCP_JOB_KEY, or fix the file)\n",
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
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"job key file %s refused: %s; tcp endpoints need a safe key (or FI_TCP_JOB_KEY)\n", path.c_str(),
			why);
		OPENSSL_cleanse(out.b, key_len);
		return -FI_EACCES;
	}
	out.set = true;
	return 0;
}

/* Writes a new key to a private temporary file, then links it in place:
 * the name appears only complete, and only if nobody made one first. */
int create_key_file(const std::string &path)
{
	make_parent(path);
	unsigned char k[key_len];
	if (!random_bytes(k, sizeof k))
		return -FI_EOTHER;
	std::string text = hex(k, sizeof k) + "\n";
	OPENSSL_cleanse(k, sizeof k);
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	unique_fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (fd < 0) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "job key file %s: cannot create: %s (set FI_TCP_JOB_KEY or FI_TCP_JOB_KEY_FILE)\n",
			path.c_str(), strerror(errno));
		return -FI_EACCES;
	}
	bool ok = fchmod(fd, 0600) == 0 && write(fd, text.data(), text.size()) == ssize_t(text.size()) &&
		  fsync(fd) == 0;
	OPENSSL_cleanse(&text[0], text.size());
	fd.reset();
	if (ok && link(tmp.c_str(), path.c_str()) && errno != EEXIST)
		ok = false;
	int err = errno;
	unlink(tmp.c_str());
	if (!ok) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "job key file %s: cannot write: %s\n", path.c_str(), strerror(err));
		return -FI_EACCES;
	}
	return 0;
}

#ifdef WU_HAVE_PMIX
int pmix_key(key &out)
{
	int r = pmix::job_secret(out.b, key_len);
	if (r == 0)
		out.set = true;
	return r;
}
#endif

} // namespace

bool random_bytes(unsigned char *out, size_t n)
{
	if (RAND_bytes(out, int(n)) == 1)
		return true;
	WU_WARN(P(), FI_LOG_EP_CTRL, "no random bytes from OpenSSL's RAND_bytes\n");
	return false;
}

key key_from_text(const std::string &text)
{
	key k;
	std::string in = std::string(label) + "/job-key/" + text;
	SHA256(reinterpret_cast<const unsigned char *>(in.data()), in.size(), k.b);
	k.set = true;
	return k;
}

std::string key_file_path()
{
	auto v = param::get_string(P(), "job_key_file", true);
	if (v.src == param::source::env && !v.value.empty())
		return v.value;
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

int key_file(const std::string &path, key &out)
{
	int r = read_key_file(path, out);
	if (r != -FI_ENOENT)
		return r;
	if ((r = create_key_file(path)))
		return r;
	r = read_key_file(path, out);
	return r == -FI_ENOENT ? -FI_EACCES : r;
}

int job_key(key &out)
{
	auto v = param::get_string(P(), "job_key", true);
	if (v.src == param::source::env && !v.value.empty()) {
		out = key_from_text(v.value);
		return 0;
	}
#ifdef WU_HAVE_PMIX
	if (pmix_key(out) == 0)
		return 0;
#endif
	std::string path = key_file_path();
	if (path.empty()) {
		WU_WARN(P(), FI_LOG_EP_CTRL,
			"no home directory for the per-user job key file: set FI_TCP_JOB_KEY or FI_TCP_JOB_KEY_FILE\n");
		return -FI_EACCES;
	}
	return key_file(path, out);
}

namespace {

/* addr as an end (auth.h); false if it is not an IP socket address. */
bool to_end(const sockaddr_storage &addr, unsigned char out[end_len])
{
	memset(out, 0, end_len);
	if (addr.ss_family == AF_INET) {
		auto *in = reinterpret_cast<const sockaddr_in *>(&addr);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in->sin_addr, 4);
		memcpy(out + 16, &in->sin_port, 2);
		return true;
	}
	if (addr.ss_family == AF_INET6) {
		auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&addr);
		memcpy(out, &in6->sin6_addr, 16);
		memcpy(out + 16, &in6->sin6_port, 2);
		return true;
	}
	return false;
}

} // namespace

bool bind_ends(session &s, int fd, role r)
{
	sockaddr_storage own{}, peer{};
	socklen_t ol = sizeof own, pl = sizeof peer;
	if (getsockname(fd, reinterpret_cast<sockaddr *>(&own), &ol) ||
	    getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &pl)) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "handshake: cannot read the connection's addresses: %s\n",
			strerror(errno));
		return false;
	}
	bool con = r == role::connector;
	if (!to_end(con ? own : peer, s.con_end) || !to_end(con ? peer : own, s.acc_end)) {
		WU_WARN(P(), FI_LOG_EP_CTRL, "handshake: the connection is not between IP addresses\n");
		return false;
	}
	return true;
}

namespace {

std::string transcript(role r, const session &n, const frame::header &h, const void *what, size_t len)
{
	std::string t(label, sizeof label); /* with its NUL: a fixed-length prefix */
	t += char(r);
	for (const unsigned char *p : {n.acc, n.con})
		t.append(reinterpret_cast<const char *>(p), nonce_len);
	for (const unsigned char *p : {n.con_end, n.acc_end})
		t.append(reinterpret_cast<const char *>(p), end_len);
	t += char(h.type);
	for (uint64_t v : {h.data, h.aux, uint64_t(len)})
		for (int i = 0; i < 8; i++)
			t += char(v >> (8 * i));
	if (len)
		t.append(static_cast<const char *>(what), len);
	return t;
}

} // namespace

void prove(const key &k, role r, const session &n, const frame::header &h, const void *what, size_t len,
	   unsigned char out[mac_len])
{
	std::string t = transcript(r, n, h, what, len);
	unsigned int ol = 0;
	if (!HMAC(EVP_sha256(), k.b, int(key_len), reinterpret_cast<const unsigned char *>(t.data()), t.size(), out,
		  &ol) ||
	    ol != mac_len)
		memset(out, 0, mac_len); /* verifies against nothing a peer can produce */
}

bool verify(const key &k, role r, const session &n, const frame::header &h, const void *what, size_t len,
	    const unsigned char mac[mac_len])
{
	if (!k.set)
		return false;
	unsigned char want[mac_len];
	prove(k, r, n, h, what, len, want);
	static const unsigned char zero[mac_len] = {};
	return CRYPTO_memcmp(want, mac, mac_len) == 0 && CRYPTO_memcmp(want, zero, mac_len) != 0;
}

} // namespace wu::tcp::auth
