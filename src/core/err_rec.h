/* SPDX-License-Identifier: BSD-3-Clause */
/* A queued error of an EQ or a CQ: the entry, plus its own copy of the
 * provider's err_data, and how a read hands that copy out under the
 * fi_eq(3) / fi_cq(3) rules (one copy for both queues). */
#ifndef WU_CORE_ERR_REC_H
#define WU_CORE_ERR_REC_H

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

#include <rdma/fi_errno.h>

#include "core/owned.h"

namespace wu {

/* Entry: fi_eq_err_entry or fi_cq_err_entry (both end in err_data and
 * err_data_size). */
template <class Entry>
struct err_record {
	Entry e{}; /* e.err_data is not used: data is */
	std::unique_ptr<unsigned char[]> data;
	size_t size = 0;

	/* Copies the poster's err_data: its buffer may be gone by the read.
	 * 0 or -FI_ENOMEM. */
	int keep_data(const void *p, size_t n) noexcept
	{
		e.err_data = nullptr;
		e.err_data_size = 0;
		if (!p || !n)
			return 0;
		data = try_make_array<unsigned char>(n);
		if (!data)
			return -FI_ENOMEM;
		memcpy(data.get(), p, n);
		size = n;
		return 0;
	}

	/* The entry a readerr returns.  From API 1.5 on, a reader that offers
	 * a buffer (err_data_size > 0) gets the data copied into it, cut to
	 * its size; otherwise (and always before 1.5) the data moves to owned,
	 * which the queue keeps until its next readerr, as the man pages say. */
	Entry take(const Entry *buf, bool new_rules, std::unique_ptr<unsigned char[]> &owned) noexcept
	{
		Entry out = e;
		if (new_rules && buf->err_data_size > 0) {
			size_t n = std::min(buf->err_data_size, size);
			if (n)
				memcpy(buf->err_data, data.get(), n);
			out.err_data = buf->err_data;
			out.err_data_size = n;
		} else {
			owned = std::move(data);
			out.err_data = owned.get();
			out.err_data_size = size;
		}
		return out;
	}
};

} // namespace wu

#endif
