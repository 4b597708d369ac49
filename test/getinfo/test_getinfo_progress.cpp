/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress modes in fi_getinfo: a template reporting manual progress that
 * its provider can also run automatically (getinfo::template_opts) serves a
 * hint asking for FI_PROGRESS_AUTO and reports AUTO; unspecified hints keep
 * the template's mode.  The matcher directly, then the tcp provider.  A
 * secondary cap the options call costly is reported only when asked for. */
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include <rdma/fabric.h>

#include "getinfo/filter.h"

namespace {

struct info_del {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using info_ptr = std::unique_ptr<fi_info, info_del>;

constexpr uint32_t V = FI_VERSION(1, 17);

info_ptr tmpl(fi_progress control, fi_progress data)
{
	info_ptr t(fi_allocinfo());
	t->caps = FI_MSG;
	t->ep_attr->type = FI_EP_RDM;
	t->domain_attr->threading = FI_THREAD_SAFE;
	t->domain_attr->control_progress = control;
	t->domain_attr->data_progress = data;
	return t;
}

info_ptr hint(fi_progress control, fi_progress data)
{
	info_ptr h(fi_allocinfo());
	h->domain_attr->control_progress = control;
	h->domain_attr->data_progress = data;
	return h;
}

/* meets() and, when it does, the narrowed copy's modes. */
bool match(const fi_info &t, const fi_info &h, const wu::getinfo::template_opts &o, fi_progress *control = nullptr,
	   fi_progress *data = nullptr, std::string *why = nullptr)
{
	std::string w;
	if (!wu::getinfo::meets(t, &h, V, &w, nullptr, o)) {
		if (why)
			*why = w;
		return false;
	}
	info_ptr out(fi_dupinfo(&t));
	wu::getinfo::narrow(*out, &h, V, o);
	if (control)
		*control = out->domain_attr->control_progress;
	if (data)
		*data = out->domain_attr->data_progress;
	return true;
}

} // namespace

TEST(getinfo_caps, a_costly_secondary_cap_is_reported_only_when_asked_for)
{
	auto t = tmpl(FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL);
	t->caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_MULTI_RECV;
	t->rx_attr->caps = t->caps;
	wu::getinfo::template_opts costly;
	costly.costly_caps = FI_SOURCE;
	auto narrowed = [&](const wu::getinfo::template_opts &o, uint64_t caps, uint64_t rx_caps) {
		auto h = hint(FI_PROGRESS_UNSPEC, FI_PROGRESS_UNSPEC);
		h->caps = caps;
		h->rx_attr->caps = rx_caps;
		info_ptr out(fi_dupinfo(t.get()));
		wu::getinfo::narrow(*out, h.get(), V, o);
		return std::pair{out->caps, out->rx_attr->caps};
	};
	/* Free secondary caps come unasked; the costly one does not. */
	auto [c, rx] = narrowed({}, FI_MSG, 0);
	EXPECT_EQ(c, FI_MSG | FI_SOURCE | FI_MULTI_RECV);
	std::tie(c, rx) = narrowed(costly, FI_MSG, 0);
	EXPECT_EQ(c, FI_MSG | FI_MULTI_RECV);
	EXPECT_FALSE(rx & FI_SOURCE);
	/* Asked for in caps or in rx_attr->caps: reported. */
	std::tie(c, rx) = narrowed(costly, FI_MSG | FI_SOURCE, 0);
	EXPECT_EQ(c, FI_MSG | FI_SOURCE | FI_MULTI_RECV);
	EXPECT_TRUE(rx & FI_SOURCE);
	std::tie(c, rx) = narrowed(costly, FI_MSG, FI_MSG | FI_SOURCE);
	EXPECT_TRUE(c & FI_SOURCE);
	EXPECT_TRUE(rx & FI_SOURCE);
}

TEST(getinfo_progress, manual_template_refuses_auto_without_the_option)
{
	auto t = tmpl(FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL);
	auto h = hint(FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO);
	std::string why;
	EXPECT_FALSE(match(*t, *h, {}, nullptr, nullptr, &why));
	EXPECT_NE(why.find("data_progress"), std::string::npos) << why;
}

TEST(getinfo_progress, auto_on_request_serves_auto_and_reports_it)
{
	auto t = tmpl(FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL);
	wu::getinfo::template_opts o;
	o.auto_data_progress = true;
	fi_progress c{}, d{};
	auto h = hint(FI_PROGRESS_AUTO, FI_PROGRESS_AUTO);
	ASSERT_TRUE(match(*t, *h, o, &c, &d));
	EXPECT_EQ(c, FI_PROGRESS_AUTO);
	EXPECT_EQ(d, FI_PROGRESS_AUTO);
	/* Unspecified: the template's (manual) mode. */
	h = hint(FI_PROGRESS_UNSPEC, FI_PROGRESS_UNSPEC);
	ASSERT_TRUE(match(*t, *h, o, &c, &d));
	EXPECT_EQ(c, FI_PROGRESS_AUTO);
	EXPECT_EQ(d, FI_PROGRESS_MANUAL);
	h = hint(FI_PROGRESS_MANUAL, FI_PROGRESS_MANUAL);
	ASSERT_TRUE(match(*t, *h, o, &c, &d));
	EXPECT_EQ(d, FI_PROGRESS_MANUAL);
}

TEST(getinfo_progress, each_option_covers_only_its_own_mode)
{
	auto t = tmpl(FI_PROGRESS_MANUAL, FI_PROGRESS_MANUAL);
	wu::getinfo::template_opts data_only;
	data_only.auto_data_progress = true;
	std::string why;
	auto h = hint(FI_PROGRESS_AUTO, FI_PROGRESS_UNSPEC);
	EXPECT_FALSE(match(*t, *h, data_only, nullptr, nullptr, &why));
	EXPECT_NE(why.find("control_progress"), std::string::npos) << why;
	wu::getinfo::template_opts control_only;
	control_only.auto_control_progress = true;
	fi_progress c{}, d{};
	ASSERT_TRUE(match(*t, *h, control_only, &c, &d));
	EXPECT_EQ(c, FI_PROGRESS_AUTO);
	EXPECT_EQ(d, FI_PROGRESS_MANUAL);
	h = hint(FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO);
	EXPECT_FALSE(match(*t, *h, control_only));
}

TEST(getinfo_progress, auto_template_serves_every_request)
{
	auto t = tmpl(FI_PROGRESS_AUTO, FI_PROGRESS_AUTO);
	for (fi_progress p : {FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL}) {
		auto h = hint(p, p);
		EXPECT_TRUE(match(*t, *h, {})) << p;
	}
}

/* The tcp provider through the public API. */
namespace {

int tcp_getinfo(fi_ep_type type, fi_progress control, fi_progress data, info_ptr &out)
{
	info_ptr h(fi_allocinfo());
	h->fabric_attr->prov_name = strdup("tcp");
	h->ep_attr->type = type;
	h->domain_attr->control_progress = control;
	h->domain_attr->data_progress = data;
	fi_info *i = nullptr;
	int r = fi_getinfo(V, nullptr, nullptr, 0, h.get(), &i);
	out.reset(i);
	return r;
}

} // namespace

TEST(getinfo_progress, tcp_default_is_manual_data_auto_control)
{
	for (fi_ep_type type : {FI_EP_RDM, FI_EP_MSG}) {
		info_ptr res;
		ASSERT_EQ(tcp_getinfo(type, FI_PROGRESS_UNSPEC, FI_PROGRESS_UNSPEC, res), 0);
		for (fi_info *i = res.get(); i; i = i->next) {
			EXPECT_EQ(i->domain_attr->data_progress, FI_PROGRESS_MANUAL);
			EXPECT_EQ(i->domain_attr->control_progress, FI_PROGRESS_AUTO);
		}
	}
	/* No hints at all: the same. */
	fi_info *all = nullptr;
	ASSERT_EQ(fi_getinfo(V, nullptr, nullptr, 0, nullptr, &all), 0);
	info_ptr keep(all);
	for (fi_info *i = all; i; i = i->next)
		if (strcmp(i->fabric_attr->prov_name, "tcp") == 0) {
			EXPECT_EQ(i->domain_attr->data_progress, FI_PROGRESS_MANUAL);
		}
}

TEST(getinfo_progress, tcp_offers_auto_when_asked)
{
	for (fi_ep_type type : {FI_EP_RDM, FI_EP_MSG}) {
		info_ptr res;
		ASSERT_EQ(tcp_getinfo(type, FI_PROGRESS_AUTO, FI_PROGRESS_AUTO, res), 0);
		for (fi_info *i = res.get(); i; i = i->next) {
			EXPECT_EQ(i->domain_attr->data_progress, FI_PROGRESS_AUTO);
			EXPECT_EQ(i->domain_attr->control_progress, FI_PROGRESS_AUTO);
		}
		ASSERT_EQ(tcp_getinfo(type, FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO, res), 0);
		EXPECT_EQ(res->domain_attr->data_progress, FI_PROGRESS_AUTO);
		ASSERT_EQ(tcp_getinfo(type, FI_PROGRESS_MANUAL, FI_PROGRESS_MANUAL, res), 0);
		EXPECT_EQ(res->domain_attr->data_progress, FI_PROGRESS_MANUAL);
		EXPECT_EQ(res->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	}
}
