/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider, FI_EP_MSG: passive endpoints, CONNREQ / CONNECTED /
 * SHUTDOWN through the EQ with private data, fi_reject, refused connects,
 * and a fork()ed peer killed while connected. */
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <rdma/fi_atomic.h>

#include "prov/tcp/tcp_ep.h"
#include "../common/tcp_fixture.h"

using namespace wu::test;

TEST(tcp_msg, connect_accept_exchange_and_shutdown_with_private_data)
{
	tcp_env env{FI_EP_MSG};
	msg_listener l{env};
	ASSERT_TRUE(l.ok());
	fid_eq *peq = l.eq;
	fid_pep *pep = l.pep;
	const char *addr = l.addr;
	size_t cm = 0, cml = sizeof cm;
	EXPECT_EQ(fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm, &cml), 0);
	EXPECT_EQ(cm, 256u);

	msg_side client;
	client.open(env, env.info, env.eq);
	ASSERT_EQ(fi_connect(client.ep, addr, "hello", 6), 0);

	cm_buf ev;
	uint32_t event = 0;
	ssize_t r = read_cm(peq, event, &ev.entry, sizeof ev.raw);
	ASSERT_EQ(r, ssize_t(sizeof(fi_eq_cm_entry) + 6));
	ASSERT_EQ(event, uint32_t(FI_CONNREQ));
	EXPECT_EQ(ev.entry.fid, &pep->fid);
	ASSERT_NE(ev.entry.info, nullptr);
	ASSERT_NE(ev.entry.info->handle, nullptr);
	EXPECT_EQ(ev.entry.info->handle->fclass, size_t{FI_CLASS_CONNREQ});
	EXPECT_STREQ(ev.data, "hello");

	msg_side server;
	server.open(env, ev.entry.info, peq);
	fi_freeinfo(ev.entry.info);
	ASSERT_EQ(fi_accept(server.ep, "welcome", 8), 0);
	r = read_cm(peq, event, &ev.entry, sizeof ev.raw);
	ASSERT_GE(r, ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_CONNECTED));
	EXPECT_EQ(ev.entry.fid, &server.ep->fid);
	r = read_cm(env.eq, event, &ev.entry, sizeof ev.raw);
	ASSERT_EQ(r, ssize_t(sizeof(fi_eq_cm_entry) + 8));
	EXPECT_EQ(event, uint32_t(FI_CONNECTED));
	EXPECT_EQ(ev.entry.fid, &client.ep->fid);
	EXPECT_STREQ(ev.data, "welcome");

	char peer[64];
	size_t plen = sizeof peer;
	EXPECT_EQ(fi_getpeer(client.ep, peer, &plen), 0);

	/* Data both ways. */
	char in[16] = {}, in2[16] = {};
	ASSERT_EQ(fi_recv(server.ep, in, sizeof in, nullptr, 0, nullptr), 0);
	ASSERT_EQ(fi_send(client.ep, "over", 5, nullptr, 0, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(server.cq, e, nullptr, {client.cq}), 1);
	if (!(e.flags & FI_RECV)) {
		ASSERT_EQ(wait_one(server.cq, e, nullptr, {client.cq}), 1);
	}
	EXPECT_STREQ(in, "over");
	ASSERT_EQ(fi_recv(client.ep, in2, sizeof in2, nullptr, 0, nullptr), 0);
	ASSERT_EQ(fi_send(server.ep, "back", 5, nullptr, 0, nullptr), 0);
	for (int i = 0; i < 4 && strcmp(in2, "back"); i++)
		wait_one(client.cq, e, nullptr, {server.cq});
	EXPECT_STREQ(in2, "back");

	/* Large messages both ways go eagerly within the window each side
	 * announced in CONNREQ / ACCEPT: no rendezvous. */
	uint64_t rndv = wu::tcp::get_stats().rndv_sends;
	std::vector<char> out(1 << 20, 'L'), got(1 << 20, 0);
	for (int dir = 0; dir < 2; dir++) {
		msg_side &tx = dir ? server : client, &rx = dir ? client : server;
		std::fill(got.begin(), got.end(), 0);
		ASSERT_EQ(fi_recv(rx.ep, got.data(), got.size(), nullptr, 0, nullptr), 0);
		ASSERT_EQ(fi_send(tx.ep, out.data(), out.size(), nullptr, 0, nullptr), 0);
		for (int i = 0; i < 4 && got.back() != 'L'; i++)
			wait_one(rx.cq, e, nullptr, {tx.cq});
		EXPECT_EQ(got, out) << dir;
	}
	EXPECT_EQ(wu::tcp::get_stats().rndv_sends, rndv);

	/* A fetching atomic over the connection (no address: the peer). */
	uint64_t target = 40, add = 2, old = 0;
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, &target, sizeof target, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 9, 0, &mr,
			    nullptr),
		  0);
	uint64_t base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(&target)) : 0;
	int actx;
	ASSERT_EQ(fi_fetch_atomic(client.ep, &add, 1, nullptr, &old, nullptr, 0, base, fi_mr_key(mr), FI_UINT64,
				  FI_SUM, &actx),
		  0);
	bool fetched = false;
	for (int i = 0; i < 4 && !fetched; i++)
		fetched = wait_one(client.cq, e, nullptr, {server.cq}) == 1 && e.op_context == &actx;
	ASSERT_TRUE(fetched);
	EXPECT_EQ(e.flags, FI_ATOMIC | FI_READ);
	EXPECT_EQ(old, 40u);
	EXPECT_EQ(target, 42u);
	EXPECT_EQ(fi_close(&mr->fid), 0);

	/* The client goes away: the server sees FI_SHUTDOWN without reading its CQ. */
	ASSERT_EQ(fi_close(&client.ep->fid), 0);
	client.ep = nullptr;
	r = read_cm(peq, event, &ev.entry, sizeof ev.raw);
	ASSERT_GE(r, ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
	EXPECT_EQ(ev.entry.fid, &server.ep->fid);

	EXPECT_EQ(fi_close(&peq->fid), -FI_EBUSY); /* pep and server ep bound */
	l.close_pep();
	EXPECT_EQ(fi_close(&server.ep->fid), 0);
	server.ep = nullptr;
	l.close_eq();
}

