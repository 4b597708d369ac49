/* SPDX-License-Identifier: BSD-3-Clause */
/* What a program built against libfabric 2.6 relies on, on every provider:
 * the API version answers, the 2.x size options report the limits the data
 * path enforces (and setting them is refused with -FI_EOPNOTSUPP),
 * FI_PROGRESS_CONTROL_UNIFIED is served with manual data progress only,
 * bit 48 of a 1.x caller's hints is FI_VARIABLE_MSG (nothing offers it),
 * FI_MR_DMABUF is refused, fi_mr_attr is read only up to the caller's
 * version's size, profiling and FI_GET_FD answer -FI_ENOSYS, FI_AV_MAP
 * still opens. */
#include "prov_fixture.h"

#include <cstring>
#include <vector>

#include <rdma/fi_profile.h>

using namespace wu::test;

namespace {

constexpr uint32_t V26 = FI_VERSION(2, 6);

struct api26 : provider_test {};

/* fi_getinfo for prov at api with edit() applied to the hints. */
template <class F>
int getinfo_at(const std::string &prov, uint32_t api, F edit, fi_info **out = nullptr)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov.c_str());
	hints->ep_attr->type = FI_EP_RDM;
	edit(hints);
	fi_info *got = nullptr;
	int r = fi_getinfo(api, nullptr, nullptr, 0, hints, &got);
	fi_freeinfo(hints);
	if (out)
		*out = got;
	else
		fi_freeinfo(got);
	return r;
}

size_t size_opt(fid_ep *ep, int name, int *ret)
{
	size_t v = 0, len = sizeof v;
	*ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, name, &v, &len);
	return v;
}

TEST_P(api26, version_answers)
{
	EXPECT_EQ(fi_version(), FI_VERSION(2, 6));
	fi_info *got = nullptr;
	ASSERT_EQ(getinfo_at(prov(), V26, [](fi_info *) {}, &got), 0);
	EXPECT_EQ(got->fabric_attr->prov_version, FI_VERSION(206, 0));
	EXPECT_EQ(got->fabric_attr->api_version, V26);
	fi_freeinfo(got);
	EXPECT_EQ(getinfo_at(prov(), FI_VERSION(2, 7), [](fi_info *) {}), -FI_ENOSYS);
}

