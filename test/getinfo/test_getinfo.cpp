/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo(3) against the built-in tcp provider and fake providers:
 * hints as filters, capabilities, modes, addresses, provider selection,
 * and the explanation logged when nothing matches. */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "../util/fake_provider.h"
#include "core/log.h"
#include "prov/common/cq.h"

namespace {

struct info_del {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using info_ptr = std::unique_ptr<fi_info, info_del>;

constexpr uint32_t V = FI_VERSION(1, 17);

info_ptr hints_for(fi_ep_type type = FI_EP_UNSPEC, uint64_t caps = 0)
{
	info_ptr h(fi_allocinfo());
	h->ep_attr->type = type;
	h->caps = caps;
	h->fabric_attr->prov_name = strdup("tcp");
	return h;
}

int get(const char *node, const char *service, uint64_t flags, const fi_info *hints, info_ptr &out)
{
	fi_info *i = nullptr;
	int ret = fi_getinfo(V, node, service, flags, hints, &i);
	out.reset(i);
	return ret;
}

size_t count(const fi_info *i)
{
	size_t n = 0;
	for (; i; i = i->next)
		n++;
	return n;
}

} // namespace

TEST(fi_getinfo_tcp, null_hints_list_rdm_first)
{
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, nullptr, res), 0);
	ASSERT_TRUE(res);
	EXPECT_EQ(res->ep_attr->type, FI_EP_RDM) << "best entries first: RDM before MSG";
	bool saw_lo = false, saw_msg = false, past_tcp = false, past_shm = false;
	EXPECT_STREQ(res->fabric_attr->prov_name, "wireup") << "the multiplexing RDM provider first";
	fi_info *first = res.get();
	while (first && strcmp(first->fabric_attr->prov_name, "wireup") == 0) {
		EXPECT_EQ(first->ep_attr->type, FI_EP_RDM);
		first = first->next;
	}
	for (fi_info *i = first; i; i = i->next) {
		/* wireup's entries first, then tcp's; then shm's (the node-local
		 * provider); ucx's, when built, last. */
		past_tcp |= strcmp(i->fabric_attr->prov_name, "tcp") != 0;
		if (past_tcp) {
			past_shm |= strcmp(i->fabric_attr->prov_name, "shm") != 0;
			EXPECT_STREQ(i->fabric_attr->prov_name, past_shm ? "ucx" : "shm");
			continue;
		}
		EXPECT_STREQ(i->fabric_attr->prov_name, "tcp");
		EXPECT_EQ(i->fabric_attr->api_version, V);
		EXPECT_NE(i->fabric_attr->name, nullptr);
		saw_lo |= i->domain_attr->name && strcmp(i->domain_attr->name, "lo") == 0;
		saw_msg |= i->ep_attr->type == FI_EP_MSG;
		EXPECT_TRUE(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6);
		ASSERT_NE(i->nic, nullptr);
		EXPECT_STREQ(i->nic->device_attr->name, i->domain_attr->name);
	}
	EXPECT_TRUE(saw_lo);
	EXPECT_TRUE(saw_msg);
}

/* What an MPI library's OFI MTL does at MPI_Init with no provider named
 * (every provider's getinfo, the first RDM entry's endpoint enabled) maps
 * neither UCX (loaded only by a ucx domain) nor OpenSSL's libcrypto (SHA-256
 * is built in): each cost every rank ~1.5 MB of RSS and start-up time. */
TEST(fi_getinfo_tcp, mtl_start_maps_no_ucx_or_libcrypto)
{
	info_ptr h(fi_allocinfo());
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED;
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	fid_fabric *fab = nullptr;
	fid_domain *dom = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_fabric(res->fabric_attr, &fab, nullptr), 0);
	ASSERT_EQ(fi_domain(fab, res.get(), &dom, nullptr), 0);
	fi_av_attr aa{};
	aa.type = FI_AV_MAP;
	ASSERT_EQ(fi_av_open(dom, &aa, &av, nullptr), 0);
	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	ASSERT_EQ(fi_cq_open(dom, &ca, &cq, nullptr), 0);
	ASSERT_EQ(fi_endpoint(dom, res.get(), &ep, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
	ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV), 0);
	ASSERT_EQ(fi_enable(ep), 0);
	std::string maps;
	if (FILE *f = fopen("/proc/self/maps", "r")) {
		char line[4096];
		while (fgets(line, sizeof line, f))
			maps += line;
		fclose(f);
	}
	ASSERT_FALSE(maps.empty());
	for (const char *lib : {"/libucp.so", "/libucs.so", "/libuct.so", "/libcrypto.so"})
		EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped";
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&av->fid), 0);
	EXPECT_EQ(fi_close(&dom->fid), 0);
	EXPECT_EQ(fi_close(&fab->fid), 0);
}

