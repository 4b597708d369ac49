/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: fi_atomic(3)'s wire frames (ATOMIC / ATOMIC_RESP) and a
 * peer dying mid-operation.  The atomics suite of every provider is in
 * test_prov_atomic.cpp. */
#include <cstring>
#include <string>
#include <vector>

#include "../common/atomic_fixture.h"
#include "prov/common/atomic.h"
#include "prov/tcp/frame.h"

using namespace wu::test;
namespace frame = wu::tcp::frame;
using wu::atomic::kind;

namespace {

struct tcp_atomic : atomic_pair {};

} // namespace

INSTANTIATE_TEST_SUITE_P(tcp, tcp_atomic, ::testing::Values(std::string("tcp")));

/* The wire: what ATOMIC carries; a peer that dies before answering fails
 * the operation; a reply of the wrong length is a protocol error that fails
 * it too; a raw peer's ATOMIC gets the old values back. */
TEST_P(tcp_atomic, wire_frames_and_a_peer_dying_mid_operation)
{
	raw_peer peer(a, 0);
	frame::header h;
	ASSERT_TRUE(peer.get(h));
	ASSERT_EQ(h.type, frame::HELLO_ACK);
	fi_addr_t to = peer.insert();
	uint32_t x[2] = {4, 5}, c[2] = {6, 7}, r[2] = {};
	int ctx;
	ASSERT_EQ(fi_compare_atomic(a.ep, x, 2, nullptr, c, nullptr, r, nullptr, to, 0x1000, 77, FI_UINT32,
				    FI_CSWAP_GE, &ctx),
		  0);
	ASSERT_TRUE(peer.get(h));
	ASSERT_EQ(h.type, frame::ATOMIC);
	EXPECT_EQ(h.tag, 77u);
	EXPECT_EQ(h.aux, 0x1000u);
	frame::atomic_desc d = frame::unpack_atomic(h.data);
	EXPECT_EQ(d.op, FI_CSWAP_GE);
	EXPECT_EQ(d.datatype, FI_UINT32);
	EXPECT_EQ(d.family, uint8_t(kind::compare));
	EXPECT_EQ(d.count, 2u);
	ASSERT_EQ(h.len, 16u);
	std::vector<uint32_t> body(4);
	ASSERT_TRUE(peer.read_exact(body.data(), 16));
	EXPECT_EQ(body, (std::vector<uint32_t>{4, 5, 6, 7})) << "operands, then compare values";
	/* A response with too few old values: protocol error, error completion. */
	frame::header resp;
	resp.type = frame::ATOMIC_RESP;
	resp.id = h.id;
	resp.len = 4;
	peer.put(resp, body.data(), 4);
	EXPECT_NE(failed(&ctx), 0);
	EXPECT_TRUE(peer.closed_by_peer());

	/* A fresh raw peer: its ATOMIC on a's memory gets the old values. */
	fid_mr *amr = nullptr;
	uint64_t mem[2] = {10, 20};
	ASSERT_EQ(fi_mr_reg(env.domain, mem, sizeof mem, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 55, 0, &amr, nullptr),
		  0);
	raw_peer p2(a, 0, 2);
	ASSERT_TRUE(p2.get(h));
	frame::header q;
	q.type = frame::ATOMIC;
	q.tag = fi_mr_key(amr);
	q.aux = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(mem)) : 0;
	q.id = 9;
	d = {};
	d.op = FI_SUM;
	d.datatype = FI_UINT64;
	d.family = uint8_t(kind::fetch);
	d.count = 2;
	q.data = frame::pack(d);
	q.len = frame::atomic_len(d);
	uint64_t add[2] = {1, 2};
	p2.put(q, add, sizeof add);
	ASSERT_TRUE(p2.get(h));
	EXPECT_EQ(h.type, frame::ATOMIC_RESP);
	EXPECT_EQ(h.id, 9u);
	EXPECT_EQ(h.data, 0u);
	ASSERT_EQ(h.len, 16u);
	std::vector<uint64_t> olds(2);
	ASSERT_TRUE(p2.read_exact(olds.data(), 16));
	EXPECT_EQ(olds, (std::vector<uint64_t>{10, 20}));
	EXPECT_EQ(std::vector<uint64_t>(mem, mem + 2), (std::vector<uint64_t>{11, 22}));

	/* An operation in flight when the peer goes: an error completion. */
	fi_addr_t to2 = p2.insert();
	uint64_t one = 1, old = 0;
	ASSERT_EQ(fi_fetch_atomic(a.ep, &one, 1, nullptr, &old, nullptr, to2, 0, 1, FI_UINT64, FI_SUM, &ctx), 0);
	ASSERT_TRUE(p2.get(h));
	EXPECT_EQ(h.type, frame::ATOMIC);
	p2.close();
	EXPECT_NE(failed(&ctx), 0);
	EXPECT_EQ(fi_close(&amr->fid), 0);
}
