/* SPDX-License-Identifier: BSD-3-Clause */
/* The iovec helpers every provider needs: sizes, slices and copies of a
 * scatter list, in one place so that no provider writes them again. */
#ifndef WU_CORE_IOV_H
#define WU_CORE_IOV_H

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <rdma/fi_domain.h>

namespace wu {

/* The bytes of iov[0..cnt): saturating (a wrapped sum would pass length
 * checks), and 0 for a NULL array. */
inline size_t iov_total(const iovec *iov, size_t cnt) noexcept
{
	size_t t = 0;
	for (size_t i = 0; iov && i < cnt; i++)
		t = iov[i].iov_len > SIZE_MAX - t ? SIZE_MAX : t + iov[i].iov_len;
	return t;
}

/* The elements of v[0..cnt) (0 for a NULL array). */
inline size_t ioc_count(const fi_ioc *v, size_t cnt) noexcept
{
	size_t n = 0;
	for (size_t i = 0; v && i < cnt; i++)
		n += v[i].count;
	return n;
}

/* The iovecs covering [off, off + len) of iov[0..cnt), at most max of
 * them, into out; how many. */
inline size_t iov_slice(const iovec *iov, size_t cnt, size_t off, size_t len, iovec *out, size_t max) noexcept
{
	size_t n = 0;
	for (size_t i = 0; i < cnt && len && n < max; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t take = std::min(len, iov[i].iov_len - off);
		out[n++] = {static_cast<char *>(iov[i].iov_base) + off, take};
		len -= take;
		off = 0;
	}
	return n;
}

namespace detail {
/* copy_to_iov (To) and copy_from_iov: p is the flat side. */
template <bool To>
inline size_t iov_copy(const iovec *iov, size_t cnt, size_t off, char *p, size_t len) noexcept
{
	size_t done = 0;
	for (size_t i = 0; i < cnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = std::min(len, iov[i].iov_len - off);
		char *at = static_cast<char *>(iov[i].iov_base) + off;
		if constexpr (To)
			memcpy(at, p + done, n);
		else
			memcpy(p + done, at, n);
		done += n;
		len -= n;
		off = 0;
	}
	return done;
}
} // namespace detail

/* Copies len bytes from src to offset off of iov[0..cnt); returns the
 * bytes that fit. */
inline size_t copy_to_iov(const iovec *iov, size_t cnt, size_t off, const void *src, size_t len) noexcept
{
	return detail::iov_copy<true>(iov, cnt, off, static_cast<char *>(const_cast<void *>(src)), len);
}
/* Copies len bytes from offset off of iov[0..cnt) to dst; returns the
 * bytes there were. */
inline size_t copy_from_iov(const iovec *iov, size_t cnt, size_t off, void *dst, size_t len) noexcept
{
	return detail::iov_copy<false>(iov, cnt, off, static_cast<char *>(dst), len);
}

/* Advances v[0..cnt) past n bytes: the entries used up go (cnt shrinks,
 * the rest move to the front), a partly used one starts later. */
inline void iov_consume(iovec *v, size_t &cnt, size_t n) noexcept
{
	size_t k = 0;
	while (n && k < cnt) {
		if (n >= v[k].iov_len) {
			n -= v[k].iov_len;
			k++;
		} else {
			v[k].iov_base = static_cast<char *>(v[k].iov_base) + n;
			v[k].iov_len -= n;
			n = 0;
		}
	}
	while (k < cnt && v[k].iov_len == 0)
		k++;
	memmove(v, v + k, (cnt - k) * sizeof(iovec));
	cnt -= k;
}

} // namespace wu

#endif
