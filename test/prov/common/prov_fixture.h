/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixture of the provider suites: an opened fabric / domain / EQ of
 * provider P (for endpoint type T, or a bare domain at an API version),
 * RDM endpoints with their CQs and AV, a listening passive endpoint and
 * the MSG connect / accept steps, and bounded waits that drive progress
 * (data progress is manual: only CQ reads move bytes).
 *
 * How a provider joins the suites: add X(name, __VA_ARGS__) to
 * WU_TEST_PROVIDER_LIST below.  Every suite run with WU_PROVIDER_SUITE*
 * (rdm, tagged, rma, msg_ep, peek_claim, atomics, cq_*, cntr_*, mr_*,
 * poll_set) then runs once more with prov() == "name", its tests named
 * name/suite.test/N; the provider must answer fi_getinfo for 127.0.0.1
 * with FI_SOURCE.  Tests of one provider's own wire, handshake,
 * connections and parameters stay plain TEST / TEST_F in that provider's
 * files (tcp_fixture.h for tcp). */
#ifndef WU_TEST_PROV_PROV_FIXTURE_H
#define WU_TEST_PROV_PROV_FIXTURE_H

#include "config.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../../util/fabric_open.h"

/* The providers every parameterised suite runs over, one X(name) each.
 * ucx is left out of the ThreadSanitizer tier: UCX's libraries are not
 * built with TSan, so the accesses of its own async thread (tcp
 * connections, keepalive) are invisible to it and the worker's memory is
 * reported as racing; the ucx suites run in the plain and ASan tiers. */
#if defined(__SANITIZE_THREAD__)
#define WU_TEST_NO_UCX 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WU_TEST_NO_UCX 1
#endif
#endif
#if WU_PROV_UCX && !defined(WU_TEST_NO_UCX)
#define WU_TEST_UCX_PROVIDER(X, ...) X(ucx, __VA_ARGS__)
#else
#define WU_TEST_UCX_PROVIDER(X, ...)
#endif
/* Only the providers configure built (--enable-<name>, config.h's WU_PROV_*). */
#if WU_PROV_TCP
#define WU_TEST_TCP_PROVIDER(X, ...) X(tcp, __VA_ARGS__)
#else
#define WU_TEST_TCP_PROVIDER(X, ...)
#endif
#if WU_PROV_SHM
#define WU_TEST_SHM_PROVIDER(X, ...) X(shm, __VA_ARGS__)
#else
#define WU_TEST_SHM_PROVIDER(X, ...)
#endif
#if WU_PROV_WIREUP
#define WU_TEST_WIREUP_PROVIDER(X, ...) X(wireup, __VA_ARGS__)
#else
#define WU_TEST_WIREUP_PROVIDER(X, ...)
#endif
#define WU_TEST_PROVIDER_LIST(X, ...) \
	WU_TEST_TCP_PROVIDER(X, __VA_ARGS__) WU_TEST_SHM_PROVIDER(X, __VA_ARGS__) \
	WU_TEST_WIREUP_PROVIDER(X, __VA_ARGS__) WU_TEST_UCX_PROVIDER(X, __VA_ARGS__)
/* Of those, the ones whose fi_getinfo offers FI_ATOMIC (the atomics suites
 * run over these; ucx refuses it: refused() below, which
 * refusals_match_getinfo checks). */
#define WU_TEST_ATOMIC_PROVIDER_LIST(X, ...) \
	WU_TEST_TCP_PROVIDER(X, __VA_ARGS__) WU_TEST_SHM_PROVIDER(X, __VA_ARGS__) \
	WU_TEST_WIREUP_PROVIDER(X, __VA_ARGS__)
/* Of those, the ones with FI_EP_MSG endpoints (the MSG suites run over these). */
#define WU_TEST_MSG_PROVIDER_LIST(X, ...) WU_TEST_TCP_PROVIDER(X, __VA_ARGS__)

