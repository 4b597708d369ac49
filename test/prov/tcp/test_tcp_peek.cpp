/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider: FI_PEEK / FI_CLAIM with a raw socket as the sender (a
 * sender dying before the claim).  The peek_claim suite of every provider
 * is in test_prov_peek.cpp. */
#include <cstring>
#include <string>
#include <vector>

#include "../common/peek_fixture.h"
#include "prov/tcp/frame.h"

using namespace wu::test;

namespace {

/* tcp's own: a raw socket as the sender. */
struct peek_pair : ::testing::Test, peek_base {
	peek_pair() : peek_base("tcp") {}
};

} // namespace

/* A message held by FI_PEEK | FI_CLAIM whose sender dies before the claim:
 * if its payload still needed the connection (a rendezvous, or an eager
 * body not yet whole), the FI_CLAIM receive completes with FI_ECONNRESET;
 * a whole eager body is delivered all the same. */
TEST_F(peek_pair, claim_after_the_sender_died)
{
	namespace frame = wu::tcp::frame;
	raw_peer rts_peer(b, 0, 1), part_peer(b, 0, 2), whole_peer(b, 0, 3);
	frame::header h;
	for (raw_peer *p : {&rts_peer, &part_peer, &whole_peer}) {
		ASSERT_TRUE(p->get(h));
		ASSERT_EQ(h.type, frame::HELLO_ACK);
	}
	h = {};
	h.type = frame::RTS;
	h.flags = frame::F_TAGGED;
	h.tag = 31;
	h.aux = big;
	h.id = 1;
	rts_peer.put(h, nullptr, 0);
	std::vector<char> body(60000, 'p'); /* within frame::max_eager: no window needed */
	h = {};
	h.type = frame::MSG;
	h.flags = frame::F_TAGGED;
	h.tag = 32;
	h.len = body.size();
	part_peer.put(h, body.data(), body.size() / 2); /* header and half the body */
	h.tag = 33;
	whole_peer.put(h, body.data(), body.size());
	fi_context c31{}, c32{}, c33{};
	fi_cq_tagged_entry e{};
	ASSERT_EQ(peek_until(FI_CLAIM, &c31, 31, e), 1);
	EXPECT_EQ(e.len, big);
	ASSERT_EQ(peek_until(FI_CLAIM, &c32, 32, e), 1);
	EXPECT_EQ(e.len, body.size());
	ASSERT_EQ(peek_until(FI_CLAIM, &c33, 33, e), 1);
	spin({b.rx}, 200); /* the whole body lands */
	for (raw_peer *p : {&rts_peer, &part_peer, &whole_peer})
		p->close();
	spin({b.rx}, 500); /* the endpoint sees the three connections end */
	std::vector<char> in(big);
	fi_cq_err_entry err{};
	for (auto [ctx, tag] : {std::pair{&c31, 31}, std::pair{&c32, 32}}) {
		ASSERT_EQ(trecvmsg(FI_CLAIM, ctx, uint64_t(tag), 0, in.data(), in.size()), 0);
		err = {};
		ASSERT_EQ(wait_one(b.rx, e, &err), -FI_EAVAIL) << tag;
		EXPECT_EQ(err.op_context, ctx);
		EXPECT_EQ(err.err, FI_ECONNRESET);
	}
	ASSERT_EQ(trecvmsg(FI_CLAIM, &c33, 33, 0, in.data(), in.size()), 0);
	ASSERT_EQ(wait_one(b.rx, e), 1);
	EXPECT_EQ(e.op_context, &c33);
	EXPECT_EQ(e.len, body.size());
	EXPECT_EQ(memcmp(in.data(), body.data(), body.size()), 0);
	/* Nothing else is left behind. */
	EXPECT_EQ(peek(0, nullptr, 0, e, err, ~0ull), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ENOMSG);
}
