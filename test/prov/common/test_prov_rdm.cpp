/* SPDX-License-Identifier: BSD-3-Clause */
/* FI_EP_RDM over every provider (prov_fixture.h): two endpoints in one
 * process (fi_endpoint, fi_msg, fi_tagged and fi_rma behaviour: the rdm,
 * tagged and rma suites).  tcp's own RDM tests are in test_tcp_rdm.cpp. */
#include <cstring>
#include <string>
#include <vector>

#include "tcp_fixture.h"

using namespace wu::test;

namespace {

constexpr uint64_t pair_caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV;

/* The same pair of every provider (prov_fixture.h), for the suites of
 * fi_msg (rdm), fi_tagged (tagged) and fi_rma (rma) behaviour. */
struct provider_pair : provider_test, rdm_pair {
	provider_pair() : rdm_pair(prov(), pair_caps) {}
};
struct rdm : provider_pair {};
struct tagged : provider_pair {};
struct rma : provider_pair {};

} // namespace

WU_PROVIDER_SUITE(rdm)
WU_PROVIDER_SUITE(tagged)
WU_PROVIDER_SUITE(rma)
WU_PROVIDER_TEST_SUITE(names)

/* fi_fabric and fi_domain open only what fi_getinfo reported (the
 * provider's fabric_hooks::known): another name is refused, not opened. */
TEST_P(names, fabric_and_domain_of_an_unknown_name_are_refused)
{
	prov_env env(prov(), FI_VERSION(1, 17));
	ASSERT_NE(env.domain, nullptr);
	fi_fabric_attr fa = *env.info->fabric_attr;
	fa.name = const_cast<char *>("no-such-fabric");
	fid_fabric *fab = nullptr;
	EXPECT_EQ(fi_fabric(&fa, &fab, nullptr), -FI_ENODATA);
	EXPECT_EQ(fab, nullptr);
	fi_info *other = fi_dupinfo(env.info);
	ASSERT_NE(other, nullptr);
	free(other->domain_attr->name);
	other->domain_attr->name = strdup("no-such-domain");
	fid_domain *dom = nullptr;
	EXPECT_EQ(fi_domain(env.fabric, other, &dom, nullptr), -FI_ENODEV);
	EXPECT_EQ(dom, nullptr);
	fi_freeinfo(other);
}

/* refused() in prov_fixture.h against fi_getinfo, both ways: each listed
 * feature is refused, each other one of the suites' is offered. */
TEST_P(rdm, refusals_match_getinfo)
{
	const uint64_t all[] = {FI_MSG,	      FI_TAGGED,      FI_RMA,	  FI_ATOMIC,	FI_MULTI_RECV, FI_SOURCE,
				FI_DIRECTED_RECV, FI_RMA_EVENT, FI_READ, FI_WRITE, feat_cq_data};
	for (uint64_t f : all) {
		int r = getinfo_with(prov(), f);
		if (refused(prov()) & f)
			EXPECT_EQ(r, -FI_ENODATA) << prov() << " listed as refusing 0x" << std::hex << f;
		else
			EXPECT_EQ(r, 0) << prov() << " refuses 0x" << std::hex << f << " but refused() does not list it";
	}
}

TEST_P(rdm, send_recv_both_ways_with_source_address)
{
	char out[8] = "ping123", in[8] = {};
	int ctx_r, ctx_s;
	ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &ctx_r), 0);
	ASSERT_EQ(fi_send(a.ep, out, sizeof out, nullptr, a_to_b, &ctx_s), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src = 12345;
	ASSERT_EQ(wait_rx(b, e, nullptr, &src), 1);
	EXPECT_EQ(e.op_context, &ctx_r);
	EXPECT_EQ(e.len, sizeof out);
	EXPECT_EQ(e.flags, FI_RECV | FI_MSG);
	EXPECT_STREQ(in, "ping123");
	EXPECT_EQ(src, b_to_a); /* FI_SOURCE: the AV's reverse lookup */
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(e.op_context, &ctx_s);
	EXPECT_EQ(e.flags, FI_SEND | FI_MSG);

	/* And back over the connection b accepted. */
	char back[4] = "pon";
	ASSERT_EQ(fi_recv(a.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &ctx_r), 0);
	ASSERT_EQ(fi_send(b.ep, back, sizeof back, nullptr, b_to_a, &ctx_s), 0);
	ASSERT_EQ(wait_rx(a, e, nullptr, &src), 1);
	EXPECT_EQ(src, a_to_b);
	EXPECT_STREQ(in, "pon");
	ASSERT_EQ(wait_tx(b, e), 1);
}

