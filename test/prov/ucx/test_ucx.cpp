/* SPDX-License-Identifier: BSD-3-Clause */
/* The ucx provider's own behaviour (issue 16): it comes last and only when
 * asked for, its tag layout leaves the application 32 bits, UCP endpoints
 * are made on first send (not at fi_av_insert), FI_SOURCE follows
 * fi_av_remove, a new insert and fi_av_set_user_id, corrupt addresses are
 * refused at insert, UCP's RMA is asked for only with RMA caps, and a peer
 * that dies fails what waits on it. */
#include <gtest/gtest.h>

#include <algorithm>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_tagged.h>

#include "prov/ucx/ucx_addr.h"
#include "prov/ucx/ucx_ep.h"
#include "../common/prov_fixture.h"

namespace {

using namespace wu::test;

std::string first_provider(const fi_info *hints)
{
	fi_info *got = nullptr;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got);
	std::string p = r == 0 && got ? got->fabric_attr->prov_name : "(none)";
	fi_freeinfo(got);
	return p;
}

TEST(ucx, comes_last_and_only_when_asked_for)
{
	EXPECT_EQ(first_provider(nullptr), "wireup");
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	EXPECT_EQ(first_provider(hints), "wireup");
	/* Listed, and last. */
	fi_info *all = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &all), 0);
	std::string last;
	bool seen_ucx = false;
	for (fi_info *i = all; i; i = i->next) {
		last = i->fabric_attr->prov_name;
		if (last == "ucx")
			seen_ucx = true;
		else
			EXPECT_FALSE(seen_ucx) << last << " after ucx";
	}
	EXPECT_TRUE(seen_ucx);
	fi_freeinfo(all);
	hints->fabric_attr->prov_name = strdup("ucx");
	EXPECT_EQ(first_provider(hints), "ucx");
	fi_freeinfo(hints);
	ASSERT_EQ(setenv("FI_PROVIDER", "ucx", 1), 0);
	EXPECT_EQ(first_provider(nullptr), "ucx");
	unsetenv("FI_PROVIDER");
}

struct ucx_pair : ::testing::Test, rdm_pair {
	ucx_pair() : rdm_pair("ucx", FI_MSG | FI_TAGGED | FI_RMA | FI_SOURCE | FI_DIRECTED_RECV) {}
};

