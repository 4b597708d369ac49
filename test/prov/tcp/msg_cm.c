/* SPDX-License-Identifier: BSD-3-Clause */
/* MSG connection management as programs written against libfabric use
 * it, built against the libfabric API only so that msg_cm.sh runs the
 * same binary on Debian's libfabric and on ours (LD_LIBRARY_PATH).
 *
 *   msg_cm badflags   fi_ep_bind / fi_pep_bind to an EQ with flags: -FI_EBADFLAGS
 *   msg_cm shutdown   connect / accept / private data / fi_shutdown, over
 *                     growing private-data sizes: FI_SHUTDOWN on both sides
 *   msg_cm slowaccept the server application calls fi_accept late (WU_SLOW_MS):
 *                     the client waits for it
 *   msg_cm reuse PORT an RDM endpoint on a fixed port that accepted a
 *                     connection is closed, and the same port opened again
 *                     at once (its connection is in TIME_WAIT)
 *
 * Prints one line per check; exits 0 when all hold, 1 otherwise. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "../common/diff_prog.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

static void open_fabric(enum fi_ep_type type, const char *node, const char *service, uint64_t flags)
{
	struct fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = type;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->addr_format = FI_SOCKADDR_IN;
	TRY(fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info));
	fi_freeinfo(hints);
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
}

static void close_fabric(void)
{
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

static struct fid_eq *open_eq(void)
{
	struct fi_eq_attr ea = {.wait_obj = FI_WAIT_UNSPEC};
	struct fid_eq *eq;
	TRY(fi_eq_open(fabric, &ea, &eq, NULL));
	return eq;
}

/* EQs read with FI_PEEK while waiting: libfabric's tcp progresses a
 * connection's other side only when its own EQ is read. */
static struct fid_eq *pokes[2];
static struct fid_cq *cq_pokes[2];

/* One CM event within 5 s: the event, or -1 (error entry or nothing). */
static int read_event(struct fid_eq *eq, void *buf, size_t len, ssize_t *got)
{
	uint32_t event;
	ssize_t r = -FI_EAGAIN;
	for (int i = 0; i < 5000 && r == -FI_EAGAIN; i++) {
		r = fi_eq_sread(eq, &event, buf, len, 1, 0);
		for (int k = 0; k < 2 && r == -FI_EAGAIN; k++) {
			char tmp[sizeof(struct fi_eq_cm_entry) + 256];
			uint32_t ev2;
			if (pokes[k] && pokes[k] != eq)
				fi_eq_read(pokes[k], &ev2, tmp, sizeof tmp, FI_PEEK);
			if (cq_pokes[k])
				fi_cq_read(cq_pokes[k], tmp, 0);
		}
	}
	if (got)
		*got = r;
	if (r == -FI_EAVAIL) {
		struct fi_eq_err_entry err = {0};
		fi_eq_readerr(eq, &err, 0);
		printf("  (EQ error entry: %s)\n", fi_strerror(err.err));
		return -1;
	}
	return r < 0 ? -1 : (int)event;
}

static int badflags(void)
{
	open_fabric(FI_EP_MSG, NULL, NULL, 0);
	struct fid_eq *eq = open_eq();
	struct fid_ep *ep;
	struct fid_pep *pep;
	TRY(fi_endpoint(domain, info, &ep, NULL));
	TRY(fi_passive_ep(fabric, info, &pep, NULL));
	int r = fi_ep_bind(ep, &eq->fid, FI_TRANSMIT | FI_RECV);
	CHECK(r == -FI_EBADFLAGS, "fi_ep_bind(ep, eq, FI_TRANSMIT | FI_RECV) = %d, want -FI_EBADFLAGS", r);
	/* Refused; libfabric's tcp says -FI_EINVAL here, ours -FI_EBADFLAGS. */
	r = fi_pep_bind(pep, &eq->fid, FI_RECV);
	CHECK(r == -FI_EBADFLAGS || r == -FI_EINVAL, "fi_pep_bind(pep, eq, FI_RECV) = %d, refused", r);
	r = fi_ep_bind(ep, &eq->fid, 0);
	CHECK(r == 0, "fi_ep_bind(ep, eq, 0) = %d", r);
	r = fi_pep_bind(pep, &eq->fid, 0);
	CHECK(r == 0, "fi_pep_bind(pep, eq, 0) = %d", r);
	fi_close(&ep->fid);
	fi_close(&pep->fid);
	fi_close(&eq->fid);
	close_fabric();
	return failures;
}

struct cm_ev {
	struct fi_eq_cm_entry e;
	char data[256];
};