#define WU_TEST_INSTANTIATE_ONE(prov, suite) \
	INSTANTIATE_TEST_SUITE_P(prov, suite, ::testing::Values(std::string(#prov)));
#define WU_TEST_INSTANTIATE_WITH(prov, suite, ...) \
	INSTANTIATE_TEST_SUITE_P(prov, suite, \
				 ::testing::Combine(::testing::Values(std::string(#prov)), __VA_ARGS__));

/* Runs suite (a provider_test) over every provider. */
#define WU_PROVIDER_SUITE(suite) WU_TEST_PROVIDER_LIST(WU_TEST_INSTANTIATE_ONE, suite)
/* Runs suite (a provider_test_with<T>) over every provider times the
 * values of the generator that follows (::testing::Values(...)). */
#define WU_PROVIDER_SUITE_WITH(suite, ...) WU_TEST_PROVIDER_LIST(WU_TEST_INSTANTIATE_WITH, suite, __VA_ARGS__)
/* Declares a suite name whose tests need only the provider, and runs it. */
#define WU_PROVIDER_TEST_SUITE(suite) \
	struct suite : ::wu::test::provider_test {}; \
	WU_PROVIDER_SUITE(suite)
/* The same over the providers with MSG endpoints. */
#define WU_MSG_PROVIDER_TEST_SUITE(suite) \
	struct suite : ::wu::test::provider_test {}; \
	WU_TEST_MSG_PROVIDER_LIST(WU_TEST_INSTANTIATE_ONE, suite)

namespace wu::test {

inline constexpr auto wait_limit = std::chrono::seconds(10);

/* ---- what a provider's fi_getinfo refuses ----
 *
 * The one place that says which features a provider does not offer (its
 * fi_getinfo refuses hints asking for them).  A suite's fixture asks for
 * its caps minus these; a test that needs one calls WU_NEEDS: for such a
 * provider the test is then that its fi_getinfo refuses the feature (what
 * fi_getinfo(3) asks of a provider that cannot give it), nothing more, so
 * that CI never counts a skip.  refusals_match_getinfo
 * (test_prov_rdm.cpp) checks every entry against fi_getinfo both ways, so
 * a refusal that changes fails there, never turns into a silent skip. */
enum feature : uint64_t {
	/* capability bits are themselves; these are not caps: */
	feat_cq_data = uint64_t(1) << 63, /* domain_attr->cq_data_size 8 (remote CQ data) */
};
/* Caps (and feat_*) the provider's RDM fi_getinfo refuses. */
inline uint64_t refused(const std::string &prov)
{
	if (prov == "ucx") /* src/prov/ucx/ucx_prov.cpp: not mapped onto UCP */
		return FI_MULTI_RECV | FI_ATOMIC | FI_RMA_EVENT | feat_cq_data;
	return 0;
}
/* The RDM fi_getinfo answer for prov asking for f (a cap or feat_*). */
inline int getinfo_with(const std::string &prov, uint64_t f)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov.c_str());
	hints->ep_attr->type = FI_EP_RDM;
	if (f == feat_cq_data)
		hints->domain_attr->cq_data_size = 8;
	else
		hints->caps = f;
	fi_info *got = nullptr;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got);
	fi_freeinfo(hints);
	fi_freeinfo(got);
	return r;
}
/* Whether prov offers every feature of f; a listed refusal is checked
 * against fi_getinfo first (a failure when getinfo now accepts it). */
inline bool offers(const std::string &prov, uint64_t f)
{
	uint64_t no = f & refused(prov);
	for (uint64_t bit = 1; bit && no; bit <<= 1)
		if (no & bit) {
			EXPECT_EQ(getinfo_with(prov, bit), -FI_ENODATA)
				<< prov << " is listed as refusing 0x" << std::hex << bit
				<< " but fi_getinfo accepts it: update refused() in prov_fixture.h";
			no &= ~bit;
		}
	return !(f & refused(prov));
}
/* In a provider_test: when the provider refuses f, asserts that its
 * fi_getinfo does (offers()) and ends the test there. */
#define WU_NEEDS(f) \
	do { \
		if (!::wu::test::offers(prov(), (f))) \
			return; \
	} while (0)

/* A suite whose parameter is the provider's name. */
struct provider_test : ::testing::TestWithParam<std::string> {
	static const std::string &prov() { return GetParam(); }
};

/* A suite over providers times values of T: prov() and arg(). */
template <class T>
struct provider_test_with : ::testing::TestWithParam<std::tuple<std::string, T>> {
	using base = ::testing::TestWithParam<std::tuple<std::string, T>>;
	static const std::string &prov() { return std::get<0>(base::GetParam()); }
	static T arg() { return std::get<1>(base::GetParam()); }
};

/* Whether prov's addresses are IP sockaddrs (tcp) rather than names
 * (shm's FI_ADDR_STR, wireup's composite addresses): the others are opened
 * without a node. */
inline bool addr_is_ip(const std::string &prov)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov.c_str());
	fi_info *got = nullptr;
	int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got);
	fi_freeinfo(hints);
	bool ip = r == 0 && got &&
		  (got->addr_format == FI_SOCKADDR_IN || got->addr_format == FI_SOCKADDR_IN6 ||
		   got->addr_format == FI_SOCKADDR);
	fi_freeinfo(got);
	return ip;
}

/* Fabric, domain and EQ of one provider, opened through the public API. */
struct prov_env {
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_eq *eq = nullptr;

	/* For endpoints of type `type` on 127.0.0.1 (FI_SOURCE, FI_SOURCE_IN),
	 * API 1.17, with an EQ; progress FI_PROGRESS_AUTO asks for auto data
	 * and control progress. */
	prov_env(const std::string &prov, fi_ep_type type, uint64_t caps = 0,
		 fi_progress progress = FI_PROGRESS_UNSPEC)
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup(prov.c_str());
		hints->ep_attr->type = type;
		hints->caps = caps & ~refused(prov); /* tests that need those say WU_NEEDS */
		hints->domain_attr->data_progress = progress;
		hints->domain_attr->control_progress = progress;
		/* IP providers on 127.0.0.1; the others pick their own names. */
		bool ip = addr_is_ip(prov);
		hints->addr_format = ip ? FI_SOCKADDR_IN : FI_FORMAT_UNSPEC;
		fi_info *got = nullptr;
		int r = fi_getinfo(FI_VERSION(1, 17), ip ? "127.0.0.1" : nullptr, nullptr, ip ? FI_SOURCE : 0,
				   hints, &got);
		fi_freeinfo(hints);
		if (r || !got) {
			ADD_FAILURE() << "fi_getinfo(" << prov << ", 127.0.0.1): " << fi_strerror(-r);
			return;
		}
		info = fi_dupinfo(got);
		fi_freeinfo(got);
		EXPECT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
		EXPECT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
		fi_eq_attr ea{};
		ea.wait_obj = FI_WAIT_UNSPEC;
		EXPECT_EQ(fi_eq_open(fabric, &ea, &eq, nullptr), 0);
	}
	/* A bare RDM domain (no node, no EQ) at API version api; tweak edits
	 * the info (mr_mode, ...) before fi_domain. */
	prov_env(const std::string &prov, uint32_t api, void (*tweak)(fi_info *) = nullptr)
	{
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup(prov.c_str());
		hints->ep_attr->type = FI_EP_RDM;
		fi_info *got = nullptr;
		int r = fi_getinfo(api, nullptr, nullptr, 0, hints, &got);
		fi_freeinfo(hints);
		if (r || !got) {
			ADD_FAILURE() << "fi_getinfo(" << prov << "): " << fi_strerror(-r);
			return;
		}
		info = fi_dupinfo(got);
		fi_freeinfo(got);
		if (tweak)
			tweak(info);
		info->fabric_attr->api_version = api;
		open_fabric_domain(info, &fabric, &domain);
	}
	~prov_env()
	{
		if (eq) {
			EXPECT_EQ(fi_close(&eq->fid), 0);
		}
		close_fabric_domain(fabric, domain);
		fi_freeinfo(info);
	}
	prov_env(const prov_env &) = delete;
	prov_env &operator=(const prov_env &) = delete;
};

/* An RDM endpoint with its own tx/rx CQs (FI_CQ_FORMAT_TAGGED) and AV. */
struct rdm_ep {
	fid_ep *ep = nullptr;
	fid_cq *tx = nullptr, *rx = nullptr;
	fid_av *av = nullptr;
	std::vector<char> name;

	/* rx_cq_size 0: the provider's default size. */
	explicit rdm_ep(prov_env &env, fi_info *info = nullptr, fi_wait_obj wait = FI_WAIT_NONE, size_t rx_cq_size = 0)
	{
		fi_info *i = info ? info : env.info;
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ca.wait_obj = wait;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &tx, nullptr), 0);
		ca.size = rx_cq_size;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &rx, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
		EXPECT_EQ(fi_endpoint(env.domain, i, &ep, nullptr), 0);
		if (!ep)
			return;
		EXPECT_EQ(fi_ep_bind(ep, &tx->fid, FI_TRANSMIT), 0);
		EXPECT_EQ(fi_ep_bind(ep, &rx->fid, FI_RECV), 0);
		EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		EXPECT_EQ(fi_enable(ep), 0);
		size_t len = 0;
		EXPECT_EQ(fi_getname(&ep->fid, nullptr, &len), -FI_ETOOSMALL);
		name.resize(len);
		EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
	}
	~rdm_ep() { close(); }
	void close()
	{
		if (ep) {
			EXPECT_EQ(fi_close(&ep->fid), 0);
		}
		if (av) {
			EXPECT_EQ(fi_close(&av->fid), 0);
		}
		if (tx) {
			EXPECT_EQ(fi_close(&tx->fid), 0);
		}
		if (rx) {
			EXPECT_EQ(fi_close(&rx->fid), 0);
		}
		ep = nullptr;
		av = nullptr;
		tx = rx = nullptr;
	}
	/* Opens the endpoint again (the old one closed) with what must be bound
	 * before fi_enable: rx_flags on the receive CQ binding, a send counter. */
	void reopen(prov_env &env, uint64_t rx_flags = 0, fid_cntr *sent = nullptr)
	{
		if (ep) {
			ASSERT_EQ(fi_close(&ep->fid), 0);
		}
		ep = nullptr;
		ASSERT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
		ASSERT_EQ(fi_ep_bind(ep, &tx->fid, FI_TRANSMIT), 0);
		ASSERT_EQ(fi_ep_bind(ep, &rx->fid, FI_RECV | rx_flags), 0);
		ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		if (sent) {
			ASSERT_EQ(fi_ep_bind(ep, &sent->fid, FI_SEND), 0);
		}
		ASSERT_EQ(fi_enable(ep), 0);
		size_t len = 256;
		name.assign(len, 0);
		ASSERT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
		name.resize(len);
	}
	fi_addr_t insert(const rdm_ep &peer)
	{
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		EXPECT_EQ(fi_av_insert(av, peer.name.data(), 1, &a, 0, nullptr), 1);
		return a;
	}
};

