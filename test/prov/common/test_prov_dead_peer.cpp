/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 30: a receive directed at a peer that dies (kill -9) fails with
 * FI_EHOSTDOWN instead of waiting forever, and so does one posted for it
 * afterwards; an any-source receive stays posted.  Over tcp (the broken
 * connection), shm (the FI_SHM_DEAD_PEER_MS liveness check) and wireup
 * (shm on one host, through the receive context it lends). */
#include "prov_fixture.h"

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace wu::test {
namespace {

constexpr uint64_t caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE;

struct dead_peer : provider_test {};

/* All n bytes through a pipe end (write or read), or false. */
bool pipe_all(int fd, void *p, size_t n, bool out)
{
	auto *c = static_cast<char *>(p);
	while (n) {
		ssize_t k = out ? ::write(fd, c, n) : ::read(fd, c, n);
		if (k <= 0)
			return false;
		c += k;
		n -= size_t(k);
	}
	return true;
}

bool write_all(int fd, const void *p, size_t n)
{
	return pipe_all(fd, const_cast<void *>(p), n, true);
}

bool read_all(int fd, void *p, size_t n)
{
	return pipe_all(fd, p, n, false);
}

bool send_name(int fd, const std::vector<char> &name)
{
	uint32_t n = uint32_t(name.size());
	return write_all(fd, &n, sizeof n) && write_all(fd, name.data(), n);
}

bool recv_name(int fd, std::vector<char> &name)
{
	uint32_t n = 0;
	if (!read_all(fd, &n, sizeof n) || n > 4096)
		return false;
	name.resize(n);
	return read_all(fd, name.data(), n);
}

/* The peer: opens its endpoint, trades names, sends one message to the
 * parent (so that a connection or attachment exists) and progresses until
 * it is killed. */
[[noreturn]] void peer_main(const std::string &prov, int to_parent, int from_parent)
{
	{
		prov_env env(prov, FI_EP_RDM, caps);
		rdm_ep ep(env);
		std::vector<char> parent;
		if (!ep.ep || !send_name(to_parent, ep.name) || !recv_name(from_parent, parent))
			_exit(2);
		fi_addr_t pa = FI_ADDR_NOTAVAIL;
		if (fi_av_insert(ep.av, parent.data(), 1, &pa, 0, nullptr) != 1)
			_exit(3);
		char msg[8] = "hello";
		ssize_t r;
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
		while ((r = fi_tsend(ep.ep, msg, sizeof msg, nullptr, pa, 1, nullptr)) == -FI_EAGAIN &&
		       std::chrono::steady_clock::now() < until)
			spin({ep.tx, ep.rx}, 1);
		if (r)
			_exit(4);
		char ok = 1;
		(void)write_all(to_parent, &ok, 1);
		/* Until the parent kills us (bounded, should it not). */
		while (std::chrono::steady_clock::now() < until)
			spin({ep.tx, ep.rx}, 100);
	}
	_exit(0);
}

/* Reads rx until an error entry (or a completion: a failure) or the bound. */
int wait_err(fid_cq *rx, fi_cq_err_entry &err, std::chrono::seconds bound)
{
	auto until = std::chrono::steady_clock::now() + bound;
	fi_cq_tagged_entry e{};
	while (std::chrono::steady_clock::now() < until) {
		ssize_t r = fi_cq_read(rx, &e, 1);
		if (r == -FI_EAVAIL)
			return fi_cq_readerr(rx, &err, 0) == 1 ? 0 : -1;
		if (r == 1) {
			ADD_FAILURE() << "a receive completed without error (context " << e.op_context << ")";
			return -1;
		}
		usleep(1000);
	}
	return -FI_ETIMEDOUT;
}

TEST_P(dead_peer, directed_receives_fail_with_ehostdown)
{
	int up[2], down[2];
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	/* Before any fabric object: the child opens its own. */
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(up[0]);
		::close(down[1]);
		peer_main(prov(), up[1], down[0]);
	}
	::close(up[1]);
	::close(down[0]);
	struct reap {
		pid_t pid;
		~reap()
		{
			if (pid > 0) {
				kill(pid, SIGKILL);
				waitpid(pid, nullptr, 0);
			}
		}
	} child{pid};

	prov_env env(prov(), FI_EP_RDM, caps);
	rdm_ep ep(env);
	ASSERT_NE(ep.ep, nullptr);
	std::vector<char> name;
	ASSERT_TRUE(recv_name(up[0], name));
	ASSERT_TRUE(send_name(down[1], ep.name));
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(ep.av, name.data(), 1, &peer, 0, nullptr), 1);

	/* The peer's first message: it is alive and connected. */
	char buf[4][16] = {};
	fi_context ctx[4]{};
	ASSERT_EQ(fi_trecv(ep.ep, buf[0], sizeof buf[0], nullptr, peer, 1, 0, &ctx[0]), 0);
	fi_cq_tagged_entry e{};
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(ep.rx, e, &err, {ep.tx}), 1) << fi_strerror(err.err);
	EXPECT_EQ(e.op_context, &ctx[0]);
	char ok = 0;
	ASSERT_TRUE(read_all(up[0], &ok, 1));

	/* One receive directed at the peer, one from anyone. */
	ASSERT_EQ(fi_trecv(ep.ep, buf[1], sizeof buf[1], nullptr, peer, 2, 0, &ctx[1]), 0);
	ASSERT_EQ(fi_trecv(ep.ep, buf[2], sizeof buf[2], nullptr, FI_ADDR_UNSPEC, 3, 0, &ctx[2]), 0);
	spin({ep.tx, ep.rx}, 100);
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
	child.pid = -1;

	/* The posted one fails (generous bound: shm looks every FI_SHM_DEAD_PEER_MS). */
	err = {};
	ASSERT_EQ(wait_err(ep.rx, err, std::chrono::seconds(8)), 0)
		<< "the receive directed at the killed peer did not fail";
	EXPECT_EQ(err.op_context, &ctx[1]);
	EXPECT_EQ(err.err, FI_EHOSTDOWN) << fi_strerror(err.err);
	EXPECT_EQ(err.olen, 0u);
	EXPECT_EQ(err.len, 0u);
	EXPECT_TRUE(err.flags & FI_RECV);
	EXPECT_TRUE(err.flags & FI_TAGGED);
	EXPECT_EQ(err.tag, 2u);

	/* A receive posted for it now fails too. */
	ASSERT_EQ(fi_trecv(ep.ep, buf[3], sizeof buf[3], nullptr, peer, 4, 0, &ctx[3]), 0);
	err = {};
	ASSERT_EQ(wait_err(ep.rx, err, std::chrono::seconds(8)), 0)
		<< "a receive posted for the dead peer did not fail";
	EXPECT_EQ(err.op_context, &ctx[3]);
	EXPECT_EQ(err.err, FI_EHOSTDOWN) << fi_strerror(err.err);
	EXPECT_EQ(err.olen, 0u);

	/* The any-source receive is still posted: fi_cancel finds it. */
	spin({ep.tx, ep.rx}, 100);
	ASSERT_EQ(fi_cancel(&ep.ep->fid, &ctx[2]), 0);
	err = {};
	ASSERT_EQ(wait_err(ep.rx, err, std::chrono::seconds(8)), 0);
	EXPECT_EQ(err.op_context, &ctx[2]);
	EXPECT_EQ(err.err, FI_ECANCELED) << fi_strerror(err.err);
	::close(up[0]);
	::close(down[1]);
}

#define WU_DEAD_PEER_PROVIDERS(X, ...) \
	WU_TEST_TCP_PROVIDER(X, __VA_ARGS__) WU_TEST_SHM_PROVIDER(X, __VA_ARGS__) WU_TEST_WIREUP_PROVIDER(X, __VA_ARGS__)
WU_DEAD_PEER_PROVIDERS(WU_TEST_INSTANTIATE_ONE, dead_peer)

} // namespace
} // namespace wu::test
