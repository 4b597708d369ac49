/* SPDX-License-Identifier: BSD-3-Clause */
/* Wire-frame codec of the tcp provider (see frame.h for the layout). */
#include "prov/tcp/frame.h"

#include <cstring>

#include "prov/common/atomic.h"

namespace wu::tcp::frame {
namespace {

void put16(unsigned char *p, uint16_t v) noexcept
{
	p[0] = uint8_t(v);
	p[1] = uint8_t(v >> 8);
}
void put64(unsigned char *p, uint64_t v) noexcept
{
	for (int i = 0; i < 8; i++)
		p[i] = uint8_t(v >> (8 * i));
}
uint16_t get16(const unsigned char *p) noexcept
{
	return uint16_t(p[0] | (p[1] << 8));
}
uint64_t get64(const unsigned char *p) noexcept
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Flags each type may carry. */
uint16_t allowed_flags(uint8_t t) noexcept
{
	switch (t) {
	case MSG:
		return F_TAGGED | F_CQ_DATA | F_CREDIT;
	case RTS:
		return F_TAGGED | F_CQ_DATA;
	case WRITE:
		return F_CQ_DATA;
	case RDATA:
		return F_LAST;
	default:
		return 0;
	}
}

} // namespace

uint64_t pack(const atomic_desc &d) noexcept
{
	return uint64_t(d.op) | uint64_t(d.datatype) << 8 | uint64_t(d.family) << 16 | uint64_t(d.count) << 32;
}

atomic_desc unpack_atomic(uint64_t data) noexcept
{
	atomic_desc d;
	d.op = uint8_t(data);
	d.datatype = uint8_t(data >> 8);
	d.family = uint8_t((data >> 16) & 3);
	d.count = uint32_t(data >> 32);
	return d;
}

namespace {

/* Bytes of one buffer of d's elements; 0 when d is not a request we take. */
uint64_t atomic_bytes(const atomic_desc &d) noexcept
{
	if (d.family > uint8_t(atomic::kind::compare) ||
	    !atomic::valid(d.datatype, d.op, atomic::kind(d.family)) || !d.count)
		return 0;
	uint64_t n = uint64_t(d.count) * atomic::size_of(d.datatype);
	return n <= atomic::max_bytes ? n : 0;
}

} // namespace

uint64_t atomic_len(const atomic_desc &d) noexcept
{
	return atomic_bytes(d) * atomic::operands(d.op);
}

uint64_t atomic_resp_len(const atomic_desc &d) noexcept
{
	return d.family == uint8_t(atomic::kind::write) ? 0 : atomic_bytes(d);
}

const char *to_string(error e) noexcept
{
	switch (e) {
	case error::ok: return "ok";
	case error::short_input: return "short header";
	case error::bad_magic: return "bad magic";
	case error::bad_version: return "unsupported version";
	case error::bad_hdr_len: return "bad header length";
	case error::bad_type: return "unknown frame type";
	case error::bad_flags: return "flags not allowed for this frame type";
	case error::bad_len: return "payload length not allowed for this frame type";
	case error::bad_field: return "field out of range";
	}
	return "?";
}

void encode(const header &h, void *out) noexcept
{
	auto *p = static_cast<unsigned char *>(out);
	put16(p, magic);
	p[2] = version;
	p[3] = h.type;
	put16(p + 4, h.flags);
	put16(p + 6, uint16_t(hdr_size));
	put64(p + 8, h.len);
	put64(p + 16, h.tag);
	put64(p + 24, h.data);
	put64(p + 32, h.id);
	put64(p + 40, h.aux);
}

error decode(const void *in, size_t n, header &out) noexcept
{
	if (!in || n < hdr_size)
		return error::short_input;
	auto *p = static_cast<const unsigned char *>(in);
	if (get16(p) != magic)
		return error::bad_magic;
	if (p[2] != version)
		return error::bad_version;
	if (get16(p + 6) != hdr_size)
		return error::bad_hdr_len;
	header h;
	h.type = p[3];
	h.flags = get16(p + 4);
	h.len = get64(p + 8);
	h.tag = get64(p + 16);
	h.data = get64(p + 24);
	h.id = get64(p + 32);
	h.aux = get64(p + 40);
	if (h.type < HELLO || h.type >= type_end_)
		return error::bad_type;
	if (h.flags & ~allowed_flags(h.type))
		return error::bad_flags;
	if (h.len > max_payload)
		return error::bad_len;
	switch (h.type) {
	case HELLO:
		if (h.len < min_hello || h.len > max_hello)
			return error::bad_len;
		if (h.tag || h.data || h.id || h.aux > max_payload)
			return error::bad_field;
		break;
	case HELLO_ACK:
		if (h.data > ack_addr_taken || h.tag || h.id || h.aux > max_payload)
			return error::bad_field;
		if (h.len != (h.data == ack_bad_proof ? 0 : auth_mac))
			return error::bad_len;
		break;
	case MSG:
		if (!(h.flags & F_TAGGED) && h.tag)
			return error::bad_field;
		if (!(h.flags & F_CQ_DATA) && h.data)
			return error::bad_field;
		if (h.aux)
			return error::bad_field;
		if (!(h.flags & F_CREDIT) && h.len > max_eager)
			return error::bad_len; /* larger ones go within the window or by RTS */
		break;
	case RTS:
		if (h.len)
			return error::bad_len;
		if (h.aux > max_payload)
			return error::bad_field;
		if (!(h.flags & F_TAGGED) && h.tag)
			return error::bad_field;
		if (!(h.flags & F_CQ_DATA) && h.data)
			return error::bad_field;
		break;
	case CTS:
		if (h.len)
			return error::bad_len;
		if (h.tag || h.data)
			return error::bad_field;
		break;
	case RDATA:
		if (h.tag || h.data)
			return error::bad_field;
		break;
	case WRITE:
		if (h.aux + h.len < h.aux)
			return error::bad_field;
		if (!(h.flags & F_CQ_DATA) && h.data)
			return error::bad_field;
		break;
	case WRITE_ACK:
		if (h.len)
			return error::bad_len;
		if (h.tag || h.aux || h.data > 0xffff)
			return error::bad_field;
		break;
	case READ_REQ:
		if (h.len)
			return error::bad_len;
		if (h.data > max_payload || h.aux + h.data < h.aux)
			return error::bad_field;
		break;
	case READ_RESP:
		if (h.tag || h.aux || h.data > 0xffff || (h.data && h.len))
			return error::bad_field;
		break;
	case CONNREQ:
	case ACCEPT:
	case REJECT: {
		if (h.tag || h.id || h.aux > (h.type == REJECT ? 0 : max_payload) ||
		    h.data > (h.type == REJECT ? reject_bad_proof : 0))
			return error::bad_field;
		size_t pre = h.type == CONNREQ ? connreq_auth : accept_auth;
		/* An empty CONNREQ is the passive side's "reported to the application". */
		if (h.type == CONNREQ && h.len == 0)
			break;
		if (h.data == reject_bad_proof ? h.len != 0 : (h.len < pre || h.len > pre + max_cm_data))
			return error::bad_len;
		break;
	}
	case CHALLENGE:
		if (h.len != auth_nonce)
			return error::bad_len;
		if (h.tag || h.data || h.id || h.aux)
			return error::bad_field;
		break;
	case CREDIT:
		if (h.len)
			return error::bad_len;
		if (h.tag || h.id || h.aux || !h.data || h.data > max_payload)
			return error::bad_field;
		break;
	case ATOMIC: {
		/* Bits 18-31 are reserved; op, datatype, family and count must
		 * name an operation the engine takes (atomic_bytes). */
		atomic_desc d = unpack_atomic(h.data);
		uint64_t n = atomic_bytes(d);
		if ((h.data & 0xfffc0000u) || !n || h.aux + n < h.aux)
			return error::bad_field;
		if (h.len != atomic_len(d))
			return error::bad_len;
		break;
	}
	case ATOMIC_RESP:
		if (h.len > atomic::max_bytes)
			return error::bad_len;
		if (h.tag || h.aux || h.data > 0xffff || (h.data && h.len))
			return error::bad_field;
		break;
	}
	out = h;
	return error::ok;
}

} // namespace wu::tcp::frame