/* Two RDM endpoints a and b of one provider, each in the other's AV
 * (b_to_a only when both_ways). */
struct rdm_pair {
	prov_env env;
	rdm_ep a, b;
	fi_addr_t a_to_b, b_to_a;

	rdm_pair(const std::string &prov, uint64_t caps, bool both_ways = true)
		: env(prov, FI_EP_RDM, caps), a(env), b(env), a_to_b(a.insert(b)),
		  b_to_a(both_ways ? b.insert(a) : FI_ADDR_NOTAVAIL)
	{
	}
	int wait_rx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr, fi_addr_t *src = nullptr);
	int wait_tx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr);
};

/* Polls cq (and drives progress through `also`) until one entry or an error
 * arrives.  Returns 1 with e filled, -FI_EAVAIL with err filled, or
 * -FI_ETIMEDOUT. */
inline int wait_one(fid_cq *cq, fi_cq_tagged_entry &e, fi_cq_err_entry *err = nullptr,
		    std::initializer_list<fid_cq *> also = {}, fi_addr_t *src = nullptr)
{
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (std::chrono::steady_clock::now() < until) {
		ssize_t r = src ? fi_cq_readfrom(cq, &e, 1, src) : fi_cq_read(cq, &e, 1);
		if (r == 1)
			return 1;
		if (r == -FI_EAVAIL) {
			fi_cq_err_entry tmp{};
			fi_cq_err_entry *p = err ? err : &tmp;
			EXPECT_EQ(fi_cq_readerr(cq, p, 0), 1);
			return -FI_EAVAIL;
		}
		EXPECT_EQ(r, -FI_EAGAIN);
		for (fid_cq *o : also) {
			fi_cq_tagged_entry x;
			ssize_t rr = fi_cq_read(o, &x, 0);
			(void)rr;
		}
	}
	return -FI_ETIMEDOUT;
}

