/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the tcp-only suites (wire format, handshake, connection
 * management, tcp parameters): a tcp domain (prov_env of "tcp"), a
 * listener that never answers, and a raw socket that speaks the tcp
 * protocol.  Endpoints, MSG connect / accept and waits: prov_fixture.h. */
#ifndef WU_TEST_PROV_TCP_FIXTURE_H
#define WU_TEST_PROV_TCP_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov/tcp/auth.h"
#include "prov/tcp/frame.h"
#include "prov/tcp/tcp_ep.h"
#include "prov_fixture.h"

namespace wu::test {

/* A domain of the tcp provider (prov_env for "tcp"). */
struct tcp_env : prov_env {
	explicit tcp_env(fi_ep_type type, uint64_t caps = 0, fi_progress progress = FI_PROGRESS_UNSPEC)
		: prov_env("tcp", type, caps, progress)
	{
	}
};

/* A loopback address that never answers: a listener that never accepts,
 * its accept queue filled by other clients, so the kernel drops further
 * SYNs (and a connection the kernel did complete never gets a reply). */
struct silent_listener {
	int lfd = -1;
	std::vector<int> fillers;
	sockaddr_in addr{};

	silent_listener()
	{
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		addr.sin_family = AF_INET;
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t l = sizeof addr;
		EXPECT_EQ(bind(lfd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
		EXPECT_EQ(listen(lfd, 0), 0);
		EXPECT_EQ(getsockname(lfd, reinterpret_cast<sockaddr *>(&addr), &l), 0);
		for (int i = 0; i < 3; i++) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
			(void)connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
			fillers.push_back(fd);
		}
		usleep(20000);
	}
	~silent_listener()
	{
		for (int fd : fillers)
			::close(fd);
		::close(lfd);
	}
};

/* The job key endpoints of this process use (FI_TCP_JOB_KEY, or the
 * per-user key file). */
inline wu::tcp::auth::key test_job_key()
{
	wu::tcp::auth::key k;
	EXPECT_EQ(wu::tcp::auth::job_key(k), 0);
	return k;
}

/* A raw socket that speaks the protocol to endpoint `to` (it connects to
 * its listening address, reads its CHALLENGE and says HELLO with the given
 * window and a proof under the job key). */
struct raw_peer {
	int fd = -1;
	rdm_ep &to;
	sockaddr_in fake{};
	wu::tcp::auth::key key = test_job_key();
	wu::tcp::auth::session an;