TEST(fi_getinfo_tcp, ep_type_filters)
{
	info_ptr res;
	auto h = hints_for(FI_EP_MSG);
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next)
		EXPECT_EQ(i->ep_attr->type, FI_EP_MSG);
	h->ep_attr->type = FI_EP_DGRAM;
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, primary_caps_only_when_asked_secondary_when_free)
{
	info_ptr res;
	auto h = hints_for(FI_EP_RDM, FI_TAGGED);
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	EXPECT_TRUE(res->caps & FI_TAGGED);
	EXPECT_FALSE(res->caps & FI_RMA) << "FI_RMA was not asked for";
	EXPECT_FALSE(res->caps & FI_MSG);
	EXPECT_TRUE(res->caps & FI_LOCAL_COMM) << "secondary caps are reported";
	EXPECT_TRUE(res->caps & FI_REMOTE_COMM);
	EXPECT_FALSE(res->tx_attr->caps & FI_RMA);
}

TEST(fi_getinfo_tcp, unmet_caps_are_enodata)
{
	info_ptr res;
	auto h = hints_for(FI_EP_RDM, FI_COLLECTIVE);
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
	EXPECT_FALSE(res);
}

/* fi_stx_context is not implemented: getinfo must not offer shared
 * transmit contexts it cannot open (issue 12); fi_srx_context is
 * (issue 13), so FI_SHARED_CONTEXT receive hints match. */
TEST(fi_getinfo_tcp, shared_context_hints)
{
	info_ptr res;
	auto h = hints_for(FI_EP_RDM, FI_TAGGED);
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		EXPECT_EQ(i->domain_attr->max_ep_stx_ctx, 0u);
		EXPECT_GT(i->domain_attr->max_ep_srx_ctx, 0u);
	}
	auto t = hints_for(FI_EP_UNSPEC, FI_TAGGED);
	t->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	EXPECT_EQ(get(nullptr, nullptr, 0, t.get(), res), -FI_ENODATA);
	EXPECT_FALSE(res);
	auto r = hints_for(FI_EP_UNSPEC, FI_TAGGED);
	r->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	EXPECT_EQ(get(nullptr, nullptr, 0, r.get(), res), 0);
	EXPECT_TRUE(res);
	auto d = hints_for(FI_EP_RDM, FI_TAGGED);
	d->domain_attr->max_ep_stx_ctx = 1;
	EXPECT_EQ(get(nullptr, nullptr, 0, d.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, mode_bits_cleared_when_not_needed)
{
	info_ptr res;
	auto h = hints_for(FI_EP_RDM, FI_TAGGED);
	h->mode = ~0ull;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	EXPECT_EQ(res->mode, 0u);
}

TEST(fi_getinfo_tcp, open_mpi_mtl_hints_match)
{
	/* What Open MPI 4.1's OFI MTL asks (abi.md). */
	auto h = hints_for(FI_EP_RDM, FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = nullptr;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->cq_data_size = 4;
	h->domain_attr->mr_mode = FI_MR_UNSPEC;
	info_ptr res;
	fi_info *i = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 5), nullptr, nullptr, 0, h.get(), &i), 0);
	res.reset(i);
	EXPECT_EQ(res->domain_attr->threading, FI_THREAD_DOMAIN);
	EXPECT_EQ(res->domain_attr->av_type, FI_AV_MAP);
	EXPECT_EQ(res->tx_attr->op_flags, FI_COMPLETION);
	EXPECT_TRUE(res->tx_attr->msg_order & FI_ORDER_SAS);
	ASSERT_NE(res->nic, nullptr) << "Open MPI picks NICs from fi_info->nic";
}

/* MPICH 4.0's first fi_getinfo passes FI_VERSION(0,0); libfabric accepts
 * any version up to its own and answers in that version's terms. */
