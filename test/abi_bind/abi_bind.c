/* SPDX-License-Identifier: BSD-3-Clause */
/* A client as a binary built against an older libfabric sees the library:
 * compiled once per symbol node (ABI_MINOR = 0, 1, 2, 3, 7, 8, 9), each copy
 * imports fi_getinfo, fi_freeinfo and fi_dupinfo at FABRIC_1.<ABI_MINOR>
 * (and fi_fabric at the node such a binary used).  It hands the library
 * structs of its node's sizes, each followed by a guard pattern the library
 * must never touch, and runs getinfo, fabric, domain, two endpoints and one
 * message on tcp, shm and wireup.  abi_bind.sh checks the imports.
 * Exits 0 when every check holds, 1 otherwise, 77 off x86-64. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#ifndef ABI_MINOR
#error "build with -DABI_MINOR=<node minor>"
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define NODE "FABRIC_1." STR(ABI_MINOR)

/* What the old headers' FI_VERSION-guarded symbol macros made the linker
 * record; here spelt out. */
__asm__(".symver fi_getinfo,fi_getinfo@" NODE);
__asm__(".symver fi_freeinfo,fi_freeinfo@" NODE);
__asm__(".symver fi_dupinfo,fi_dupinfo@" NODE);
#if ABI_MINOR == 0
__asm__(".symver fi_fabric,fi_fabric@FABRIC_1.0");
#else
__asm__(".symver fi_fabric,fi_fabric@FABRIC_1.1");
#endif

/* Bytes of each struct such a binary was compiled with (x86-64, from
 * man/fabric.7.md "ABI CHANGES"), and the API version it asks for. */
struct old_sizes {
	size_t info, tx, rx, ep, domain, fabric;
	uint32_t api;
};

static const struct old_sizes sz =
#if ABI_MINOR == 0
	{112, 72, 64, 80, 120, 28, FI_VERSION(1, 4)};
#elif ABI_MINOR == 1
	{112, 72, 64, 96, 184, 32, FI_VERSION(1, 6)};
#elif ABI_MINOR == 2
	{120, 72, 64, 96, 184, 32, FI_VERSION(1, 8)};
#elif ABI_MINOR == 3
	{120, 80, 64, 96, 192, 32, FI_VERSION(1, 17)};
#elif ABI_MINOR == 7
	{120, 80, 64, 96, 200, 32, FI_VERSION(1, 22)};
#elif ABI_MINOR == 8
	{120, 80, 64, 96, 208, 32, FI_VERSION(2, 4)};
#elif ABI_MINOR == 9
	{120, 80, 64, 96, 224, 32, FI_VERSION(2, 6)};
#else
#error "no such node"
#endif

static int failures;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (!(cond)) {                                           \
			printf("FAIL [" NODE " %s]: ", cur_prov);         \
			printf(__VA_ARGS__);                             \
			putchar('\n');                                   \
			failures++;                                      \
		}                                                        \
	} while (0)

static const char *cur_prov = "-";

enum { GUARD_LEN = 64, GUARD_BYTE = 0xa5 };

/* A zeroed struct of n bytes followed by the guard. */
static void *guarded(size_t n)
{
	unsigned char *p = calloc(1, n + GUARD_LEN);
	if (!p) {
		perror("calloc");
		exit(1);
	}
	memset(p + n, GUARD_BYTE, GUARD_LEN);
	return p;
}

static int intact(const void *p, size_t n)
{
	const unsigned char *g = (const unsigned char *)p + n;
	for (size_t i = 0; i < GUARD_LEN; i++)
		if (g[i] != GUARD_BYTE)
			return 0;
	return 1;
}

/* Hints the way an old binary lays them out: its own struct sizes. */
struct old_hints {
	struct fi_info *info;
	struct fi_tx_attr *tx;
	struct fi_rx_attr *rx;
	struct fi_ep_attr *ep;
	struct fi_domain_attr *dom;
	struct fi_fabric_attr *fab;
};

static void hints_make(struct old_hints *h, const char *prov)
{
	h->info = guarded(sz.info);
	h->tx = guarded(sz.tx);
	h->rx = guarded(sz.rx);
	h->ep = guarded(sz.ep);
	h->dom = guarded(sz.domain);
	h->fab = guarded(sz.fabric);
	h->info->tx_attr = h->tx;
	h->info->rx_attr = h->rx;
	h->info->ep_attr = h->ep;
	h->info->domain_attr = h->dom;
	h->info->fabric_attr = h->fab;
	h->info->caps = FI_MSG;
	h->info->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep->type = FI_EP_RDM;
	h->fab->prov_name = (char *)prov;
}