static int shutdown_loop(void)
{
	open_fabric(FI_EP_MSG, "127.0.0.1", NULL, FI_SOURCE);
	struct fid_eq *peq = open_eq(), *ceq = open_eq();
	pokes[0] = peq;
	pokes[1] = ceq;
	char addr[128];
	size_t alen = sizeof addr;
	struct fid_pep *pep = listen_pep(fabric, info, peq, addr, &alen);
	size_t sizes[] = {0, 1, 16, 64, 128, 255};
	char out[256], back[256];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i];
		memset(out, 'a' + (int)i, sizeof out);
		memset(back, 'A' + (int)i, sizeof back);
		struct fid_cq *ccq, *scq;
		struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
		TRY(fi_cq_open(domain, &ca, &ccq, NULL));
		TRY(fi_cq_open(domain, &ca, &scq, NULL));
		cq_pokes[0] = ccq;
		cq_pokes[1] = scq;
		struct fid_ep *client, *server;
		TRY(fi_endpoint(domain, info, &client, NULL));
		TRY(fi_ep_bind(client, &ceq->fid, 0));
		TRY(fi_ep_bind(client, &ccq->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(client));
		TRY(fi_connect(client, addr, n ? out : NULL, n));
		struct cm_ev ev;
		ssize_t got;
		int e = read_event(peq, &ev, sizeof ev, &got);
		CHECK(e == FI_CONNREQ && (size_t)got == sizeof ev.e + n && !memcmp(ev.data, out, n),
		      "size %zu: server reads FI_CONNREQ with the private data (event %d, %zd bytes)", n, e, got);
		if (e != FI_CONNREQ)
			return 1;
		TRY(fi_endpoint(domain, ev.e.info, &server, NULL));
		fi_freeinfo(ev.e.info);
		TRY(fi_ep_bind(server, &peq->fid, 0));
		TRY(fi_ep_bind(server, &scq->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(server));
		TRY(fi_accept(server, n ? back : NULL, n));
		e = read_event(peq, &ev, sizeof ev, &got);
		CHECK(e == FI_CONNECTED && ev.e.fid == &server->fid, "size %zu: server reads FI_CONNECTED (%d)", n, e);
		e = read_event(ceq, &ev, sizeof ev, &got);
		CHECK(e == FI_CONNECTED && (size_t)got == sizeof ev.e + n && !memcmp(ev.data, back, n),
		      "size %zu: client reads FI_CONNECTED with the private data (event %d, %zd bytes)", n, e, got);
		TRY(fi_shutdown(client, 0));
		e = read_event(ceq, &ev, sizeof ev, &got);
		CHECK(e == FI_SHUTDOWN && ev.e.fid == &client->fid,
		      "size %zu: client reads FI_SHUTDOWN after its own fi_shutdown (%d)", n, e);
		e = read_event(peq, &ev, sizeof ev, &got);
		CHECK(e == FI_SHUTDOWN && ev.e.fid == &server->fid, "size %zu: server reads FI_SHUTDOWN (%d)", n, e);
		fi_close(&client->fid);
		fi_close(&server->fid);
		cq_pokes[0] = cq_pokes[1] = NULL;
		fi_close(&ccq->fid);
		fi_close(&scq->fid);
		if (failures)
			break;
	}
	fi_close(&pep->fid);
	fi_close(&peq->fid);
	fi_close(&ceq->fid);
	close_fabric();
	return failures;
}

/* The server application answers a request late (WU_SLOW_MS, default
 * 1500 ms): the client meanwhile polls its EQ and must not give up. */