TEST(fi_getinfo_tcp, version_0_0_is_accepted_as_libfabric_does)
{
	for (uint32_t v : {FI_VERSION(0, 0), FI_VERSION(1, 4)}) {
		auto h = hints_for(FI_EP_RDM);
		fi_info *i = nullptr;
		ASSERT_EQ(fi_getinfo(v, nullptr, nullptr, 0, h.get(), &i), 0) << std::hex << v;
		info_ptr res(i);
		ASSERT_TRUE(res);
		for (fi_info *p = res.get(); p; p = p->next) {
			EXPECT_EQ(p->fabric_attr->api_version, v);
			/* Before 1.5 only basic/scalable exist; tcp needs nothing. */
			EXPECT_EQ(p->domain_attr->mr_mode, FI_MR_SCALABLE);
		}
		fid_fabric *fab = nullptr;
		ASSERT_EQ(fi_fabric(res->fabric_attr, &fab, nullptr), 0);
		fid_domain *dom = nullptr;
		ASSERT_EQ(fi_domain(fab, res.get(), &dom, nullptr), 0);
		/* An old caller's fi_cq_err_entry ends at 80 bytes (before 1.20):
		 * a fabric opened from this info must not write past it. */
		fi_cq_attr ca{};
		ca.wait_obj = FI_WAIT_NONE;
		fid_cq *cq = nullptr;
		ASSERT_EQ(fi_cq_open(dom, &ca, &cq, nullptr), 0);
		ASSERT_EQ(wu::cq::post_error(cq, wu::cq::completion{}, FI_EIO, 0, 0), 0);
		unsigned char buf[sizeof(fi_cq_err_entry) + 16];
		memset(buf, 0xab, sizeof buf);
		ASSERT_EQ(fi_cq_readerr(cq, reinterpret_cast<fi_cq_err_entry *>(buf), 0), 1);
		for (size_t k = 80; k < sizeof buf; k++)
			ASSERT_EQ(buf[k], 0xab) << "byte " << k << " written, version " << std::hex << v;
		EXPECT_EQ(fi_close(&cq->fid), 0);
		EXPECT_EQ(fi_close(&dom->fid), 0);
		EXPECT_EQ(fi_close(&fab->fid), 0);
	}
	fi_info *i = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION + 1), nullptr, nullptr, 0,
			     nullptr, &i),
		  -FI_ENOSYS)
		<< "only a version newer than ours is refused";
}

