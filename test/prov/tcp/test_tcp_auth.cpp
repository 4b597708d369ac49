/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider, job-key handshake (src/prov/tcp/auth.h): the per-user key
 * file, FI_TCP_JOB_KEY overriding it, the key never on the wire, peers
 * without the key refused on both RDM and MSG endpoints (and the refused
 * sender told why), no connection taking over a live peer's address, and
 * no handshake relayed between two endpoints by someone without the key. */
#include "../common/tcp_fixture.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

using namespace wu::test;
namespace frame = wu::tcp::frame;
namespace auth = wu::tcp::auth;

namespace {

/* A private scratch directory, removed with its files. */
struct scratch {
	std::string dir;
	scratch()
	{
		char t[] = "/tmp/wireup-auth-XXXXXX";
		EXPECT_NE(mkdtemp(t), nullptr);
		dir = t;
	}
	~scratch() { (void)!system(("rm -rf '" + dir + "'").c_str()); }
};

/* Sets an environment variable for a scope. */
struct env_var {
	std::string name;
	env_var(const char *n, const std::string &v) : name(n) { setenv(n, v.c_str(), 1); }
	~env_var() { unsetenv(name.c_str()); }
};

bool same(const auth::key &a, const auth::key &b)
{
	return memcmp(a.b, b.b, sizeof a.b) == 0;
}

std::string slurp(const std::string &path)
{
	std::ifstream f(path);
	return std::string(std::istreambuf_iterator<char>(f), {});
}

} // namespace

