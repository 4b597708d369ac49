/* SPDX-License-Identifier: BSD-3-Clause */
/* The 2.6 column of the ABI test: every fact in abi_26_facts.h (upstream
 * 2.6's sizes, offsets and values, written down by hand) against our
 * headers.  Exit 0: all match, 1: a mismatch (each is named). */
#include <stddef.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_profile.h>
#include <rdma/fi_tagged.h>

#if FI_MAJOR_VERSION < 2
#error "abi26_check.c sees the system's 1.x headers; compile it with -I<top>/include"
#endif

struct fact {
	const char *what;
	unsigned long long ours, upstream;
};

int main(void)
{
	/* automatic: fi_tag_mpi() entries are calls, not constants */
	const struct fact facts[] = {
#define FACT_SIZE(T, v) { "sizeof(" #T ")", sizeof(T), (v) },
#define FACT_OFF(T, m, v) { "offsetof(" #T ", " #m ")", offsetof(T, m), (v) },
#define FACT_CONST(N, v) { #N, (unsigned long long) (N), (unsigned long long) (v) },
#include "abi_26_facts.h"
#undef FACT_SIZE
#undef FACT_OFF
#undef FACT_CONST
	};
	size_t n = sizeof(facts) / sizeof(facts[0]), bad = 0;

	for (size_t i = 0; i < n; i++) {
		if (facts[i].ours == facts[i].upstream)
			continue;
		printf("MISMATCH %s: %llu (0x%llx) upstream 2.6 vs %llu (0x%llx) ours\n",
		       facts[i].what, facts[i].upstream, facts[i].upstream,
		       facts[i].ours, facts[i].ours);
		bad++;
	}
	printf("abi26_check: %zu facts of libfabric 2.6 checked, %zu mismatch%s\n", n, bad,
	       bad == 1 ? "" : "es");
	return bad ? 1 : 0;
}
