/* SPDX-License-Identifier: BSD-3-Clause */
/* node/service addressing on tcp, shm and wireup (issue 28): fi_getinfo
 * puts node/service into src_addr (FI_SOURCE, or a service alone) or
 * dest_addr with the provider's format and length; an endpoint bound
 * through node/service is reached by a peer that only knows node/service
 * (fi_av_insertsvc), by the same address (and so the same route) as its
 * fi_getname; fi_av_insertsym gives what insertsvc gives port by port and
 * refuses what it cannot count; a shm name another user holds is refused
 * (root only: the outsider user of test_shm_user). */
#include <gtest/gtest.h>

#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "prov/wireup/wireup.h"
#include "prov/wireup/wx_addr.h"

namespace {

constexpr uint32_t ver = FI_VERSION(1, 17);

/* Ports of this run: apart from other test programs running at once, and
 * below the kernel's ephemeral range (32768-60999 by default), where the
 * other tests' thousands of connections would take them (EADDRINUSE). */
uint16_t port(int k)
{
	return uint16_t(10000 + (getpid() % 1000) * 16 + k);
}

std::string svc(int k)
{
	return std::to_string(port(k));
}

struct info_ptr {
	fi_info *p = nullptr;
	~info_ptr() { fi_freeinfo(p); }
};

fi_info *hints_for(const char *prov)
{
	fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(prov);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG;
	return h;
}

int getinfo(const char *prov, const char *node, const char *service, uint64_t flags, fi_info **out,
	    uint32_t addr_format = FI_FORMAT_UNSPEC)
{
	fi_info *h = hints_for(prov);
	h->addr_format = addr_format;
	int r = fi_getinfo(ver, node, service, flags, h, out);
	fi_freeinfo(h);
	return r;
}

/* The format and length each provider's addresses have. */
void expect_addr(const char *prov, const fi_info *i, const void *a, size_t len, const char *what)
{
	ASSERT_NE(a, nullptr) << prov << ": " << what << " not set";
	ASSERT_GT(len, 0u) << prov << ": " << what << "len not set";
	if (!strcmp(prov, "tcp")) {
		EXPECT_TRUE(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6);
		EXPECT_EQ(len, i->addr_format == FI_SOCKADDR_IN ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
	} else if (!strcmp(prov, "shm")) {
		EXPECT_EQ(i->addr_format, uint32_t(FI_ADDR_STR));
		EXPECT_EQ(len, strnlen(static_cast<const char *>(a), len) + 1);
		EXPECT_EQ(strncmp(static_cast<const char *>(a), "fi_shm://", 9), 0);
	} else {
		EXPECT_EQ(i->addr_format, uint32_t(FI_FORMAT_UNSPEC));
		wu::wireup::parts p;
		EXPECT_EQ(wu::wireup::decode(a, len, &p), long(wu::wireup::addr_max));
	}
}

class getinfo_addrs : public ::testing::TestWithParam<const char *> {};

TEST_P(getinfo_addrs, source_node_service_is_src_addr)
{
	const char *prov = GetParam();
	info_ptr i;
	ASSERT_EQ(getinfo(prov, "127.0.0.1", svc(0).c_str(), FI_SOURCE, &i.p), 0);
	for (fi_info *e = i.p; e; e = e->next) {
		expect_addr(prov, e, e->src_addr, e->src_addrlen, "src_addr");
		EXPECT_EQ(e->dest_addr, nullptr);
	}
}

TEST_P(getinfo_addrs, service_alone_is_src_addr)
{
	const char *prov = GetParam();
	info_ptr i;
	ASSERT_EQ(getinfo(prov, nullptr, svc(0).c_str(), 0, &i.p), 0);
	expect_addr(prov, i.p, i.p->src_addr, i.p->src_addrlen, "src_addr");
	EXPECT_EQ(i.p->dest_addr, nullptr);
}

TEST_P(getinfo_addrs, destination_node_service_is_dest_addr_and_src_addr_is_set)
{
	const char *prov = GetParam();
	info_ptr i;
	ASSERT_EQ(getinfo(prov, "127.0.0.1", svc(0).c_str(), 0, &i.p), 0);
	for (fi_info *e = i.p; e; e = e->next) {
		expect_addr(prov, e, e->dest_addr, e->dest_addrlen, "dest_addr");
		expect_addr(prov, e, e->src_addr, e->src_addrlen, "src_addr");
	}
}

TEST_P(getinfo_addrs, no_node_still_has_src_addr)
{
	const char *prov = GetParam();
	info_ptr i;
	ASSERT_EQ(getinfo(prov, nullptr, nullptr, 0, &i.p), 0);
	for (fi_info *e = i.p; e; e = e->next)
		expect_addr(prov, e, e->src_addr, e->src_addrlen, "src_addr");
}

TEST_P(getinfo_addrs, a_format_it_cannot_use_matches_nothing)
{
	const char *prov = GetParam();
	info_ptr i;
	/* wireup takes FI_SOCKADDR* too (sockaddr mode, test_wireup_sockaddr.cpp). */
	uint32_t other = !strcmp(prov, "shm") ? FI_SOCKADDR_IN : FI_ADDR_PSMX2;
	EXPECT_EQ(getinfo(prov, nullptr, nullptr, 0, &i.p, other), -FI_ENODATA);
	if (!strcmp(prov, "tcp")) {
		/* FI_SOCKADDR: any socket address (fabtests' msg_sockets). */
		info_ptr s;
		ASSERT_EQ(getinfo(prov, "127.0.0.1", nullptr, FI_SOURCE, &s.p, FI_SOCKADDR), 0);
		expect_addr(prov, s.p, s.p->src_addr, s.p->src_addrlen, "src_addr");
	}
}

INSTANTIATE_TEST_SUITE_P(providers, getinfo_addrs, ::testing::Values("tcp", "shm", "wireup"));

class local_names : public ::testing::TestWithParam<const char *> {};

/* The service names the endpoint on this host: any local node name gives
 * the same address. */
TEST_P(local_names, loopback_and_localhost_name_the_same_endpoint)
{
	const char *prov = GetParam();
	info_ptr a, b;
	ASSERT_EQ(getinfo(prov, "127.0.0.1", svc(1).c_str(), 0, &a.p), 0);
	ASSERT_EQ(getinfo(prov, "localhost", svc(1).c_str(), 0, &b.p), 0);
	ASSERT_EQ(a.p->dest_addrlen, b.p->dest_addrlen);
	EXPECT_EQ(memcmp(a.p->dest_addr, b.p->dest_addr, a.p->dest_addrlen), 0);
	info_ptr s;
	ASSERT_EQ(getinfo(prov, "127.0.0.1", svc(1).c_str(), FI_SOURCE, &s.p), 0);
	if (!strcmp(prov, "shm")) {
		/* Source and destination name the same region. */
		ASSERT_EQ(s.p->src_addrlen, a.p->dest_addrlen);
		EXPECT_EQ(memcmp(s.p->src_addr, a.p->dest_addr, a.p->dest_addrlen), 0);
	} else {
		wu::wireup::parts ps, pd;
		ASSERT_GT(wu::wireup::decode(s.p->src_addr, s.p->src_addrlen, &ps), 0);
		ASSERT_GT(wu::wireup::decode(a.p->dest_addr, a.p->dest_addrlen, &pd), 0);
		EXPECT_EQ(ps.host, wu::wireup::host_id());
		EXPECT_EQ(pd.host, wu::wireup::host_id());
		ASSERT_GT(pd.shm_len, 0u);
		ASSERT_EQ(ps.shm_len, pd.shm_len);
		EXPECT_EQ(memcmp(ps.shm, pd.shm, ps.shm_len), 0);
	}
}

TEST_P(local_names, another_host)
{
	const char *prov = GetParam();
	info_ptr a;
	/* TEST-NET-2: no host's address. */
	int r = getinfo(prov, "198.51.100.7", svc(1).c_str(), 0, &a.p);
	if (!strcmp(prov, "shm")) {
		EXPECT_EQ(r, -FI_ENODATA) << "shm reaches only this host";
		return;
	}
	/* wireup: tcp only, and no claim to be this host. */
	ASSERT_EQ(r, 0);
	wu::wireup::parts p;
	ASSERT_GT(wu::wireup::decode(a.p->dest_addr, a.p->dest_addrlen, &p), 0);
	EXPECT_EQ(p.shm_len, 0u);
	EXPECT_NE(p.host, wu::wireup::host_id());
	EXPECT_EQ(p.tcp_len, sizeof(sockaddr_in));
}

INSTANTIATE_TEST_SUITE_P(providers, local_names, ::testing::Values("shm", "wireup"));

/* The fid of an object, null for none. */
template <class T> fid *fid_of(T *o)
{
	return o ? &o->fid : nullptr;
}

/* Closes each object that was opened, in order. */
void close_all(std::initializer_list<fid *> fids)
{
	for (fid *f : fids)
		if (f)
			fi_close(f);
}

/* One endpoint with its own fabric, domain, AV and CQ. */
struct side {
	fid_fabric *fab = nullptr;
	fid_domain *dom = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	int error = 0;

	explicit side(fi_info *i)
	{
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_DATA;
		if ((error = fi_fabric(i->fabric_attr, &fab, nullptr)) || (error = fi_domain(fab, i, &dom, nullptr)) ||
		    (error = fi_av_open(dom, &aa, &av, nullptr)) || (error = fi_cq_open(dom, &ca, &cq, nullptr)) ||
		    (error = fi_endpoint(dom, i, &ep, nullptr)) || (error = fi_ep_bind(ep, &av->fid, 0)) ||
		    (error = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)))
			return;
		error = fi_enable(ep);
	}
	~side() { close_all({fid_of(ep), fid_of(cq), fid_of(av), fid_of(dom), fid_of(fab)}); }
	std::vector<char> name()
	{
		std::vector<char> n(256);
		size_t l = n.size();
		EXPECT_EQ(fi_getname(&ep->fid, n.data(), &l), 0);
		n.resize(l);
		return n;
	}
	std::vector<char> lookup(fi_addr_t a)
	{
		std::vector<char> n(256);
		size_t l = n.size();
		EXPECT_EQ(fi_av_lookup(av, a, n.data(), &l), 0);
		n.resize(l);
		return n;
	}
};

/* A side of prov's first entry without node/service (s null when
 * fi_getinfo fails). */
struct side_of {
	info_ptr i;
	std::unique_ptr<side> s;
	explicit side_of(const char *prov)
	{
		if (!getinfo(prov, nullptr, nullptr, 0, &i.p))
			s = std::make_unique<side>(i.p);
	}
};

/* Polls both sides until a completion arrives on c (or an error, or 20 s):
 * 1, -1 error, 0 nothing. */
int wait_cq(side &c, side &other)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (std::chrono::steady_clock::now() < end) {
		fi_cq_data_entry e;
		ssize_t n = fi_cq_read(c.cq, &e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			fi_cq_readerr(c.cq, &err, 0);
			return -1;
		}
		fi_cq_read(other.cq, nullptr, 0);
	}
	return 0;
}