TEST_F(ucx_pair, the_application_has_32_tag_bits)
{
	EXPECT_EQ(env.info->ep_attr->mem_tag_format, 0xffffffffULL);
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("ucx");
	hints->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;
	EXPECT_EQ(first_provider(hints), "(none)");
	hints->ep_attr->mem_tag_format = 0xaaaaaaaaULL;
	EXPECT_EQ(first_provider(hints), "ucx");
	fi_freeinfo(hints);

	uint32_t v = 1, w = 0;
	EXPECT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, a_to_b, uint64_t(1) << 32, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_tinject(a.ep, &v, sizeof v, a_to_b, ~uint64_t(0)), -FI_EINVAL);
	EXPECT_EQ(fi_trecv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, uint64_t(1) << 40, 0, nullptr), -FI_EINVAL);
	/* The largest tag, directed, with FI_SOURCE and an ignore of every bit
	 * above the application's (UCP's own bits are never ignored). */
	ASSERT_EQ(fi_trecv(b.ep, &w, sizeof w, nullptr, b_to_a, 0xffffffffULL, ~0xffffffffULL, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &v, sizeof v, nullptr, a_to_b, 0xffffffffULL, nullptr), 0);
	fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(wait_rx(b, e, nullptr, &src), 1);
	EXPECT_EQ(e.tag, 0xffffffffULL);
	EXPECT_EQ(src, b_to_a);
	EXPECT_EQ(w, 1u);
	ASSERT_EQ(wait_tx(a, e), 1);
	/* A tagged message is not an untagged one: each space matches its own. */
	int x = 5, y = 0, z = 0;
	ASSERT_EQ(fi_recv(b.ep, &y, sizeof y, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_tsend(a.ep, &x, sizeof x, nullptr, a_to_b, 0, nullptr), 0);
	ASSERT_EQ(wait_tx(a, e), 1);
	spin({a.rx, b.rx}, 200);
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN);
	ASSERT_EQ(fi_trecv(b.ep, &z, sizeof z, nullptr, FI_ADDR_UNSPEC, 0, 0, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.flags, FI_RECV | FI_TAGGED);
	EXPECT_EQ(z, 5);
	EXPECT_EQ(y, 0);
	ASSERT_EQ(fi_send(a.ep, &x, sizeof x, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.flags, FI_RECV | FI_MSG);
	EXPECT_EQ(y, 5);
}

/* FI_SOURCE is reported only when asked for, and a receiver that needs no
 * sender ids says so in its address: its senders put 0 where the id goes
 * and its receives match that field whole (UCP's hashed expected queue).
 * Endpoints of both kinds talk to each other. */
TEST(ucx, the_sender_id_travels_only_to_those_that_need_it)
{
	prov_env env("ucx", FI_EP_RDM, FI_MSG | FI_TAGGED);
	ASSERT_NE(env.info, nullptr);
	EXPECT_FALSE(env.info->caps & (FI_SOURCE | FI_DIRECTED_RECV));
	EXPECT_FALSE(env.info->rx_attr->caps & FI_SOURCE);
	{
		prov_env asked("ucx", FI_EP_RDM, FI_MSG | FI_SOURCE);
		ASSERT_NE(asked.info, nullptr);
		EXPECT_TRUE(asked.info->caps & FI_SOURCE);
	}
	fi_info *with = fi_dupinfo(env.info);
	with->caps |= FI_SOURCE;
	with->rx_attr->caps |= FI_SOURCE;
	rdm_ep plain(env), sourced(env, with);
	fi_freeinfo(with);
	namespace u = wu::ucx;
	EXPECT_EQ(u::addr_flags(plain.name.data()), 0);
	EXPECT_EQ(u::addr_flags(sourced.name.data()), u::addr_flag_id);
	EXPECT_EQ(u::ep_of(plain.ep)->rx_id_mask, u::id_mask);
	EXPECT_EQ(u::ep_of(sourced.ep)->rx_id_mask, 0u);
	fi_addr_t to_sourced = plain.insert(sourced), to_plain = sourced.insert(plain);
	fi_cq_tagged_entry e;
	/* Into the endpoint that wants ids: FI_SOURCE names the sender. */
	int v = 3, w = 0;
	ASSERT_EQ(fi_recv(sourced.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(plain.ep, &v, sizeof v, nullptr, to_sourced, nullptr), 0);
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(wait_one(sourced.rx, e, nullptr, {plain.tx}, &src), 1);
	EXPECT_EQ(w, 3);
	EXPECT_EQ(src, to_plain);
	ASSERT_EQ(wait_one(plain.tx, e, nullptr, {sourced.rx}), 1);
	/* Into the one that does not: an exact tag, a fully ignored one, msg. */
	int x = 0, y = 0, z = 0;
	ASSERT_EQ(fi_trecv(plain.ep, &x, sizeof x, nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr), 0);
	ASSERT_EQ(fi_trecv(plain.ep, &y, sizeof y, nullptr, FI_ADDR_UNSPEC, 0, 0xffffffffULL, nullptr), 0);
	ASSERT_EQ(fi_recv(plain.ep, &z, sizeof z, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	v = 4;
	ASSERT_EQ(fi_tinject(sourced.ep, &v, sizeof v, to_plain, 9), 0);
	v = 5;
	ASSERT_EQ(fi_tinject(sourced.ep, &v, sizeof v, to_plain, 12345), 0);
	v = 6;
	ASSERT_EQ(fi_inject(sourced.ep, &v, sizeof v, to_plain), 0);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(wait_one(plain.rx, e, nullptr, {sourced.tx}), 1) << i;
	EXPECT_EQ(x, 4);
	EXPECT_EQ(y, 5);
	EXPECT_EQ(z, 6);
}

/* With manual progress a small fi_recv waits in the endpoint until the
 * next poll (or any other receive call) gives it to UCP: receives still
 * match in the order they were posted, whichever path posted them, and a
 * deferred one can be canceled. */
TEST_F(ucx_pair, deferred_receives_keep_their_order)
{
	wu::ucx::ucx_ep *ub = wu::ucx::ep_of(b.ep);
	ASSERT_NE(ub, nullptr);
	int r1 = 0, r2 = 0, r3a = 0, r3b = 0;
	ASSERT_EQ(fi_trecv(b.ep, &r1, sizeof r1, nullptr, FI_ADDR_UNSPEC, 7, 0, &r1), 0);
	ASSERT_EQ(fi_trecv(b.ep, &r2, sizeof r2, nullptr, FI_ADDR_UNSPEC, 7, 0, &r2), 0);
	{
		std::lock_guard g(ub->b.mtx);
		EXPECT_NE(ub->deferred, nullptr); /* not UCP's yet */
	}
	/* Two buffers: the general path, which gives the two above to UCP first. */
	iovec v[2] = {{&r3a, sizeof r3a}, {&r3b, sizeof r3b}};
	ASSERT_EQ(fi_trecvv(b.ep, v, nullptr, 2, FI_ADDR_UNSPEC, 7, 0, &r3a), 0);
	{
		std::lock_guard g(ub->b.mtx);
		EXPECT_EQ(ub->deferred, nullptr);
	}
	for (int i = 1; i <= 3; i++)
		ASSERT_EQ(fi_tinject(a.ep, &i, sizeof i, a_to_b, 7), 0);
	fi_cq_tagged_entry e;
	std::vector<void *> order;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(wait_rx(b, e), 1) << i;
		order.push_back(e.op_context);
	}
	EXPECT_EQ(order, (std::vector<void *>{&r1, &r2, &r3a}));
	EXPECT_EQ(r1, 1);
	EXPECT_EQ(r2, 2);
	EXPECT_EQ(r3a, 3);
	/* A message that came before its receive: matched when UCP gets it. */
	int early = 8, got = 0;
	ASSERT_EQ(fi_tinject(a.ep, &early, sizeof early, a_to_b, 9), 0);
	spin({b.rx}, 50);
	ASSERT_EQ(fi_trecv(b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 9, 0, &got), 0);
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(e.op_context, &got);
	EXPECT_EQ(got, 8);
	/* Canceled while deferred: an FI_ECANCELED completion, once. */
	int c = 0;
	ASSERT_EQ(fi_recv(b.ep, &c, sizeof c, nullptr, FI_ADDR_UNSPEC, &c), 0);
	EXPECT_EQ(fi_cancel(&b.ep->fid, &c), 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_rx(b, e, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECANCELED);
	EXPECT_EQ(err.op_context, &c);
	EXPECT_EQ(fi_cancel(&b.ep->fid, &c), -FI_ENOENT);
}

/* fi_inject past UCP's short protocol, and while its queue to the peer is
 * full: the bytes are ours to copy, since the caller reuses the buffer at
 * once.  Every message arrives whole and in order (FI_ORDER_SAS: one tag,
 * so the k-th receive gets the k-th message), whichever way it went. */
TEST(ucx, injects_of_every_size_keep_their_bytes)
{
	/* Shared memory, whose short protocol ends far below 4 KiB (in one
	 * process UCP may otherwise pick a transport without that limit). */
	const char *was = getenv("UCX_TLS");
	const std::string saved = was ? was : "";
	ASSERT_EQ(setenv("UCX_TLS", "posix,sysv,cma", 1), 0);
	rdm_pair p("ucx", FI_TAGGED);
	if (was)
		setenv("UCX_TLS", saved.c_str(), 1);
	else
		unsetenv("UCX_TLS");
	rdm_ep &a = p.a, &b = p.b;
	const fi_addr_t a_to_b = p.a_to_b;
	const size_t sizes[] = {8, 300, 1024, 4096, 16};
	const int n = 400;
	std::vector<char> buf(4096);
	int sent = 0;
	fi_cq_tagged_entry e;
	/* One round first: UCP refuses every send at once while it wires up. */
	uint64_t w = 0;
	ASSERT_EQ(fi_trecv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, 1u << 20, 0, nullptr), 0);
	ASSERT_EQ(fi_tinject(a.ep, &w, sizeof w, a_to_b, 1u << 20), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	while (sent < n) {
		size_t len = sizes[sent % 5];
		memset(buf.data(), 'a' + sent % 26, len);
		ssize_t r = fi_tinject(a.ep, buf.data(), len, a_to_b, 7);
		memset(buf.data(), 0, len); /* the caller's again */
		if (r == -FI_EAGAIN) {
			spin({a.tx}, 1);
			continue;
		}
		ASSERT_EQ(r, 0) << sent;
		sent++;
	}
	std::vector<std::vector<char>> got(n, std::vector<char>(4096));
	for (int i = 0; i < n; i++)
		ASSERT_EQ(fi_trecv(b.ep, got[i].data(), 4096, nullptr, FI_ADDR_UNSPEC, 7, 0, &got[i]), 0);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1) << i;
		auto k = static_cast<std::vector<char> *>(e.op_context) - got.data();
		ASSERT_TRUE(k >= 0 && k < n);
		size_t len = sizes[k % 5];
		EXPECT_EQ(e.len, len) << k;
		const char *d = got[size_t(k)].data();
		EXPECT_EQ(std::count(d, d + len, char('a' + k % 26)), ptrdiff_t(len)) << "message " << k;
	}
	/* The endpoint learned where UCP's short protocol ends, and the copy
	 * path ran. */
	wu::ucx::ucx_ep *ua = wu::ucx::ep_of(a.ep);
	std::lock_guard g(ua->b.mtx);
	ASSERT_EQ(ua->peers.size(), 1u);
	EXPECT_LE(ua->peers.begin()->second->imm_from, 4096u);
	EXPECT_GE(ua->peers.begin()->second->imm_ok, 8u);
}

TEST_F(ucx_pair, ucp_endpoints_are_made_on_first_send)
{
	wu::ucx::ucx_ep *ua = wu::ucx::ep_of(a.ep);
	ASSERT_NE(ua, nullptr);
	EXPECT_TRUE(ua->peers.empty()); /* inserted, never used */
	/* Thousands of inserts cost no connection. */
	std::vector<fi_addr_t> out(2000);
	std::vector<char> names;
	for (size_t i = 0; i < out.size(); i++)
		names.insert(names.end(), b.name.begin(), b.name.end());
	ASSERT_EQ(fi_av_insert(a.av, names.data(), out.size(), out.data(), 0, nullptr), int(out.size()));
	EXPECT_TRUE(ua->peers.empty());
	int v = 7, w = 0;
	ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_rx(b, e), 1);
	EXPECT_EQ(w, 7);
	{
		std::lock_guard g(ua->b.mtx);
		ASSERT_EQ(ua->peers.size(), 1u);
		EXPECT_NE(ua->peers.begin()->second->ep, nullptr);
	}
	ASSERT_EQ(wait_tx(a, e), 1);
}

TEST_F(ucx_pair, fi_source_follows_av_remove_and_insert)
{
	/* FI_SOURCE comes from a per-endpoint cache of sender ids: a removed
	 * entry is not reported any more, and the sender inserted again is
	 * reported under its new fi_addr. */
	auto one = [&](fi_addr_t expect, const char *when) {
		int v = 3, w = 0;
		ASSERT_EQ(fi_recv(b.ep, &w, sizeof w, nullptr, FI_ADDR_UNSPEC, nullptr), 0) << when;
		ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0) << when;
		fi_cq_tagged_entry e;
		fi_addr_t src = 12345;
		ASSERT_EQ(wait_rx(b, e, nullptr, &src), 1) << when;
		EXPECT_EQ(src, expect) << when;
		EXPECT_EQ(w, 3) << when;
		ASSERT_EQ(wait_tx(a, e), 1) << when;
	};
	one(b_to_a, "first sight");
	one(b_to_a, "cached");
	ASSERT_EQ(fi_av_remove(b.av, &b_to_a, 1, 0), 0);
	one(FI_ADDR_NOTAVAIL, "removed");
	/* Another address may take the freed slot; a's comes after it. */
	fi_addr_t other = FI_ADDR_NOTAVAIL, again = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(b.av, b.name.data(), 1, &other, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(b.av, a.name.data(), 1, &again, 0, nullptr), 1);
	ASSERT_NE(again, other);
	one(again, "inserted again");
	one(again, "cached again");
	/* A user id given after the sender was cached is what is reported
	 * from then on (the cache follows the AV's change count). */
	ASSERT_EQ(fi_av_set_user_id(b.av, again, 0x5eed, 0), 0);
	one(0x5eed, "user id");
}

