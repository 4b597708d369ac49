/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider against a hostile wire: raw peers send seeded random frame
 * sequences (every frame type, wrong and right flags, edge-case fields,
 * real and bogus RMA keys, bodies cut short, plain garbage) to an RDM
 * endpoint that has receives posted and memory registered (RMA and atomics
 * aim at it), while a normal peer keeps exchanging messages with it.
 * Nothing may crash (this suite runs under ASan too), the normal peer's
 * messages all arrive intact, and the endpoint closes cleanly afterwards.  The decoder alone is fuzzed by
 * test/fuzz/fuzz_tcp_frame.cpp; this drives the whole receive path. */
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <rdma/fi_atomic.h>

#include "../common/tcp_fixture.h"

using namespace wu::test;
namespace frame = wu::tcp::frame;

namespace {

/* Edge values a field is drawn from, besides small random ones. */
uint64_t pick(std::mt19937_64 &rng, uint64_t real = 0)
{
	switch (rng() % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return ~0ull;
	case 3: return frame::max_payload;
	case 4: return frame::max_payload + 1;
	case 5: return real;
	case 6: return rng();
	default: return rng() % 300;
	}
}

/* One random frame, mostly well formed for its type so that it gets past
 * the decoder into the receive path, sometimes with one field drawn from
 * the edge values or a corrupt header byte.  Its body is up to `room`
 * bytes, sometimes fewer than the header announces (cut short by the
 * close). */
std::vector<unsigned char> random_frame(std::mt19937_64 &rng, uint64_t key, uint64_t base, size_t room)
{
	frame::header h;
	h.type = uint8_t(1 + rng() % (frame::type_end_ - 1));
	size_t body = rng() % room;
	auto any = [&](uint16_t allowed) { return uint16_t(rng() & allowed); };
	switch (h.type) {
	case frame::MSG:
		h.flags = any(frame::F_TAGGED | frame::F_CQ_DATA | frame::F_CREDIT);
		break;
	case frame::RTS:
		h.flags = any(frame::F_TAGGED | frame::F_CQ_DATA);
		h.aux = rng() % 2 ? rng() % 5000 : (1u << 20);
		h.id = rng() % 8;
		body = 0;
		break;
	case frame::CTS:
		h.id = rng() % 8;
		h.aux = rng() % 8;
		body = 0;
		break;
	case frame::RDATA:
		h.flags = rng() % 4 ? frame::F_LAST : 0;
		h.aux = rng() % 8;
		break;
	case frame::WRITE:
		h.flags = any(frame::F_CQ_DATA);
		h.tag = rng() % 3 ? key : rng();
		h.aux = base + rng() % 5000;
		h.id = rng() % 8;
		break;
	case frame::WRITE_ACK:
		h.id = rng() % 8;
		h.data = rng() % 3;
		body = 0;
		break;
	case frame::READ_REQ:
		h.tag = rng() % 3 ? key : rng();
		h.aux = base + rng() % 5000;
		h.data = rng() % 5000;
		h.id = rng() % 8;
		body = 0;
		break;
	case frame::READ_RESP:
		h.id = rng() % 8;
		break;
	case frame::CREDIT:
		h.data = 1 + rng() % (2u << 20);
		body = 0;
		break;
	case frame::ATOMIC: {
		/* Mostly operations the engine takes, on the real key, whole. */
		frame::atomic_desc d;
		d.op = uint8_t(rng() % (FI_ATOMIC_OP_LAST + 1));
		d.datatype = uint8_t(rng() % (FI_UINT128 + 2));
		d.family = uint8_t(rng() % 3);
		d.count = uint32_t(1 + rng() % 8);
		h.data = frame::pack(d);
		h.tag = rng() % 3 ? key : rng();
		h.aux = base + rng() % 5000;
		h.id = rng() % 8;
		body = std::min<size_t>(frame::atomic_len(d), room - 1);
		break;
	}
	case frame::ATOMIC_RESP:
		h.id = rng() % 8;
		h.data = rng() % 4 ? 0 : rng() % 3;
		if (h.data)
			body = 0;
		break;
	default: /* handshake and cm frames: out of place on a live connection */
		body = rng() % 64;
		break;
	}
	if (h.flags & frame::F_TAGGED)
		h.tag = rng() % 4 ? rng() % 300 : pick(rng) >> 16;
	if (h.flags & frame::F_CQ_DATA)
		h.data = rng();
	h.len = body;
	if (rng() % 6 == 0) /* announce more than is sent */
		h.len = body + 1 + rng() % 100000;
	if (rng() % 8 == 0) {
		uint64_t *f[] = {&h.tag, &h.data, &h.id, &h.aux, &h.len};
		*f[rng() % 5] = pick(rng, key);
	}
	if (rng() % 16 == 0)
		h.flags = uint16_t(rng());
	std::vector<unsigned char> out(frame::hdr_size + body);
	frame::encode(h, out.data());
	if (rng() % 16 == 0)
		out[rng() % frame::hdr_size] ^= uint8_t(1 + rng() % 255);
	for (size_t i = frame::hdr_size; i < out.size(); i++)
		out[i] = uint8_t(rng());
	return out;
}

} // namespace

