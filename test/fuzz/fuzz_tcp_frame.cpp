/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for src/prov/tcp/frame.cpp: arbitrary bytes into the
 * wire-frame decoder, read as a stream of frames the way a connection reads
 * them.  Invariants besides the sanitizers: a header that decodes encodes
 * back to the same 48 bytes; a decoded payload length, CREDIT amount and
 * announced eager window respect their limits; handshake frames carry room
 * for exactly their nonce and proof; an ATOMIC names an operation
 * the atomic engine takes and carries exactly its operands; an ATOMIC_RESP
 * carries a status or old values, never both; decode never writes its
 * output on failure. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "prov/common/atomic.h"
#include "prov/tcp/frame.h"

using namespace wu::tcp;

namespace {

[[noreturn]] void fail(const char *what)
{
	fprintf(stderr, "fuzz_tcp_frame invariant broken: %s\n", what);
	abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		frame::header h;
		h.id = 0xdeadbeef;
		frame::error e = frame::decode(data + off, size - off, h);
		if (e != frame::error::ok) {
			if (h.id != 0xdeadbeef || h.type != 0)
				fail("decode wrote its output on failure");
			if (!frame::to_string(e))
				fail("no text for an error");
			break;
		}
		unsigned char again[frame::hdr_size];
		frame::encode(h, again);
		if (memcmp(again, data + off, frame::hdr_size) != 0)
			fail("decode/encode round trip differs");
		if (h.len > frame::max_payload)
			fail("payload length above max_payload accepted");
		if ((h.type == frame::CONNREQ || h.type == frame::ACCEPT || h.type == frame::REJECT) &&
		    h.len > (h.type == frame::CONNREQ ? frame::connreq_auth : frame::accept_auth) + frame::max_cm_data)
			fail("cm private data above max_cm_data accepted");
		if (((h.type == frame::CONNREQ && h.len && h.len < frame::connreq_auth) ||
		     (h.type == frame::ACCEPT && h.len < frame::accept_auth) ||
		     (h.type == frame::REJECT && h.len < frame::accept_auth && !(h.data == frame::reject_bad_proof && !h.len))))
			fail("cm frame without room for its proof accepted");
		if (h.type == frame::HELLO_ACK && h.len != (h.data == frame::ack_bad_proof ? 0 : frame::auth_mac))
			fail("HELLO_ACK without exactly its proof accepted");
		if ((h.type == frame::HELLO || h.type == frame::CHALLENGE) && h.tag)
			fail("a handshake frame with something in tag accepted (the job key never crosses the wire)");
		if (h.type == frame::CHALLENGE && h.len != frame::auth_nonce)
			fail("CHALLENGE of another length than a nonce accepted");
		if (h.type == frame::HELLO && (h.len < frame::min_hello || h.len > frame::max_hello))
			fail("HELLO address length out of range accepted");
		if (h.type == frame::CREDIT && (h.len || !h.data || h.data > frame::max_payload))
			fail("CREDIT with a payload or an amount out of range accepted");
		if ((h.flags & frame::F_CREDIT) && h.type != frame::MSG)
			fail("F_CREDIT accepted on a frame other than MSG");
		if ((h.type == frame::HELLO || h.type == frame::HELLO_ACK || h.type == frame::CONNREQ ||
		     h.type == frame::ACCEPT) && h.aux > frame::max_payload)
			fail("eager window above max_payload accepted");
		if (h.type == frame::ATOMIC) {
			frame::atomic_desc d = frame::unpack_atomic(h.data);
			size_t n = size_t(d.count) * wu::atomic::size_of(d.datatype);
			if (h.flags || d.family > 2 || !wu::atomic::valid(d.datatype, d.op, wu::atomic::kind(d.family)))
				fail("ATOMIC with flags or an operation the engine does not take accepted");
			if (!n || n > wu::atomic::max_bytes || h.len != n * wu::atomic::operands(d.op) ||
			    h.aux + n < h.aux)
				fail("ATOMIC with a count, length or range out of bounds accepted");
		}
		if (h.type == frame::ATOMIC_RESP &&
		    (h.len > wu::atomic::max_bytes || (h.data && h.len) || h.data > 0xffff || h.tag || h.aux))
			fail("ATOMIC_RESP with a bad length, status or field accepted");
		off += frame::hdr_size;
		if (h.len > size - off)
			break; /* the stream would wait for more bytes */
		off += h.len;
	}
	return 0;
}