static int slow_accept(void)
{
	open_fabric(FI_EP_MSG, "127.0.0.1", NULL, FI_SOURCE);
	struct fid_eq *peq = open_eq(), *ceq = open_eq();
	pokes[0] = peq;
	pokes[1] = ceq;
	char addr[128];
	size_t alen = sizeof addr;
	struct fid_pep *pep = listen_pep(fabric, info, peq, addr, &alen);
	struct fid_ep *client, *server;
	struct fid_cq *ccq, *scq;
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
	TRY(fi_cq_open(domain, &ca, &ccq, NULL));
	TRY(fi_cq_open(domain, &ca, &scq, NULL));
	TRY(fi_endpoint(domain, info, &client, NULL));
	TRY(fi_ep_bind(client, &ceq->fid, 0));
	TRY(fi_ep_bind(client, &ccq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_connect(client, addr, NULL, 0));
	struct cm_ev ev;
	int e = read_event(peq, &ev, sizeof ev, NULL);
	CHECK(e == FI_CONNREQ, "server reads FI_CONNREQ (%d)", e);
	if (e != FI_CONNREQ)
		return 1;
	int slow = getenv("WU_SLOW_MS") ? atoi(getenv("WU_SLOW_MS")) : 1500;
	for (int i = 0; i < slow; i++) {
		uint32_t ev2;
		ssize_t r = fi_eq_sread(ceq, &ev2, &ev, sizeof ev, 1, 0);
		if (r != -FI_EAGAIN) {
			CHECK(0, "the client's EQ reported %zd before the server answered", r);
			return 1;
		}
	}
	TRY(fi_endpoint(domain, ev.e.info, &server, NULL));
	fi_freeinfo(ev.e.info);
	TRY(fi_ep_bind(server, &peq->fid, 0));
	TRY(fi_ep_bind(server, &scq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_accept(server, NULL, 0));
	e = read_event(ceq, &ev, sizeof ev, NULL);
	CHECK(e == FI_CONNECTED, "client reads FI_CONNECTED after a late fi_accept (%d)", e);
	fi_close(&client->fid);
	fi_close(&server->fid);
	fi_close(&ccq->fid);
	fi_close(&scq->fid);
	fi_close(&pep->fid);
	fi_close(&peq->fid);
	fi_close(&ceq->fid);
	close_fabric();
	return failures;
}

static struct fid_ep *rdm_ep(struct fi_info *fi, struct fid_av *av, struct fid_cq *cq)
{
	struct fid_ep *ep;
	int r = fi_endpoint(domain, fi, &ep, NULL);
	if (r) {
		printf("  (fi_endpoint: %s)\n", fi_strerror(-r));
		return NULL;
	}
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	r = fi_enable(ep);
	if (r) {
		printf("  (fi_enable: %s)\n", fi_strerror(-r));
		fi_close(&ep->fid);
		return NULL;
	}
	return ep;
}

/* Waits (bounded) for one completion on cq. */
static int wait_cq(struct fid_cq *cq, struct fid_cq *other)
{
	struct fi_cq_entry e;
	for (int i = 0; i < 500000; i++) {
		ssize_t r = fi_cq_read(cq, &e, 1);
		if (r == 1)
			return 0;
		if (r != -FI_EAGAIN)
			return -1;
		if (other)
			fi_cq_read(other, &e, 0);
	}
	return -1;
}

static int reuse(const char *port)
{
	open_fabric(FI_EP_RDM, "127.0.0.1", port, FI_SOURCE);
	struct fi_av_attr aa = {.type = FI_AV_MAP};
	struct fid_av *av;
	struct fid_cq *scq, *ccq;
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
	TRY(fi_av_open(domain, &aa, &av, NULL));
	TRY(fi_cq_open(domain, &ca, &scq, NULL));
	TRY(fi_cq_open(domain, &ca, &ccq, NULL));
	struct fi_info *cinfo = fi_dupinfo(info);
	((struct sockaddr_in *)cinfo->src_addr)->sin_port = 0;
	for (int round = 0; round < 2; round++) {
		struct fid_ep *server = rdm_ep(info, av, scq);
		CHECK(server != NULL, "round %d: an RDM endpoint opens on port %s", round, port);
		if (!server)
			break;
		struct fid_ep *client = rdm_ep(cinfo, av, ccq);
		if (!client)
			return 1;
		char name[128];
		size_t nlen = sizeof name;
		TRY(fi_getname(&server->fid, name, &nlen));
		fi_addr_t dest;
		CHECK(fi_av_insert(av, name, 1, &dest, 0, NULL) == 1, "round %d: server address inserted", round);
		char in[8] = "", out[8] = "ping";
		TRY(fi_recv(server, in, sizeof in, NULL, FI_ADDR_UNSPEC, NULL));
		ssize_t r;
		while ((r = fi_send(client, out, sizeof out, NULL, dest, NULL)) == -FI_EAGAIN)
			wait_cq(ccq, scq);
		CHECK(r == 0, "round %d: fi_send = %zd", round, r);
		CHECK(wait_cq(scq, ccq) == 0 && !strcmp(in, "ping"), "round %d: the server received", round);
		wait_cq(ccq, scq);
		/* The server closes first: its accepted connection, on the
		 * fixed port, goes to TIME_WAIT. */
		fi_close(&server->fid);
		fi_close(&client->fid);
		fi_av_remove(av, &dest, 1, 0);
	}
	fi_freeinfo(cinfo);
	fi_close(&scq->fid);
	fi_close(&ccq->fid);
	fi_close(&av->fid);
	close_fabric();
	return failures;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: %s badflags|shutdown|slowaccept|reuse PORT\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "badflags"))
		return badflags() ? 1 : 0;
	if (!strcmp(argv[1], "shutdown"))
		return shutdown_loop() ? 1 : 0;
	if (!strcmp(argv[1], "slowaccept"))
		return slow_accept() ? 1 : 0;
	if (!strcmp(argv[1], "reuse") && argc > 2)
		return reuse(argv[2]) ? 1 : 0;
	fprintf(stderr, "unknown case %s\n", argv[1]);
	return 2;
}