TEST_P(tagged, unexpected_messages_keep_order_and_tags_match_with_ignore)
{
	/* Sent before any receive is posted: queued as unexpected, SAS order. */
	uint64_t vals[6];
	for (int i = 0; i < 6; i++) {
		vals[i] = 100 + i;
		ASSERT_EQ(fi_tsend(a.ep, &vals[i], sizeof vals[i], nullptr, a_to_b, i % 2 ? 0xA1 : 0xB0, nullptr), 0);
	}
	fi_cq_tagged_entry e;
	for (int i = 0; i < 6; i++)
		ASSERT_EQ(wait_tx(a, e), 1);
	spin({b.rx}, 200);
	/* Tag 0xA? with the low nibble ignored: the odd ones, in order. */
	for (int k = 0; k < 3; k++) {
		uint64_t got = 0;
		ASSERT_EQ(fi_trecv(b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 0xA0, 0xF, nullptr), 0);
		ASSERT_EQ(wait_rx(b, e), 1);
		EXPECT_EQ(got, 101u + 2 * k);
		EXPECT_EQ(e.tag, 0xA1u);
		EXPECT_EQ(e.flags, FI_RECV | FI_TAGGED);
	}
	for (int k = 0; k < 3; k++) {
		uint64_t got = 0;
		ASSERT_EQ(fi_trecv(b.ep, &got, sizeof got, nullptr, b_to_a, 0xB0, 0, nullptr), 0);
		ASSERT_EQ(wait_rx(b, e), 1);
		EXPECT_EQ(got, 100u + 2 * k);
	}
}

TEST_P(tagged, directed_receive_ignores_other_sources)
{
	rdm_ep c{env};
	fi_addr_t c_to_b = c.insert(b);
	fi_addr_t b_to_c = b.insert(c);
	int from_a = 0, from_c = 0;
	int x = 1, y = 2;
	ASSERT_EQ(fi_trecv(b.ep, &from_c, sizeof from_c, nullptr, b_to_c, 7, 0, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &x, sizeof x, nullptr, a_to_b, 7, nullptr), 0);
	ASSERT_EQ(fi_tsend(c.ep, &y, sizeof y, nullptr, c_to_b, 7, nullptr), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src;
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, c.tx}, &src), 1);
	EXPECT_EQ(from_c, 2);
	EXPECT_EQ(src, b_to_c);
	ASSERT_EQ(fi_trecv(b.ep, &from_a, sizeof from_a, nullptr, FI_ADDR_UNSPEC, 7, 0, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, c.tx}, &src), 1);
	EXPECT_EQ(from_a, 1);
	EXPECT_EQ(src, b_to_a);
}