	/* fake_port: the listening address its HELLO claims (127.0.0.1:port). */
	raw_peer(rdm_ep &ep, uint64_t window, uint16_t fake_port = 1) : to(ep)
	{
		sockaddr_in claim{};
		claim.sin_family = AF_INET;
		claim.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		claim.sin_port = htons(fake_port);
		start(to.name.data(), socklen_t(to.name.size()), claim, window);
	}
	/* Dials `dial` (ep's tcp address, when its name is not one) and
	 * claims `claim` as its listening address. */
	raw_peer(rdm_ep &ep, const sockaddr_in &dial, const sockaddr_in &claim, uint64_t window = 0) : to(ep)
	{
		start(&dial, sizeof dial, claim, window);
	}
	void start(const void *dial, socklen_t dial_len, const sockaddr_in &claim, uint64_t window)
	{
		namespace frame = wu::tcp::frame;
		namespace auth = wu::tcp::auth;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		EXPECT_GE(fd, 0);
		EXPECT_EQ(connect(fd, static_cast<const sockaddr *>(dial), dial_len), 0);
		EXPECT_TRUE(auth::bind_ends(an, fd, auth::role::connector));
		fake = claim;
		uint16_t fake_port = ntohs(claim.sin_port);
		frame::header h;
		EXPECT_TRUE(get(h));
		EXPECT_EQ(h.type, frame::CHALLENGE);
		EXPECT_TRUE(read_exact(an.acc, sizeof an.acc));
		for (size_t i = 0; i < sizeof an.con; i++)
			an.con[i] = (unsigned char)(fake_port + i * 7);
		h = {};
		h.type = frame::HELLO;
		h.aux = window;
		unsigned char body[auth::nonce_len + auth::mac_len + sizeof(sockaddr_in)];
		memcpy(body, an.con, auth::nonce_len);
		auth::prove(key, auth::role::connector, an, h, &fake, sizeof fake, body + auth::nonce_len);
		memcpy(body + auth::nonce_len + auth::mac_len, &fake, sizeof fake);
		h.len = sizeof body;
		put(h, body, sizeof body);
	}
	~raw_peer() { close(); }
	/* The peer goes away (its socket closes). */
	void close()
	{
		if (fd >= 0)
			::close(fd);
		fd = -1;
	}
	void put(const wu::tcp::frame::header &h, const void *body, size_t n)
	{
		std::vector<unsigned char> buf(wu::tcp::frame::hdr_size + n);
		wu::tcp::frame::encode(h, buf.data());
		if (n)
			memcpy(buf.data() + wu::tcp::frame::hdr_size, body, n);
		ASSERT_EQ(send(fd, buf.data(), buf.size(), MSG_NOSIGNAL), ssize_t(buf.size()));
	}
	/* Writes bytes as they are, driving the endpoint while the socket is
	 * full; false once the endpoint closed it (or after wait_limit). */
	bool put_raw(const void *p, size_t n)
	{
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (n) {
			ssize_t r = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
			    std::chrono::steady_clock::now() < until) {
				spin({to.tx, to.rx}, 1);
				continue;
			}
			if (r <= 0)
				return false;
			p = static_cast<const char *>(p) + r;
			n -= size_t(r);
		}
		return true;
	}
	/* Reads n bytes, driving the endpoint meanwhile; false on EOF. */
	bool read_exact(void *p, size_t n)
	{
		size_t have = 0;
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (have < n && std::chrono::steady_clock::now() < until) {
			spin({to.tx, to.rx}, 1);
			ssize_t r = recv(fd, static_cast<char *>(p) + have, n - have, MSG_DONTWAIT);
			if (r == 0)
				return false;
			if (r > 0)
				have += size_t(r);
		}
		EXPECT_EQ(have, n);
		return have == n;
	}
	/* Reads a header; a HELLO_ACK's proof is read and checked here. */
	bool get(wu::tcp::frame::header &h)
	{
		namespace frame = wu::tcp::frame;
		namespace auth = wu::tcp::auth;
		unsigned char buf[frame::hdr_size];
		if (!read_exact(buf, sizeof buf))
			return false;
		EXPECT_EQ(frame::decode(buf, sizeof buf, h), frame::error::ok);
		if (h.type == frame::HELLO_ACK && h.len == auth::mac_len) {
			unsigned char mac[auth::mac_len];
			if (!read_exact(mac, sizeof mac))
				return false;
			EXPECT_TRUE(auth::verify(key, auth::role::acceptor, an, h, nullptr, 0, mac));
		}
		return true;
	}
	/* True once the endpoint closed the connection. */
	bool closed_by_peer()
	{
		auto until = std::chrono::steady_clock::now() + wait_limit;
		char c;
		while (std::chrono::steady_clock::now() < until) {
			spin({to.tx, to.rx}, 1);
			ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
				return true;
		}
		return false;
	}
	fi_addr_t insert()
	{
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		EXPECT_EQ(fi_av_insert(to.av, &fake, 1, &a, 0, nullptr), 1);
		return a;
	}
};


/* The handshake relay of issue 32, as an attacker without the job key runs
 * it: it listens where an endpoint will dial (addr: a peer that is not up),
 * and when that endpoint dials, it opens a connection of its own to a
 * target endpoint and shuttles the bytes both ways, so that the two run
 * their handshake through it.  Then it keeps its connection to the target
 * and speaks on it: an RMA write of 8 bytes at wr_addr and a read of 8
 * bytes at rd_addr under key.  No gtest calls: it also runs in a forked
 * process of another user. */
struct relay {
	int lfd = -1, in = -1, out = -1;
	sockaddr_in addr{};
	std::vector<char> target;
	/* What it achieved. */
	size_t to_target = 0, to_dialer = 0; /* bytes relayed */
	bool target_closed = false;	      /* the target ended our connection */
	std::string after;		      /* what the target sent after the relay phase */

	explicit relay(const std::vector<char> &target_name) : target(target_name)
	{
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		addr.sin_family = AF_INET;
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t l = sizeof addr;
		if (bind(lfd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) || listen(lfd, 4) ||
		    getsockname(lfd, reinterpret_cast<sockaddr *>(&addr), &l))
			::close(lfd), lfd = -1;
	}
	~relay()
	{
		for (int fd : {lfd, in, out})
			if (fd >= 0)
				::close(fd);
	}
	relay(const relay &) = delete;
	relay &operator=(const relay &) = delete;

