/* SPDX-License-Identifier: BSD-3-Clause */
/* Single copy into the wrong process (issue 32): a peer dies with an
 * operation pending and another user's process gets its pid; the copy
 * must not reach that process.
 *
 * Run as root (CI does), each case is played in a new pid namespace (its
 * own /proc), where the victim (our endpoint, root) is pid 1 and a pid can
 * be given again on purpose (ns_last_pid), so the reuse an attacker waits
 * for is deterministic here.  The victim forks the peer (root, the job's
 * own process), which sends or posts its operation and stops; the victim
 * kills and reaps it, then forks the decoy at the peer's pid, running as
 * the user `wireup-outsider` with its own bytes at the address the peer
 * used (both are forks of the victim, so addresses match).  Then the
 * victim lets its endpoint work:
 *  - recv / recv_single: the peer's 1 MiB message (split copy, and the
 *    plain single copy) is received after the peer died: it must complete
 *    with an error, and none of the decoy's bytes may land;
 *  - rma_read: the peer's late 1 MiB fi_read of our registered memory is
 *    served after it died: the decoy's memory must not be written.
 * Not root, no useradd or no pid namespace: those cases SKIP.
 *
 * shm_no_pidfd: where pidfd_open fails (ENOSYS under a seccomp filter
 * here, as on a kernel before 5.3) there is no single copy at all (the
 * filter kills the process at the first process_vm_readv/_writev), and a
 * 1 MiB message and a 1 MiB fi_read still arrive whole through the bounce
 * buffers. */
#include "shm_proc.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <rdma/fi_rma.h>

using namespace wu::test::shm;

namespace {

constexpr size_t msg_len = 1 << 20;
constexpr int bound_ms = 30000;
constexpr uint64_t sync_tag = 1, attack_tag = 2;
constexpr uint64_t peer_seed = 11, decoy_seed = 22, target_seed = 33;

/* The peer's send buffer and read destination, the decoy's bait: at the
 * same address in every process forked from the victim. */
alignas(4096) unsigned char bait[msg_len];

void fill_bait(uint64_t seed)
{
	for (size_t i = 0; i < msg_len; i++)
		bait[i] = pattern(seed, i);
}

bool bait_is(uint64_t seed)
{
	for (size_t i = 0; i < msg_len; i++)
		if (bait[i] != pattern(seed, i))
			return false;
	return true;
}

enum scenario : int { s_recv, s_recv_single, s_rma_read };

/* What the victim saw, reported to the test through a pipe. */
struct outcome {
	char failed[160] = {}; /* what went wrong in setting the case up, "" */
	int skip = 0;          /* a step the machine refuses (no namespace, ...) */
	int rx = 0;            /* attack receive: 1 success, -1 error, 0 neither within the bound */
	int rx_err = 0;
	size_t foreign = 0;    /* receive buffer bytes (not zero) of the decoy's pattern at their offset */
	size_t touched = 0;    /* receive buffer bytes not zero */
	int decoy_intact = -1; /* rma_read: the decoy's bait unchanged (1) or written (0) */
};

void set_failed(outcome &o, const std::string &what)
{
	if (!o.failed[0])
		snprintf(o.failed, sizeof o.failed, "%s", what.c_str());
}

/* The peer: sends its message (or posts its read) after a first one that
 * goes through, says so ('p') and stops without progress until killed. */
[[noreturn]] void run_peer(scenario sc, int in, int out)
{
	alarm(120);
	fill_bait(peer_seed);
	env v(FI_TAGGED | FI_RMA);
	ep e(v);
	fi_addr_t to = v.error || e.error ? FI_ADDR_NOTAVAIL : meet_parent(v, e, in, out, bound_ms);
	if (to == FI_ADDR_NOTAVAIL)
		_exit(2);
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	fi_context2 c1, c2;
	if (sc == s_rma_read) {
		uint64_t kv[2];
		if (!get(in, kv, sizeof kv, bound_ms))
			_exit(3);
		/* A first read while all is well: the victim knows us and serves it. */
		if (fi_read(e.e, bait, msg_len, nullptr, to, kv[1], kv[0], &c1) ||
		    wait_cq(e.tx, &ce, &err, deadline) != 1 || !bait_is(target_seed))
			_exit(4);
		memset(bait, 0, msg_len);
		if (!put(out, "s", 1) || fi_read(e.e, bait, msg_len, nullptr, to, kv[1], kv[0], &c2))
			_exit(5);
	} else {
		if (fi_tsend(e.e, bait, msg_len, nullptr, to, sync_tag, &c1) || wait_cq(e.tx, &ce, &err, deadline) != 1)
			_exit(4);
		if (fi_tsend(e.e, bait, msg_len, nullptr, to, attack_tag, &c2))
			_exit(5);
	}
	put(out, "p", 1);
	pause();
	_exit(0);
}

/* The decoy, at the dead peer's pid: another user's process holding its
 * own bytes where the peer's were; reports ('r'), then on 'c' whether
 * they are still its own. */
[[noreturn]] void run_decoy(uid_t uid, gid_t gid, int in, int out)
{
	alarm(120);
	if (setgroups(0, nullptr) || setgid(gid) || setuid(uid) || getuid() != uid)
		_exit(3);
	fill_bait(decoy_seed);
	char c = 0;
	if (!put(out, "r", 1) || !get(in, &c, 1, 100000))
		_exit(4);
	char verdict = bait_is(decoy_seed) ? 1 : 0;
	put(out, &verdict, 1);
	pause();
	_exit(0);
}

/* The next fork of this pid namespace gets pid (nobody else forks in it). */
bool next_pid_is(pid_t pid)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	if (fd < 0)
		return false;
	std::string s = std::to_string(pid - 1);
	bool ok = write(fd, s.data(), s.size()) == ssize_t(s.size());
	::close(fd);
	return ok;
}

