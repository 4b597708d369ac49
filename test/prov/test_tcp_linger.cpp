/* tcp provider, FI_EP_RDM: what the application already counts as sent is
 * delivered even when its endpoint is closed at once (MPI_Bsend or an
 * injected send, then MPI_Finalize).  The receiver is a fork()ed process
 * that reports over a pipe what it got. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "tcp_fixture.h"

using namespace wu::test;

namespace {

constexpr int msgs = 10;

/* Child: an endpoint that writes its name to `out`, then receives up to
 * `want` tagged messages (the tag is the index, the payload index * 7 + 1
 * as 10 ints), writes how many arrived intact, and exits. */
[[noreturn]] void receiver(int out, int want, useconds_t delay_us)
{
	alarm(60); /* never outlive a failed parent */
	int got = 0;
	{
		tcp_env env{FI_EP_RDM, FI_TAGGED};
		rdm_ep ep{env};
		uint32_t n = uint32_t(ep.name.size());
		if (write(out, &n, 4) != 4 || write(out, ep.name.data(), n) != ssize_t(n))
			_exit(1);
		/* The sender's socket holds what we have not read yet. */
		if (delay_us)
			usleep(delay_us);
		std::vector<std::vector<int>> bufs(size_t(want), std::vector<int>(10, -1));
		for (int i = 0; i < want; i++)
			if (fi_trecv(ep.ep, bufs[size_t(i)].data(), 10 * sizeof(int), nullptr, FI_ADDR_UNSPEC,
				     uint64_t(i), 0, nullptr))
				_exit(1);
		for (int i = 0; i < want; i++) {
			fi_cq_tagged_entry e;
			if (wait_one(ep.rx, e) != 1)
				break;
		}
		for (int i = 0; i < want; i++) {
			bool ok = true;
			for (int k = 0; k < 10; k++)
				ok &= bufs[size_t(i)][size_t(k)] == i * 7 + 1;
			got += ok;
		}
	}
	_exit(write(out, &got, sizeof got) == sizeof got ? 0 : 1);
}

struct forked_receiver {
	int p[2] = {-1, -1};
	pid_t pid = -1;
	std::vector<char> name;

	forked_receiver(int want, useconds_t delay_us = 0)
	{
		EXPECT_EQ(pipe(p), 0);
		pid = fork();
		EXPECT_GE(pid, 0);
		if (pid == 0) {
			::close(p[0]);
			receiver(p[1], want, delay_us);
		}
		::close(p[1]);
		uint32_t n = 0;
		EXPECT_EQ(read(p[0], &n, 4), 4);
		name.resize(n);
		EXPECT_EQ(read(p[0], name.data(), n), ssize_t(n));
	}
	/* How many messages the receiver got (it gives up after wait_limit). */
	int result()
	{
		int got = -1;
		EXPECT_EQ(read(p[0], &got, sizeof got), ssize_t(sizeof got));
		int st = 0;
		EXPECT_EQ(waitpid(pid, &st, 0), pid);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		::close(p[0]);
		return got;
	}
};

/* The first messages to a peer wait for the connection's handshake; an
 * endpoint closed before it ends still delivers them (they were injected:
 * the application has no other way to know they are not gone yet). */
TEST(tcp_linger, injects_to_a_peer_not_yet_connected_survive_close)
{
	forked_receiver r(msgs);
	{
		tcp_env env{FI_EP_RDM, FI_TAGGED};
		rdm_ep me{env};
		fi_addr_t peer = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(fi_av_insert(me.av, r.name.data(), 1, &peer, 0, nullptr), 1);
		for (int i = 0; i < msgs; i++) {
			std::vector<int> v(10, i * 7 + 1);
			ASSERT_EQ(fi_tinject(me.ep, v.data(), v.size() * sizeof(int), peer, uint64_t(i)), 0);
		}
		me.close(); /* at once: no progress call since the injects */
	}
	EXPECT_EQ(r.result(), msgs) << "injected messages lost when the sender closed its endpoint";
}

} // namespace