TEST_P(api26, inject_and_max_size_are_the_enforced_limits)
{
	rdm_pair p(prov(), FI_MSG | FI_TAGGED);
	int r;
	size_t inject = size_opt(p.a.ep, FI_OPT_INJECT_MSG_SIZE, &r);
	ASSERT_EQ(r, 0);
	ASSERT_GT(inject, 0u);
	EXPECT_EQ(size_opt(p.a.ep, FI_OPT_INJECT_TAGGED_SIZE, &r), inject);
	EXPECT_EQ(r, 0);
	size_t max = size_opt(p.a.ep, FI_OPT_MAX_MSG_SIZE, &r);
	EXPECT_EQ(r, 0);
	EXPECT_GE(max, inject);
	EXPECT_LE(max, p.env.info->ep_attr->max_msg_size);
	/* the limit reported is the one enforced: one byte more is refused */
	std::vector<char> buf(inject + 1, 'x');
	EXPECT_NE(fi_inject(p.a.ep, buf.data(), inject + 1, p.a_to_b), 0);
	ssize_t s;
	do {
		s = fi_inject(p.a.ep, buf.data(), inject, p.a_to_b);
		if (s == -FI_EAGAIN)
			spin({p.a.tx, p.b.rx}, 10);
	} while (s == -FI_EAGAIN);
	EXPECT_EQ(s, 0);
	fi_cq_tagged_entry e{};
	ASSERT_EQ(fi_recv(p.b.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(p.wait_rx(p.b, e), 1);
	EXPECT_EQ(e.len, inject);
	/* a short optlen is told the size */
	size_t small = 0, len = 1;
	EXPECT_EQ(fi_getopt(&p.a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_INJECT_MSG_SIZE, &small, &len),
		  -FI_ETOOSMALL);
	EXPECT_EQ(len, sizeof(size_t));
}

TEST_P(api26, rma_limits_only_with_rma)
{
	prov_env env(prov(), FI_EP_RDM, FI_MSG | (offers(prov(), FI_RMA) ? FI_RMA : 0));
	rdm_ep a(env);
	int r;
	size_t v = size_opt(a.ep, FI_OPT_INJECT_RMA_SIZE, &r);
	if (env.info->caps & FI_RMA) {
		EXPECT_EQ(r, 0);
		EXPECT_EQ(v, size_opt(a.ep, FI_OPT_INJECT_MSG_SIZE, &r));
	} else {
		EXPECT_EQ(r, -FI_ENOPROTOOPT);
	}
}

TEST_P(api26, setting_a_limit_is_refused)
{
	prov_env env(prov(), FI_EP_RDM, FI_MSG);
	rdm_ep a(env);
	int r;
	size_t before = size_opt(a.ep, FI_OPT_MAX_MSG_SIZE, &r);
	for (int name : {FI_OPT_MAX_MSG_SIZE, FI_OPT_INJECT_MSG_SIZE, FI_OPT_INJECT_RMA_SIZE}) {
		size_t v = 16;
		EXPECT_EQ(fi_setopt(&a.ep->fid, FI_OPT_ENDPOINT, name, &v, sizeof v), -FI_EOPNOTSUPP)
			<< "option " << name;
	}
	EXPECT_EQ(size_opt(a.ep, FI_OPT_MAX_MSG_SIZE, &r), before);
}

TEST_P(api26, control_unified_needs_manual_data_progress)
{
	fi_info *got = nullptr;
	ASSERT_EQ(getinfo_at(prov(), V26,
			     [](fi_info *h) { h->domain_attr->control_progress = FI_PROGRESS_CONTROL_UNIFIED; },
			     &got),
		  0);
	EXPECT_EQ(got->domain_attr->control_progress, FI_PROGRESS_CONTROL_UNIFIED);
	EXPECT_EQ(got->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	/* the domain opens with it */
	fid_fabric *fab = nullptr;
	fid_domain *dom = nullptr;
	open_fabric_domain(got, &fab, &dom);
	EXPECT_NE(dom, nullptr);
	close_fabric_domain(fab, dom);
	fi_freeinfo(got);
	EXPECT_EQ(getinfo_at(prov(), V26,
			     [](fi_info *h) {
				     h->domain_attr->control_progress = FI_PROGRESS_CONTROL_UNIFIED;
				     h->domain_attr->data_progress = FI_PROGRESS_AUTO;
			     }),
		  -FI_ENODATA);
	/* a 1.x caller has no such value */
	EXPECT_EQ(getinfo_at(prov(), FI_VERSION(1, 17),
			     [](fi_info *h) { h->domain_attr->control_progress = FI_PROGRESS_CONTROL_UNIFIED; }),
		  -FI_ENODATA);
	/* it is a control mode only */
	EXPECT_EQ(getinfo_at(prov(), V26,
			     [](fi_info *h) { h->domain_attr->data_progress = FI_PROGRESS_CONTROL_UNIFIED; }),
		  -FI_ENODATA);
}

TEST_P(api26, bit48_is_variable_msg_for_one_x_callers)
{
	const uint64_t bit48 = 1ULL << 48;
	EXPECT_EQ(getinfo_at(prov(), FI_VERSION(1, 17), [&](fi_info *h) { h->caps = FI_MSG | bit48; }),
		  -FI_ENODATA);
	EXPECT_EQ(getinfo_at(prov(), FI_VERSION(1, 17), [&](fi_info *h) { h->rx_attr->caps = bit48; }),
		  -FI_ENODATA);
	EXPECT_EQ(getinfo_at(prov(), FI_VERSION(1, 17), [&](fi_info *h) { h->caps = FI_MSG; }), 0);
}

TEST_P(api26, max_cntr_value_hints_from_two_five_on)
{
	fi_info *got = nullptr;
	ASSERT_EQ(getinfo_at(prov(), V26, [](fi_info *) {}, &got), 0);
	EXPECT_EQ(got->domain_attr->max_cntr_value, UINT64_MAX);
	EXPECT_EQ(got->domain_attr->max_err_cntr_value, UINT64_MAX);
	fi_freeinfo(got);
	EXPECT_EQ(getinfo_at(prov(), V26, [](fi_info *h) { h->domain_attr->max_cntr_value = UINT64_MAX; }),
		  0);
}

TEST_P(api26, dmabuf_is_refused)
{
	prov_env env(prov(), V26);
	ASSERT_NE(env.domain, nullptr);
	fi_mr_dmabuf db{};
	db.fd = 0;
	db.len = 4096;
	fi_mr_attr a{};
	a.dmabuf = &db;
	a.iov_count = 1;
	a.access = FI_SEND | FI_RECV;
	fid_mr *mr = nullptr;
	EXPECT_EQ(fi_mr_regattr(env.domain, &a, FI_MR_DMABUF, &mr), -FI_EOPNOTSUPP);
	EXPECT_EQ(mr, nullptr);
}

/* An 80-byte (1.17) fi_mr_attr with a guard pattern where 2.x appends
 * hmem_data, page_size, base_mr, sub_mr_cnt. */
struct old_attr {
	alignas(fi_mr_attr) unsigned char bytes[sizeof(fi_mr_attr)];
	iovec iov;
	old_attr(void *buf, size_t len)
	{
		memset(bytes, 0xa5, sizeof bytes);
		fi_mr_attr a{};
		iov = {buf, len};
		a.mr_iov = &iov;
		a.iov_count = 1;
		a.access = FI_SEND | FI_RECV;
		a.requested_key = 0x1234;
		memcpy(bytes, &a, 80);
	}
	const fi_mr_attr *attr() const { return reinterpret_cast<const fi_mr_attr *>(bytes); }
	bool guard_intact() const
	{
		for (size_t i = 80; i < sizeof bytes; i++)
			if (bytes[i] != 0xa5)
				return false;
		return true;
	}
};

TEST_P(api26, mr_attr_read_only_to_the_callers_size)
{
	static_assert(sizeof(fi_mr_attr) == 112);
	std::vector<char> buf(4096);
	{
		prov_env env(prov(), FI_VERSION(1, 17));
		ASSERT_NE(env.domain, nullptr);
		old_attr o(buf.data(), buf.size());
		fid_mr *mr = nullptr;
		EXPECT_EQ(fi_mr_regattr(env.domain, o.attr(), 0, &mr), 0);
		EXPECT_TRUE(o.guard_intact());
		if (mr) {
			EXPECT_EQ(fi_close(&mr->fid), 0);
		}
	}
	{
		/* a 2.6 caller's struct has them: the pattern is a base_mr */
		prov_env env(prov(), V26);
		ASSERT_NE(env.domain, nullptr);
		old_attr o(buf.data(), buf.size());
		fid_mr *mr = nullptr;
		EXPECT_EQ(fi_mr_regattr(env.domain, o.attr(), 0, &mr), -FI_ENOSYS);
		EXPECT_EQ(mr, nullptr);
	}
}

TEST_P(api26, profile_and_get_fd_answer_enosys)
{
	prov_env env(prov(), FI_EP_RDM, FI_MSG);
	rdm_ep a(env);
	fid_profile *pf = nullptr;
	EXPECT_EQ(fi_profile_open(&a.ep->fid, 0, &pf, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_profile_open(&env.domain->fid, 0, &pf, nullptr), -FI_ENOSYS);
	EXPECT_EQ(pf, nullptr);
	int fd = -1;
	EXPECT_EQ(fi_control(&a.ep->fid, FI_GET_FD, &fd), -FI_ENOSYS);
	EXPECT_EQ(fi_control(&a.rx->fid, FI_GET_FD, &fd), -FI_ENOSYS);
	EXPECT_EQ(fd, -1);
}

TEST_P(api26, av_map_still_opens)
{
	prov_env env(prov(), V26);
	ASSERT_NE(env.domain, nullptr);
	fi_av_attr aa{};
	aa.type = FI_AV_MAP;
	fid_av *av = nullptr;
	EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
	if (av) {
		EXPECT_EQ(fi_close(&av->fid), 0);
	}
}

WU_PROVIDER_SUITE(api26)

} // namespace
