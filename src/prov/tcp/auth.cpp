/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp provider's job key and handshake proofs (auth.h). */
#include "config.h"

#include "prov/tcp/auth.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/launcher.h"
#include "core/log.h"
#include "core/param.h"
#include "core/sha256.h"
#include "prov/tcp/tcp_ep.h"

namespace wu::tcp::auth {

namespace {

fi_provider *P() noexcept { return prov_desc(); }

constexpr char label[] = "wireup-tcp-auth-v2"; /* v2: both ends in every proof */

/* The launcher's job secret (core/launcher.h): -FI_ENODATA outside a
 * launched job. */
int launcher_key(key &out)
{
	int r = launcher::job_secret(out.b, key_len);
	if (r == 0)
		out.set = true;
	return r;
}

} // namespace

bool random_bytes(unsigned char *out, size_t n)
{
	return user_key::random_bytes(out, n, P());
}

key key_from_text(const std::string &text)
{
	key k;
	std::string in = std::string(label) + "/job-key/" + text;
	crypto::sha256_of(in.data(), in.size(), k.b);
	k.set = true;
	return k;
}

std::string key_file_path()
{
	return user_key::file_path();
}

int key_file(const std::string &path, key &out)
{
	return user_key::read_or_create(path, out, P());
}

int job_key(key &out)
{
	auto v = param::get_string(P(), "job_key", true);
	if (v.src == param::source::env && !v.value.empty()) {
		out = key_from_text(v.value);
		return 0;
	}
	if (launcher_key(out) == 0)
		return 0;
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
	static_assert(mac_len == crypto::sha256_len);
	crypto::hmac_sha256(k.b, key_len, t.data(), t.size(), out);
}

bool verify(const key &k, role r, const session &n, const frame::header &h, const void *what, size_t len,
	    const unsigned char mac[mac_len])
{
	if (!k.set)
		return false;
	unsigned char want[mac_len];
	prove(k, r, n, h, what, len, want);
	static const unsigned char zero[mac_len] = {};
	return crypto::equal_ct(want, mac, mac_len) && !crypto::equal_ct(want, zero, mac_len);
}

} // namespace wu::tcp::auth