/* Drives progress on the given CQs for a while (no entry expected). */
inline void spin(std::initializer_list<fid_cq *> cqs, int rounds = 2000)
{
	for (int i = 0; i < rounds; i++)
		for (fid_cq *c : cqs) {
			fi_cq_tagged_entry x;
			(void)fi_cq_read(c, &x, 0);
		}
}

/* An RDM endpoint with one CQ for both directions, an AV and counters of
 * FI_SEND (sc) and, when asked, FI_WRITE (wc) completions: for tests of
 * what failed operations report. */
struct counted_ep {
	fid_ep *ep = nullptr;
	fid_cq *cq = nullptr;
	fid_av *av = nullptr;
	fid_cntr *sc = nullptr, *wc = nullptr;

	counted_ep(prov_env &env, bool write_counter = false)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
		fi_cntr_attr na{};
		na.events = FI_CNTR_EVENTS_COMP;
		EXPECT_EQ(fi_cntr_open(env.domain, &na, &sc, nullptr), 0);
		if (write_counter) {
			EXPECT_EQ(fi_cntr_open(env.domain, &na, &wc, nullptr), 0);
		}
		EXPECT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
		if (!ep || !cq || !av || !sc)
			return;
		EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
		EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		EXPECT_EQ(fi_ep_bind(ep, &sc->fid, FI_SEND), 0);
		if (wc) {
			EXPECT_EQ(fi_ep_bind(ep, &wc->fid, FI_WRITE), 0);
		}
		EXPECT_EQ(fi_enable(ep), 0);
	}
	~counted_ep()
	{
		for (fid *f : {ep ? &ep->fid : nullptr, sc ? &sc->fid : nullptr, wc ? &wc->fid : nullptr,
			       av ? &av->fid : nullptr, cq ? &cq->fid : nullptr})
			if (f) {
				EXPECT_EQ(fi_close(f), 0);
			}
	}
	/* Polls the CQ, failing the test on any completion or error entry,
	 * until counter c counts n errors (or 20 s pass); its error count. */
	uint64_t errors_reach(fid_cntr *c, uint64_t n)
	{
		fi_cq_tagged_entry e;
		fi_cq_err_entry err{};
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
		while (fi_cntr_readerr(c) < n && std::chrono::steady_clock::now() < until) {
			ssize_t r = fi_cq_read(cq, &e, 1);
			if (r == -FI_EAVAIL) {
				EXPECT_EQ(fi_cq_readerr(cq, &err, 0), 1);
				ADD_FAILURE() << "an inject made an error completion (op_context " << err.op_context
					      << ", " << fi_strerror(err.err) << ")";
			} else {
				EXPECT_EQ(r, -FI_EAGAIN) << "an inject made a completion";
			}
		}
		return fi_cntr_readerr(c);
	}
};