namespace {

void hostile_wire(fi_progress progress, int default_rounds)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA, progress};
	rdm_ep a{env}, b{env};
	fi_addr_t b_to_a = b.insert(a);
	a.insert(b);
	std::vector<char> target(4096, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, target.data(), target.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7, 0,
			    &mr, nullptr),
		  0);
	if (env.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		ASSERT_EQ(fi_mr_bind(mr, &a.ep->fid, 0), 0);
		ASSERT_EQ(fi_mr_enable(mr), 0);
	}
	uint64_t key = fi_mr_key(mr);
	uint64_t base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;

	/* Receives the random frames may land in (small buffers; any tag but the
	 * normal peer's, whose top 16 bits are set). */
	std::vector<std::vector<char>> bufs(16, std::vector<char>(2048));
	auto repost = [&] {
		for (auto &buf : bufs) {
			(void)fi_recv(a.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, nullptr);
			(void)fi_trecv(a.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, 0, ~0ull >> 16, nullptr);
		}
	};
	auto drain = [&] {
		fi_cq_tagged_entry e[16];
		fi_cq_err_entry err{};
		for (fid_cq *cq : {a.rx, a.tx})
			for (;;) {
				ssize_t r = fi_cq_read(cq, e, 16);
				if (r == -FI_EAVAIL) {
					err = {};
					ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
					continue;
				}
				if (r <= 0)
					break;
			}
	};
	repost();

	/* WU_WIRE_SEED / WU_WIRE_ROUNDS explore further than CI's fixed run. */
	const char *seed_env = getenv("WU_WIRE_SEED"), *rounds_env = getenv("WU_WIRE_ROUNDS");
	std::mt19937_64 rng(seed_env ? strtoull(seed_env, nullptr, 0) : 20261122);
	const int rounds = rounds_env ? atoi(rounds_env) : default_rounds;
	int normal = 0;
	for (int round = 0; round < rounds; round++) {
		{
			raw_peer r(a, rng() % 8 ? rng() % (4u << 20) : pick(rng), uint16_t(1 + round % 50));
			int frames = 1 + int(rng() % 12);
			for (int i = 0; i < frames; i++) {
				std::vector<unsigned char> f = rng() % 12 == 0
					? std::vector<unsigned char>(1 + rng() % 100, uint8_t(rng()))
					: random_frame(rng, key, base, 3000);
				if (!r.put_raw(f.data(), f.size()))
					break;
				spin({a.tx, a.rx}, 3);
			}
			spin({a.tx, a.rx}, 20);
		} /* the raw peer goes away, sometimes mid-frame */
		spin({a.tx, a.rx}, 20);
		drain();
		if (round % 100 == 99)
			repost(); /* within rx_attr->size, the rest stays unexpected */
		if (round % 10 == 9) {
			/* The normal peer still gets through, whole. */
			uint64_t tag = 0xfeed000000000000ull | uint64_t(round);
			std::vector<char> out(300 + size_t(round), char(round)), in(out.size(), 0);
			int rctx;
			ASSERT_EQ(fi_trecv(a.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, tag, 0, &rctx), 0);
			ASSERT_EQ(fi_tsend(b.ep, out.data(), out.size(), nullptr, b_to_a, tag, nullptr), 0);
			auto until = std::chrono::steady_clock::now() + wait_limit;
			bool got = false;
			while (!got && std::chrono::steady_clock::now() < until) {
				fi_cq_tagged_entry e;
				ssize_t n = fi_cq_read(a.rx, &e, 1);
				if (n == 1 && e.op_context == &rctx) {
					EXPECT_EQ(e.tag, tag);
					EXPECT_EQ(e.len, out.size());
					got = true;
				} else if (n == -FI_EAVAIL) {
					fi_cq_err_entry err{};
					ASSERT_EQ(fi_cq_readerr(a.rx, &err, 0), 1);
					ASSERT_NE(err.op_context, &rctx) << "the normal peer's message failed: " << err.err;
				}
				fi_cq_tagged_entry x;
				(void)fi_cq_read(b.tx, &x, 1);
			}
			ASSERT_TRUE(got) << "round " << round;
			EXPECT_EQ(in, out);
			normal++;
		}
	}
	EXPECT_EQ(normal, rounds / 10);
	drain();
	EXPECT_EQ(fi_close(&mr->fid), 0);
	a.close(); /* with receives still posted and unexpected messages held */
}

} // namespace

TEST(tcp_wire, random_frames_from_raw_peers_never_hurt_the_endpoint_or_other_peers)
{
	hostile_wire(FI_PROGRESS_MANUAL, 1500);
}

/* The same with the provider's progress thread reading the sockets while
 * the test thread posts and reads completions (also run under TSan). */
TEST(tcp_wire, the_same_under_auto_progress)
{
	hostile_wire(FI_PROGRESS_AUTO, 500);
}
