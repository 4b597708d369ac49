/* SPDX-License-Identifier: BSD-3-Clause */
/* The generated msg/tagged/rma/atomic ops tables (src/prov/common/ep_ops.h)
 * alone: a fake provider whose engines record the descriptor they got.
 * Every entry point is called through the public inline API (fi_send,
 * fi_tsendmsg, fi_read, fi_compare_atomicv, ...) and must fill the
 * descriptor as fi_msg(3), fi_tagged(3), fi_rma(3) and fi_atomic(3) say:
 * op_flags merged for the plain calls, the caller's flags for the *msg
 * calls, FI_INJECT / FI_REMOTE_CQ_DATA for inject / *data; a NULL msg or
 * an unknown endpoint refused before the engine runs; exceptions mapped
 * to negative errnos. */
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov/common/ep_ops.h"

using namespace wu::prov;
using wu::atomic::kind;

namespace {

constexpr uint64_t fake_magic = 0xfeedface;

enum class what { none, send, recv, rma, atomic, valid };

/* What the last engine call got (copied: the descriptor's pointers are the
 * caller's, valid only during the call). */
struct fake_ep {
	fid_ep ep{};
	uint64_t magic = fake_magic;
	uint64_t tx_flags = 0, rx_flags = 0;
	ssize_t ret = 0;      /* what the engines return */
	int throw_kind = 0;   /* 1 bad_alloc, 2 runtime_error, 3 fi_error(FI_EAGAIN) */
	what last = what::none;
	int calls = 0;
	msg_xfer mx;
	rma_xfer rx;
	atomic_xfer ax;
	std::vector<iovec> iov;
	std::vector<void *> desc;
	std::vector<fi_rma_iov> rma;
	fi_msg_atomic am{};
	bool am_null = false;
	fi_rma_ioc am_rma{};
	std::vector<fi_ioc> am_iov, cmp, res;
	const char *vwhere = nullptr;
	kind vkind = kind::write;
	fi_datatype vdt = FI_INT8;
	fi_op vop = FI_MIN;
	size_t *vcount = nullptr;

	void hit(what w)
	{
		last = w;
		calls++;
		switch (throw_kind) {
		case 1: throw std::bad_alloc();
		case 2: throw std::runtime_error("engine failure");
		case 3: throw wu::fi_error(FI_EAGAIN);
		default: break;
		}
	}
	void keep(const iovec *v, void **d, size_t n)
	{
		iov.assign(v, v ? v + n : v);
		desc.clear();
		for (size_t i = 0; d && i < n; i++)
			desc.push_back(d[i]);
	}
};

struct fake_traits {
	using ep_type = fake_ep;
	static fake_ep *lookup(fid_ep *e) noexcept
	{
		auto *f = reinterpret_cast<fake_ep *>(e);
		return f && f->magic == fake_magic ? f : nullptr;
	}
	static uint64_t tx_flags(fake_ep *ep) { return ep->tx_flags; }
	static uint64_t rx_flags(fake_ep *ep) { return ep->rx_flags; }
	static ssize_t send(fake_ep *ep, const msg_xfer &x)
	{
		ep->hit(what::send);
		ep->mx = x;
		ep->keep(x.iov, x.desc, x.count);
		return ep->ret;
	}
	static ssize_t recv(fake_ep *ep, const msg_xfer &x)
	{
		ep->hit(what::recv);
		ep->mx = x;
		ep->keep(x.iov, x.desc, x.count);
		return ep->ret;
	}
	static ssize_t rma(fake_ep *ep, const rma_xfer &x)
	{
		ep->hit(what::rma);
		ep->rx = x;
		ep->keep(x.iov, x.desc, x.count);
		ep->rma.assign(x.rma, x.rma ? x.rma + x.rma_count : x.rma);
		return ep->ret;
	}
	static ssize_t atomic(fake_ep *ep, const atomic_xfer &a)
	{
		ep->hit(what::atomic);
		ep->ax = a;
		ep->am_null = !a.m;
		if (a.m) {
			ep->am = *a.m;
			ep->am_iov.assign(a.m->msg_iov, a.m->msg_iov ? a.m->msg_iov + a.m->iov_count : nullptr);
			if (a.m->rma_iov)
				ep->am_rma = *a.m->rma_iov;
		}
		ep->cmp.assign(a.cmp, a.cmp ? a.cmp + a.cmp_cnt : a.cmp);
		ep->res.assign(a.res, a.res ? a.res + a.res_cnt : a.res);
		return ep->ret;
	}
	static int atomic_valid(fake_ep *ep, const char *where, kind k, fi_datatype dt, fi_op op, size_t *count)
	{
		ep->hit(what::valid);
		ep->vwhere = where;
		ep->vkind = k;
		ep->vdt = dt;
		ep->vop = op;
		ep->vcount = count;
		if (count)
			*count = 7;
		return int(ep->ret);
	}
};

using ops = ep_ops<fake_traits>;

class ep_ops : public ::testing::Test {
protected:
	void SetUp() override
	{
		f.ep.fid.fclass = FI_CLASS_EP;
		f.ep.msg = ops::msg_ops();
		f.ep.tagged = ops::tagged_ops();
		f.ep.rma = ops::rma_ops();
		f.ep.atomic = ops::atomic_ops();
		f.tx_flags = FI_COMPLETION | FI_TRANSMIT_COMPLETE;
		f.rx_flags = FI_COMPLETION | FI_MULTI_RECV;
	}
	fid_ep *ep() { return &f.ep; }