/* Sends msg from a to b's fi_addr dest; b receives it. */
void exchange(side &a, fi_addr_t dest, side &b, const char *msg)
{
	char buf[64] = {};
	ASSERT_EQ(fi_recv(b.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ssize_t r;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while ((r = fi_send(a.ep, msg, strlen(msg) + 1, nullptr, dest, nullptr)) == -FI_EAGAIN &&
	       std::chrono::steady_clock::now() < end)
		fi_cq_read(b.cq, nullptr, 0);
	ASSERT_EQ(r, 0);
	ASSERT_EQ(wait_cq(a, b), 1) << "the send did not complete";
	ASSERT_EQ(wait_cq(b, a), 1) << "the message did not arrive";
	EXPECT_STREQ(buf, msg);
}

class no_exchange : public ::testing::TestWithParam<const char *> {};

/* The server binds to node/service; the client knows only node/service
 * (another spelling of the node) and reaches it, by the very address the
 * server's fi_getname gives (so by the same route: wireup, shm). */
TEST_P(no_exchange, bound_endpoint_is_reached_through_node_service)
{
	const char *prov = GetParam();
	info_ptr si, ci;
	ASSERT_EQ(getinfo(prov, "127.0.0.1", svc(2).c_str(), FI_SOURCE, &si.p), 0);
	ASSERT_EQ(getinfo(prov, nullptr, nullptr, 0, &ci.p), 0);
	side server(si.p), client(ci.p);
	ASSERT_EQ(server.error, 0) << fi_strerror(-server.error);
	ASSERT_EQ(client.error, 0) << fi_strerror(-client.error);
	fi_addr_t by_svc = FI_ADDR_NOTAVAIL, by_name = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insertsvc(client.av, "localhost", svc(2).c_str(), &by_svc, 0, nullptr), 1);
	std::vector<char> n = server.name();
	ASSERT_EQ(fi_av_insert(client.av, n.data(), 1, &by_name, 0, nullptr), 1);
	EXPECT_EQ(client.lookup(by_svc), client.lookup(by_name)) << "node/service and fi_getname differ";
	exchange(client, by_svc, server, "by node/service");
	exchange(client, by_name, server, "by fi_getname");
	if (!strcmp(prov, "wireup")) {
		wu::wireup::route_stats st{};
		ASSERT_EQ(wu::wireup::stats_of(client.ep, &st), 0);
		EXPECT_EQ(st.shm, 2u) << "a local peer goes through shm";
		EXPECT_EQ(st.tcp, 0u);
	}
}

/* tcp alike: its fi_getname and node/service are one sockaddr. */
INSTANTIATE_TEST_SUITE_P(providers, no_exchange, ::testing::Values("tcp", "shm", "wireup"));

class insertsym : public ::testing::TestWithParam<const char *> {};

TEST_P(insertsym, gives_what_insertsvc_gives_port_by_port)
{
	side_of plain(GetParam());
	ASSERT_TRUE(plain.s && !plain.s->error);
	side &s = *plain.s;
	fi_addr_t sym[3], one[3];
	ASSERT_EQ(fi_av_insertsym(s.av, "127.0.0.1", 1, svc(3).c_str(), 3, sym, 0, nullptr), 3);
	for (int k = 0; k < 3; k++) {
		ASSERT_EQ(fi_av_insertsvc(s.av, "localhost", svc(3 + k).c_str(), &one[k], 0, nullptr), 1);
		EXPECT_EQ(s.lookup(sym[k]), s.lookup(one[k])) << "port " << k;
	}
	EXPECT_NE(s.lookup(sym[0]), s.lookup(sym[1]));
}

TEST_P(insertsym, refuses_what_it_cannot_count)
{
	const char *prov = GetParam();
	side_of plain(prov);
	ASSERT_TRUE(plain.s && !plain.s->error);
	side &s = *plain.s;
	fi_addr_t out[4];
	/* Ports past 65535. */
	EXPECT_EQ(fi_av_insertsym(s.av, "127.0.0.1", 1, "65534", 3, out, 0, nullptr), -FI_EINVAL);
	/* Two nodes from a name without a number to count up. */
	EXPECT_EQ(fi_av_insertsym(s.av, "localhost", 2, svc(3).c_str(), 1, out, 0, nullptr), -FI_EINVAL);
	/* Not a port (tcp, as libfabric's, looks service names up). */
	if (strcmp(prov, "tcp")) {
		EXPECT_EQ(fi_av_insertsym(s.av, "127.0.0.1", 1, "http-alt", 1, out, 0, nullptr), -FI_EINVAL);
	}
	EXPECT_EQ(fi_av_insertsym(s.av, nullptr, 1, svc(3).c_str(), 1, out, 0, nullptr), -FI_EINVAL);
	/* A node that does not resolve: nothing inserted, each says so. */
	out[0] = out[1] = 0;
	EXPECT_EQ(fi_av_insertsym(s.av, "no-such-host.invalid", 1, svc(3).c_str(), 2, out, 0, nullptr), 0);
	EXPECT_EQ(out[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(out[1], FI_ADDR_NOTAVAIL);
	/* Zero addresses: nothing to do. */
	EXPECT_EQ(fi_av_insertsym(s.av, "127.0.0.1", 0, svc(3).c_str(), 2, out, 0, nullptr), 0);
}

TEST(insertsvc, shm_refuses_another_host_wireup_takes_it_over_tcp)
{
	for (const char *prov : {"shm", "wireup"}) {
		side_of plain(prov);
		ASSERT_TRUE(plain.s && !plain.s->error);
		side &s = *plain.s;
		fi_addr_t a = 0;
		int r = fi_av_insertsvc(s.av, "198.51.100.7", svc(4).c_str(), &a, 0, nullptr);
		if (!strcmp(prov, "shm")) {
			EXPECT_EQ(r, 0);
			EXPECT_EQ(a, FI_ADDR_NOTAVAIL);
		} else {
			EXPECT_EQ(r, 1);
		}
	}
}

INSTANTIATE_TEST_SUITE_P(providers, insertsym, ::testing::Values("tcp", "shm", "wireup"));

/* ---- tcp: a passive endpoint lends its address (fabtests' msg_sockets) ---- */

struct msg_side {
	fi_info *info = nullptr;
	fid_fabric *fab = nullptr;
	fid_eq *eq = nullptr;
	fid_domain *dom = nullptr;
	fid_pep *pep = nullptr;
	fid_ep *ep = nullptr;
	fid_cq *cq = nullptr;
	~msg_side()
	{
		close_all({fid_of(ep), fid_of(cq), fid_of(pep), fid_of(dom), fid_of(eq), fid_of(fab)});
		fi_freeinfo(info);
	}
	int active(fi_info *i)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_CONTEXT;
		int r;
		if ((!dom && (r = fi_domain(fab, i, &dom, nullptr))) || (r = fi_endpoint(dom, i, &ep, nullptr)) ||
		    (r = fi_cq_open(dom, &ca, &cq, nullptr)) || (r = fi_ep_bind(ep, &eq->fid, 0)) ||
		    (r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)))
			return r;
		return fi_enable(ep);
	}
};

fi_info *msg_hints(uint32_t fmt)
{
	fi_info *h = hints_for("tcp");
	h->ep_attr->type = FI_EP_MSG;
	h->addr_format = fmt;
	return h;
}

/* The next event of eq (tcp's connection manager runs on its own), 0 on
 * an error or after 20 s. */
uint32_t next_event(fid_eq *eq, fi_eq_cm_entry *e)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	uint32_t ev = 0;
	ssize_t n;
	while ((n = fi_eq_read(eq, &ev, e, sizeof *e, 0)) == -FI_EAGAIN && std::chrono::steady_clock::now() < end)
		usleep(1000);
	return n > 0 ? ev : 0;
}

