/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp provider's wire frames: a fixed 48-byte header, little-endian,
 * followed by `len` payload bytes.  Every header read from a socket goes
 * through decode(), which checks each field against what its type allows;
 * a frame that fails is a protocol error and closes that connection only.
 *
 *   off size field
 *     0    2 magic    0x5755 ("WU")
 *     2    1 version  3 (2's proofs did not cover the connection's ends;
 *                     1 carried the job key in clear)
 *     3    1 type     frame_type
 *     4    2 flags    frame_flags (only those the type allows)
 *     6    2 hdr_len  48
 *     8    8 len      payload bytes after the header
 *    16    8 tag      message tag; RMA key for WRITE/READ_REQ/ATOMIC
 *    24    8 data     remote CQ data (MSG, RTS, WRITE); status for acks and responses;
 *                     length for READ_REQ; bytes returned for CREDIT; the operation
 *                     for ATOMIC (atomic_desc)
 *    32    8 id       sender's operation id (acks, responses and CTS echo it)
 *    40    8 aux      RMA target address (WRITE, READ_REQ, ATOMIC); message length for RTS;
 *                     receiver token for CTS/RDATA; the sender's eager window for HELLO,
 *                     HELLO_ACK, CONNREQ and ACCEPT
 *
 * Handshake (auth.h): the accepting side writes CHALLENGE (its nonce) as
 * soon as it accepts.  The connecting side answers HELLO (RDM) or CONNREQ
 * (MSG) whose payload starts with its nonce and its proof (HMAC under the
 * job key); the accepting side answers HELLO_ACK, ACCEPT or REJECT whose
 * payload starts with its own proof.  The key itself is never sent; each
 * proof also covers both ends of the TCP connection (auth.h), so a proof
 * relayed onto another connection does not verify.
 *   HELLO      nonce(16) proof(32) listening sockaddr
 *   HELLO_ACK  data 0 accepted, 1 duplicate (simultaneous connect lost),
 *              3 refused (that address has a live connection): proof(32);
 *              data 2 refused (proof did not verify): no payload
 *   CONNREQ    nonce(16) proof(32) private data
 *   ACCEPT     proof(32) private data
 *   REJECT     data 0 (fi_reject): proof(32) private data; data 1 (proof
 *              did not verify): no payload
 *
 * Rendezvous (messages above FI_TCP_RNDV_SIZE): the sender writes RTS (no
 * payload); once a receive matches, the receiver answers CTS with a token;
 * the sender then writes one RDATA frame (F_LAST) carrying the whole
 * message from the user's buffer, which lands straight in the receive.
 *
 * Eager window: each side announces in its handshake frame how many bytes
 * of large messages it will hold unexpected for this connection.  Within
 * that window a message above the rendezvous size may go as one MSG frame
 * with F_CREDIT, saving the RTS/CTS round trip; the receiver gives the
 * bytes back with CREDIT once it no longer holds them.
 *
 * Atomics (fi_atomic(3)): ATOMIC carries count elements of one datatype:
 * data packs op (bits 0-7), datatype (8-15), family (16-17: 0 write,
 * 1 fetch, 2 compare) and count (32-63); the payload is the operands, then
 * (compare family) the compare values, count * size bytes each.  The
 * target answers ATOMIC_RESP with a status and, for fetch and compare on
 * success, the count old values.
 */
#ifndef WU_PROV_TCP_FRAME_H
#define WU_PROV_TCP_FRAME_H

#include <cstddef>
#include <cstdint>