void progress(ep &e, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		fi_cq_read(e.tx, nullptr, 0);
		fi_cq_read(e.rx, nullptr, 0);
		usleep(100);
	}
}

/* The victim (pid 1 of a new pid namespace, root): the whole case. */
void run_victim(scenario sc, uid_t uid, gid_t gid, outcome &o)
{
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr)) {
		o.skip = 1;
		set_failed(o, std::string("cannot mount a /proc of our own: ") + strerror(errno));
		return;
	}
	if (sc == s_recv_single)
		setenv("FI_SHM_SPLIT_MIN", "0", 1);
	peer_proc peer, decoy;
	if (!fork_peer(peer, [sc](int in, int out) { run_peer(sc, in, out); }))
		return set_failed(o, "fork of the peer");
	env v(FI_TAGGED | FI_RMA);
	if (v.error)
		return set_failed(o, v.what);
	ep me(v);
	if (me.error)
		return set_failed(o, me.what);
	fi_addr_t from = meet_child(peer, v, me, bound_ms);
	if (from == FI_ADDR_NOTAVAIL)
		return set_failed(o, "no address swap with the peer");
	std::vector<unsigned char> buf(msg_len, 0), target(msg_len);
	fill(target, target_seed);
	fid_mr *mr = nullptr;
	fi_context2 c1, c2;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	char b = 0;
	if (sc == s_rma_read) {
		if (fi_mr_reg(v.domain, target.data(), msg_len, FI_REMOTE_READ, 0, 0, 0, &mr, nullptr))
			return set_failed(o, "fi_mr_reg");
		uint64_t kv[2] = {fi_mr_key(mr), uint64_t(uintptr_t(target.data()))};
		if (!(v.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR))
			kv[1] = 0;
		/* Serve the first read, then take the second one's word without progress. */
		if (!put(peer.to, kv, sizeof kv) || !get_progress(peer.from, &b, 1, bound_ms, {me.tx, me.rx}) || b != 's')
			return set_failed(o, "the peer's first read did not complete");
	} else {
		/* The first message (single copy, binds the peer's process). */
		if (fi_trecv(me.e, buf.data(), msg_len, nullptr, from, sync_tag, 0, &c1) ||
		    wait_cq(me.rx, &ce, &err, deadline) != 1 || !check(buf, peer_seed, msg_len))
			return set_failed(o, "the peer's first message did not arrive whole");
		std::fill(buf.begin(), buf.end(), 0);
	}
	if (!get(peer.from, &b, 1, bound_ms) || b != 'p')
		return set_failed(o, "the peer did not post its operation");
	/* The peer dies with its operation pending; its pid goes to the decoy. */
	pid_t dead = peer.pid;
	std::vector<char> dead_name = peer.name;
	peer.kill9();
	peer.name.clear();
	if (!next_pid_is(dead)) {
		o.skip = 1;
		return set_failed(o, std::string("cannot set ns_last_pid: ") + strerror(errno));
	}
	if (!fork_peer(decoy, [uid, gid](int in, int out) { run_decoy(uid, gid, in, out); }))
		return set_failed(o, "fork of the decoy");
	if (decoy.pid != dead)
		return set_failed(o, "the decoy did not get the dead peer's pid");
	if (!get(decoy.from, &b, 1, bound_ms) || b != 'r')
		return set_failed(o, "the decoy did not start");
	if (sc == s_rma_read) {
		/* The late read is served now (its cell waits in our queue). */
		progress(me, 200);
		if (!put(decoy.to, "c", 1) || !get(decoy.from, &b, 1, bound_ms))
			return set_failed(o, "the decoy did not report");
		o.decoy_intact = b;
		fi_close(&mr->fid);
	} else {
		/* Taken unexpected first, then received. */
		progress(me, 50);
		if (fi_trecv(me.e, buf.data(), msg_len, nullptr, from, attack_tag, 0, &c2))
			return set_failed(o, "fi_trecv");
		o.rx = wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms));
		o.rx_err = o.rx == -1 ? err.err : 0;
		for (size_t i = 0; i < msg_len; i++) {
			o.foreign += buf[i] && buf[i] == pattern(decoy_seed, i);
			o.touched += buf[i] != 0;
		}
	}
	unlink(region_path(dead_name).c_str());
}