TEST(msg_sockets, an_endpoint_takes_the_address_of_the_passive_endpoint_in_handle)
{
	const std::string sp = svc(6), cp = svc(7);
	/* The server listens where FI_SOURCE node/service says. */
	msg_side srv;
	fi_info *h = msg_hints(FI_SOCKADDR_IN);
	ASSERT_EQ(fi_getinfo(ver, "127.0.0.1", sp.c_str(), FI_SOURCE, h, &srv.info), 0);
	fi_eq_attr ea{};
	ASSERT_EQ(fi_fabric(srv.info->fabric_attr, &srv.fab, nullptr), 0);
	ASSERT_EQ(fi_eq_open(srv.fab, &ea, &srv.eq, nullptr), 0);
	ASSERT_EQ(fi_passive_ep(srv.fab, srv.info, &srv.pep, nullptr), 0);
	ASSERT_EQ(fi_pep_bind(srv.pep, &srv.eq->fid, 0), 0);
	ASSERT_EQ(fi_listen(srv.pep), 0);

	/* The client binds a passive endpoint with fi_setname, then lends it. */
	msg_side cli;
	ASSERT_EQ(fi_getinfo(ver, "127.0.0.1", nullptr, FI_SOURCE, h, &cli.info), 0);
	ASSERT_EQ(fi_fabric(cli.info->fabric_attr, &cli.fab, nullptr), 0);
	ASSERT_EQ(fi_eq_open(cli.fab, &ea, &cli.eq, nullptr), 0);
	ASSERT_EQ(fi_passive_ep(cli.fab, cli.info, &cli.pep, nullptr), 0);
	sockaddr_in bound{};
	bound.sin_family = AF_INET;
	bound.sin_port = htons(port(7));
	bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(fi_setname(&cli.pep->fid, &bound, sizeof bound), 0);
	h->handle = &cli.pep->fid;
	info_ptr ci;
	ASSERT_EQ(fi_getinfo(ver, "127.0.0.1", sp.c_str(), 0, h, &ci.p), 0);
	fi_freeinfo(h);
	EXPECT_EQ(ci.p->handle, &cli.pep->fid) << "hints->handle (a passive endpoint) is echoed";
	ASSERT_EQ(cli.active(ci.p), 0);
	fi_close(&cli.pep->fid);
	cli.pep = nullptr;
	sockaddr_in got{};
	size_t gl = sizeof got;
	ASSERT_EQ(fi_getname(&cli.ep->fid, &got, &gl), 0);
	EXPECT_EQ(gl, sizeof got);
	EXPECT_EQ(got.sin_port, bound.sin_port) << "the endpoint does not have the passive endpoint's address";
	ASSERT_EQ(fi_connect(cli.ep, ci.p->dest_addr, nullptr, 0), 0);

	fi_eq_cm_entry e{};
	ASSERT_EQ(next_event(srv.eq, &e), uint32_t(FI_CONNREQ));
	ASSERT_EQ(srv.active(e.info), 0);
	fi_freeinfo(e.info);
	ASSERT_EQ(fi_accept(srv.ep, nullptr, 0), 0);
	ASSERT_EQ(next_event(srv.eq, &e), uint32_t(FI_CONNECTED));
	ASSERT_EQ(next_event(cli.eq, &e), uint32_t(FI_CONNECTED));
	gl = sizeof got;
	ASSERT_EQ(fi_getname(&cli.ep->fid, &got, &gl), 0);
	EXPECT_EQ(got.sin_port, bound.sin_port) << "connected from another port";
	sockaddr_in peer{};
	size_t pl = sizeof peer;
	ASSERT_EQ(fi_getpeer(srv.ep, &peer, &pl), 0);
	EXPECT_EQ(peer.sin_port, bound.sin_port);
}

