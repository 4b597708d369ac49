/* libFuzzer target for src/prov/tcp/frame.cpp: arbitrary bytes into the
 * wire-frame decoder, read as a stream of frames the way a connection reads
 * them.  Invariants besides the sanitizers: a header that decodes encodes
 * back to the same 48 bytes; a decoded payload length, CREDIT amount and
 * announced eager window respect their limits; decode never writes its
 * output on failure. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
		    h.len > frame::max_cm_data)
			fail("cm private data above max_cm_data accepted");
		if (h.type == frame::HELLO && (h.len < frame::min_hello || h.len > frame::max_hello))
			fail("HELLO address length out of range accepted");
		if (h.type == frame::CREDIT && (h.len || !h.data || h.data > frame::max_payload))
			fail("CREDIT with a payload or an amount out of range accepted");
		if ((h.flags & frame::F_CREDIT) && h.type != frame::MSG)
			fail("F_CREDIT accepted on a frame other than MSG");
		if ((h.type == frame::HELLO || h.type == frame::HELLO_ACK || h.type == frame::CONNREQ ||
		     h.type == frame::ACCEPT) && h.aux > frame::max_payload)
			fail("eager window above max_payload accepted");
		off += frame::hdr_size;
		if (h.len > size - off)
			break; /* the stream would wait for more bytes */
		off += h.len;
	}
	return 0;
}