TEST(fi_getinfo_tcp, node_and_service_give_the_destination)
{
	auto h = hints_for(FI_EP_RDM);
	h->addr_format = FI_SOCKADDR_IN;
	info_ptr res;
	ASSERT_EQ(get("127.0.0.1", "4711", 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		ASSERT_EQ(i->dest_addrlen, sizeof(sockaddr_in));
		auto *sin = static_cast<sockaddr_in *>(i->dest_addr);
		EXPECT_EQ(ntohs(sin->sin_port), 4711);
		EXPECT_EQ(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	}
}

TEST(fi_getinfo_tcp, fi_source_selects_the_interface)
{
	auto h = hints_for(FI_EP_MSG);
	h->addr_format = FI_SOCKADDR_IN;
	info_ptr res;
	ASSERT_EQ(get("127.0.0.1", "4712", FI_SOURCE, h.get(), res), 0);
	EXPECT_EQ(count(res.get()), 1u);
	EXPECT_STREQ(res->domain_attr->name, "lo");
	auto *sin = static_cast<sockaddr_in *>(res->src_addr);
	EXPECT_EQ(ntohs(sin->sin_port), 4712);
	EXPECT_EQ(res->dest_addr, nullptr);
}

TEST(fi_getinfo_tcp, service_alone_is_a_local_port)
{
	auto h = hints_for(FI_EP_MSG);
	h->addr_format = FI_SOCKADDR_IN;
	info_ptr res;
	ASSERT_EQ(get(nullptr, "4713", 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		EXPECT_EQ(ntohs(static_cast<sockaddr_in *>(i->src_addr)->sin_port), 4713);
		EXPECT_EQ(i->dest_addr, nullptr);
	}
}

TEST(fi_getinfo_tcp, numerichost_refuses_names_and_bad_services)
{
	auto h = hints_for(FI_EP_RDM);
	info_ptr res;
	EXPECT_EQ(get("localhost", "1", FI_NUMERICHOST, h.get(), res), -FI_ENODATA);
	EXPECT_EQ(get("127.0.0.1", "99999", 0, h.get(), res), -FI_ENODATA);
	EXPECT_EQ(get("127.0.0.1", "12ab", 0, h.get(), res), -FI_ENODATA);
	EXPECT_EQ(get("300.1.1.1", "1", FI_NUMERICHOST, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, fi_source_without_node_or_service_is_einval)
{
	info_ptr res;
	EXPECT_EQ(get(nullptr, nullptr, FI_SOURCE, nullptr, res), -FI_EINVAL);
}

TEST(fi_getinfo_tcp, addr_str_output_and_uri_node)
{
	auto h = hints_for(FI_EP_RDM);
	h->addr_format = FI_ADDR_STR;
	info_ptr res;
	ASSERT_EQ(get("fi_sockaddr_in://127.0.0.1:7471", nullptr, 0, h.get(), res), 0);
	EXPECT_EQ(res->addr_format, (uint32_t)FI_ADDR_STR);
	ASSERT_NE(res->dest_addr, nullptr);
	EXPECT_STREQ(static_cast<char *>(res->dest_addr), "fi_sockaddr_in://127.0.0.1:7471");
	EXPECT_EQ(res->dest_addrlen, strlen("fi_sockaddr_in://127.0.0.1:7471") + 1);
	ASSERT_NE(res->src_addr, nullptr);
	EXPECT_EQ(strncmp(static_cast<char *>(res->src_addr), "fi_sockaddr_in", 14), 0);
	EXPECT_EQ(get("fi_sockaddr_in://127.0.0.1:99999", nullptr, 0, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, hints_src_addr_is_used)
{
	auto h = hints_for(FI_EP_MSG);
	h->addr_format = FI_SOCKADDR_IN;
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(5555);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->src_addr = malloc(sizeof(sin));
	memcpy(h->src_addr, &sin, sizeof(sin));
	h->src_addrlen = sizeof(sin);
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	EXPECT_EQ(0, memcmp(res->src_addr, &sin, sizeof(sin)));
	h->src_addrlen = 3;
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
}

/* FI_SOCKADDR is a generic sockaddr: any family, as libfabric's tcp. */
TEST(fi_getinfo_tcp, fi_sockaddr_means_any_socket_address_family)
{
	auto h = hints_for(FI_EP_RDM);
	h->addr_format = FI_SOCKADDR;
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	bool saw_in = false;
	for (fi_info *i = res.get(); i; i = i->next) {
		/* Each entry still says which family it is. */
		EXPECT_TRUE(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6);
		saw_in |= i->addr_format == FI_SOCKADDR_IN;
	}
	EXPECT_TRUE(saw_in);

	ASSERT_EQ(get("127.0.0.1", "4711", 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		ASSERT_EQ(i->addr_format, (uint32_t)FI_SOCKADDR_IN);
		ASSERT_EQ(i->dest_addrlen, sizeof(sockaddr_in));
		EXPECT_EQ(ntohs(static_cast<sockaddr_in *>(i->dest_addr)->sin_port), 4711);
	}

	/* A hint address picks the entries of its own family. */
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(5555);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->src_addr = malloc(sizeof(sin));
	memcpy(h->src_addr, &sin, sizeof(sin));
	h->src_addrlen = sizeof(sin);
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		ASSERT_EQ(i->addr_format, (uint32_t)FI_SOCKADDR_IN);
		EXPECT_EQ(0, memcmp(i->src_addr, &sin, sizeof(sin)));
	}
	h->src_addrlen = 1;
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, domain_name_hint)
{
	auto h = hints_for();
	h->domain_attr->name = strdup("lo");
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	for (fi_info *i = res.get(); i; i = i->next)
		EXPECT_STREQ(i->domain_attr->name, "lo");
	free(h->domain_attr->name);
	h->domain_attr->name = strdup("no-such-if0");
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, output_attrs_at_least_requested)
{
	auto h = hints_for(FI_EP_RDM);
	h->tx_attr->size = 100;
	h->rx_attr->iov_limit = 2;
	h->domain_attr->cq_data_size = 8;
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	EXPECT_GE(res->tx_attr->size, 100u);
	EXPECT_GE(res->rx_attr->iov_limit, 2u);
	EXPECT_GE(res->domain_attr->cq_data_size, 8u);
	h->tx_attr->size = 1u << 30;
	EXPECT_EQ(get(nullptr, nullptr, 0, h.get(), res), -FI_ENODATA);
}

TEST(fi_getinfo_tcp, layered_name_reaches_tcp)
{
	auto h = hints_for(FI_EP_RDM);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), res), 0);
	EXPECT_STREQ(res->fabric_attr->prov_name, "tcp");
}

TEST(fi_getinfo_providers, prov_attr_only_one_entry_per_provider)
{
	wu::test::scoped_provider a("fake_a");
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, FI_PROV_ATTR_ONLY, nullptr, res), 0);
	int tcp = 0, fa = 0;
	for (fi_info *i = res.get(); i; i = i->next) {
		tcp += strcmp(i->fabric_attr->prov_name, "tcp") == 0;
		fa += strcmp(i->fabric_attr->prov_name, "fake_a") == 0;
		if (strcmp(i->fabric_attr->prov_name, "fake_a") == 0) {
			EXPECT_EQ(i->fabric_attr->prov_version, FI_VERSION(1, 0));
		}
	}
	EXPECT_EQ(tcp, 1);
	EXPECT_EQ(fa, 1);
}

TEST(fi_getinfo_providers, fi_provider_env_includes_and_excludes)
{
	wu::test::scoped_provider a("fake_a"), b("fake_b");
	info_ptr res;
	setenv("FI_PROVIDER", "fake_b", 1);
	ASSERT_EQ(get(nullptr, nullptr, FI_PROV_ATTR_ONLY, nullptr, res), 0);
	EXPECT_EQ(count(res.get()), 1u);
	EXPECT_STREQ(res->fabric_attr->prov_name, "fake_b");
	setenv("FI_PROVIDER", "^fake_b,tcp", 1);
	ASSERT_EQ(get(nullptr, nullptr, FI_PROV_ATTR_ONLY, nullptr, res), 0);
	for (fi_info *i = res.get(); i; i = i->next) {
		EXPECT_STRNE(i->fabric_attr->prov_name, "fake_b");
		EXPECT_STRNE(i->fabric_attr->prov_name, "tcp");
	}
	unsetenv("FI_PROVIDER");
}

TEST(fi_getinfo_providers, order_follows_registration)
{
	wu::test::scoped_provider first("fake_first", true), last("fake_last");
	info_ptr res;
	ASSERT_EQ(get(nullptr, nullptr, 0, nullptr, res), 0);
	EXPECT_STREQ(res->fabric_attr->prov_name, "fake_first");
	const fi_info *i = res.get();
	while (i->next)
		i = i->next;
	EXPECT_STREQ(i->fabric_attr->prov_name, "fake_last");
}

namespace {

/* What an fi_getinfo that matches nothing logs at FI_LOG_LEVEL=level. */
std::string enodata_log(const char *level, fi_info *hints)
{
	setenv("FI_LOG_LEVEL", level, 1);
	wu::log_reset_for_tests();
	info_ptr res;
	testing::internal::CaptureStderr();
	EXPECT_EQ(get(nullptr, nullptr, 0, hints, res), -FI_ENODATA);
	std::string err = testing::internal::GetCapturedStderr();
	unsetenv("FI_LOG_LEVEL");
	wu::log_reset_for_tests();
	return err;
}

} // namespace

/* An unmatched fi_getinfo is an answer (MPICH probes for atomic ordering
 * and the like at every MPI_Init): explained at info level, silent at the
 * default warn level. */
TEST(fi_getinfo_explain, enodata_names_the_unmet_hint_per_provider_at_info_level)
{
	auto h = hints_for(FI_EP_RDM, FI_COLLECTIVE);
	std::string err = enodata_log("info", h.get());
	EXPECT_NE(err.find("tcp: caps: asked FI_COLLECTIVE not offered"), std::string::npos) << err;
	h = hints_for(FI_EP_RDM, 0);
	h->tx_attr->msg_order = FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW |
				FI_ORDER_ATOMIC_RAR;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->caps = FI_ATOMIC | FI_COLLECTIVE;
	err = enodata_log("warn", h.get());
	EXPECT_EQ(err, "") << "a probe that matches nothing prints nothing by default";
}

/* Asking for a provider by a name we lack is the caller's choice (MPI
 * stacks probe for several on every start): said at info level only. */
TEST(fi_getinfo_explain, another_providers_name_is_said_at_info_level_only)
{
	auto h = hints_for(FI_EP_RDM, 0);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("efa");
	for (const char *level : {"warn", "info"}) {
		std::string err = enodata_log(level, h.get());
		bool said = err.find("prov_name: asked efa") != std::string::npos;
		EXPECT_EQ(said, std::string(level) == "info") << level << ": " << err;
	}
}

class fi_domain_tcp : public ::testing::Test {
protected:
	info_ptr info;
	fid_fabric *fab = nullptr;
	void SetUp() override
	{
		auto h = hints_for(FI_EP_RDM);
		ASSERT_EQ(get(nullptr, nullptr, 0, h.get(), info), 0);
		ASSERT_EQ(fi_fabric(info->fabric_attr, &fab, nullptr), 0);
	}
	void TearDown() override
	{
		if (fab) {
			EXPECT_EQ(fi_close(&fab->fid), 0);
		}
	}
};

TEST_F(fi_domain_tcp, open_close_and_busy_rules)
{
	fid_domain *dom = nullptr;
	int ctx;
	ASSERT_EQ(fi_domain(fab, info.get(), &dom, &ctx), 0);
	EXPECT_EQ(dom->fid.fclass, (size_t)FI_CLASS_DOMAIN);
	EXPECT_EQ(dom->fid.context, &ctx);
	EXPECT_EQ(fi_close(&fab->fid), -FI_EBUSY) << "a domain is still open";
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(dom, info.get(), &ep, nullptr), 0);
	EXPECT_EQ(fi_close(&dom->fid), -FI_EBUSY) << "an endpoint is still open";
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&dom->fid), 0);
	fid_domain *d2 = nullptr;
	ASSERT_EQ(fi_domain2(fab, info.get(), &d2, 0, nullptr), 0);
	EXPECT_EQ(fi_close(&d2->fid), 0);
	EXPECT_EQ(fi_domain2(fab, info.get(), &d2, 1, nullptr), -FI_EBADFLAGS);
}