static void hints_check(const struct old_hints *h, const char *what)
{
	CHECK(intact(h->info, sz.info), "%s wrote past the %zu-byte fi_info", what, sz.info);
	CHECK(intact(h->tx, sz.tx), "%s wrote past the %zu-byte fi_tx_attr", what, sz.tx);
	CHECK(intact(h->rx, sz.rx), "%s wrote past the %zu-byte fi_rx_attr", what, sz.rx);
	CHECK(intact(h->ep, sz.ep), "%s wrote past the %zu-byte fi_ep_attr", what, sz.ep);
	CHECK(intact(h->dom, sz.domain), "%s wrote past the %zu-byte fi_domain_attr", what, sz.domain);
	CHECK(intact(h->fab, sz.fabric), "%s wrote past the %zu-byte fi_fabric_attr", what, sz.fabric);
}

static void hints_free(struct old_hints *h)
{
	free(h->info);
	free(h->tx);
	free(h->rx);
	free(h->ep);
	free(h->dom);
	free(h->fab);
}

/* Reads both CQs until each has its one completion (manual progress needs
 * both driven); 1 when both came with the right contexts. */
static int wait_both(struct fid_cq *cq[2], void *want[2])
{
	int got[2] = {0, 0};
	time_t end = time(NULL) + 10;
	while ((!got[0] || !got[1]) && time(NULL) < end) {
		for (int k = 0; k < 2; k++) {
			struct fi_cq_entry e;
			ssize_t r = fi_cq_read(cq[k], &e, 1);
			if (r == 1) {
				CHECK(e.op_context == want[k], "completion %d has a foreign context", k);
				got[k] = 1;
			} else if (r == -FI_EAVAIL) {
				struct fi_cq_err_entry err;
				memset(&err, 0, sizeof err);
				fi_cq_readerr(cq[k], &err, 0);
				CHECK(0, "CQ %d error %d (%s)", k, err.err, fi_strerror(err.err));
				return 0;
			} else if (r != -FI_EAGAIN) {
				CHECK(0, "fi_cq_read %d = %zd", k, r);
				return 0;
			}
		}
	}
	CHECK(got[0] && got[1], "no completions within 10 s (send %d, recv %d)", got[0], got[1]);
	return got[0] && got[1];
}