	fake_ep f;
	char buf[64] = {};
	char buf2[32] = {};
	void *d0 = reinterpret_cast<void *>(0x1000), *d1 = reinterpret_cast<void *>(0x2000);
	void *ctx = reinterpret_cast<void *>(0xc0ffee);
	const fi_addr_t peer = 5;
};

TEST_F(ep_ops, tables_are_static_and_complete)
{
	EXPECT_EQ(ops::msg.size, sizeof(fi_ops_msg));
	EXPECT_EQ(ops::tagged.size, sizeof(fi_ops_tagged));
	EXPECT_EQ(ops::rma.size, sizeof(fi_ops_rma));
	EXPECT_EQ(ops::atomic.size, sizeof(fi_ops_atomic));
	EXPECT_EQ(ops::msg_ops(), &ops::msg); /* one table for every endpoint */
	auto all_set = [](const void *t, size_t size) {
		const char *p = static_cast<const char *>(t) + sizeof(size_t);
		for (size_t off = 0; off + sizeof(void *) <= size - sizeof(size_t); off += sizeof(void *)) {
			void *fn;
			memcpy(&fn, p + off, sizeof fn);
			if (!fn)
				return false;
		}
		return true;
	};
	EXPECT_TRUE(all_set(&ops::msg, sizeof(fi_ops_msg)));
	EXPECT_TRUE(all_set(&ops::tagged, sizeof(fi_ops_tagged)));
	EXPECT_TRUE(all_set(&ops::rma, sizeof(fi_ops_rma)));
	EXPECT_TRUE(all_set(&ops::atomic, sizeof(fi_ops_atomic)));
}

/* ---- fi_msg(3) ---- */

TEST_F(ep_ops, send_merges_tx_op_flags)
{
	f.ret = 0;
	ASSERT_EQ(fi_send(ep(), buf, sizeof buf, d0, peer, ctx), 0);
	ASSERT_EQ(f.last, what::send);
	EXPECT_STREQ(f.mx.where, "fi_send");
	ASSERT_EQ(f.iov.size(), 1u);
	EXPECT_EQ(f.iov[0].iov_base, buf);
	EXPECT_EQ(f.iov[0].iov_len, sizeof buf);
	ASSERT_EQ(f.desc.size(), 1u);
	EXPECT_EQ(f.desc[0], d0);
	EXPECT_EQ(f.mx.addr, peer);
	EXPECT_EQ(f.mx.context, ctx);
	EXPECT_EQ(f.mx.flags, f.tx_flags);
	EXPECT_FALSE(f.mx.tagged);
	EXPECT_FALSE(f.mx.inject_api);
	EXPECT_FALSE(f.mx.msg_api);
	EXPECT_EQ(f.mx.data, 0u);
}

TEST_F(ep_ops, sendv_passes_the_callers_vector)
{
	iovec v[2] = {{buf, 10}, {buf2, 20}};
	void *d[2] = {d0, d1};
	ASSERT_EQ(fi_sendv(ep(), v, d, 2, peer, ctx), 0);
	ASSERT_EQ(f.last, what::send);
	ASSERT_EQ(f.iov.size(), 2u);
	EXPECT_EQ(f.iov[1].iov_base, buf2);
	EXPECT_EQ(f.iov[1].iov_len, 20u);
	EXPECT_EQ(f.desc[1], d1);
	EXPECT_EQ(f.mx.flags, f.tx_flags);
}

TEST_F(ep_ops, sendmsg_takes_the_callers_flags_only)
{
	iovec v{buf, 8};
	fi_msg m{&v, &d0, 1, peer, ctx, 99};
	ASSERT_EQ(fi_sendmsg(ep(), &m, FI_REMOTE_CQ_DATA), 0);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_REMOTE_CQ_DATA)); /* op_flags are not merged into *msg calls */
	EXPECT_EQ(f.mx.data, 99u);
	EXPECT_TRUE(f.mx.msg_api);
	EXPECT_EQ(f.mx.context, ctx);
	EXPECT_EQ(f.mx.addr, peer);
}