/* ---- another user holds the name (root only) ---- */

bool make_outsider(uid_t *uid, gid_t *gid)
{
	const char *n = "wireup-outsider";
	if (!getpwnam(n) && system("useradd -M -r -s /usr/sbin/nologin wireup-outsider >/dev/null 2>&1") != 0)
		return false;
	passwd *pw = getpwnam(n);
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

/* The outsider creates /dev/shm/<name> (as if it had learnt the name):
 * neither a shm nor a wireup endpoint bound to that service enables, and
 * a sender that names it by node/service never completes a send there. */
TEST(squat, a_port_name_held_by_another_user_is_refused)
{
	uid_t ou;
	gid_t og;
	if (geteuid() != 0 || !make_outsider(&ou, &og))
		GTEST_SKIP() << "needs root and useradd (a second user)";
	info_ptr si;
	ASSERT_EQ(getinfo("shm", "127.0.0.1", svc(5).c_str(), FI_SOURCE, &si.p), 0);
	std::string name = static_cast<const char *>(si.p->src_addr) + 9;
	std::string path = "/dev/shm/" + name;
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, nullptr) || setgid(og) || setuid(ou))
			_exit(3);
		int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0666);
		if (fd < 0 || ftruncate(fd, 1 << 20))
			_exit(4);
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the outsider could not create " << path;
	struct unlinker {
		std::string p;
		~unlinker() { unlink(p.c_str()); }
	} gone{path};
	{
		side s(si.p);
		EXPECT_NE(s.error, 0) << "a shm endpoint enabled on another user's region";
	}
	{
		info_ptr wi;
		ASSERT_EQ(getinfo("wireup", "127.0.0.1", svc(5).c_str(), FI_SOURCE, &wi.p), 0);
		side s(wi.p);
		EXPECT_NE(s.error, 0) << "a wireup endpoint enabled without its shm name";
	}
	info_ptr ci;
	ASSERT_EQ(getinfo("shm", nullptr, nullptr, 0, &ci.p), 0);
	side c(ci.p);
	ASSERT_EQ(c.error, 0);
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insertsvc(c.av, "127.0.0.1", svc(5).c_str(), &a, 0, nullptr), 1);
	ssize_t r = fi_send(c.ep, "x", 2, nullptr, a, nullptr);
	if (r == 0) {
		side &self = c;
		EXPECT_EQ(wait_cq(c, self), -1) << "a send to another user's region completed";
	} else {
		EXPECT_LT(r, 0);
	}
}

} // namespace