TEST_F(fi_domain_tcp, bad_input)
{
	fid_domain *dom = nullptr;
	EXPECT_EQ(fi_domain(fab, nullptr, &dom, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_domain(fab, info.get(), nullptr, nullptr), -FI_EINVAL);
	info_ptr other(fi_dupinfo(info.get()));
	free(other->domain_attr->name);
	other->domain_attr->name = strdup("nonexistent0");
	EXPECT_EQ(fi_domain(fab, other.get(), &dom, nullptr), -FI_ENODEV);
	fi_fabric_attr attr = *info->fabric_attr;
	attr.name = const_cast<char *>("10.255.255.0/24-not-here");
	fid_fabric *f2 = nullptr;
	EXPECT_EQ(fi_fabric(&attr, &f2, nullptr), -FI_ENODATA);
}

TEST_F(fi_domain_tcp, eq_open_through_the_fabric_holds_it)
{
	fi_eq_attr attr{};
	attr.wait_obj = FI_WAIT_UNSPEC;
	fid_eq *eq = nullptr;
	ASSERT_EQ(fi_eq_open(fab, &attr, &eq, nullptr), 0);
	EXPECT_EQ(fi_close(&fab->fid), -FI_EBUSY) << "an EQ is still open on the fabric";
	fi_eq_entry e{};
	uint32_t ev = 0;
	EXPECT_EQ(fi_eq_read(eq, &ev, &e, sizeof(e), 0), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&eq->fid), 0);
	fi_wait_attr wattr{};
	wattr.wait_obj = FI_WAIT_FD;
	fid_wait *ws = nullptr;
	ASSERT_EQ(fi_wait_open(fab, &wattr, &ws), 0);
	EXPECT_EQ(fi_close(&fab->fid), -FI_EBUSY) << "a wait set is still open on the fabric";
	EXPECT_EQ(fi_close(&ws->fid), 0);
}