/* A loopback port nobody listens on (bound once, then released). */
inline sockaddr_in free_port()
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t l = sizeof a;
	EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
	EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &l), 0);
	::close(fd);
	return a;
}

/* Waits on who's rx (tx) CQ, driving progress on all four. */
inline int rdm_pair::wait_rx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err, fi_addr_t *src)
{
	return wait_one(who.rx, e, err, {a.tx, b.tx, a.rx, b.rx}, src);
}
inline int rdm_pair::wait_tx(rdm_ep &who, fi_cq_tagged_entry &e, fi_cq_err_entry *err)
{
	return wait_one(who.tx, e, err, {a.rx, b.rx, a.tx, b.tx});
}

/* ---- MSG endpoints: listen, connect, accept ---- */

/* An fi_eq_cm_entry followed by room for its private data. */
struct cm_buf {
	alignas(fi_eq_cm_entry) unsigned char raw[sizeof(fi_eq_cm_entry) + 256];
	fi_eq_cm_entry &entry = *reinterpret_cast<fi_eq_cm_entry *>(raw);
	const char *data = reinterpret_cast<const char *>(raw + sizeof(fi_eq_cm_entry));
};

/* Reads one CM event with a bounded wait; returns its size or -err (an
 * error entry is read into err and gives -FI_EAVAIL). */
