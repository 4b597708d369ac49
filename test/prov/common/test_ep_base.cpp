/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint base (src/prov/common/ep_base.h) and the receive core
 * (src/prov/common/rx.h) with no transport: a fake endpoint embeds an
 * ep_base on a real domain's CQs, counters, AV and EQ.  Bindings are held
 * by their bound_refs and undone by unbind_all or the destructor (the
 * objects close afterwards, not -FI_EBUSY); bind checks, enable checks,
 * ops flags, selective completion and the counter of each operation; a
 * receive posted, cancelled and completed with FI_ECANCELED, and the room
 * it held given back. */
#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include "prov/common/ep_base.h"
#include "prov/common/rx.h"
#include "prov_fixture.h"

using namespace wu::test;
using wu::prov::ep_base;

namespace {

fi_provider make_prov()
{
	fi_provider p{};
	p.version = FI_VERSION(1, 17);
	p.fi_version = FI_VERSION(1, 17);
	p.name = const_cast<char *>("ep_base_test");
	return p;
}
fi_provider fake_prov = make_prov();

/* A provider endpoint as a provider lays it out: fid first, then the base. */
struct fake_ep {
	fid_ep ep{};
	uint32_t magic = 1;
	ep_base b;
};
static_assert(std::is_standard_layout_v<fake_ep>, "an endpoint embedding ep_base stays standard-layout");

int progress_calls = 0;
void progress(void *) noexcept
{
	progress_calls++;
}

struct base_test : ::testing::Test {
	prov_env env{"tcp", FI_EP_RDM, FI_MSG | FI_TAGGED};
	fid_cq *cq = nullptr, *cq2 = nullptr;
	fid_cntr *cn = nullptr, *cn2 = nullptr;
	fid_av *av = nullptr, *av2 = nullptr;
	fi_info *info = nullptr;

	void SetUp() override
	{
		ASSERT_NE(env.domain, nullptr);
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ASSERT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
		ASSERT_EQ(fi_cq_open(env.domain, &ca, &cq2, nullptr), 0);
		fi_cntr_attr na{};
		ASSERT_EQ(fi_cntr_open(env.domain, &na, &cn, nullptr), 0);
		ASSERT_EQ(fi_cntr_open(env.domain, &na, &cn2, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		ASSERT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
		ASSERT_EQ(fi_av_open(env.domain, &aa, &av2, nullptr), 0);
		info = fi_dupinfo(env.info);
	}
	void TearDown() override
	{
		for (fid *f : {cq ? &cq->fid : nullptr, cq2 ? &cq2->fid : nullptr, cn ? &cn->fid : nullptr,
			       cn2 ? &cn2->fid : nullptr, av ? &av->fid : nullptr, av2 ? &av2->fid : nullptr})
			if (f) {
				EXPECT_EQ(fi_close(f), 0) << "still bound after the endpoint base let go";
			}
		fi_freeinfo(info);
	}
	void init(fake_ep &e, fi_ep_type type = FI_EP_RDM)
	{
		info->ep_attr->type = type;
		e.b.init(&e.ep.fid, &fake_prov, wu::prov::domain_of(env.domain), info,
			 wu::progress_fn{progress, &e, nullptr});
	}
};

} // namespace

TEST_F(base_test, bindings_are_checked_held_and_undone)
{
	fake_ep e;
	init(e);
	ep_base &b = e.b;
	EXPECT_EQ(b.bind(&cq->fid, 0), -FI_EBADFLAGS);
	EXPECT_EQ(b.bind(&cq->fid, FI_TRANSMIT | FI_TAGGED), -FI_EBADFLAGS);
	ASSERT_EQ(b.bind(&cq->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION), 0);
	EXPECT_EQ(b.bind(&cq2->fid, FI_TRANSMIT), -FI_EINVAL); /* one transmit CQ */
	ASSERT_EQ(b.bind(&cq->fid, FI_RECV), 0);               /* the same CQ: one binding */
	EXPECT_TRUE(b.tx_sel);
	EXPECT_FALSE(b.rx_sel);
	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);

