/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the tcp provider's stream reader as a whole: the
 * input is what a peer writes on one connection to a real RDM endpoint
 * (the whole library, manual progress, 127.0.0.1), read by the provider's
 * own reader (read_conn: framing, headers, bodies into posted receives,
 * unexpected messages, rendezvous, RMA into a registered region, atomics,
 * credits), then the peer goes away.  fuzz_tcp_frame covers the header
 * decoder alone; this one covers what the endpoint does with a sequence of
 * frames it accepted.
 *
 * Input: byte 0 chooses the opening (bit 0: the harness sends a valid
 * HELLO with the job key first, so inputs start past the handshake; bits
 * 1-2: the eager window it announces); the rest goes to the socket as is.
 * Invariants besides the sanitizers: the endpoint always ends the
 * connection (never hangs on it), and every object closes cleanly after. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov/tcp/auth.h"
#include "prov/tcp/frame.h"
#include "prov/tcp/tcp_ep.h"

namespace frame = wu::tcp::frame;

namespace {

[[noreturn]] void fail(const char *what, int r = 0)
{
	fprintf(stderr, "fuzz_tcp_stream invariant broken: %s (%d: %s)\n", what, r, fi_strerror(-r));
	abort();
}

struct env {
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
};

env &the_env()
{
	static env e = [] {
		env v;
		if (!getenv("WU_FUZZ_LOG"))
			setenv("FI_LOG_PROV", "none", 0); /* protocol errors are the point */
		fi_info *hints = fi_allocinfo();
		hints->fabric_attr->prov_name = strdup("tcp");
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
		hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
		hints->addr_format = FI_SOCKADDR_IN;
		int r = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &v.info);
		fi_freeinfo(hints);
		if (r || !v.info)
			fail("fi_getinfo(tcp, 127.0.0.1)", r);
		if ((r = fi_fabric(v.info->fabric_attr, &v.fabric, nullptr)))
			fail("fi_fabric", r);
		if ((r = fi_domain(v.fabric, v.info, &v.domain, nullptr)))
			fail("fi_domain", r);
		return v;
	}();
	return e;
}

void check_close(fid *f, const char *what)
{
	if (int r = fi_close(f))
		fail(what, r);
}

/* Reads completions and errors; the buffers stay posted or are done. */
void drain(fid_cq *cq)
{
	fi_cq_tagged_entry e[8];
	for (int i = 0; i < 64; i++) {
		ssize_t r = fi_cq_read(cq, e, 8);
		if (r == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) != 1)
				fail("fi_cq_readerr after -FI_EAVAIL");
			continue;
		}
		if (r <= 0)
			return;
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	env &E = the_env();
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	fid_mr *mr = nullptr;
	fi_av_attr aa{};
	aa.type = FI_AV_TABLE;
	fi_cq_attr ca{};
	ca.format = FI_CQ_FORMAT_TAGGED;
	int r;
	if ((r = fi_av_open(E.domain, &aa, &av, nullptr)))
		fail("fi_av_open", r);
	if ((r = fi_cq_open(E.domain, &ca, &cq, nullptr)))
		fail("fi_cq_open", r);
	if ((r = fi_endpoint(E.domain, E.info, &ep, nullptr)))
		fail("fi_endpoint", r);
	if ((r = fi_ep_bind(ep, &av->fid, 0)) || (r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)))
		fail("fi_ep_bind", r);
	if ((r = fi_enable(ep)))
		fail("fi_enable", r);

	/* A region RMA and atomics may target (key 7 where the application
	 * picks keys), and receives messages may land in. */
	static std::vector<char> target(4096), bufs[8];
	if ((r = fi_mr_reg(E.domain, target.data(), target.size(),
			   FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7, 0, &mr, nullptr)))
		fail("fi_mr_reg", r);
	if (E.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		if ((r = fi_mr_bind(mr, &ep->fid, 0)) || (r = fi_mr_enable(mr)))
			fail("fi_mr_bind/enable", r);
	}
	for (int i = 0; i < 8; i++) {
		bufs[i].resize(512 << (i % 4));
		if (i % 2)
			r = int(fi_trecv(ep, bufs[i].data(), bufs[i].size(), nullptr, FI_ADDR_UNSPEC, 0,
					 ~0ull, nullptr));
		else
			r = int(fi_recv(ep, bufs[i].data(), bufs[i].size(), nullptr, FI_ADDR_UNSPEC, nullptr));
		if (r)
			fail("posting a receive", r);
	}

	sockaddr_in name{};
	size_t nlen = sizeof name;
	if ((r = fi_getname(&ep->fid, &name, &nlen)))
		fail("fi_getname", r);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&name), sizeof name) != 0)
		fail("connecting to the endpoint");

	std::vector<unsigned char> out;
	if (data[0] & 1) {
		/* A peer that holds the job key: answer the endpoint's CHALLENGE
		 * with a proven HELLO, so the rest reaches the data path. */
		namespace auth = wu::tcp::auth;
		unsigned char ch[frame::hdr_size + auth::nonce_len];
		size_t got = 0;
		for (int round = 0; round < 20000 && got < sizeof ch; round++) {
			drain(cq);
			ssize_t n = recv(fd, ch + got, sizeof ch - got, MSG_DONTWAIT);
			if (n > 0)
				got += size_t(n);
			else if (n == 0)
				break;
		}
		frame::header h;
		if (got != sizeof ch || frame::decode(ch, sizeof ch, h) != frame::error::ok || h.type != frame::CHALLENGE)
			fail("the endpoint sent no CHALLENGE");
		static auth::key key;
		static bool have_key = auth::job_key(key) == 0;
		if (!have_key)
			fail("no job key");
		auth::session an;
		auth::bind_ends(an, fd, auth::role::connector);
		memcpy(an.acc, ch + frame::hdr_size, sizeof an.acc);
		memset(an.con, 0x33, sizeof an.con);
		sockaddr_in fake{};
		fake.sin_family = AF_INET;
		fake.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fake.sin_port = htons(1);
		h = {};
		h.type = frame::HELLO;
		static const uint64_t windows[] = {0, 1024, 65536, 4u << 20};
		h.aux = windows[(data[0] >> 1) & 3];
		h.len = auth::nonce_len + auth::mac_len + sizeof fake;
		out.resize(frame::hdr_size + h.len);
		unsigned char *b = out.data() + frame::hdr_size;
		memcpy(b, an.con, auth::nonce_len);
		auth::prove(key, auth::role::connector, an, h, &fake, sizeof fake, b + auth::nonce_len);
		memcpy(b + auth::nonce_len + auth::mac_len, &fake, sizeof fake);
		frame::encode(h, out.data());
	}
	out.insert(out.end(), data + 1, data + size);

	/* Writes while the endpoint reads; then the peer stops writing and
	 * waits for the endpoint to end the connection. */
	size_t sent = 0;
	bool shut = false, ended = false;
	char sink[4096];
	for (int round = 0; round < 20000 && !ended; round++) {
		if (sent < out.size()) {
			ssize_t w = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0)
				sent += size_t(w);
			else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				sent = out.size(); /* the endpoint closed it already */
		} else if (!shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		drain(cq);
		for (;;) {
			ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
			if (n > 0)
				continue;
			if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				ended = true;
			break;
		}
	}
	if (!ended)
		fail("the endpoint never ended a connection whose peer stopped writing");
	close(fd);
	drain(cq);
	check_close(&ep->fid, "closing the endpoint");
	check_close(&mr->fid, "closing the MR");
	check_close(&cq->fid, "closing the CQ");
	check_close(&av->fid, "closing the AV");
	return 0;
}
