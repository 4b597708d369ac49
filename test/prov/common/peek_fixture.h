/* SPDX-License-Identifier: BSD-3-Clause */
/* The peek / claim fixture (fi_tagged(3) FI_PEEK, FI_CLAIM, FI_DISCARD):
 * endpoint a sends to b, which peeks and claims.  Used by the peek_claim
 * suite of every provider (test_prov_peek.cpp) and tcp's own
 * (test_tcp_peek.cpp). */
#ifndef WU_TEST_PROV_PEEK_FIXTURE_H
#define WU_TEST_PROV_PEEK_FIXTURE_H

#include <chrono>
#include <string>

#include "tcp_fixture.h"

namespace wu::test {

constexpr size_t big = 1 << 20; /* above FI_TCP_RNDV_SIZE: rendezvous */

/* Endpoint a sends to b, which peeks and claims. */
struct peek_base : rdm_pair {
	explicit peek_base(const std::string &prov) : rdm_pair(prov, FI_MSG | FI_TAGGED, false) {}

	/* fi_trecvmsg on b with these flags; returns the call's result. */
	ssize_t trecvmsg(uint64_t flags, void *ctx, uint64_t tag, uint64_t ignore = 0, void *buf = nullptr,
			 size_t len = 0)
	{
		iovec v{buf, len};
		fi_msg_tagged m{};
		m.msg_iov = buf ? &v : nullptr;
		m.iov_count = buf ? 1 : 0;
		m.addr = FI_ADDR_UNSPEC;
		m.tag = tag;
		m.ignore = ignore;
		m.context = ctx;
		return fi_trecvmsg(b.ep, &m, flags);
	}
	/* The completion of one peek: 1 (found, e filled) or -FI_EAVAIL
	 * (err filled). */
	int peek(uint64_t flags, void *ctx, uint64_t tag, fi_cq_tagged_entry &e, fi_cq_err_entry &err,
		 uint64_t ignore = 0)
	{
		EXPECT_EQ(trecvmsg(FI_PEEK | flags, ctx, tag, ignore), 0);
		fi_cq_tagged_entry x;
		ssize_t r = fi_cq_read(b.rx, &x, 1);
		if (r == 1) {
			e = x;
			return 1;
		}
		EXPECT_EQ(r, -FI_EAVAIL);
		EXPECT_EQ(fi_cq_readerr(b.rx, &err, 0), 1);
		return -FI_EAVAIL;
	}
	/* Peeks until the message tagged tag has arrived (progress on a and b). */
	int peek_until(uint64_t flags, void *ctx, uint64_t tag, fi_cq_tagged_entry &e)
	{
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (std::chrono::steady_clock::now() < until) {
			fi_cq_err_entry err{};
			if (peek(flags, ctx, tag, e, err) == 1)
				return 1;
			EXPECT_EQ(err.err, FI_ENOMSG);
			spin({a.tx, b.rx}, 10);
		}
		return -FI_ETIMEDOUT;
	}
};

} // namespace wu::test

#endif