TEST_F(ep_ops, inject_sets_fi_inject_and_no_completion_context)
{
	ASSERT_EQ(fi_inject(ep(), buf, 16, peer), 0);
	EXPECT_STREQ(f.mx.where, "fi_inject");
	EXPECT_EQ(f.mx.flags, uint64_t(FI_INJECT));
	EXPECT_TRUE(f.mx.inject_api);
	EXPECT_EQ(f.mx.context, nullptr);
	EXPECT_TRUE(f.desc.empty());
	EXPECT_EQ(f.iov[0].iov_len, 16u);
}

TEST_F(ep_ops, senddata_adds_remote_cq_data)
{
	ASSERT_EQ(fi_senddata(ep(), buf, 4, d0, 0xabc, peer, ctx), 0);
	EXPECT_EQ(f.mx.flags, f.tx_flags | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(f.mx.data, 0xabcu);
	EXPECT_FALSE(f.mx.inject_api);
	ASSERT_EQ(fi_injectdata(ep(), buf, 4, 0xdef, peer), 0);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_INJECT | FI_REMOTE_CQ_DATA));
	EXPECT_EQ(f.mx.data, 0xdefu);
	EXPECT_TRUE(f.mx.inject_api);
}

TEST_F(ep_ops, recv_merges_rx_op_flags)
{
	ASSERT_EQ(fi_recv(ep(), buf, sizeof buf, d0, FI_ADDR_UNSPEC, ctx), 0);
	ASSERT_EQ(f.last, what::recv);
	EXPECT_EQ(f.mx.flags, f.rx_flags);
	EXPECT_EQ(f.mx.addr, FI_ADDR_UNSPEC);
	EXPECT_EQ(f.iov[0].iov_base, buf);
	iovec v[2] = {{buf, 1}, {buf2, 2}};
	ASSERT_EQ(fi_recvv(ep(), v, nullptr, 2, peer, ctx), 0);
	EXPECT_EQ(f.iov.size(), 2u);
	EXPECT_EQ(f.mx.addr, peer);
	EXPECT_EQ(f.mx.flags, f.rx_flags);
	fi_msg m{v, nullptr, 2, peer, ctx, 0};
	ASSERT_EQ(fi_recvmsg(ep(), &m, FI_PEEK), 0);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_PEEK)); /* the engine decides what it supports */
	EXPECT_TRUE(f.mx.msg_api);
	EXPECT_FALSE(f.mx.tagged);
}

/* ---- fi_tagged(3) ---- */

