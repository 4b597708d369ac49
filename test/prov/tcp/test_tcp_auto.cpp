/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider, FI_PROGRESS_AUTO: with auto data progress the target side
 * never calls into the provider (no CQ read, no counter read) and still
 * answers rendezvous, RMA and connection set-up; the same scenario under
 * manual progress stalls, which shows the tests tell the modes apart. */
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fi_cm.h>

#include "../common/tcp_fixture.h"

using namespace wu::test;

namespace {

constexpr size_t big = 1 << 20; /* above FI_TCP_RNDV_SIZE: rendezvous */

/* An RDM endpoint like rdm_ep, plus a counter (by default for its writes). */
struct rdm_cntr_ep {
	fid_ep *ep = nullptr;
	fid_cq *cq = nullptr;
	fid_cntr *wr = nullptr;
	fid_av *av = nullptr;
	explicit rdm_cntr_ep(tcp_env &env, fi_wait_obj cntr_wait = FI_WAIT_UNSPEC,
			     uint64_t cntr_flags = FI_WRITE)
	{
		fi_cq_attr ca{};
		ca.format = FI_CQ_FORMAT_TAGGED;
		ca.wait_obj = FI_WAIT_UNSPEC;
		EXPECT_EQ(fi_cq_open(env.domain, &ca, &cq, nullptr), 0);
		fi_cntr_attr na{};
		na.events = FI_CNTR_EVENTS_COMP;
		na.wait_obj = cntr_wait;
		EXPECT_EQ(fi_cntr_open(env.domain, &na, &wr, nullptr), 0);
		fi_av_attr aa{};
		aa.type = FI_AV_TABLE;
		EXPECT_EQ(fi_av_open(env.domain, &aa, &av, nullptr), 0);
		EXPECT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), 0);
		EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION), 0);
		EXPECT_EQ(fi_ep_bind(ep, &wr->fid, cntr_flags), 0);
		EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
		EXPECT_EQ(fi_enable(ep), 0);
	}
	~rdm_cntr_ep()
	{
		EXPECT_EQ(fi_close(&ep->fid), 0);
		EXPECT_EQ(fi_close(&av->fid), 0);
		EXPECT_EQ(fi_close(&cq->fid), 0);
		EXPECT_EQ(fi_close(&wr->fid), 0);
	}
};

/* One completion from cq by fi_cq_sread (progress of cq's endpoints only). */
ssize_t sread_one(fid_cq *cq, fi_cq_tagged_entry &e, int timeout_ms = 10000)
{
	ssize_t r = fi_cq_sread(cq, &e, 1, nullptr, timeout_ms);
	if (r == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		EXPECT_EQ(fi_cq_readerr(cq, &err, 0), 1);
		ADD_FAILURE() << "error completion: " << fi_strerror(err.err);
	}
	return r;
}

/* A rendezvous send completes only once the receiver has sent CTS. */
void rendezvous_to_idle_receiver(fi_progress mode, bool expect_done)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED, mode};
	ASSERT_NE(env.domain, nullptr);
	EXPECT_EQ(env.info->domain_attr->data_progress, mode == FI_PROGRESS_AUTO ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL);
	rdm_ep a{env, nullptr, FI_WAIT_UNSPEC}, b{env, nullptr, FI_WAIT_UNSPEC};
	fi_addr_t a_to_b = a.insert(b);
	std::vector<char> out(big, 'r'), in(big, 0);
	int rctx, sctx;
	ASSERT_EQ(fi_recv(b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx), 0);
	/* From here b is idle: nothing calls into its endpoint or CQs. */
	ASSERT_EQ(fi_send(a.ep, out.data(), out.size(), nullptr, a_to_b, &sctx), 0);
	fi_cq_tagged_entry e{};
	if (!expect_done) {
		EXPECT_EQ(fi_cq_sread(a.tx, &e, 1, nullptr, 300), -FI_EAGAIN);
		/* b's reads drive it: then everything finishes. */
		ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
		ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
		return;
	}
	ASSERT_EQ(sread_one(a.tx, e), 1);
	EXPECT_EQ(e.op_context, &sctx);
	ASSERT_EQ(sread_one(b.rx, e), 1);
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_EQ(e.len, big);
	EXPECT_EQ(in, out);
}

} // namespace

