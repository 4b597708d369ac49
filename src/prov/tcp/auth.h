/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp provider's job key and its challenge-response handshake.
 *
 * The key is a 32-byte secret: FI_TCP_JOB_KEY (hashed) when set; else,
 * under a PMIx launcher, one random secret per job that rank 0 of the
 * namespace generates and puts, the others get; else a random per-user
 * secret kept in a 0600 file (FI_TCP_JOB_KEY_FILE, default
 * $XDG_CONFIG_HOME/wireup/tcp-job-key or ~/.config/wireup/tcp-job-key).
 *
 * The key never crosses the wire.  The accepting side speaks first with
 * CHALLENGE (its fresh nonce); the connecting side answers with its own
 * nonce and an HMAC-SHA256 under the key over both nonces, the
 * connection's two ends and what its frame asserts (listen address,
 * window, private data); the accepting side checks it and answers with its
 * own HMAC (a different role label, so no answer can be replayed the other
 * way).  Neither side sends anything else before the other's proof
 * verified.
 *
 * The two ends bind each proof to one TCP connection: the connector's
 * own address and the one it dialed, which the acceptor sees as its
 * accepted socket's peer and own address.  Someone without the key who
 * sits between two endpoints (listening where one dials, dialing the other
 * itself) holds two connections with different ends, so the proofs it
 * relays verify on neither, and the dialer learns that whoever answers
 * proves the key for the very address it dialed. */
#ifndef WU_PROV_TCP_AUTH_H
#define WU_PROV_TCP_AUTH_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/user_key.h"
#include "prov/tcp/frame.h"

namespace wu::tcp::auth {

inline constexpr size_t key_len = user_key::key_len;
inline constexpr size_t nonce_len = frame::auth_nonce;
inline constexpr size_t mac_len = frame::auth_mac;

using key = user_key::key;

/* Who computes a proof: the connecting side (HELLO, CONNREQ) or the
 * accepting one (HELLO_ACK, ACCEPT, REJECT). */
enum class role : uint8_t { connector = 'C', acceptor = 'A' };

/* One end of a TCP connection as the proofs cover it: the IPv6 address
 * (an IPv4 one mapped, so that a dual-stack listener and an IPv4 dialer
 * agree) and the port, in network order.  No scope id: the two sides of a
 * link-local connection may name different interfaces. */
inline constexpr size_t end_len = 18;

/* What one handshake binds: the acceptor's nonce (CHALLENGE) and the
 * connector's, and the connection's two ends as the connector sees them. */
struct session {
	unsigned char acc[nonce_len] = {};
	unsigned char con[nonce_len] = {};
	unsigned char con_end[end_len] = {}; /* the connector's own address */
	unsigned char acc_end[end_len] = {}; /* the address the connector dialed */
};

/* Fills s's ends from the connected socket fd as side r sees it
 * (connector: own, peer; acceptor: peer, own).  false, logged, when the
 * socket has no IP addresses (the handshake then fails). */
bool bind_ends(session &s, int fd, role r);

/* The job key for a new endpoint (see above).  0, or a negative FI_E*
 * after a log line saying why (unreadable or unsafe key file, no random
 * source). */
int job_key(key &out);
/* The key FI_TCP_JOB_KEY=text gives (tests). */
key key_from_text(const std::string &text);
/* The key file in use (FI_TCP_JOB_KEY_FILE or the default); "" if no
 * home directory is known. */
std::string key_file_path();
/* Reads the key file at path, creating it (mode 0600, O_EXCL, atomically
 * complete) when it does not exist.  Refuses a file not owned by this user,
 * readable or writable by others, or malformed.  0 or -FI_E* (logged). */
int key_file(const std::string &path, key &out);

/* Fresh random bytes (getrandom); false if it failed. */
bool random_bytes(unsigned char *out, size_t n);

/* HMAC-SHA256 under k of: role, both nonces, both ends, the frame's type,
 * data and aux fields, and the bytes it asserts (address or private data). */
void prove(const key &k, role r, const session &n, const frame::header &h, const void *what, size_t len,
	   unsigned char out[mac_len]);
/* Constant-time check of a proof. */
bool verify(const key &k, role r, const session &n, const frame::header &h, const void *what, size_t len,
	    const unsigned char mac[mac_len]);

} // namespace wu::tcp::auth

#endif