inline ssize_t read_cm(fid_eq *eq, uint32_t &event, fi_eq_cm_entry *entry, size_t size,
		       fi_eq_err_entry *err = nullptr)
{
	ssize_t r = fi_eq_sread(eq, &event, entry, size, 10000, 0);
	if (r == -FI_EAVAIL) {
		fi_eq_err_entry tmp{};
		fi_eq_err_entry *p = err ? err : &tmp;
		EXPECT_GT(fi_eq_readerr(eq, p, 0), 0);
		return -FI_EAVAIL;
	}
	return r;
}

/* A passive endpoint listening on its own EQ (eq_size 0: the default
 * size); addr / addrlen is its name for fi_connect. */
struct msg_listener {
	fid_eq *eq = nullptr;
	fid_pep *pep = nullptr;
	alignas(8) char addr[64] = {};
	size_t addrlen = sizeof addr;

	explicit msg_listener(prov_env &env, size_t eq_size = 0)
	{
		fi_eq_attr ea{};
		ea.size = eq_size;
		ea.wait_obj = FI_WAIT_UNSPEC;
		EXPECT_EQ(fi_eq_open(env.fabric, &ea, &eq, nullptr), 0);
		EXPECT_EQ(fi_passive_ep(env.fabric, env.info, &pep, nullptr), 0);
		if (!eq || !pep)
			return;
		EXPECT_EQ(fi_pep_bind(pep, &eq->fid, 0), 0);
		EXPECT_EQ(fi_listen(pep), 0);
		EXPECT_EQ(fi_getname(&pep->fid, addr, &addrlen), 0);
	}
	/* The name as a T (sockaddr_in, ...). */
	template <class T>
	T name_as() const
	{
		T t{};
		memcpy(&t, addr, sizeof t < addrlen ? sizeof t : addrlen);
		return t;
	}
	/* True once the listener is up (check with ASSERT_TRUE). */
	bool ok() const { return eq && pep; }
	void close_pep()
	{
		if (pep) {
			EXPECT_EQ(fi_close(&pep->fid), 0);
		}
		pep = nullptr;
	}
	void close_eq()
	{
		if (eq) {
			EXPECT_EQ(fi_close(&eq->fid), 0);
		}
		eq = nullptr;
	}
	~msg_listener()
	{
		close_pep();
		close_eq();
	}
};

