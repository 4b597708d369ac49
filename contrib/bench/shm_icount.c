/* SPDX-License-Identifier: BSD-3-Clause */
/* Instructions per 8-byte message on the shm (or wireup) provider, for
 * valgrind --tool=callgrind (contrib/bench/shm_icount.sh): counts that
 * the machine's load does not change, unlike the latency itself.  One
 * process, two RDM endpoints, deterministic: per message B posts a
 * receive, A injects 8 bytes to B, B reads its receive CQ (the message is
 * already queued, so one read finds it).  The script counts loop() only.
 *   shm_icount [PROV [msg|tag [N]]]
 *     msg: fi_recv / fi_inject / FI_CQ_FORMAT_CONTEXT (what fi_pingpong calls)
 *     tag: fi_trecv / fi_tinject with one exact tag, FI_CQ_FORMAT_TAGGED
 *     mpi: what MPICH 4.0.2 ch4:ofi calls per 8 B message: fi_trecv from
 *          the peer's fi_addr ignoring the protocol bits 52-54,
 *          fi_tinjectdata, fi_cq_read of 8 FI_CQ_FORMAT_TAGGED entries on
 *          one CQ per endpoint for both directions, and MPICH's caps */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#define CHECK(x) do { int r_ = (int)(x); if (r_) { fprintf(stderr, "%d: %s: %s\n", __LINE__, #x, fi_strerror(-r_)); exit(1);} } while (0)
struct side { struct fid_ep *ep; struct fid_cq *tx, *rx; struct fid_av *av; };
static struct fi_info *info; static struct fid_domain *dom; static int tagged, mpi;
/* MPICH's tag: context id above 31 tag bits, protocol bits 52-54 ignored */
#define MPI_TAG ((5ULL << 31) | 7)
#define MPI_IGNORE (7ULL << 52)
static void open_side(struct side *s)
{
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr ca = {.format = tagged ? FI_CQ_FORMAT_TAGGED : FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
	CHECK(fi_cq_open(dom, &ca, &s->tx, NULL));
	if (mpi)
		s->rx = s->tx;
	else
		CHECK(fi_cq_open(dom, &ca, &s->rx, NULL));
	CHECK(fi_av_open(dom, &aa, &s->av, NULL));
	CHECK(fi_endpoint(dom, info, &s->ep, NULL));
	if (mpi)
		CHECK(fi_ep_bind(s->ep, &s->tx->fid, FI_TRANSMIT | FI_RECV));
	else {
		CHECK(fi_ep_bind(s->ep, &s->tx->fid, FI_TRANSMIT));
		CHECK(fi_ep_bind(s->ep, &s->rx->fid, FI_RECV));
	}
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
}
static struct side A, B; static fi_addr_t to_b, to_a;
static unsigned long long x = 1, y;
__attribute__((noinline)) void one_msg(void)
{
	struct fi_cq_tagged_entry c[8];
	ssize_t r;
	if (mpi) {
		CHECK(fi_trecv(B.ep, &y, sizeof y, NULL, to_a, MPI_TAG, MPI_IGNORE, &y));
		CHECK(fi_tinjectdata(A.ep, &x, sizeof x, 0, to_b, MPI_TAG));
		while ((r = fi_cq_read(B.rx, c, 8)) == -FI_EAGAIN)
			;
		if (r != 1) { fprintf(stderr, "read %zd\n", r); exit(1); }
		return;
	}
	if (tagged) CHECK(fi_trecv(B.ep, &y, sizeof y, NULL, FI_ADDR_UNSPEC, 1, 0, &y));
	else CHECK(fi_recv(B.ep, &y, sizeof y, NULL, FI_ADDR_UNSPEC, &y));
	if (tagged) r = fi_tinject(A.ep, &x, sizeof x, to_b, 1); else r = fi_inject(A.ep, &x, sizeof x, to_b);
	CHECK(r);
	while ((r = fi_cq_read(B.rx, c, 1)) == -FI_EAGAIN)
		;
	if (r != 1) { fprintf(stderr, "read %zd\n", r); exit(1); }
}
__attribute__((noinline)) void loop(long n) { for (long i = 0; i < n; i++) one_msg(); }
__attribute__((noinline)) void idle(long n) { struct fi_cq_tagged_entry c; for (long i = 0; i < n; i++) if (fi_cq_read(B.rx, &c, 1) != -FI_EAGAIN) exit(1); }
int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "shm";
	mpi = argc > 2 && !strcmp(argv[2], "mpi");
	tagged = mpi || (argc > 2 && !strcmp(argv[2], "tag"));
	long n = argc > 3 ? atol(argv[3]) : 10000;
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(prov);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = tagged ? FI_TAGGED : FI_MSG;
	h->mode = FI_CONTEXT;
	if (mpi) {
		h->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_ATOMICS | FI_TAGGED |
			  FI_DIRECTED_RECV | FI_MSG | FI_MULTI_RECV;
		h->mode = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;
		h->domain_attr->threading = FI_THREAD_DOMAIN;
		h->domain_attr->av_type = FI_AV_TABLE;
		h->domain_attr->cq_data_size = 4;
		h->tx_attr->op_flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
		h->rx_attr->op_flags = FI_COMPLETION;
	}
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	struct fid_fabric *fab;
	CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK(fi_domain(fab, info, &dom, NULL));
	open_side(&A); open_side(&B);
	char name[128]; size_t len = sizeof name;
	CHECK(fi_getname(&B.ep->fid, name, &len));
	if (fi_av_insert(A.av, name, 1, &to_b, 0, NULL) != 1) exit(1);
	len = sizeof name;
	CHECK(fi_getname(&A.ep->fid, name, &len));
	if (fi_av_insert(B.av, name, 1, &to_a, 0, NULL) != 1) exit(1);
	/* Warm-up: the first message waits for the peers' first-cell
	 * handshake, which A's progress answers. */
	if (tagged) CHECK(fi_trecv(B.ep, &y, sizeof y, NULL, FI_ADDR_UNSPEC, 1, 0, &y));
	else CHECK(fi_recv(B.ep, &y, sizeof y, NULL, FI_ADDR_UNSPEC, &y));
	CHECK(tagged ? fi_tinject(A.ep, &x, sizeof x, to_b, 1) : fi_inject(A.ep, &x, sizeof x, to_b));
	struct fi_cq_tagged_entry c; ssize_t r;
	for (;;) { fi_cq_read(A.tx, &c, 1); if ((r = fi_cq_read(B.rx, &c, 1)) == 1) break; }
	for (int i = 0; i < 100; i++) one_msg();
	loop(n);
	idle(n);
	printf("%s %s done %ld\n", prov, mpi ? "mpi" : tagged ? "tag" : "msg", n);
	return 0;
}