TEST_F(ucx_pair, corrupt_addresses_are_refused_at_insert)
{
	char text[128];
	size_t tl = sizeof text;
	ASSERT_NE(fi_av_straddr(a.av, b.name.data(), text, &tl), nullptr);
	EXPECT_EQ(std::string(text).rfind("fi_ucx://", 0), 0u) << text;

	auto refused = [&](std::vector<char> n, const char *why) {
		fi_addr_t fa = 0;
		EXPECT_EQ(fi_av_insert(a.av, n.data(), 1, &fa, 0, nullptr), 0) << why;
		EXPECT_EQ(fa, FI_ADDR_NOTAVAIL) << why;
	};
	std::vector<char> n = b.name;
	n[0] ^= 1;
	refused(n, "magic");
	n = b.name;
	n[4] = 9;
	refused(n, "version");
	n = b.name;
	n.back() ^= 0x40;
	refused(n, "a worker address byte (checksum)");
	n = b.name;
	n[6] = char(0xff);
	n[7] = char(0x7f);
	refused(n, "worker length beyond the blob");
	n = b.name;
	memset(n.data() + 8, 0, 4);
	refused(n, "sender id 0");
	n = b.name;
	n[5] = char(n[5] | 2);
	refused(n, "an unknown flag");
	/* fi_av_insert has no per-address length (the caller passes whole
	 * addresses), so a blob shorter than the header is checked directly. */
	EXPECT_LT(wu::ucx::addr_check(b.name.data(), wu::ucx::addr_hdr - 1), 0);
	EXPECT_LT(wu::ucx::addr_check(b.name.data(), b.name.size() - 1), 0); /* truncated */
	EXPECT_EQ(wu::ucx::addr_check(b.name.data(), b.name.size()), ssize_t(b.name.size()));
}