/* An MSG endpoint with one CQ for both directions, bound to an EQ. */
struct msg_side {
	fid_ep *ep = nullptr;
	fid_cq *cq = nullptr;
	/* enable: fi_enable now (fi_connect / fi_accept enable it otherwise). */
	void open(prov_env &env, fi_info *info, fid_eq *eq, fi_cq_format fmt = FI_CQ_FORMAT_TAGGED,
		  fi_wait_obj wait = FI_WAIT_NONE, bool enable = true)
	{
		fi_cq_attr ca{};
		ca.format = fmt;
		ca.wait_obj = wait;
		ASSERT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
		ASSERT_EQ(fi_endpoint(env.domain, info, &ep, nullptr), 0);
		ASSERT_EQ(fi_ep_bind(ep, &eq->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
		if (enable) {
			ASSERT_EQ(fi_enable(ep), 0);
		}
	}
	void close_ep()
	{
		if (ep) {
			EXPECT_EQ(fi_close(&ep->fid), 0);
		}
		ep = nullptr;
	}
	void close_cq()
	{
		if (cq) {
			EXPECT_EQ(fi_close(&cq->fid), 0);
		}
		cq = nullptr;
	}
	~msg_side()
	{
		close_ep();
		close_cq();
	}
};

/* Waits for the next event on eq, which must be an FI_CONNREQ; returns
 * its info (the caller frees it), nullptr after a failure. */
inline fi_info *wait_connreq(fid_eq *eq, cm_buf &ev)
{
	uint32_t event = 0;
	ssize_t r = read_cm(eq, event, &ev.entry, sizeof ev.raw);
	EXPECT_GE(r, ssize_t(sizeof(fi_eq_cm_entry)));
	if (r < ssize_t(sizeof(fi_eq_cm_entry)))
		return nullptr;
	EXPECT_EQ(event, uint32_t(FI_CONNREQ));
	if (event != FI_CONNREQ)
		return nullptr;
	return ev.entry.info;
}

/* Waits for FI_CONNECTED on eq for endpoint ep. */
inline void wait_connected(fid_eq *eq, fid_ep *ep)
{
	cm_buf ev;
	uint32_t event = 0;
	ASSERT_GE(read_cm(eq, event, &ev.entry, sizeof ev.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_CONNECTED));
	EXPECT_EQ(ev.entry.fid, &ep->fid);
}

/* A connected pair of MSG endpoints: the client on env.eq, the server
 * accepted from a listener on its own EQ. */
struct msg_pair {
	msg_listener l;
	msg_side client, server;

	explicit msg_pair(prov_env &env) : l(env) {}
	/* Connects and accepts; check with ASSERT_NO_FATAL_FAILURE. */
	void connect(prov_env &env, fi_cq_format fmt = FI_CQ_FORMAT_TAGGED, fi_wait_obj wait = FI_WAIT_NONE)
	{
		ASSERT_TRUE(l.ok());
		ASSERT_NO_FATAL_FAILURE(client.open(env, env.info, env.eq, fmt, wait));
		ASSERT_EQ(fi_connect(client.ep, l.addr, nullptr, 0), 0);
		cm_buf ev;
		fi_info *req = wait_connreq(l.eq, ev);
		ASSERT_NE(req, nullptr);
		ASSERT_NO_FATAL_FAILURE(accept(env, req, fmt, wait));
	}
	/* The rest of connect once the listener has reported req (freed here):
	 * opens and accepts the server, both sides see FI_CONNECTED. */
	void accept(prov_env &env, fi_info *req, fi_cq_format fmt = FI_CQ_FORMAT_TAGGED,
		    fi_wait_obj wait = FI_WAIT_NONE)
	{
		server.open(env, req, l.eq, fmt, wait);
		fi_freeinfo(req);
		ASSERT_FALSE(::testing::Test::HasFatalFailure());
		ASSERT_EQ(fi_accept(server.ep, nullptr, 0), 0);
		ASSERT_NO_FATAL_FAILURE(wait_connected(l.eq, server.ep));
		ASSERT_NO_FATAL_FAILURE(wait_connected(env.eq, client.ep));
	}
	/* Closes the endpoints before the listener (its EQ is bound to the
	 * server). */
	~msg_pair()
	{
		client.close_ep();
		server.close_ep();
	}
};

} // namespace wu::test

#endif