	EXPECT_EQ(b.bind(&cn->fid, FI_TAGGED), -FI_EBADFLAGS);
	ASSERT_EQ(b.bind(&cn->fid, FI_SEND | FI_RECV), 0);
	EXPECT_EQ(b.bind(&cn2->fid, FI_SEND), -FI_EINVAL);
	ASSERT_EQ(b.bind(&cn2->fid, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE), 0);
	EXPECT_EQ(b.cntr_for(wu::prov::OP_SEND), cn);
	EXPECT_EQ(b.cntr_for(wu::prov::OP_RECV), cn);
	EXPECT_EQ(b.cntr_for(wu::prov::OP_ATOMIC), cn2);
	EXPECT_EQ(b.cntr_for(wu::prov::OP_FETCH), cn2);
	EXPECT_EQ(fi_close(&cn2->fid), -FI_EBUSY);

	EXPECT_EQ(b.bind(&av->fid, FI_RECV), -FI_EBADFLAGS);
	ASSERT_EQ(b.bind(&av->fid, 0), 0);
	EXPECT_EQ(b.bind(&av2->fid, 0), -FI_EINVAL);
	EXPECT_EQ(b.bind(&env.eq->fid, FI_SEND), -FI_EBADFLAGS);
	ASSERT_EQ(b.bind(&env.eq->fid, 0), 0);
	EXPECT_EQ(b.bind(&env.eq->fid, 0), -FI_EINVAL);
	fid other{};
	other.fclass = FI_CLASS_PEP;
	EXPECT_EQ(b.bind(&other, 0), -FI_EINVAL);
	EXPECT_EQ(b.bind(nullptr, 0), -FI_EINVAL);

