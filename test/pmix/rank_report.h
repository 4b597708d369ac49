/* SPDX-License-Identifier: BSD-3-Clause */
/* What one rank of a launched test program reports: each failure counted
 * and printed with the program's name and the rank, so that the launcher
 * test's log says which rank saw what. */
#ifndef WU_TEST_PMIX_RANK_REPORT_H
#define WU_TEST_PMIX_RANK_REPORT_H

#include <cstdint>
#include <cstdio>
#include <string>

#include <rdma/fi_errno.h>

namespace wu::test {

struct rank_report {
	const char *prog;
	uint32_t rank = ~0u;
	int failures = 0;
	std::string problems; /* the first few, for a one-line summary */

	explicit rank_report(const char *name) : prog(name) {}

	void fail(const std::string &m)
	{
		failures++;
		fprintf(stderr, "%s rank %u: FAIL %s\n", prog, rank, m.c_str());
		if (problems.size() < 400)
			problems += (problems.empty() ? "" : "; ") + m;
	}
	void call_failed(const char *call, int r) const
	{
		fprintf(stderr, "%s rank %u: %s: %s\n", prog, rank, call, fi_strerror(r < 0 ? -r : r));
	}
};

} // namespace wu::test

/* Returns 1 from the calling function when call gives a nonzero result. */
#define WU_RANK_CHECK(rep, call)                  \
	do {                                      \
		int r_ = int(call);               \
		if (r_) {                         \
			(rep).call_failed(#call, r_); \
			return 1;                 \
		}                                 \
	} while (0)

#endif