/* Plays sc in a new pid namespace: what the victim saw. */
outcome play(scenario sc, uid_t uid, gid_t gid)
{
	outcome o;
	int res[2];
	if (pipe(res)) {
		set_failed(o, "pipe");
		return o;
	}
	fflush(stdout);
	pid_t boss = fork();
	if (boss == 0) {
		::close(res[0]);
		alarm(300);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS)) {
			outcome s;
			s.skip = 1;
			set_failed(s, std::string("unshare(CLONE_NEWPID | CLONE_NEWNS): ") + strerror(errno));
			put(res[1], &s, sizeof s);
			_exit(0);
		}
		pid_t victim = fork(); /* pid 1 of the new namespace */
		if (victim == 0) {
			outcome s;
			run_victim(sc, uid, gid, s);
			put(res[1], &s, sizeof s);
			_exit(0);
		}
		int st = 0;
		if (victim > 0)
			waitpid(victim, &st, 0);
		_exit(0);
	}
	::close(res[1]);
	if (boss < 0 || !get(res[0], &o, sizeof o, 120000))
		set_failed(o, "the victim reported nothing");
	::close(res[0]);
	if (boss > 0)
		reap(boss, 60000);
	return o;
}

uid_t out_uid;
gid_t out_gid;
const char *no_outsider = "test_shm_pid_reuse needs root (a pid namespace and a second user)";

class shm_pid_reuse : public ::testing::TestWithParam<scenario> {};

TEST_P(shm_pid_reuse, no_copy_reaches_the_new_owner_of_a_dead_peers_pid)
{
	if (no_outsider)
		GTEST_SKIP() << no_outsider;
	scenario sc = GetParam();
	outcome o = play(sc, out_uid, out_gid);
	if (o.skip)
		GTEST_SKIP() << o.failed;
	ASSERT_EQ(o.failed[0], 0) << o.failed;
	if (sc == s_rma_read) {
		EXPECT_EQ(o.decoy_intact, 1) << "our registered memory was written into another user's process";
		return;
	}
	EXPECT_NE(o.rx, 0) << "the receive from the dead peer neither completed nor failed";
	EXPECT_EQ(o.rx, -1) << "the receive from the dead peer completed successfully";
	EXPECT_EQ(o.foreign, 0u) << "bytes of another user's process landed in our receive buffer";
	EXPECT_EQ(o.touched, 0u) << "our receive buffer was written";
	if (o.rx == -1)
		printf("receive from the dead peer: %s\n", fi_strerror(o.rx_err));
}

std::string case_name(const ::testing::TestParamInfo<scenario> &i)
{
	static const char *const names[] = {"recv", "recv_single", "rma_read"};
	return names[i.param];
}