TEST_F(ep_ops, tagged_calls_carry_tag_and_ignore)
{
	ASSERT_EQ(fi_tsend(ep(), buf, 3, d0, peer, 0x77, ctx), 0);
	EXPECT_TRUE(f.mx.tagged);
	EXPECT_EQ(f.mx.tag, 0x77u);
	EXPECT_EQ(f.mx.flags, f.tx_flags);
	ASSERT_EQ(fi_tinject(ep(), buf, 3, peer, 0x78), 0);
	EXPECT_EQ(f.mx.tag, 0x78u);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_INJECT));
	EXPECT_TRUE(f.mx.inject_api);
	ASSERT_EQ(fi_tsenddata(ep(), buf, 3, d0, 42, peer, 0x79, ctx), 0);
	EXPECT_EQ(f.mx.flags, f.tx_flags | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(f.mx.data, 42u);
	ASSERT_EQ(fi_tinjectdata(ep(), buf, 3, 43, peer, 0x7a), 0);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_INJECT | FI_REMOTE_CQ_DATA));
	EXPECT_EQ(f.mx.tag, 0x7au);
	iovec v{buf, 5};
	ASSERT_EQ(fi_tsendv(ep(), &v, &d0, 1, peer, 0x7b, ctx), 0);
	EXPECT_EQ(f.mx.tag, 0x7bu);
	fi_msg_tagged tm{&v, &d0, 1, peer, 0x7c, 0xff, ctx, 44};
	ASSERT_EQ(fi_tsendmsg(ep(), &tm, FI_INJECT), 0);
	EXPECT_EQ(f.mx.tag, 0x7cu);
	EXPECT_EQ(f.mx.data, 44u);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_INJECT));
	EXPECT_FALSE(f.mx.inject_api); /* a flag, not the inject call: the engine may still complete */

	ASSERT_EQ(fi_trecv(ep(), buf, 3, d0, peer, 0x10, 0x0f, ctx), 0);
	ASSERT_EQ(f.last, what::recv);
	EXPECT_TRUE(f.mx.tagged);
	EXPECT_EQ(f.mx.tag, 0x10u);
	EXPECT_EQ(f.mx.ignore, 0x0fu);
	EXPECT_EQ(f.mx.flags, f.rx_flags);
	ASSERT_EQ(fi_trecvv(ep(), &v, nullptr, 1, peer, 0x11, 0x1, ctx), 0);
	EXPECT_EQ(f.mx.tag, 0x11u);
	EXPECT_EQ(f.mx.ignore, 0x1u);
	ASSERT_EQ(fi_trecvmsg(ep(), &tm, FI_PEEK | FI_CLAIM), 0);
	EXPECT_EQ(f.mx.flags, uint64_t(FI_PEEK | FI_CLAIM));
	EXPECT_EQ(f.mx.ignore, 0xffu);
	EXPECT_TRUE(f.mx.msg_api);
}

/* ---- fi_rma(3) ---- */