TEST(tcp_msg, reject_carries_private_data_to_the_active_side)
{
	tcp_env env{FI_EP_MSG};
	msg_listener l{env};
	ASSERT_TRUE(l.ok());
	fid_eq *peq = l.eq;
	fid_pep *pep = l.pep;
	const char *addr = l.addr;
	msg_side client;
	client.open(env, env.info, env.eq);
	ASSERT_EQ(fi_connect(client.ep, addr, nullptr, 0), 0);
	cm_buf ev;
	uint32_t event;
	ASSERT_GE(read_cm(peq, event, &ev.entry, sizeof ev.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	ASSERT_EQ(event, uint32_t(FI_CONNREQ));
	ASSERT_EQ(fi_reject(pep, ev.entry.info->handle, "go away", 8), 0);
	fi_freeinfo(ev.entry.info);
	fi_eq_err_entry err{};
	ASSERT_EQ(read_cm(env.eq, event, &ev.entry, sizeof ev.raw, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	EXPECT_EQ(err.fid, &client.ep->fid);
	ASSERT_EQ(err.err_data_size, 8u);
	EXPECT_STREQ(static_cast<const char *>(err.err_data), "go away");
	l.close_pep();
	l.close_eq();
}

TEST(tcp_msg, connect_to_a_closed_port_is_econnrefused_on_the_eq)
{
	tcp_env env{FI_EP_MSG};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof a;
	ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
	ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &l), 0);
	close(fd); /* nobody listens there now */
	msg_side client;
	client.open(env, env.info, env.eq);
	int r = fi_connect(client.ep, &a, nullptr, 0);
	if (r == 0) {
		cm_buf ev;
		uint32_t event;
		fi_eq_err_entry err{};
		ASSERT_EQ(read_cm(env.eq, event, &ev.entry, sizeof ev.raw, &err), -FI_EAVAIL);
		EXPECT_EQ(err.err, FI_ECONNREFUSED);
	} else {
		EXPECT_EQ(r, -FI_ECONNREFUSED);
	}
}

TEST(tcp_msg_fault, peer_process_killed_gives_shutdown)
{
	tcp_env env{FI_EP_MSG};
	msg_listener l{env};
	ASSERT_TRUE(l.ok());
	fid_eq *peq = l.eq;
	const char *addr = l.addr;
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		tcp_env cenv{FI_EP_MSG};
		msg_side c;
		c.open(cenv, cenv.info, cenv.eq);
		if (fi_connect(c.ep, addr, nullptr, 0))
			_exit(1);
		uint32_t event;
		cm_buf ev;
		read_cm(cenv.eq, event, &ev.entry, sizeof ev.raw);
		alarm(30); /* never outlive a failed parent */
		pause(); /* killed here, connected */
		_exit(0);
	}
	cm_buf ev;
	uint32_t event;
	ASSERT_GE(read_cm(peq, event, &ev.entry, sizeof ev.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	ASSERT_EQ(event, uint32_t(FI_CONNREQ));
	msg_side server;
	server.open(env, ev.entry.info, peq);
	fi_freeinfo(ev.entry.info);
	ASSERT_EQ(fi_accept(server.ep, nullptr, 0), 0);
	ASSERT_GE(read_cm(peq, event, &ev.entry, sizeof ev.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_CONNECTED));
	std::vector<char> big(1 << 20);
	ASSERT_EQ(fi_recv(server.ep, big.data(), big.size(), nullptr, 0, nullptr), 0);
	usleep(100 * 1000);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	ASSERT_GE(read_cm(peq, event, &ev.entry, sizeof ev.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
	/* Sends after the shutdown fail at once. */
	EXPECT_LT(fi_send(server.ep, big.data(), 10, nullptr, 0, nullptr), 0);
	EXPECT_EQ(fi_close(&server.ep->fid), 0);
	server.ep = nullptr;
	l.close_pep();
	l.close_eq();
}

/* FI_TCP_CONN_TIMEOUT: a connect to an address that never answers ends as
 * an FI_ETIMEDOUT error entry on the EQ, without the application driving
 * a CQ (the cm thread's timer). */
TEST(tcp_msg, connect_to_a_silent_address_times_out_on_the_eq)
{
	setenv("FI_TCP_CONN_TIMEOUT", "300", 1);
	tcp_env env{FI_EP_MSG};
	silent_listener quiet;
	msg_side client;
	client.open(env, env.info, env.eq);
	unsetenv("FI_TCP_CONN_TIMEOUT");
	auto t0 = std::chrono::steady_clock::now();
	ASSERT_EQ(fi_connect(client.ep, &quiet.addr, nullptr, 0), 0);
	cm_buf ev;
	uint32_t event;
	fi_eq_err_entry err{};
	ASSERT_EQ(read_cm(env.eq, event, &ev.entry, sizeof ev.raw, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ETIMEDOUT);
	EXPECT_EQ(err.fid, &client.ep->fid);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
	EXPECT_GE(ms, 250);
	EXPECT_LT(ms, 5000);
}