/* FI_PROGRESS_AUTO: the worker's event fd on the progress thread moves a
 * rendezvous while the sender never reads a CQ and the receiver sleeps in
 * fi_cq_sread. */
TEST(ucx, auto_progress_moves_data_while_the_application_sleeps)
{
	prov_env env("ucx", FI_EP_RDM, FI_TAGGED, FI_PROGRESS_AUTO);
	ASSERT_NE(env.info, nullptr);
	EXPECT_EQ(env.info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	rdm_ep a(env), b(env, nullptr, FI_WAIT_UNSPEC);
	fi_addr_t to_b = a.insert(b);
	b.insert(a);
	std::vector<char> out(1 << 20), in(1 << 20, 0);
	for (size_t i = 0; i < out.size(); i++)
		out[i] = char(i * 7);
	int rctx = 0;
	ASSERT_EQ(fi_trecv(b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 5, 0, &rctx), 0);
	ASSERT_EQ(fi_tsend(a.ep, out.data(), out.size(), nullptr, to_b, 5, nullptr), 0);
	fi_cq_tagged_entry e{};
	ssize_t r = fi_cq_sread(b.rx, &e, 1, nullptr, 20000);
	ASSERT_EQ(r, 1) << fi_strerror(int(-r));
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_EQ(e.len, out.size());
	EXPECT_EQ(in, out);
	ASSERT_EQ(wait_one(a.tx, e), 1);
}

/* UCP_FEATURE_RMA only for a domain whose caps ask for RMA: without it
 * messages still flow, an endpoint asking for RMA is refused, a region
 * with remote access registers but a peer's write to it fails. */
TEST(ucx, rma_is_asked_of_ucp_only_with_rma_caps)
{
	prov_env plain("ucx", FI_EP_RDM, FI_TAGGED), full("ucx", FI_EP_RDM, FI_TAGGED | FI_RMA);
	ASSERT_NE(plain.info, nullptr);
	ASSERT_NE(full.info, nullptr);
	EXPECT_EQ(plain.info->caps & wu::ucx::rma_caps, 0u);
	rdm_ep a(full), b(plain);
	ASSERT_NE(a.ep, nullptr);
	ASSERT_NE(b.ep, nullptr);
	EXPECT_TRUE(wu::ucx::ep_of(a.ep)->dom->rma);
	EXPECT_FALSE(wu::ucx::ep_of(b.ep)->dom->rma);
	fi_addr_t to_b = a.insert(b), to_a = b.insert(a);
	uint64_t out = 0x1122334455667788ULL, in = 0;
	ASSERT_EQ(fi_trecv(b.ep, &in, sizeof in, nullptr, FI_ADDR_UNSPEC, 3, 0, nullptr), 0);
	ASSERT_EQ(fi_tinject(a.ep, &out, sizeof out, to_b, 3), 0);
	fi_cq_tagged_entry e{};
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	EXPECT_EQ(in, out);
	ASSERT_EQ(fi_tinject(b.ep, &out, sizeof out, to_a, 4), 0); /* and back */
	ASSERT_EQ(fi_trecv(a.ep, &in, sizeof in, nullptr, FI_ADDR_UNSPEC, 4, 0, nullptr), 0);
	ASSERT_EQ(wait_one(a.rx, e, nullptr, {b.tx}), 1);

	fi_info *rma = fi_dupinfo(plain.info);
	rma->caps |= FI_RMA;
	fid_ep *ep = nullptr;
	EXPECT_EQ(fi_endpoint(plain.domain, rma, &ep, nullptr), -FI_EINVAL);
	EXPECT_EQ(ep, nullptr);
	fi_freeinfo(rma);

	std::vector<char> target(64, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(plain.domain, target.data(), target.size(), FI_REMOTE_WRITE, 0, 7, 0, &mr, nullptr), 0);
	uint64_t raddr = (plain.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(target.data())) : 0;
	int wctx = 0;
	ASSERT_EQ(fi_write(a.ep, &out, sizeof out, nullptr, to_b, raddr, fi_mr_key(mr), &wctx), 0);
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(a.tx, e, &err, {b.rx}), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_EACCES);
	EXPECT_EQ(err.op_context, &wctx);
	EXPECT_EQ(target, std::vector<char>(64, 0));
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* A child process's endpoint that dies while we wait on it (UCX_TLS=tcp:
 * UCX 1.13's shared-memory transports cannot report a peer's failure). */