TEST(tcp_auth_key, key_file_is_created_private_and_read_back)
{
	scratch s;
	std::string path = s.dir + "/sub/dir/tcp-job-key";
	auth::key k1, k2;
	ASSERT_EQ(auth::key_file(path, k1), 0);
	struct stat st;
	ASSERT_EQ(stat(path.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600u);
	EXPECT_EQ(st.st_uid, geteuid());
	std::string text = slurp(path);
	EXPECT_EQ(text.size(), 65u);
	/* Read again: the same key; no temporary file left behind. */
	ASSERT_EQ(auth::key_file(path, k2), 0);
	EXPECT_TRUE(same(k1, k2));
	EXPECT_EQ(slurp(path), text);
	EXPECT_EQ(system(("test $(ls -A '" + s.dir + "/sub/dir' | wc -l) -eq 1").c_str()), 0);
	/* Another file: another random key. */
	auth::key k3;
	ASSERT_EQ(auth::key_file(s.dir + "/other", k3), 0);
	EXPECT_FALSE(same(k1, k3));
}

TEST(tcp_auth_key, unsafe_or_malformed_key_files_are_refused)
{
	scratch s;
	std::string path = s.dir + "/key";
	auth::key k;
	ASSERT_EQ(auth::key_file(path, k), 0);
	ASSERT_EQ(chmod(path.c_str(), 0644), 0);
	EXPECT_EQ(auth::key_file(path, k), -FI_EACCES);
	ASSERT_EQ(chmod(path.c_str(), 0620), 0);
	EXPECT_EQ(auth::key_file(path, k), -FI_EACCES);
	ASSERT_EQ(chmod(path.c_str(), 0600), 0);
	EXPECT_EQ(auth::key_file(path, k), 0);
	{
		std::ofstream f(path, std::ios::trunc);
		f << "not a key\n";
	}
	EXPECT_EQ(auth::key_file(path, k), -FI_EACCES);
	/* A symlink is not followed. */
	std::string real = s.dir + "/real", link = s.dir + "/link";
	ASSERT_EQ(auth::key_file(real, k), 0);
	ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
	EXPECT_EQ(auth::key_file(link, k), -FI_EACCES);
	if (geteuid() == 0) {
		/* Owned by someone else (root can make that). */
		ASSERT_EQ(chown(real.c_str(), 65534, 65534), 0);
		EXPECT_EQ(auth::key_file(real, k), -FI_EACCES);
	}
}

TEST(tcp_auth_key, job_key_comes_from_the_file_unless_fi_tcp_job_key_is_set)
{
	scratch s;
	std::string path = s.dir + "/key";
	env_var f("FI_TCP_JOB_KEY_FILE", path);
	auth::key from_file, k;
	ASSERT_EQ(auth::job_key(from_file), 0);
	ASSERT_EQ(auth::key_file(path, k), 0);
	EXPECT_TRUE(same(from_file, k));
	{
		env_var j("FI_TCP_JOB_KEY", "job 42");
		ASSERT_EQ(auth::job_key(k), 0);
		EXPECT_TRUE(same(k, auth::key_from_text("job 42")));
		EXPECT_FALSE(same(k, from_file));
		/* The variable wins even over an unusable file. */
		ASSERT_EQ(chmod(path.c_str(), 0644), 0);
		EXPECT_EQ(auth::job_key(k), 0);
	}
	EXPECT_EQ(auth::job_key(k), -FI_EACCES);
	/* And no endpoint opens on an unsafe key file. */
	tcp_env env{FI_EP_RDM};
	fid_ep *ep = nullptr;
	EXPECT_EQ(fi_endpoint(env.domain, env.info, &ep, nullptr), -FI_EACCES);
	EXPECT_EQ(ep, nullptr);
}

/* The endpoint's side of the handshake as a dialer: it says nothing before
 * our CHALLENGE, and its HELLO carries a proof, not the key. */
TEST(tcp_auth_wire, the_key_never_crosses_the_wire)
{
	const std::string secret = "a job key that must stay home";
	env_var j("FI_TCP_JOB_KEY", secret);
	auth::key k = auth::key_from_text(secret);
	tcp_env env{FI_EP_RDM};
	rdm_ep a{env};
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof sa;
	ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
	ASSERT_EQ(listen(lfd, 4), 0);
	ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr *>(&sa), &l), 0);
	fi_addr_t peer;
	ASSERT_EQ(fi_av_insert(a.av, &sa, 1, &peer, 0, nullptr), 1);
	int v = 7;
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, peer, nullptr), 0);
	spin({a.tx, a.rx}, 50);
	int fd = accept(lfd, nullptr, nullptr);
	ASSERT_GE(fd, 0);
	auto read_all = [&](size_t want) {
		std::string got;
		for (int i = 0; i < 2000 && got.size() < want; i++) {
			spin({a.tx}, 1);
			char buf[512];
			ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
			if (n > 0)
				got.append(buf, size_t(n));
			else
				usleep(500);
		}
		return got;
	};
	/* Nothing before the challenge. */
	EXPECT_EQ(read_all(1), "");
	frame::header h;
	h.type = frame::CHALLENGE;
	h.len = auth::nonce_len;
	unsigned char ch[frame::hdr_size + auth::nonce_len] = {};
	frame::encode(h, ch);
	for (size_t i = 0; i < auth::nonce_len; i++)
		ch[frame::hdr_size + i] = (unsigned char)(0xa0 + i);
	ASSERT_EQ(send(fd, ch, sizeof ch, MSG_NOSIGNAL), ssize_t(sizeof ch));
	std::string hello = read_all(frame::hdr_size + frame::min_hello);
	ASSERT_EQ(hello.size(), frame::hdr_size + frame::min_hello);
	ASSERT_EQ(frame::decode(hello.data(), hello.size(), h), frame::error::ok);
	EXPECT_EQ(h.type, frame::HELLO);
	EXPECT_EQ(h.tag, 0u);
	/* Neither the key, nor any 8 bytes of it, nor the text. */
	std::string kb(reinterpret_cast<const char *>(k.b), sizeof k.b);
	for (size_t i = 0; i + 8 <= kb.size(); i++)
		EXPECT_EQ(hello.find(kb.substr(i, 8)), std::string::npos);
	EXPECT_EQ(hello.find(secret.substr(0, 8)), std::string::npos);
	/* What it carries is a proof over our nonce and its own. */
	auth::session an;
	ASSERT_TRUE(auth::bind_ends(an, fd, auth::role::acceptor));
	memcpy(an.acc, ch + frame::hdr_size, auth::nonce_len);
	memcpy(an.con, hello.data() + frame::hdr_size, auth::nonce_len);
	const auto *mac = reinterpret_cast<const unsigned char *>(hello.data()) + frame::hdr_size + auth::nonce_len;
	const char *addr = hello.data() + frame::hdr_size + auth::nonce_len + auth::mac_len;
	EXPECT_TRUE(auth::verify(k, auth::role::connector, an, h, addr, sizeof(sockaddr_in), mac));
	EXPECT_FALSE(auth::verify(auth::key_from_text("guess"), auth::role::connector, an, h, addr, sizeof(sockaddr_in), mac));
	/* Not replayable as the other side's answer. */
	EXPECT_FALSE(auth::verify(k, auth::role::acceptor, an, h, addr, sizeof(sockaddr_in), mac));
	::close(fd);
	::close(lfd);
}