INSTANTIATE_TEST_SUITE_P(cases, shm_pid_reuse, ::testing::Values(s_recv, s_recv_single, s_rma_read), case_name);

/* This process and its children: pidfd_open fails with ENOSYS, and
 * process_vm_readv/_writev kill the process (SIGSYS). */
bool without_pidfd()
{
	sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	sock_fprog prog{static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* The peer of shm_no_pidfd: sends bait (peer_seed), then reads the
 * parent's registered memory into it; exits 0 when both went well. */
[[noreturn]] void run_plain_peer(int in, int out)
{
	alarm(120);
	fill_bait(peer_seed);
	env v(FI_TAGGED | FI_RMA);
	ep e(v);
	fi_addr_t to = v.error || e.error ? FI_ADDR_NOTAVAIL : meet_parent(v, e, in, out, bound_ms);
	uint64_t kv[2];
	if (to == FI_ADDR_NOTAVAIL || !get(in, kv, sizeof kv, bound_ms))
		_exit(2);
	auto deadline = clock::now() + std::chrono::milliseconds(bound_ms);
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	fi_context2 c1, c2;
	if (fi_tsend(e.e, bait, msg_len, nullptr, to, sync_tag, &c1) || wait_cq(e.tx, &ce, &err, deadline) != 1)
		_exit(3);
	memset(bait, 0, msg_len);
	if (fi_read(e.e, bait, msg_len, nullptr, to, kv[1], kv[0], &c2) || wait_cq(e.tx, &ce, &err, deadline) != 1 ||
	    !bait_is(target_seed))
		_exit(4);
	put(out, "d", 1);
	child_done(e, in, bound_ms);
}

/* The receiver and target of shm_no_pidfd: 0, or which step failed. */
int run_plain()
{
	peer_proc peer;
	if (!fork_peer(peer, run_plain_peer))
		return 10;
	env v(FI_TAGGED | FI_RMA);
	ep me(v);
	fi_addr_t from = v.error || me.error ? FI_ADDR_NOTAVAIL : meet_child(peer, v, me, bound_ms);
	if (from == FI_ADDR_NOTAVAIL)
		return 11;
	std::vector<unsigned char> buf(msg_len, 0), target(msg_len);
	fill(target, target_seed);
	fid_mr *mr = nullptr;
	if (fi_mr_reg(v.domain, target.data(), msg_len, FI_REMOTE_READ, 0, 0, 0, &mr, nullptr))
		return 12;
	uint64_t kv[2] = {fi_mr_key(mr), uint64_t(uintptr_t(target.data()))};
	if (!(v.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR))
		kv[1] = 0;
	fi_context2 c;
	fi_cq_tagged_entry ce;
	fi_cq_err_entry err;
	if (!put(peer.to, kv, sizeof kv) || fi_trecv(me.e, buf.data(), msg_len, nullptr, from, sync_tag, 0, &c))
		return 13;
	if (wait_cq(me.rx, &ce, &err, clock::now() + std::chrono::milliseconds(bound_ms)) != 1 ||
	    !check(buf, peer_seed, msg_len))
		return 14;
	char b = 0;
	if (!get_progress(peer.from, &b, 1, bound_ms, {me.tx, me.rx}) || b != 'd')
		return 15;
	put(peer.to, "x", 1);
	int st = reap(peer.pid, bound_ms);
	peer.pid = -1;
	fi_close(&mr->fid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 16;
}

TEST(shm_no_pidfd, no_single_copy_and_large_transfers_still_arrive)
{
	fflush(stdout);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		alarm(200);
		_exit(without_pidfd() ? run_plain() : 77);
	}
	int st = reap(pid, 150000);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		GTEST_SKIP() << "cannot install a seccomp filter here";
	EXPECT_FALSE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) << "a single copy was tried without a pidfd";
	ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
	EXPECT_EQ(WEXITSTATUS(st), 0) << "step that failed (see run_plain)";
}

} // namespace

int main(int argc, char **argv)
{
	if (int s = skip_without_provider("test_shm_pid_reuse"))
		return s;
	if (geteuid() == 0)
		no_outsider = make_outsider(&out_uid, &out_gid) ? nullptr : "could not create the second user with useradd";
	signal(SIGPIPE, SIG_IGN);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
