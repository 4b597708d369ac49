/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the differential C programs (msg_cm.c, srx_msg.c), built with
 * the system's libfabric headers only: one line per check, "ok: " or
 * "FAIL: ", and the count of failed checks for the exit status. */
#ifndef WU_TEST_DIFF_PROG_H
#define WU_TEST_DIFF_PROG_H

#include <stdio.h>
#include <stdlib.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

static int failures;

#define CHECK(cond, ...)                                                                                         \
	do {                                                                                                     \
		if (cond) {                                                                                      \
			printf("ok: ");                                                                          \
		} else {                                                                                         \
			printf("FAIL: ");                                                                        \
			failures++;                                                                              \
		}                                                                                                \
		printf(__VA_ARGS__);                                                                             \
		printf("\n");                                                                                    \
	} while (0)

#define TRY(call)                                                                                                \
	do {                                                                                                     \
		int r_ = (int)(call);                                                                            \
		if (r_) {                                                                                        \
			printf("FAIL: %s = %d (%s)\n", #call, r_, fi_strerror(-r_));                             \
			exit(1);                                                                                 \
		}                                                                                                \
	} while (0)

/* A passive endpoint of info listening, its CM events on eq; its address
 * (for the clients' info) in addr, *alen bytes at most. */
static inline struct fid_pep *listen_pep(struct fid_fabric *fabric, struct fi_info *info, struct fid_eq *eq,
					 char *addr, size_t *alen)
{
	struct fid_pep *pep;
	TRY(fi_passive_ep(fabric, info, &pep, NULL));
	TRY(fi_pep_bind(pep, &eq->fid, 0));
	TRY(fi_listen(pep));
	TRY(fi_getname(&pep->fid, addr, alen));
	return pep;
}

#endif