/* An endpoint whose proof does not verify is refused, and its sender logs
 * why; its messages are never delivered. */
TEST(tcp_auth_rdm, a_peer_with_another_key_is_refused_both_ways)
{
	std::unique_ptr<tcp_env> ea, eb;
	std::unique_ptr<rdm_ep> a, b;
	{
		env_var j("FI_TCP_JOB_KEY", "key one");
		ea = std::make_unique<tcp_env>(FI_EP_RDM);
		a = std::make_unique<rdm_ep>(*ea);
	}
	{
		env_var j("FI_TCP_JOB_KEY", "key two");
		eb = std::make_unique<tcp_env>(FI_EP_RDM);
		b = std::make_unique<rdm_ep>(*eb);
	}
	fi_addr_t b_to_a = b->insert(*a), a_to_b = a->insert(*b);
	uint64_t refused = wu::tcp::get_stats().refused_handshakes;
	int got = 0, v = 5, ctx;
	ASSERT_EQ(fi_recv(a->ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b->ep, &v, sizeof v, nullptr, b_to_a, &ctx), 0);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(wait_one(b->tx, e, &err, {a->rx, a->tx, b->rx}), -FI_EAVAIL);
	EXPECT_EQ(err.op_context, &ctx);
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	/* Counted on both sides: a refused it, b was refused. */
	EXPECT_GE(wu::tcp::get_stats().refused_handshakes, refused + 2);
	spin({a->rx, a->tx}, 200);
	EXPECT_EQ(fi_cq_read(a->rx, &e, 1), -FI_EAGAIN);
	EXPECT_EQ(got, 0);
	/* The other direction too. */
	ASSERT_EQ(fi_send(a->ep, &v, sizeof v, nullptr, a_to_b, &ctx), 0);
	err = {};
	ASSERT_EQ(wait_one(a->tx, e, &err, {a->rx, b->rx, b->tx}), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	b.reset();
	a.reset();
}

TEST(tcp_auth_msg, a_connect_with_another_key_is_refused_and_never_reported)
{
	std::unique_ptr<tcp_env> es, ec;
	fid_pep *pep = nullptr;
	{
		env_var j("FI_TCP_JOB_KEY", "server key");
		es = std::make_unique<tcp_env>(FI_EP_MSG);
		ASSERT_EQ(fi_passive_ep(es->fabric, es->info, &pep, nullptr), 0);
	}
	ASSERT_EQ(fi_pep_bind(pep, &es->eq->fid, 0), 0);
	ASSERT_EQ(fi_listen(pep), 0);
	std::vector<char> name(64);
	size_t nl = name.size();
	ASSERT_EQ(fi_getname(&pep->fid, name.data(), &nl), 0);
	fid_ep *ep = nullptr;
	{
		env_var j("FI_TCP_JOB_KEY", "client key");
		ec = std::make_unique<tcp_env>(FI_EP_MSG);
		ASSERT_EQ(fi_endpoint(ec->domain, ec->info, &ep, nullptr), 0);
	}
	ASSERT_EQ(fi_ep_bind(ep, &ec->eq->fid, 0), 0);
	uint64_t refused = wu::tcp::get_stats().refused_handshakes;
	const char pd[] = "private";
	ASSERT_EQ(fi_connect(ep, name.data(), pd, sizeof pd), 0);
	/* The client gets ECONNREFUSED; the server's EQ never sees a CONNREQ. */
	uint32_t event;
	fi_eq_cm_entry ent;
	ssize_t r = fi_eq_sread(ec->eq, &event, &ent, sizeof ent, 5000, 0);
	ASSERT_EQ(r, -FI_EAVAIL);
	fi_eq_err_entry ee{};
	ASSERT_EQ(fi_eq_readerr(ec->eq, &ee, 0), ssize_t(sizeof ee));
	EXPECT_EQ(ee.err, FI_ECONNREFUSED);
	EXPECT_GE(wu::tcp::get_stats().refused_handshakes, refused + 2);
	EXPECT_EQ(fi_eq_sread(es->eq, &event, &ent, sizeof ent, 200, 0), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&pep->fid), 0);
}