TEST(tcp_auto, rdm_rendezvous_completes_with_the_receiver_idle)
{
	rendezvous_to_idle_receiver(FI_PROGRESS_AUTO, true);
}

TEST(tcp_auto, manual_progress_stalls_the_same_rendezvous)
{
	rendezvous_to_idle_receiver(FI_PROGRESS_MANUAL, false);
}

/* The first send to a peer needs its HELLO_ACK; eager messages then land
 * in its posted buffer, and a receiver in fi_cq_sread sees them. */
TEST(tcp_auto, rdm_connect_and_eager_messages_with_the_receiver_in_sread)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED, FI_PROGRESS_AUTO};
	rdm_ep a{env, nullptr, FI_WAIT_UNSPEC}, b{env, nullptr, FI_WAIT_UNSPEC};
	fi_addr_t a_to_b = a.insert(b);
	const int n = 100;
	std::vector<int> got(n, -1);
	for (int i = 0; i < n; i++)
		ASSERT_EQ(fi_trecv(b.ep, &got[i], sizeof(int), nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0, nullptr), 0);
	for (int i = 0; i < n; i++) {
		ssize_t r;
		while ((r = fi_tsend(a.ep, &i, sizeof i, nullptr, a_to_b, uint64_t(i), nullptr)) == -FI_EAGAIN)
			;
		ASSERT_EQ(r, 0);
		/* Each send completes before the next one is queued: the
		 * connection came up with b idle. */
		fi_cq_tagged_entry e;
		ASSERT_EQ(sread_one(a.tx, e), 1);
	}
	for (int i = 0; i < n; i++) {
		fi_cq_tagged_entry e;
		ASSERT_EQ(sread_one(b.rx, e), 1);
		EXPECT_EQ(got[e.tag], int(e.tag));
	}
}

/* RMA write and read complete only once the target answers; the initiator
 * waits on its write counter with fi_cntr_wait. */
