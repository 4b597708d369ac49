/* Shared by the differential C programs (msg_cm.c, srx_msg.c), built with
 * the system's libfabric headers only: one line per check, "ok: " or
 * "FAIL: ", and the count of failed checks for the exit status. */
#ifndef WU_TEST_DIFF_PROG_H
#define WU_TEST_DIFF_PROG_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