/* A connection that claims the listening address of a peer with a live
 * connection is refused: it does not take over that peer's traffic, its
 * messages are not delivered as the peer's (FI_SOURCE), and the peer goes
 * on unharmed. */
TEST(tcp_auth_rdm, a_claimed_address_with_a_live_connection_is_refused)
{
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_SOURCE};
	rdm_ep a{env}, b{env};
	fi_addr_t b_to_a = b.insert(a), a_from_b = a.insert(b);
	int got = 0, v = 1;
	fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_recv(a.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	ASSERT_EQ(wait_one(a.rx, e, nullptr, {b.tx, b.rx, a.tx}, &src), 1);
	EXPECT_EQ(src, a_from_b);
	/* An insider (it has the key) claims b's address. */
	uint16_t b_port = ntohs(reinterpret_cast<const sockaddr_in *>(b.name.data())->sin_port);
	uint64_t refused = wu::tcp::get_stats().refused_handshakes;
	{
		raw_peer impostor(a, 0, b_port);
		frame::header ack;
		ASSERT_TRUE(impostor.get(ack));
		EXPECT_EQ(ack.type, frame::HELLO_ACK);
		EXPECT_EQ(ack.data, frame::ack_addr_taken);
		/* Whatever it sends next is not delivered. */
		frame::header m;
		m.type = frame::MSG;
		m.len = sizeof v;
		unsigned char f[frame::hdr_size + sizeof v];
		frame::encode(m, f);
		int forged = 666;
		memcpy(f + frame::hdr_size, &forged, sizeof forged);
		(void)impostor.put_raw(f, sizeof f); /* may already be closed */
		EXPECT_TRUE(impostor.closed_by_peer());
	}
	EXPECT_EQ(wu::tcp::get_stats().refused_handshakes, refused + 1);
	got = 0;
	ASSERT_EQ(fi_recv(a.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	spin({a.rx, a.tx}, 200);
	EXPECT_EQ(fi_cq_read(a.rx, &e, 1), -FI_EAGAIN);
	EXPECT_EQ(got, 0);
	/* b's connection still carries b's messages, in both directions. */
	v = 2;
	ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
	src = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(wait_one(a.rx, e, nullptr, {b.tx, b.rx, a.tx}, &src), 1);
	EXPECT_EQ(got, 2);
	EXPECT_EQ(src, a_from_b);
	int back = 0;
	ASSERT_EQ(fi_recv(b.ep, &back, sizeof back, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_from_b, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx, a.rx, b.tx}), 1);
	EXPECT_EQ(back, 2);
}

/* Issue 32: an attacker without the key listens where a dials (a peer that
 * is not up) and relays that connection to b's listener, so that a and b
 * prove the key to each other through it.  Each proof covers the
 * connection as its side sees it, and a's connection (to the attacker) is
 * not the attacker's connection to b: b refuses the handshake, a's send
 * fails, nothing reaches b, and the attacker's own RMA on its connection to
 * b neither writes nor reads b's memory. */
TEST(tcp_auth_relay, a_relayed_rdm_handshake_fails)
{
	env_var j("FI_TCP_JOB_KEY", "the victims' key");
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA | FI_SOURCE};
	rdm_ep a{env}, b{env};
	b.insert(a); /* b knows a: FI_SOURCE could name it */
	relay_target tb(env, b, 77);
	relay r(b.name);
	ASSERT_GE(r.lfd, 0);
	fi_addr_t absent;
	ASSERT_EQ(fi_av_insert(a.av, &r.addr, 1, &absent, 0, nullptr), 1);
	std::atomic<bool> stop{false}, done{false};
	bool relayed = false;
	std::thread t([&] {
		if ((relayed = r.run(stop)))
			r.attack(fi_mr_key(tb.mr), tb.base + 8, tb.base);
		done = true;
	});
	uint64_t v = 0x1234;
	int ctx;
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, absent, &ctx), 0);
	fi_cq_tagged_entry e;
	fi_cq_err_entry err{};
	int rc = wait_one(a.tx, e, &err, {a.rx, b.rx, b.tx});
	stop = true;
	while (!done)
		spin({a.tx, a.rx, b.tx, b.rx}, 1);
	t.join();
	EXPECT_TRUE(relayed);
	EXPECT_GT(r.to_target, 0u);
	EXPECT_EQ(rc, -FI_EAVAIL) << "a's send through the relay completed";
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	spin({b.rx, b.tx}, 100);
	EXPECT_EQ(fi_cq_read(b.rx, &e, 1), -FI_EAGAIN) << "b delivered a relayed message";
	EXPECT_EQ(tb.got, 0u);
	EXPECT_EQ(tb.mem[0], relay_target::secret);
	EXPECT_EQ(tb.mem[1], 0u) << "the attacker wrote b's memory";
	EXPECT_FALSE(relay_target::leaked(r.after)) << "the attacker read b's memory";
	EXPECT_TRUE(r.target_closed);
}