namespace wu::tcp::frame {

inline constexpr size_t hdr_size = 48;
inline constexpr uint16_t magic = 0x5755;
inline constexpr uint8_t version = 3;
/* Largest payload of one frame, and of any message, RMA or read length
 * (the endpoints' max_msg_size): decode() refuses a longer one before the
 * receiver sizes anything from it. */
inline constexpr uint64_t max_payload = uint64_t{1} << 32;
/* Largest MSG frame outside the eager window (no F_CREDIT), whatever the
 * sender's FI_TCP_RNDV_SIZE: what a receiver holds unannounced per message. */
inline constexpr uint64_t max_eager = 65536;
/* Most rendezvous requests (RTS) one peer may have waiting at a receiver,
 * and most frames a receiver may have queued to a peer when a request that
 * needs a reply (WRITE, READ_REQ, ATOMIC) comes in: a peer past either is
 * a protocol error.  An initiator has at most tx_attr->size (2048)
 * operations in flight, so no well-behaved peer comes near. */
inline constexpr size_t max_queued = 65536;
/* Private data of CONNREQ / ACCEPT / REJECT (FI_OPT_CM_DATA_SIZE). */
inline constexpr size_t max_cm_data = 256;
/* Handshake proofs: a nonce and an HMAC-SHA256. */
inline constexpr size_t auth_nonce = 16, auth_mac = 32;
/* HELLO carries a nonce, a proof and a listening sockaddr (in or in6). */
inline constexpr size_t min_hello = auth_nonce + auth_mac + 16, max_hello = auth_nonce + auth_mac + 28;
/* What precedes the private data of CONNREQ, and of ACCEPT / REJECT. */
inline constexpr size_t connreq_auth = auth_nonce + auth_mac, accept_auth = auth_mac;
/* HELLO_ACK's and REJECT's data when the connector's proof failed. */
inline constexpr uint64_t ack_bad_proof = 2, ack_addr_taken = 3, reject_bad_proof = 1;

enum type : uint8_t {
	HELLO = 1,     /* RDM handshake: payload = nonce, proof, listen address */
	HELLO_ACK,     /* data: 0 accepted, 1 duplicate, 2 / 3 refused; payload = proof */
	MSG,           /* eager message: tag, data, payload */
	RTS,           /* rendezvous request: aux = total length, id = send op */
	CTS,           /* rendezvous clear-to-send: id = send op, aux = receiver token */
	RDATA,         /* rendezvous payload: aux = receiver token */
	WRITE,         /* RMA write: tag = key, aux = address, id = op */
	WRITE_ACK,     /* id = op, data = 0 or positive FI_E* */
	READ_REQ,      /* tag = key, aux = address, data = length, id = op */
	READ_RESP,     /* id = op, data = status, payload = the bytes (status 0) */
	CONNREQ,       /* MSG: payload = nonce, proof, private data; empty from the passive side: reported to its application */
	ACCEPT,        /* MSG: payload = proof, private data */
	REJECT,        /* MSG: payload = proof, private data (data 1: no payload) */
	CREDIT,        /* data = eager-window bytes the receiver gives back */
	ATOMIC,        /* tag = key, aux = address, id = op, data = atomic_desc, payload = operands */
	ATOMIC_RESP,   /* id = op, data = status, payload = old values (fetch / compare, status 0) */
	CHALLENGE,     /* accepting side's first frame: payload = its nonce */
	type_end_
};

enum frame_flags : uint16_t {
	F_TAGGED = 1 << 0,  /* MSG/RTS: tag is meaningful */
	F_CQ_DATA = 1 << 1, /* MSG/RTS/WRITE: data is remote CQ data */
	F_LAST = 1 << 2,    /* RDATA: last chunk */
	F_CREDIT = 1 << 3,  /* MSG: the payload counts against the receiver's eager window */
};

struct header {
	uint8_t type = 0;
	uint16_t flags = 0;
	uint64_t len = 0;
	uint64_t tag = 0;
	uint64_t data = 0;
	uint64_t id = 0;
	uint64_t aux = 0;
};

/* What ATOMIC's data field says. */
struct atomic_desc {
	uint8_t op = 0;
	uint8_t datatype = 0;
	uint8_t family = 0; /* wu::atomic::kind */
	uint32_t count = 0;
};
uint64_t pack(const atomic_desc &d) noexcept;
atomic_desc unpack_atomic(uint64_t data) noexcept;
/* Payload bytes of an ATOMIC with d (operands and compare values) and of
 * its successful ATOMIC_RESP (old values); 0 for a d decode() refuses. */
uint64_t atomic_len(const atomic_desc &d) noexcept;
uint64_t atomic_resp_len(const atomic_desc &d) noexcept;

/* Outcome of decode(); ok is 0. */
enum class error : int {
	ok = 0,
	short_input,  /* fewer than hdr_size bytes */
	bad_magic,
	bad_version,
	bad_hdr_len,
	bad_type,
	bad_flags,
	bad_len,      /* payload length not allowed for the type */
	bad_field,    /* a field that must be zero is not, or a range overflows */
};
const char *to_string(error e) noexcept;

/* Writes the 48 header bytes.  Does not validate (encoders are ours). */
void encode(const header &h, void *out) noexcept;
/* Reads and validates n bytes; on error h is untouched. */
error decode(const void *in, size_t n, header &h) noexcept;

} // namespace wu::tcp::frame

#endif
