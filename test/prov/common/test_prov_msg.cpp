/* SPDX-License-Identifier: BSD-3-Clause */
/* FI_EP_MSG over every provider (prov_fixture.h): the msg_ep suite, a
 * connected pair exchanging messages both ways.  tcp's own connection
 * management tests are in test_tcp_msg.cpp. */
#include <cstring>
#include <string>

#include "tcp_fixture.h"

using namespace wu::test;

WU_MSG_PROVIDER_TEST_SUITE(msg_ep)
WU_PROVIDER_TEST_SUITE(msg_ep_type)

#define WU_TEST_NAME_OF(prov, ...) #prov,

/* fi_getinfo offers FI_EP_MSG exactly for the providers the MSG suites run
 * over: the others answer -FI_ENODATA rather than open what they cannot do. */
TEST_P(msg_ep_type, getinfo_offers_msg_endpoints_only_where_the_provider_has_them)
{
	const std::string with_msg[] = {WU_TEST_MSG_PROVIDER_LIST(WU_TEST_NAME_OF)};
	bool has = false;
	for (const std::string &n : with_msg)
		has |= n == prov();
	fi_info *hints = fi_allocinfo();
	ASSERT_NE(hints, nullptr);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup(prov().c_str());
	fi_info *got = nullptr;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got);
	if (has) {
		EXPECT_EQ(r, 0);
		for (fi_info *i = got; i; i = i->next)
			EXPECT_EQ(i->ep_attr->type, FI_EP_MSG);
	} else {
		EXPECT_EQ(r, -FI_ENODATA) << fi_strerror(-r);
		EXPECT_EQ(got, nullptr);
	}
	fi_freeinfo(got);
	fi_freeinfo(hints);
}

/* A connected MSG pair: messages both ways (no address: the peer), each
 * completing on the receiver's CQ with FI_MSG | FI_RECV and its length. */
TEST_P(msg_ep, send_recv_both_ways_over_a_connected_pair)
{
	prov_env env{prov(), FI_EP_MSG, FI_MSG};
	msg_pair p{env};
	ASSERT_NO_FATAL_FAILURE(p.connect(env));
	for (int dir = 0; dir < 2; dir++) {
		msg_side &tx = dir ? p.server : p.client, &rx = dir ? p.client : p.server;
		char in[16] = {};
		const char *out = dir ? "from server" : "from client";
		int rctx, sctx;
		ASSERT_EQ(fi_recv(rx.ep, in, sizeof in, nullptr, 0, &rctx), 0);
		ASSERT_EQ(fi_send(tx.ep, out, strlen(out) + 1, nullptr, 0, &sctx), 0);
		bool sent = false, got = false;
		fi_cq_tagged_entry e;
		for (int i = 0; i < 4 && !got; i++) {
			ASSERT_EQ(wait_one(rx.cq, e, nullptr, {tx.cq}), 1) << dir;
			if (e.op_context != &rctx)
				continue;
			got = true;
			EXPECT_EQ(e.flags, uint64_t(FI_MSG | FI_RECV));
			EXPECT_EQ(e.len, strlen(out) + 1);
		}
		EXPECT_TRUE(got) << dir;
		EXPECT_STREQ(in, out);
		for (int i = 0; i < 4 && !sent; i++) {
			ASSERT_EQ(wait_one(tx.cq, e, nullptr, {rx.cq}), 1) << dir;
			sent = e.op_context == &sctx;
		}
		EXPECT_TRUE(sent) << dir;
		EXPECT_EQ(e.flags, uint64_t(FI_MSG | FI_SEND));
	}
}