/* The same relay against a passive endpoint: the server never sees the
 * request, the client's fi_connect is refused. */
TEST(tcp_auth_relay, a_relayed_msg_connect_fails)
{
	env_var j("FI_TCP_JOB_KEY", "the victims' key");
	tcp_env es{FI_EP_MSG}, ec{FI_EP_MSG};
	fid_pep *pep = nullptr;
	ASSERT_EQ(fi_passive_ep(es.fabric, es.info, &pep, nullptr), 0);
	ASSERT_EQ(fi_pep_bind(pep, &es.eq->fid, 0), 0);
	ASSERT_EQ(fi_listen(pep), 0);
	std::vector<char> name(sizeof(sockaddr_in));
	size_t nl = name.size();
	ASSERT_EQ(fi_getname(&pep->fid, name.data(), &nl), 0);
	relay r(name);
	ASSERT_GE(r.lfd, 0);
	std::atomic<bool> stop{false};
	bool relayed = false;
	std::thread t([&] { relayed = r.run(stop); });
	fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(ec.domain, ec.info, &ep, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(ep, &ec.eq->fid, 0), 0);
	const char pd[] = "private";
	ASSERT_EQ(fi_connect(ep, &r.addr, pd, sizeof pd), 0);
	uint32_t event = 0;
	fi_eq_cm_entry ent;
	ssize_t rc = fi_eq_sread(ec.eq, &event, &ent, sizeof ent, 5000, 0);
	fi_eq_err_entry ee{};
	if (rc == -FI_EAVAIL)
		(void)fi_eq_readerr(ec.eq, &ee, 0);
	ssize_t srv = fi_eq_sread(es.eq, &event, &ent, sizeof ent, 200, 0);
	if (srv > 0 && event == FI_CONNREQ)
		fi_freeinfo(ent.info);
	stop = true;
	t.join();
	EXPECT_TRUE(relayed);
	EXPECT_EQ(rc, -FI_EAVAIL) << "the relayed fi_connect did not fail";
	EXPECT_EQ(ee.err, FI_ECONNREFUSED);
	EXPECT_EQ(srv, -FI_EAGAIN) << "the server saw event " << event << " from a relayed request";
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&pep->fid), 0);
}