#define TRY(call)                                                           \
	do {                                                                \
		int r_ = (int)(call);                                       \
		if (r_) {                                                   \
			CHECK(0, "%s = %d (%s)", #call, r_, fi_strerror(-r_)); \
			goto out;                                           \
		}                                                           \
	} while (0)

/* The round trip on one provider. */
static void run_on(const char *prov)
{
	struct old_hints h;
	struct fi_info *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	struct fid_cq *cq[2] = {NULL, NULL};
	struct fid_ep *ep[2] = {NULL, NULL};
	struct fi_fabric_attr *fa = NULL;
	cur_prov = prov;
	hints_make(&h, prov);

	/* fi_dupinfo of a caller-made info: reads and writes only its sizes. */
	struct fi_info *copy = fi_dupinfo(h.info);
	hints_check(&h, "fi_dupinfo");
	CHECK(copy && copy->fabric_attr && copy->fabric_attr->prov_name &&
		      strcmp(copy->fabric_attr->prov_name, prov) == 0 && copy->ep_attr->type == FI_EP_RDM,
	      "fi_dupinfo lost the caller's fields");
	fi_freeinfo(copy);

	int r = fi_getinfo(sz.api, NULL, NULL, 0, h.info, &info);
	hints_check(&h, "fi_getinfo");
	CHECK(r == 0 && info, "fi_getinfo(%u.%u, RDM on %s) = %d (%s)", FI_MAJOR(sz.api),
	      FI_MINOR(sz.api), prov, r, fi_strerror(-r));
	if (r || !info)
		goto out;
	CHECK(info->fabric_attr->prov_name && strcmp(info->fabric_attr->prov_name, prov) == 0,
	      "fi_getinfo answered from provider %s", info->fabric_attr->prov_name);
	CHECK(info->ep_attr->type == FI_EP_RDM && (info->caps & FI_MSG), "result does not match the hints");

	/* The binary's own copy of the fabric attributes, at its size. */
	fa = guarded(sz.fabric);
	memcpy(fa, info->fabric_attr, sz.fabric);
	TRY(fi_fabric(fa, &fabric, NULL));
	CHECK(intact(fa, sz.fabric), "fi_fabric wrote past the %zu-byte fi_fabric_attr", sz.fabric);
	TRY(fi_domain(fabric, info, &domain, NULL));
	struct fi_av_attr aa;
	memset(&aa, 0, sizeof aa);
	aa.type = FI_AV_UNSPEC;
	TRY(fi_av_open(domain, &aa, &av, NULL));
	fi_addr_t peer[2];
	for (int k = 0; k < 2; k++) {
		struct fi_cq_attr ca;
		memset(&ca, 0, sizeof ca);
		ca.format = FI_CQ_FORMAT_CONTEXT;
		ca.wait_obj = FI_WAIT_NONE;
		TRY(fi_cq_open(domain, &ca, &cq[k], NULL));
		TRY(fi_endpoint(domain, info, &ep[k], NULL));
		TRY(fi_ep_bind(ep[k], &av->fid, 0));
		TRY(fi_ep_bind(ep[k], &cq[k]->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(ep[k]));
		char name[256];
		size_t len = sizeof name;
		TRY(fi_getname(&ep[k]->fid, name, &len));
		r = fi_av_insert(av, name, 1, &peer[k], 0, NULL);
		CHECK(r == 1, "fi_av_insert = %d", r);
		if (r != 1)
			goto out;
	}
	char in[32] = "", msg[] = "hello from " NODE;
	struct fi_context2 ctx[2];
	TRY(fi_recv(ep[1], in, sizeof in, NULL, FI_ADDR_UNSPEC, &ctx[1]));
	ssize_t s;
	time_t end = time(NULL) + 10;
	while ((s = fi_send(ep[0], msg, sizeof msg, NULL, peer[1], &ctx[0])) == -FI_EAGAIN &&
	       time(NULL) < end) {
		struct fi_cq_entry e;
		(void)fi_cq_read(cq[0], &e, 0);
	}
	TRY(s);
	void *want[2] = {&ctx[0], &ctx[1]};
	if (wait_both(cq, want))
		CHECK(strcmp(in, msg) == 0, "received \"%s\"", in);
	printf("ok [" NODE " %s]: getinfo %u.%u, fabric, domain, endpoints, one message\n", prov,
	       FI_MAJOR(sz.api), FI_MINOR(sz.api));
out:;
	/* Children before parents. */
	struct fid *opened[] = {ep[0] ? &ep[0]->fid : NULL, ep[1] ? &ep[1]->fid : NULL,
				cq[0] ? &cq[0]->fid : NULL, cq[1] ? &cq[1]->fid : NULL,
				av ? &av->fid : NULL,	    domain ? &domain->fid : NULL,
				fabric ? &fabric->fid : NULL};
	for (size_t k = 0; k < sizeof opened / sizeof opened[0]; k++)
		if (opened[k])
			CHECK(fi_close(opened[k]) == 0, "fi_close of object %zu", k);
	free(fa);
	fi_freeinfo(info);
	hints_free(&h);
}

int main(void)
{
#if !defined(__x86_64__)
	printf("SKIP: the old struct sizes here are x86-64's\n");
	return 77;
#endif
	/* Ours, not a system libfabric: it reports our headers' version. */
	CHECK(fi_version() == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	      "fi_version() = %u.%u: not the library under test", FI_MAJOR(fi_version()),
	      FI_MINOR(fi_version()));
	/* fi_allocinfo (fi_dupinfo(NULL)) must give all five attr structs. */
	struct fi_info *a = fi_dupinfo(NULL);
	CHECK(a && a->tx_attr && a->rx_attr && a->ep_attr && a->domain_attr && a->fabric_attr,
	      "fi_dupinfo(NULL) left an attr struct out");
	fi_freeinfo(a);
#if ABI_MINOR == 9
	struct fi_info *none = NULL;
	int r = fi_getinfo(FI_VERSION(2, 7), NULL, NULL, 0, NULL, &none);
	CHECK(r == -FI_ENOSYS && !none, "fi_getinfo(2.7) = %d, not -FI_ENOSYS", r);
	r = fi_getinfo(FI_VERSION(2, 6), NULL, NULL, 0, NULL, &none);
	CHECK(r == 0 && none, "fi_getinfo(2.6) = %d", r);
	fi_freeinfo(none);
#endif
	const char *provs[] = {"tcp", "shm", "wireup"};
	for (size_t i = 0; i < sizeof provs / sizeof provs[0]; i++)
		run_on(provs[i]);
	printf(NODE ": %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