	{
		std::lock_guard g(b.mtx);
		EXPECT_EQ(b.enable_locked(), 0);
		EXPECT_EQ(b.enable_locked(), 1);
	}
	EXPECT_EQ(b.bind(&av2->fid, 0), -FI_EINVAL);
	b.unbind_all();
	b.unbind_all(); /* twice is harmless */
}

TEST_F(base_test, the_destructor_unbinds)
{
	{
		fake_ep e;
		init(e);
		ASSERT_EQ(e.b.bind(&cq->fid, FI_TRANSMIT), 0);
		ASSERT_EQ(e.b.bind(&cq2->fid, FI_RECV), 0);
		ASSERT_EQ(e.b.bind(&cn->fid, FI_SEND), 0);
		ASSERT_EQ(e.b.bind(&av->fid, 0), 0);
		ASSERT_EQ(e.b.bind(&env.eq->fid, 0), 0);
		EXPECT_EQ(fi_close(&cq2->fid), -FI_EBUSY);
	}
	/* TearDown closes them all. */
}

TEST_F(base_test, enable_needs_an_av_for_rdm_and_an_eq_for_msg)
{
	fake_ep r, m;
	init(r, FI_EP_RDM);
	{
		std::lock_guard g(r.b.mtx);
		EXPECT_EQ(r.b.enable_locked(), -FI_ENOAV);
	}
	fi_info *mi = fi_dupinfo(info);
	mi->ep_attr->type = FI_EP_MSG;
	m.b.init(&m.ep.fid, &fake_prov, wu::prov::domain_of(env.domain), mi, {});
	EXPECT_EQ(m.b.bind(&av->fid, 0), -FI_EINVAL); /* no AV for MSG */
	{
		std::lock_guard g(m.b.mtx);
		EXPECT_EQ(m.b.enable_locked(), -FI_ENOEQ);
	}
	ASSERT_EQ(m.b.bind(&env.eq->fid, 0), 0);
	{
		std::lock_guard g(m.b.mtx);
		EXPECT_EQ(m.b.enable_locked(), 0);
	}
	m.b.unbind_all();
	fi_freeinfo(mi);
}

TEST_F(base_test, ops_flags_and_selective_completion)
{
	fake_ep e;
	init(e);
	ep_base &b = e.b;
	uint64_t fl = FI_TRANSMIT | FI_COMPLETION;
	ASSERT_EQ(b.ops_flag(FI_SETOPSFLAG, &fl), 0);
	fl = FI_TRANSMIT;
	ASSERT_EQ(b.ops_flag(FI_GETOPSFLAG, &fl), 0);
	EXPECT_EQ(fl, uint64_t(FI_COMPLETION));
	EXPECT_EQ(b.tx_flags(), uint64_t(FI_COMPLETION));
	fl = 0;
	EXPECT_EQ(b.ops_flag(FI_GETOPSFLAG, &fl), -FI_EINVAL); /* neither direction */
	EXPECT_EQ(b.ops_flag(FI_GETOPSFLAG, nullptr), -FI_EINVAL);

	ASSERT_EQ(b.bind(&cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION), 0);
	ASSERT_EQ(b.bind(&cn->fid, FI_SEND), 0);
	EXPECT_FALSE(b.tx_wants(0));
	EXPECT_TRUE(b.tx_wants(FI_COMPLETION));
	int quiet, loud, bad;
	{
		std::lock_guard g(b.mtx);
		b.complete_tx(wu::prov::OP_SEND, true, &quiet, 0, false, 0);
		b.complete_tx(wu::prov::OP_SEND, true, &loud, 0, true, 0);
		b.complete_tx(wu::prov::OP_SEND, false, &bad, 0, false, FI_EIO);
	}
	b.flush();
	fi_cq_tagged_entry ent[4];
	ASSERT_EQ(fi_cq_read(cq, ent, 4), 1); /* the quiet one is counted only */
	EXPECT_EQ(ent[0].op_context, &loud);
	EXPECT_EQ(ent[0].flags, uint64_t(FI_SEND | FI_TAGGED));
	ASSERT_EQ(fi_cq_read(cq, ent, 4), -FI_EAVAIL);
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(err.op_context, &bad);
	EXPECT_EQ(err.err, FI_EIO);
	EXPECT_EQ(fi_cntr_read(cn), 2u);
	EXPECT_EQ(fi_cntr_readerr(cn), 1u);
	b.unbind_all();
}

TEST_F(base_test, a_cancelled_receive_completes_and_gives_its_room_back)
{
	fake_ep e;
	init(e);
	ASSERT_EQ(e.b.bind(&cq->fid, FI_RECV), 0);
	wu::prov::rx_ctx rx;
	rx.size = 1;
	char buf[8];
	iovec v{buf, sizeof buf};
	int ctx;
	wu::prov::msg_xfer x;
	x.iov = &v;
	x.count = 1;
	x.context = &ctx;
	x.tagged = true;
	x.tag = 5;
	EXPECT_EQ(wu::prov::check_recv(&v, 1, FI_MULTI_RECV, true), -FI_EINVAL);
	EXPECT_EQ(wu::prov::check_recv(nullptr, 1, 0, false), -FI_EINVAL);
	EXPECT_EQ(wu::prov::check_recv(&v, 1, 0, true), 0);
	{
		std::lock_guard g(e.b.mtx);
		wu::prov::post_recv(rx, &e.b, x);
		EXPECT_TRUE(rx.full());
		EXPECT_EQ(rx.cancel(&buf), nullptr);
		wu::prov::op *o = rx.cancel(&ctx);
		ASSERT_NE(o, nullptr);
		wu::prov::complete_canceled(e.b, o);
		EXPECT_FALSE(rx.full());
	}
	e.b.flush();
	fi_cq_tagged_entry ent;
	ASSERT_EQ(fi_cq_read(cq, &ent, 1), -FI_EAVAIL);
	fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECANCELED);
	EXPECT_EQ(err.flags, uint64_t(FI_RECV | FI_TAGGED));
	/* A receive still posted at close goes without a completion. */
	{
		std::lock_guard g(e.b.mtx);
		wu::prov::post_recv(rx, &e.b, x);
		rx.drain();
		EXPECT_EQ(rx.posted.load(), 0u);
	}
	e.b.unbind_all();
}