TEST_P(rdm, truncation_is_an_etrunc_error_completion)
{
	char big[100], small[10];
	memset(big, 'q', sizeof big);
	int ctx;
	ASSERT_EQ(fi_recv(b.ep, small, sizeof small, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	ASSERT_EQ(fi_send(a.ep, big, sizeof big, nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_rx(b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.olen, 90u);
	EXPECT_EQ(err.len, 10u);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(small[9], 'q');
	/* The connection stays usable. */
	int v = 5, w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 5);
}

TEST_P(rdm, senddata_and_inject_carry_remote_cq_data_without_tx_completions)
{
	WU_NEEDS(feat_cq_data);
	int v = 7, w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_senddata(a.ep, &v, sizeof v, nullptr, 0xfeed, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(e.data, 0xfeedu);
	ASSERT_EQ(wait_tx(a, e), 1);

	std::vector<char> big(env.info->tx_attr->inject_size + 1);
	EXPECT_EQ(fi_inject(a.ep, big.data(), big.size(), a_to_b), -FI_EINVAL); /* above inject_size */
	v = 9;
	ASSERT_EQ(fi_tinjectdata(a.ep, &v, sizeof v, 0xbeef, a_to_b, 3), 0);
	ASSERT_EQ(fi_trecv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, 3, 0, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 9);
	EXPECT_EQ(e.data, 0xbeefu);
	EXPECT_EQ(fi_cq_read(a.tx, &e, 1), -FI_EAGAIN); /* inject: no completion */
}

TEST_P(rdm, iovecs_and_large_messages_expected_and_unexpected)
{
	const size_t n = 4 << 20;
	std::vector<char> src(n), dst(n);
	for (size_t i = 0; i < n; i++)
		src[i] = char(i * 7 + 3);
	/* Unexpected: sent before the receive is posted. */
	ASSERT_EQ(fi_send(a.ep, src.data(), n, nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	spin({a.tx, b.rx}, 500);
	iovec iov[2] = {{dst.data(), n / 2}, {dst.data() + n / 2, n / 2}};
	ASSERT_EQ(fi_recvv(b.ep, iov, nullptr, 2, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.len, n);
	EXPECT_EQ(src, dst);
	ASSERT_EQ(wait_tx(a, e), 1);
	/* Expected: straight into the posted buffer. */
	std::fill(dst.begin(), dst.end(), 0);
	ASSERT_EQ(fi_recv(b.ep, dst.data(), n, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	iovec siov[3] = {{src.data(), 100}, {src.data() + 100, n - 200}, {src.data() + n - 100, 100}};
	ASSERT_EQ(fi_sendv(a.ep, siov, nullptr, 3, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(src, dst);
	ASSERT_EQ(wait_tx(a, e), 1);
}

TEST_P(rdm, multi_recv_buffer_takes_several_messages)
{
	WU_NEEDS(FI_MULTI_RECV);
	size_t min = 1500;
	ASSERT_EQ(fi_setopt(&b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min), 0);
	size_t got = 0, len = sizeof got;
	ASSERT_EQ(fi_getopt(&b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len), 0);
	EXPECT_EQ(got, 1500u);
	std::vector<char> buf(4000);
	iovec v{buf.data(), buf.size()};
	fi_msg m{};
	m.msg_iov = &v;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	ASSERT_EQ(fi_recvmsg(b.ep, &m, FI_MULTI_RECV), 0);
	std::vector<char> msg(1000, 'm');
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(fi_send(a.ep, msg.data(), msg.size(), nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(wait_rx(b, e), 1);
		EXPECT_EQ(e.len, 1000u);
		EXPECT_EQ(e.buf, buf.data() + 1000 * i);
		EXPECT_EQ(bool(e.flags & FI_MULTI_RECV), i == 2) << i;
	}
}

TEST_P(rdm, cancel_reports_ecanceled_and_options)
{
	int x, ctx;
	ASSERT_EQ(fi_recv(b.ep, &x, sizeof x, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
	EXPECT_EQ(fi_cancel(&b.ep->fid, &ctx), 0);
	EXPECT_EQ(fi_cancel(&b.ep->fid, &ctx), -FI_ENOENT);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_rx(b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECANCELED);
	EXPECT_EQ(err.op_context, &ctx);
	size_t v = 0, len = sizeof v;
	if (prov() != "tcp") {
		/* No connection management, so no CM data. */
		EXPECT_EQ(fi_getopt(&a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len), -FI_ENOPROTOOPT);
	} else {
		EXPECT_EQ(fi_getopt(&a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len), 0);
		EXPECT_EQ(v, 256u);
	}
	EXPECT_EQ(fi_getopt(&a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_TX_SIZE + 100, &v, &len), -FI_ENOPROTOOPT);
}

/* fi_control (fi_endpoint(3)): enabling twice is harmless, the ops flags
 * read back what was set, and an unknown command is -FI_ENOSYS. */
TEST_P(rdm, control_enable_twice_ops_flags_and_unknown_command)
{
	EXPECT_EQ(fi_enable(a.ep), 0);
	uint64_t fl = FI_TRANSMIT;
	ASSERT_EQ(fi_control(&a.ep->fid, FI_GETOPSFLAG, &fl), 0);
	uint64_t want = (fl & ~(FI_TRANSMIT | FI_RECV)) | FI_COMPLETION;
	fl = want | FI_TRANSMIT;
	ASSERT_EQ(fi_control(&a.ep->fid, FI_SETOPSFLAG, &fl), 0);
	fl = FI_TRANSMIT;
	ASSERT_EQ(fi_control(&a.ep->fid, FI_GETOPSFLAG, &fl), 0);
	EXPECT_TRUE(fl & FI_COMPLETION);
	EXPECT_EQ(fi_control(&a.ep->fid, FI_GETOPSFLAG, nullptr), -FI_EINVAL);
	fl = 0; /* neither FI_TRANSMIT nor FI_RECV */
	EXPECT_EQ(fi_control(&a.ep->fid, FI_GETOPSFLAG, &fl), -FI_EINVAL);
	EXPECT_EQ(fi_control(&a.ep->fid, FI_GETWAIT, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_control(&a.ep->fid, 9999, nullptr), -FI_ENOSYS);
	/* Still works after all that. */
	char out[4] = "abc", in[4] = {};
	ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, out, sizeof out, nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_STREQ(in, "abc");
}

TEST_P(rdm, close_rules_ebusy_while_bound)
{
	EXPECT_EQ(fi_close(&a.tx->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&a.av->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&env.domain->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&a.ep->fid), 0);
	a.ep = nullptr;
	EXPECT_EQ(fi_close(&a.tx->fid), 0);
	a.tx = nullptr;
}

TEST_P(rma, rma_write_and_read_through_mr_keys)
{
	std::vector<char> target(4096, 0), local(4096);
	for (size_t i = 0; i < local.size(); i++)
		local[i] = char(i);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, target.data(), target.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 42, 0,
			    &mr, nullptr),
		  0);
	uint64_t key = fi_mr_key(mr);
	uint64_t base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
	int ctx;
	ASSERT_EQ(fi_write(a.ep, local.data(), 1000, nullptr, a_to_b, base + 10, key, &ctx), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
	EXPECT_EQ(memcmp(target.data() + 10, local.data(), 1000), 0);
	std::vector<char> back(1000);
	ASSERT_EQ(fi_read(a.ep, back.data(), back.size(), nullptr, a_to_b, base + 10, key, &ctx), 0);
	ASSERT_EQ(wait_tx(a, e), 1);
	EXPECT_EQ(e.flags, FI_RMA | FI_READ);
	EXPECT_EQ(memcmp(back.data(), local.data(), 1000), 0);
	/* A wrong key or a range outside the region: error completions. */
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_write(a.ep, local.data(), 10, nullptr, a_to_b, base, key + 1, &ctx), 0);
	ASSERT_EQ(wait_tx(a, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_EACCES);
	ASSERT_EQ(fi_read(a.ep, back.data(), 100, nullptr, a_to_b, base + 4090, key, &ctx), 0);
	ASSERT_EQ(wait_tx(a, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_EACCES);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* fi_recv / fi_trecv of one buffer take a short path when the endpoint's
 * caps allow the kind (prov/common/rx.h rx_fast_mask, set at fi_enable);
 * what it leaves out still gets the general path's answer: a kind the
 * caps lack is refused (tcp once took fi_trecv and fi_tsend without
 * FI_TAGGED), the other kind posts and completes. */
TEST_P(names, one_buffer_receive_of_a_kind_the_caps_lack_is_refused)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov().c_str());
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	fi_info *got = nullptr;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got);
	fi_freeinfo(hints);
	ASSERT_EQ(r, 0);
	ASSERT_NE(got, nullptr);
	if (got->caps & FI_TAGGED) {
		fi_freeinfo(got);
		GTEST_SKIP() << prov() << " grants FI_TAGGED unasked";
	}
	{
		prov_env env(prov(), FI_EP_RDM, FI_MSG);
		ASSERT_NE(env.domain, nullptr);
		rdm_ep a(env, got), b(env, got);
		fi_addr_t to_b = a.insert(b);
		char in[8] = {}, out[8] = "ping123";
		int ctx = 0;
		EXPECT_EQ(fi_trecv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, 1, 0, &ctx), -FI_EOPNOTSUPP);
		EXPECT_EQ(fi_tsend(a.ep, out, sizeof out, nullptr, to_b, 1, &ctx), -FI_EOPNOTSUPP);
		ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &ctx), 0);
		ASSERT_EQ(fi_send(a.ep, out, sizeof out, nullptr, to_b, &ctx), 0);
		fi_cq_tagged_entry e;
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
		EXPECT_EQ(e.op_context, &ctx);
		EXPECT_STREQ(in, out);
	}
	fi_freeinfo(got);
}