TEST(tcp_auto, rdm_rma_and_counter_with_the_target_idle)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_RMA, FI_PROGRESS_AUTO};
	rdm_ep target{env, nullptr, FI_WAIT_UNSPEC};
	rdm_cntr_ep init{env};
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(init.av, target.name.data(), 1, &peer, 0, nullptr), 1);
	std::vector<char> mem(big, 0), local(big);
	for (size_t i = 0; i < local.size(); i++)
		local[i] = char(i * 7);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, mem.data(), mem.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7, 0, &mr,
			    nullptr),
		  0);
	uint64_t base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(mem.data())) : 0;
	const int writes = 8;
	for (int i = 0; i < writes; i++)
		ASSERT_EQ(fi_write(init.ep, local.data() + i * (big / writes), big / writes, nullptr, peer,
				   base + i * (big / writes), fi_mr_key(mr), nullptr),
			  0);
	EXPECT_EQ(fi_cntr_wait(init.wr, writes, 10000), 0);
	EXPECT_EQ(fi_cntr_read(init.wr), uint64_t(writes));
	EXPECT_EQ(mem, local);
	std::vector<char> back(big);
	int ctx;
	fi_msg_rma m{};
	iovec v{back.data(), back.size()};
	fi_rma_iov r{base, big, fi_mr_key(mr)};
	m.msg_iov = &v;
	m.iov_count = 1;
	m.addr = peer;
	m.rma_iov = &r;
	m.rma_iov_count = 1;
	m.context = &ctx;
	ASSERT_EQ(fi_readmsg(init.ep, &m, FI_COMPLETION), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(sread_one(init.cq, e), 1);
	EXPECT_EQ(e.op_context, &ctx);
	EXPECT_EQ(back, local);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* MSG: connection, then a rendezvous send and an RMA write with the
 * passive side idle after fi_accept. */
TEST(tcp_auto, msg_rendezvous_and_rma_with_the_peer_idle)
{
	tcp_env env{FI_EP_MSG, FI_MSG | FI_RMA, FI_PROGRESS_AUTO};
	ASSERT_NE(env.domain, nullptr);
	EXPECT_EQ(env.info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	msg_listener l{env};
	ASSERT_TRUE(l.ok());
	fid_eq *peq = l.eq;
	const char *addr = l.addr;

	msg_side cs, ss;
	ASSERT_NO_FATAL_FAILURE(cs.open(env, env.info, env.eq, FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, false));
	fid_ep *client = cs.ep, *server = nullptr;
	fid_cq *ccq = cs.cq, *scq = nullptr;
	ASSERT_EQ(fi_connect(client, addr, nullptr, 0), 0);

	cm_buf cm;
	fi_info *req = wait_connreq(peq, cm);
	ASSERT_NE(req, nullptr);
	ss.open(env, req, peq, FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, false);
	fi_freeinfo(req);
	ASSERT_FALSE(HasFatalFailure());
	server = ss.ep;
	scq = ss.cq;
	std::vector<char> out(big, 'm'), in(big, 0), mem(4096, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, mem.data(), mem.size(), FI_REMOTE_WRITE, 0, 9, 0, &mr, nullptr), 0);
	uint64_t base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(mem.data())) : 0;
	ASSERT_EQ(fi_accept(server, nullptr, 0), 0);
	/* fi_recv may come before the client's data: it enables nothing. */
	int rctx;
	ASSERT_EQ(fi_recv(server, in.data(), in.size(), nullptr, 0, &rctx), 0);
	/* From here the server side is idle. */
	uint32_t event = 0;
	ASSERT_GE(read_cm(env.eq, event, &cm.entry, sizeof cm.raw), ssize_t(sizeof(fi_eq_cm_entry)));
	ASSERT_EQ(event, uint32_t(FI_CONNECTED));
	int sctx, wctx;
	ASSERT_EQ(fi_send(client, out.data(), out.size(), nullptr, 0, &sctx), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(sread_one(ccq, e), 1);
	EXPECT_EQ(e.op_context, &sctx);
	ASSERT_EQ(fi_write(client, "written", 8, nullptr, 0, base + 100, fi_mr_key(mr), &wctx), 0);
	ASSERT_EQ(sread_one(ccq, e), 1);
	EXPECT_EQ(e.op_context, &wctx);
	EXPECT_STREQ(mem.data() + 100, "written");
	ASSERT_EQ(sread_one(scq, e), 1);
	EXPECT_EQ(e.op_context, &rctx);
	EXPECT_EQ(in, out);

	cs.close_ep();
	ss.close_ep();
	EXPECT_EQ(fi_close(&mr->fid), 0);
	cs.close_cq();
	ss.close_cq();
	l.close_pep();
	l.close_eq();
}

/* Manual progress, but the application sleeps in poll() on its CQ's fd
 * after fi_trywait returned 0 (fi_trywait(3)): the endpoint must then move
 * data by itself, both for an eager message and for a rendezvous whose CTS
 * only the sleeping receiver can send.  The connection is up and polled
 * directly beforehand, so the switch back to epoll is covered too. */
void block_in_poll_on_the_cq_fd(size_t len)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED};
	ASSERT_NE(env.domain, nullptr);
	ASSERT_EQ(env.info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	rdm_ep a{env, nullptr, FI_WAIT_FD}, b{env, nullptr, FI_WAIT_FD};
	fi_addr_t a_to_b = a.insert(b);
	int x = 7, y = 0;
	ASSERT_EQ(fi_recv(b.ep, &y, sizeof y, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &x, sizeof x, nullptr, a_to_b, nullptr), 0);
	fi_cq_tagged_entry e;
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	ASSERT_EQ(y, 7);

	std::vector<char> out(len, 'p'), in(len, 0);
	ASSERT_EQ(fi_recv(b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	int fd = -1;
	ASSERT_EQ(fi_control(&b.rx->fid, FI_GETWAIT, &fd), 0);
	std::thread sender([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		EXPECT_EQ(fi_send(a.ep, out.data(), out.size(), nullptr, a_to_b, nullptr), 0);
		fi_cq_tagged_entry se;
		EXPECT_EQ(wait_one(a.tx, se), 1);
	});
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	ssize_t r = -FI_EAGAIN;
	while (r == -FI_EAGAIN && std::chrono::steady_clock::now() < until) {
		fid *f = &b.rx->fid;
		int tw = fi_trywait(env.fabric, &f, 1);
		ASSERT_TRUE(tw == 0 || tw == -FI_EAGAIN) << fi_strerror(-tw);
		if (tw == 0) {
			pollfd p{fd, POLLIN, 0};
			/* Nothing but the provider can make this readable now. */
			ASSERT_EQ(poll(&p, 1, 5000), 1) << "the CQ fd never became readable";
		}
		r = fi_cq_read(b.rx, &e, 1);
	}
	sender.join();
	ASSERT_EQ(r, 1);
	EXPECT_EQ(e.len, len);
	EXPECT_EQ(in, out);
}

TEST(tcp_auto, manual_progress_eager_message_to_a_receiver_blocked_on_the_cq_fd)
{
	block_in_poll_on_the_cq_fd(64);
}

TEST(tcp_auto, manual_progress_rendezvous_to_a_receiver_blocked_on_the_cq_fd)
{
	block_in_poll_on_the_cq_fd(big);
}

/* The same for a counter: fi_trywait takes it, and a receiver sleeping on
 * the counter's fd under manual progress sees its receive counted. */
TEST(tcp_auto, manual_progress_receive_counted_while_blocked_on_the_counter_fd)
{
	tcp_env env{FI_EP_RDM, FI_MSG};
	ASSERT_NE(env.domain, nullptr);
	rdm_ep a{env};
	rdm_cntr_ep b{env, FI_WAIT_FD, FI_RECV};
	fid_cntr *rx = b.wr;
	std::vector<char> bname(64);
	size_t blen = bname.size();
	ASSERT_EQ(fi_getname(&b.ep->fid, bname.data(), &blen), 0);
	fi_addr_t a_to_b = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(a.av, bname.data(), 1, &a_to_b, 0, nullptr), 1);

	int x = 5, y = 0;
	ASSERT_EQ(fi_recv(b.ep, &y, sizeof y, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	int fd = -1;
	ASSERT_EQ(fi_control(&rx->fid, FI_GETWAIT, &fd), 0);
	std::thread sender([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		EXPECT_EQ(fi_send(a.ep, &x, sizeof x, nullptr, a_to_b, nullptr), 0);
		fi_cq_tagged_entry se;
		EXPECT_EQ(wait_one(a.tx, se), 1);
	});
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (fi_cntr_read(rx) < 1 && std::chrono::steady_clock::now() < until) {
		fid *f = &rx->fid;
		int tw = fi_trywait(env.fabric, &f, 1);
		ASSERT_TRUE(tw == 0 || tw == -FI_EAGAIN) << fi_strerror(-tw);
		if (tw == 0) {
			pollfd p{fd, POLLIN, 0};
			ASSERT_EQ(poll(&p, 1, 5000), 1) << "the counter fd never became readable";
		}
	}
	sender.join();
	EXPECT_EQ(fi_cntr_read(rx), 1u);
	EXPECT_EQ(y, 5);
}