TEST_F(ep_ops, rma_calls_describe_one_remote_region)
{
	ASSERT_EQ(fi_read(ep(), buf, 12, d0, peer, 0x5000, 0x99, ctx), 0);
	ASSERT_EQ(f.last, what::rma);
	EXPECT_FALSE(f.rx.write);
	ASSERT_EQ(f.rma.size(), 1u);
	EXPECT_EQ(f.rma[0].addr, 0x5000u);
	EXPECT_EQ(f.rma[0].len, 12u);
	EXPECT_EQ(f.rma[0].key, 0x99u);
	EXPECT_EQ(f.rx.flags, f.tx_flags);
	EXPECT_EQ(f.rx.context, ctx);
	EXPECT_EQ(f.desc[0], d0);

	iovec v[2] = {{buf, 10}, {buf2, 6}};
	ASSERT_EQ(fi_writev(ep(), v, nullptr, 2, peer, 0x6000, 0x98, ctx), 0);
	EXPECT_TRUE(f.rx.write);
	EXPECT_EQ(f.rma[0].len, 16u); /* the whole local buffer */
	EXPECT_EQ(f.rx.count, 2u);
	ASSERT_EQ(fi_readv(ep(), v, nullptr, 2, peer, 0x6000, 0x98, ctx), 0);
	EXPECT_FALSE(f.rx.write);
	EXPECT_EQ(f.rma[0].len, 16u);

	ASSERT_EQ(fi_write(ep(), buf, 7, d0, peer, 0x7000, 1, ctx), 0);
	EXPECT_TRUE(f.rx.write);
	EXPECT_EQ(f.rx.flags, f.tx_flags);
	ASSERT_EQ(fi_inject_write(ep(), buf, 7, peer, 0x7000, 1), 0);
	EXPECT_EQ(f.rx.flags, uint64_t(FI_INJECT));
	EXPECT_TRUE(f.rx.inject_api);
	EXPECT_EQ(f.rx.context, nullptr);
	ASSERT_EQ(fi_writedata(ep(), buf, 7, d0, 55, peer, 0x7000, 1, ctx), 0);
	EXPECT_EQ(f.rx.flags, f.tx_flags | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(f.rx.data, 55u);
	ASSERT_EQ(fi_inject_writedata(ep(), buf, 7, 56, peer, 0x7000, 1), 0);
	EXPECT_EQ(f.rx.flags, uint64_t(FI_INJECT | FI_REMOTE_CQ_DATA));
	EXPECT_EQ(f.rx.data, 56u);

	fi_rma_iov r[2] = {{0x8000, 4, 2}, {0x9000, 12, 3}};
	fi_msg_rma m{v, nullptr, 2, peer, r, 2, ctx, 57};
	ASSERT_EQ(fi_writemsg(ep(), &m, FI_REMOTE_CQ_DATA), 0);
	EXPECT_EQ(f.rx.flags, uint64_t(FI_REMOTE_CQ_DATA));
	ASSERT_EQ(f.rma.size(), 2u);
	EXPECT_EQ(f.rma[1].addr, 0x9000u);
	EXPECT_EQ(f.rx.data, 57u);
	ASSERT_EQ(fi_readmsg(ep(), &m, 0), 0);
	EXPECT_FALSE(f.rx.write);
	EXPECT_EQ(f.rx.flags, 0u);
	EXPECT_EQ(f.rx.data, 0u); /* a read carries no remote CQ data */
}

/* ---- fi_atomic(3) ---- */

TEST_F(ep_ops, atomic_calls_build_the_message)
{
	uint64_t op[2] = {1, 2}, cmpv[2] = {3, 4}, resv[2] = {};
	ASSERT_EQ(fi_atomic(ep(), op, 2, d0, peer, 0xa000, 0x33, FI_UINT64, FI_SUM, ctx), 0);
	ASSERT_EQ(f.last, what::atomic);
	EXPECT_EQ(f.ax.k, kind::write);
	EXPECT_STREQ(f.ax.where, "fi_atomic");
	EXPECT_EQ(f.ax.flags, f.tx_flags);
	ASSERT_EQ(f.am_iov.size(), 1u);
	EXPECT_EQ(f.am_iov[0].addr, op);
	EXPECT_EQ(f.am_iov[0].count, 2u);
	EXPECT_EQ(f.am.rma_iov_count, 1u);
	EXPECT_EQ(f.am_rma.addr, 0xa000u);
	EXPECT_EQ(f.am_rma.count, 2u);
	EXPECT_EQ(f.am_rma.key, 0x33u);
	EXPECT_EQ(f.am.datatype, FI_UINT64);
	EXPECT_EQ(f.am.op, FI_SUM);
	EXPECT_EQ(f.am.context, ctx);
	EXPECT_EQ(f.am.addr, peer);

	fi_ioc v[2] = {{op, 1}, {op + 1, 1}};
	ASSERT_EQ(fi_atomicv(ep(), v, nullptr, 2, peer, 0xa000, 0x33, FI_UINT64, FI_SUM, ctx), 0);
	EXPECT_EQ(f.am_rma.count, 2u); /* over all operands */
	EXPECT_EQ(f.am_iov.size(), 2u);

	ASSERT_EQ(fi_inject_atomic(ep(), op, 2, peer, 0xa000, 0x33, FI_UINT64, FI_SUM), 0);
	EXPECT_EQ(f.ax.flags, uint64_t(FI_INJECT));
	EXPECT_TRUE(f.ax.inject_api);
	EXPECT_EQ(f.am.context, nullptr);

	ASSERT_EQ(fi_fetch_atomic(ep(), op, 2, d0, resv, d1, peer, 0xa000, 0x33, FI_UINT64, FI_SUM, ctx), 0);
	EXPECT_EQ(f.ax.k, kind::fetch);
	ASSERT_EQ(f.res.size(), 1u);
	EXPECT_EQ(f.res[0].addr, resv);
	EXPECT_EQ(f.res[0].count, 2u);
	EXPECT_TRUE(f.cmp.empty());

	fi_ioc rv[2] = {{resv, 1}, {resv + 1, 1}};
	ASSERT_EQ(fi_fetch_atomicv(ep(), nullptr, nullptr, 0, rv, nullptr, 2, peer, 0xa000, 0x33, FI_UINT64,
				   FI_ATOMIC_READ, ctx),
		  0);
	EXPECT_EQ(f.am_rma.count, 2u); /* ATOMIC_READ: as many as the results */
	EXPECT_EQ(f.res.size(), 2u);

	ASSERT_EQ(fi_compare_atomic(ep(), op, 2, d0, cmpv, nullptr, resv, nullptr, peer, 0xa000, 0x33, FI_UINT64,
				    FI_CSWAP, ctx),
		  0);
	EXPECT_EQ(f.ax.k, kind::compare);
	ASSERT_EQ(f.cmp.size(), 1u);
	EXPECT_EQ(f.cmp[0].addr, cmpv);
	EXPECT_EQ(f.cmp[0].count, 2u);
	EXPECT_EQ(f.res[0].addr, resv);

	fi_ioc cv[2] = {{cmpv, 1}, {cmpv + 1, 1}};
	ASSERT_EQ(fi_compare_atomicv(ep(), v, nullptr, 2, cv, nullptr, 2, rv, nullptr, 2, peer, 0xa000, 0x33,
				     FI_UINT64, FI_CSWAP, ctx),
		  0);
	EXPECT_EQ(f.cmp.size(), 2u);
	EXPECT_EQ(f.res.size(), 2u);
	EXPECT_EQ(f.am_rma.count, 2u);

	fi_rma_ioc r{0xb000, 2, 0x44};
	fi_msg_atomic m{v, nullptr, 2, peer, &r, 1, FI_UINT64, FI_CSWAP, ctx, 0};
	ASSERT_EQ(fi_atomicmsg(ep(), &m, FI_DELIVERY_COMPLETE), 0);
	EXPECT_EQ(f.ax.flags, uint64_t(FI_DELIVERY_COMPLETE));
	EXPECT_EQ(f.am_rma.addr, 0xb000u);
	ASSERT_EQ(fi_fetch_atomicmsg(ep(), &m, rv, nullptr, 2, 0), 0);
	EXPECT_EQ(f.ax.k, kind::fetch);
	EXPECT_EQ(f.ax.flags, 0u);
	ASSERT_EQ(fi_compare_atomicmsg(ep(), &m, cv, nullptr, 2, rv, nullptr, 2, 0), 0);
	EXPECT_EQ(f.ax.k, kind::compare);
	EXPECT_EQ(f.cmp.size(), 2u);
}

TEST_F(ep_ops, atomic_valid_queries_reach_the_engine)
{
	size_t count = 0;
	ASSERT_EQ(fi_atomicvalid(ep(), FI_INT32, FI_MIN, &count), 0);
	EXPECT_EQ(f.last, what::valid);
	EXPECT_EQ(f.vkind, kind::write);
	EXPECT_STREQ(f.vwhere, "fi_atomicvalid");
	EXPECT_EQ(count, 7u);
	ASSERT_EQ(fi_fetch_atomicvalid(ep(), FI_INT32, FI_ATOMIC_READ, &count), 0);
	EXPECT_EQ(f.vkind, kind::fetch);
	EXPECT_EQ(f.vop, FI_ATOMIC_READ);
	ASSERT_EQ(fi_compare_atomicvalid(ep(), FI_DOUBLE, FI_CSWAP, &count), 0);
	EXPECT_EQ(f.vkind, kind::compare);
	EXPECT_EQ(f.vdt, FI_DOUBLE);
	f.ret = -FI_EOPNOTSUPP;
	EXPECT_EQ(fi_atomicvalid(ep(), FI_INT32, FI_BOR, nullptr), -FI_EOPNOTSUPP);
	EXPECT_EQ(f.vcount, nullptr);
}

/* ---- refusals and errors ---- */

TEST_F(ep_ops, null_msg_is_refused_before_the_engine)
{
	EXPECT_EQ(fi_sendmsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_recvmsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_tsendmsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_trecvmsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_readmsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_writemsg(ep(), nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(f.calls, 0);
	/* Atomics leave it to the engine, which says why in its log. */
	EXPECT_EQ(fi_atomicmsg(ep(), nullptr, 0), 0);
	EXPECT_TRUE(f.am_null);
}

TEST_F(ep_ops, unknown_endpoint_is_refused)
{
	fake_ep other;
	other.magic = 0;
	other.ep.msg = ops::msg_ops();
	other.ep.tagged = ops::tagged_ops();
	other.ep.rma = ops::rma_ops();
	other.ep.atomic = ops::atomic_ops();
	fid_ep *e = &other.ep;
	size_t count;
	uint64_t x = 0;
	EXPECT_EQ(fi_send(e, buf, 1, nullptr, peer, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_inject(e, buf, 1, peer), -FI_EINVAL);
	EXPECT_EQ(fi_recv(e, buf, 1, nullptr, peer, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_tsend(e, buf, 1, nullptr, peer, 1, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_trecv(e, buf, 1, nullptr, peer, 1, 0, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_read(e, buf, 1, nullptr, peer, 0, 0, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_inject_write(e, buf, 1, peer, 0, 0), -FI_EINVAL);
	EXPECT_EQ(fi_atomic(e, &x, 1, nullptr, peer, 0, 0, FI_UINT64, FI_SUM, ctx), -FI_EINVAL);
	EXPECT_EQ(fi_atomicvalid(e, FI_UINT64, FI_SUM, &count), -FI_EINVAL);
	EXPECT_EQ(other.calls, 0);
	/* And a NULL endpoint, straight through the table. */
	EXPECT_EQ(ops::msg.send(nullptr, buf, 1, nullptr, peer, ctx), -FI_EINVAL);
	EXPECT_EQ(ops::rma.write(nullptr, buf, 1, nullptr, peer, 0, 0, ctx), -FI_EINVAL);
	EXPECT_EQ(ops::atomic.compwritevalid(nullptr, FI_UINT64, FI_CSWAP, &count), -FI_EINVAL);
}

TEST_F(ep_ops, engine_results_and_exceptions_become_errnos)
{
	uint64_t x = 0;
	size_t count;
	f.ret = -FI_EAGAIN;
	EXPECT_EQ(fi_send(ep(), buf, 1, nullptr, peer, ctx), -FI_EAGAIN);
	EXPECT_EQ(fi_trecv(ep(), buf, 1, nullptr, peer, 1, 0, ctx), -FI_EAGAIN);
	f.ret = 0;
	f.throw_kind = 1;
	EXPECT_EQ(fi_send(ep(), buf, 1, nullptr, peer, ctx), -FI_ENOMEM);
	EXPECT_EQ(fi_write(ep(), buf, 1, nullptr, peer, 0, 0, ctx), -FI_ENOMEM);
	f.throw_kind = 2;
	EXPECT_EQ(fi_recv(ep(), buf, 1, nullptr, peer, ctx), -FI_EOTHER);
	EXPECT_EQ(fi_atomic(ep(), &x, 1, nullptr, peer, 0, 0, FI_UINT64, FI_SUM, ctx), -FI_EOTHER);
	EXPECT_EQ(fi_atomicvalid(ep(), FI_UINT64, FI_SUM, &count), -FI_EOTHER);
	f.throw_kind = 3;
	EXPECT_EQ(fi_tinject(ep(), buf, 1, peer, 1), -FI_EAGAIN);
	EXPECT_EQ(fi_readv(ep(), nullptr, nullptr, 3, peer, 0, 0, ctx), -FI_EAGAIN); /* NULL iov reaches the engine, no crash */
}

} // namespace
