/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_tagged(3) FI_PEEK / FI_CLAIM / FI_DISCARD on RDM endpoints of every
 * provider (the peek_claim and peek_caps suites; a sender dying before
 * the claim is tcp's own, in test_tcp_peek.cpp): FI_ENOMSG when nothing
 * matches, metadata of an unexpected message, claiming it (eager and
 * rendezvous-size) for a later FI_CLAIM with the same fi_context,
 * dropping it, and bad arguments. */
#include <cstring>
#include <string>
#include <vector>

#include "peek_fixture.h"

using namespace wu::test;

namespace {

/* The peek / claim / discard suite of every provider (prov_fixture.h). */
struct peek_claim : provider_test, peek_base {
	peek_claim() : peek_base(prov()) {}
};

} // namespace

WU_PROVIDER_SUITE(peek_claim)
WU_PROVIDER_TEST_SUITE(peek_caps)

TEST_P(peek_claim, peek_with_nothing_there_is_an_enomsg_error_completion)
{
	fi_context ctx{};
	fi_cq_tagged_entry e{};
	fi_cq_err_entry err{};
	ASSERT_EQ(peek(0, &ctx, 7, e, err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ENOMSG);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_TRUE(err.flags & FI_TAGGED);
}

TEST_P(peek_claim, peek_reports_metadata_and_leaves_the_message)
{
	WU_NEEDS(feat_cq_data);
	char msg[] = "peeked message";
	int sctx;
	ASSERT_EQ(fi_tsenddata(a.ep, msg, sizeof msg, nullptr, 0xdada, a_to_b, 0x51, &sctx), 0);
	fi_context ctx{};
	fi_cq_tagged_entry e{};
	/* Another tag does not match. */
	ASSERT_EQ(peek_until(0, &ctx, 0x51, e), 1);
	fi_cq_err_entry err{};
	EXPECT_EQ(peek(0, &ctx, 0x52, e, err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ENOMSG);
	/* Found with an ignore mask: metadata, no buffer. */
	ASSERT_EQ(peek(0, &ctx, 0x50, e, err, 0xf), 1);
	EXPECT_EQ(e.op_context, &ctx);
	EXPECT_EQ(e.len, sizeof msg);
	EXPECT_EQ(e.tag, 0x51u);
	EXPECT_EQ(e.data, 0xdadau);
	EXPECT_EQ(e.buf, nullptr);
	EXPECT_EQ(e.flags, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA);
	/* Still there for an ordinary receive. */
	char in[64] = {};
	int rctx;
	ASSERT_EQ(fi_trecv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, 0x51, 0, &rctx), 0);
	ASSERT_EQ(wait_one(b.rx, e), 1);
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_STREQ(in, msg);
	ASSERT_EQ(wait_one(a.tx, e), 1);
}

TEST_P(peek_claim, claimed_message_goes_only_to_the_paired_claim)
{
	int v = 1234;
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, a_to_b, 9, nullptr), 0);
	fi_context ctx{};
	fi_cq_tagged_entry e{};
	ASSERT_EQ(peek_until(FI_CLAIM, &ctx, 9, e), 1);
	EXPECT_EQ(e.len, sizeof v);
	/* Held: no longer visible to peeks or ordinary receives. */
	fi_cq_err_entry err{};
	EXPECT_EQ(peek(0, nullptr, 9, e, err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ENOMSG);
	int other = 0, octx;
	ASSERT_EQ(fi_trecv(b.ep, &other, sizeof other, nullptr, FI_ADDR_UNSPEC, 9, 0, &octx), 0);
	spin({b.rx}, 200);
	/* A claim with another context is refused. */
	fi_context wrong{};
	int w = 0;
	EXPECT_EQ(trecvmsg(FI_CLAIM, &wrong, 9, 0, &w, sizeof w), -FI_EINVAL);
	int got = 0;
	ASSERT_EQ(trecvmsg(FI_CLAIM, &ctx, 9, 0, &got, sizeof got), 0);
	ASSERT_EQ(wait_one(b.rx, e), 1);
	EXPECT_EQ(e.op_context, &ctx);
	EXPECT_EQ(e.len, sizeof v);
	EXPECT_EQ(e.tag, 9u);
	EXPECT_EQ(got, 1234);
	EXPECT_EQ(other, 0);
	/* The same context claims nothing twice. */
	EXPECT_EQ(trecvmsg(FI_CLAIM, &ctx, 9, 0, &got, sizeof got), -FI_EINVAL);
	EXPECT_EQ(fi_cancel(&b.ep->fid, &octx), 0);
}

TEST_P(peek_claim, claimed_rendezvous_message_moves_only_at_the_claim)
{
	std::vector<char> out(big), in(big, 0);
	for (size_t i = 0; i < big; i++)
		out[i] = char(i * 13);
	int sctx;
	ASSERT_EQ(fi_tsend(a.ep, out.data(), out.size(), nullptr, a_to_b, 77, &sctx), 0);
	fi_context ctx{};
	fi_cq_tagged_entry e{};
	ASSERT_EQ(peek_until(FI_CLAIM, &ctx, 77, e), 1);
	EXPECT_EQ(e.len, big);
	/* The sender waits for the claim (nothing was cleared yet). */
	spin({a.tx, b.rx}, 500);
	EXPECT_EQ(fi_cq_read(a.tx, &e, 1), -FI_EAGAIN);
	ASSERT_EQ(trecvmsg(FI_CLAIM, &ctx, 77, 0, in.data(), in.size()), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	EXPECT_EQ(e.op_context, &ctx);
	EXPECT_EQ(e.len, big);
	EXPECT_EQ(in, out);
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	EXPECT_EQ(e.op_context, &sctx);
}

TEST_P(peek_claim, peek_discard_drops_eager_and_rendezvous_messages)
{
	int v = 5;
	std::vector<char> out(big, 'd');
	int s1, s2;
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, a_to_b, 1, &s1), 0);
	ASSERT_EQ(fi_tsend(a.ep, out.data(), out.size(), nullptr, a_to_b, 2, &s2), 0);
	fi_context c1{}, c2{};
	fi_cq_tagged_entry e{};
	ASSERT_EQ(peek_until(FI_DISCARD, &c1, 1, e), 1);
	EXPECT_EQ(e.op_context, &c1);
	EXPECT_EQ(e.tag, 1u);
	EXPECT_EQ(e.len, 0u);
	ASSERT_EQ(peek_until(FI_CLAIM | FI_DISCARD, &c2, 2, e), 1);
	EXPECT_EQ(e.op_context, &c2);
	EXPECT_EQ(e.tag, 2u);
	/* Both sends complete (the rendezvous payload is drained and dropped). */
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	fi_cq_err_entry err{};
	EXPECT_EQ(peek(0, nullptr, 0, e, err, ~0ull), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ENOMSG);
	/* Nothing was reported on b but the two peeks; later traffic flows. */
	int got = 0;
	v = 6;
	ASSERT_EQ(fi_trecv(b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 3, 0, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, a_to_b, 3, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	EXPECT_EQ(e.tag, 3u);
	EXPECT_EQ(got, 6);
}

TEST_P(peek_claim, claim_discard_drops_a_claimed_message)
{
	std::vector<char> out(big, 'c');
	int sctx;
	ASSERT_EQ(fi_tsend(a.ep, out.data(), out.size(), nullptr, a_to_b, 4, &sctx), 0);
	fi_context ctx{};
	fi_cq_tagged_entry e{};
	ASSERT_EQ(peek_until(FI_CLAIM, &ctx, 4, e), 1);
	ASSERT_EQ(trecvmsg(FI_CLAIM | FI_DISCARD, &ctx, 4), 0);
	ASSERT_EQ(wait_one(b.rx, e), 1);
	EXPECT_EQ(e.op_context, &ctx);
	EXPECT_EQ(e.len, 0u);
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	EXPECT_EQ(e.op_context, &sctx);
	spin({a.tx, b.rx}, 200);
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN);
}

TEST_P(peek_claim, bad_arguments)
{
	fi_context ctx{};
	int x;
	EXPECT_EQ(trecvmsg(FI_DISCARD, &ctx, 1), -FI_EINVAL);
	EXPECT_EQ(trecvmsg(FI_CLAIM, nullptr, 1, 0, &x, sizeof x), -FI_EINVAL);
	EXPECT_EQ(trecvmsg(FI_CLAIM, &ctx, 1, 0, &x, sizeof x), -FI_EINVAL); /* nothing claimed */
	EXPECT_EQ(trecvmsg(FI_PEEK | FI_CLAIM, nullptr, 1), -FI_EINVAL);
	EXPECT_EQ(trecvmsg(FI_PEEK | FI_MULTI_RECV, &ctx, 1), -FI_EINVAL);
}

TEST_P(peek_caps, needs_fi_tagged)
{
	prov_env env{prov(), FI_EP_RDM, FI_MSG};
	ASSERT_FALSE(env.info->caps & FI_TAGGED);
	rdm_ep b{env};
	fi_context ctx{};
	fi_msg_tagged m{};
	m.addr = FI_ADDR_UNSPEC;
	m.context = &ctx;
	EXPECT_EQ(fi_trecvmsg(b.ep, &m, FI_PEEK), -FI_EOPNOTSUPP);
}

TEST_P(peek_claim, untagged_recvmsg_refuses_peek_claim_discard)
{
	int buf = 0;
	iovec v{&buf, sizeof buf};
	fi_msg m{};
	m.msg_iov = &v;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	for (uint64_t f : {uint64_t(FI_PEEK), uint64_t(FI_CLAIM), uint64_t(FI_PEEK | FI_DISCARD)})
		EXPECT_EQ(fi_recvmsg(b.ep, &m, f), -FI_EOPNOTSUPP);
}