	/* Accepts the dialer (within wait_limit), dials the target, relays
	 * until stop is set and nothing moved for 200 ms; false if nobody
	 * dialed or the target is not reachable. */
	bool run(const std::atomic<bool> &stop)
	{
		pollfd pl{lfd, POLLIN, 0};
		if (lfd < 0 || poll(&pl, 1, int(std::chrono::milliseconds(wait_limit).count())) != 1)
			return false;
		in = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
		out = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (in < 0 || out < 0 ||
		    connect(out, reinterpret_cast<const sockaddr *>(target.data()), socklen_t(target.size())))
			return false;
		bool in_open = true;
		auto quiet_since = std::chrono::steady_clock::now();
		while (!stop.load() || std::chrono::steady_clock::now() - quiet_since < std::chrono::milliseconds(200)) {
			pollfd p[2] = {{in, short(in_open ? POLLIN : 0), 0}, {out, short(target_closed ? 0 : POLLIN), 0}};
			if (poll(p, 2, 20) <= 0)
				continue;
			for (int k = 0; k < 2; k++) {
				if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				char buf[4096];
				ssize_t n = recv(p[k].fd, buf, sizeof buf, MSG_DONTWAIT);
				if (n <= 0) {
					if (k)
						target_closed = true;
					else
						in_open = false;
					continue;
				}
				quiet_since = std::chrono::steady_clock::now();
				(void)!send(k ? in : out, buf, size_t(n), MSG_NOSIGNAL);
				(k ? to_dialer : to_target) += size_t(n);
			}
		}
		return true;
	}

	/* Its own frames to the target: a write and a read; collects the
	 * target's answers (for up to a second, or until it closes). */
	void attack(uint64_t key, uint64_t wr_addr, uint64_t rd_addr)
	{
		namespace frame = wu::tcp::frame;
		if (out < 0 || target_closed)
			return;
		unsigned char f[2 * frame::hdr_size + 8];
		frame::header h;
		h.type = frame::WRITE;
		h.tag = key;
		h.aux = wr_addr;
		h.len = 8;
		h.id = 1001;
		frame::encode(h, f);
		memset(f + frame::hdr_size, 0x41, 8);
		h = {};
		h.type = frame::READ_REQ;
		h.tag = key;
		h.aux = rd_addr;
		h.data = 8;
		h.id = 1002;
		frame::encode(h, f + frame::hdr_size + 8);
		(void)!send(out, f, sizeof f, MSG_NOSIGNAL);
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
		while (!target_closed && std::chrono::steady_clock::now() < until) {
			pollfd p{out, POLLIN, 0};
			if (poll(&p, 1, 20) <= 0)
				continue;
			char buf[4096];
			ssize_t n = recv(out, buf, sizeof buf, MSG_DONTWAIT);
			if (n <= 0)
				target_closed = true;
			else
				after.append(buf, size_t(n));
		}
	}
};

/* What a relay's target endpoint (issue 32) holds: a registered region of
 * a word the attacker must not read and one it must not write (key `key`),
 * and a receive posted on ep that must get nothing. */
struct relay_target {
	static constexpr uint64_t secret = 0x5ec7e75ec7e75ec7ull;
	uint64_t mem[2] = {secret, 0};
	uint64_t got = 0;
	fid_mr *mr = nullptr;
	uint64_t base = 0; /* the region's address as RMA frames name it */

	relay_target(prov_env &env, rdm_ep &ep, uint64_t key)
	{
		EXPECT_EQ(fi_mr_reg(env.domain, mem, sizeof mem, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, key, 0, &mr,
				    nullptr),
			  0);
		base = (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(mem)) : 0;
		EXPECT_EQ(fi_recv(ep.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	}
	~relay_target()
	{
		if (mr) {
			EXPECT_EQ(fi_close(&mr->fid), 0);
		}
	}
	relay_target(const relay_target &) = delete;
	relay_target &operator=(const relay_target &) = delete;
	/* Whether bytes an attacker received hold the secret word. */
	static bool leaked(const std::string &bytes)
	{
		return bytes.find(std::string(reinterpret_cast<const char *>(&secret), sizeof secret)) !=
		       std::string::npos;
	}
};

} // namespace wu::test

#endif