TEST(ucx, a_peer_that_dies_fails_what_waits_on_it)
{
	const char *old = getenv("UCX_TLS");
	std::string saved = old ? old : "";
	ASSERT_EQ(setenv("UCX_TLS", "tcp", 1), 0);
	int to_child[2], to_parent[2];
	ASSERT_EQ(pipe(to_child), 0);
	ASSERT_EQ(pipe(to_parent), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* The child: answers one message, then waits to be killed. */
		prov_env env("ucx", FI_EP_RDM, FI_TAGGED);
		rdm_ep me(env);
		uint32_t n = uint32_t(me.name.size());
		if (write(to_parent[1], &n, 4) != 4 || write(to_parent[1], me.name.data(), n) != ssize_t(n))
			_exit(2);
		std::vector<char> peer(512);
		if (read(to_child[0], &n, 4) != 4 || n > peer.size() || read(to_child[0], peer.data(), n) != ssize_t(n))
			_exit(3);
		fi_addr_t p = FI_ADDR_NOTAVAIL;
		if (fi_av_insert(me.av, peer.data(), 1, &p, 0, nullptr) != 1)
			_exit(4);
		int v = 0;
		if (fi_trecv(me.ep, &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr))
			_exit(5);
		fi_cq_tagged_entry e;
		if (wait_one(me.rx, e, nullptr, {me.tx}) != 1)
			_exit(6);
		if (fi_tsend(me.ep, &v, sizeof v, nullptr, p, 2, nullptr))
			_exit(7);
		for (;;)
			(void)fi_cq_read(me.tx, &e, 0), (void)fi_cq_read(me.rx, &e, 0);
	}
	{
		prov_env env("ucx", FI_EP_RDM, FI_TAGGED | FI_DIRECTED_RECV);
		rdm_ep me(env);
		uint32_t n = 0;
		std::vector<char> peer(512);
		ASSERT_EQ(read(to_parent[0], &n, 4), 4);
		ASSERT_LE(n, peer.size());
		ASSERT_EQ(read(to_parent[0], peer.data(), n), ssize_t(n));
		uint32_t mine = uint32_t(me.name.size());
		ASSERT_EQ(write(to_child[1], &mine, 4), 4);
		ASSERT_EQ(write(to_child[1], me.name.data(), mine), ssize_t(mine));
		fi_addr_t p = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(fi_av_insert(me.av, peer.data(), 1, &p, 0, nullptr), 1);
		int v = 42, w = 0;
		ASSERT_EQ(fi_trecv(me.ep, &w, sizeof w, nullptr, p, 2, 0, nullptr), 0);
		ASSERT_EQ(fi_tsend(me.ep, &v, sizeof v, nullptr, p, 1, nullptr), 0);
		fi_cq_tagged_entry e;
		ASSERT_EQ(wait_one(me.rx, e, nullptr, {me.tx}), 1); /* its answer: connected both ways */
		ASSERT_EQ(wait_one(me.tx, e, nullptr, {me.rx}), 1);
		kill(pid, SIGKILL);
		int st = 0;
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		/* A directed receive from it, then sends until UCP notices. */
		int ctx_r = 0;
		ASSERT_EQ(fi_trecv(me.ep, &w, sizeof w, nullptr, p, 3, 0, &ctx_r), 0);
		fi_cq_err_entry err{};
		int r = 0;
		for (int i = 0; i < 20 && r != -FI_EAVAIL; i++) {
			ssize_t s = fi_tsend(me.ep, &v, sizeof v, nullptr, p, 4, nullptr);
			if (s != 0) {
				EXPECT_LT(s, 0);
				break; /* refused at once: the peer is known dead */
			}
			r = wait_one(me.tx, e, &err, {me.rx});
		}
		fi_cq_err_entry rerr{};
		ASSERT_EQ(wait_one(me.rx, e, &rerr, {me.tx}), -FI_EAVAIL);
		EXPECT_EQ(rerr.op_context, &ctx_r);
		EXPECT_EQ(rerr.err, FI_EIO);
	}
	if (old)
		setenv("UCX_TLS", saved.c_str(), 1);
	else
		unsetenv("UCX_TLS");
}

} // namespace
