/* SPDX-License-Identifier: BSD-3-Clause */
/* The remote-atomic engine (see atomic.h).  One template per operation
 * family does the arithmetic; the datatype is resolved once per call by
 * indexing a type list.  Elements are read and written with memcpy (target
 * addresses need not be aligned) under a striped lock table keyed by the
 * element's address. */
#include "prov/common/atomic.h"

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <array>
#include <complex>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/hash.h"
#include "prov/common/xfer.h"

namespace wu::atomic {
namespace {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* In enum fi_datatype order. */
using types = std::tuple<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t, float,
			 double, std::complex<float>, std::complex<double>, long double,
			 std::complex<long double>, i128, u128>;
inline constexpr int n_types = int(std::tuple_size_v<types>);
static_assert(FI_LONG_DOUBLE_COMPLEX == 13 && FI_INT128 == 14 && FI_UINT128 == 15 && n_types == 16);

template <class T>
inline constexpr bool is_int = std::is_integral_v<T> || std::is_same_v<T, i128> || std::is_same_v<T, u128>;
template <class T>
inline constexpr bool is_real = std::is_floating_point_v<T>;
template <class T>
inline constexpr bool ordered = is_int<T> || is_real<T>;

/* Datatype classes and op families as bit sets. */
enum : uint8_t { INT = 1, REAL = 2, CPLX = 4, ANY = INT | REAL | CPLX, ORD = INT | REAL };
enum : uint8_t { W = 1, F = 2, C = 4 };

template <class T>
constexpr uint8_t class_of()
{
	return is_int<T> ? INT : is_real<T> ? REAL : CPLX;
}

struct dt_info {
	uint8_t cls;
	uint8_t size;
};
template <size_t... I>
constexpr std::array<dt_info, n_types> make_dt(std::index_sequence<I...>)
{
	return {dt_info{class_of<std::tuple_element_t<I, types>>(), uint8_t(sizeof(std::tuple_element_t<I, types>))}...};
}
constexpr auto dts = make_dt(std::make_index_sequence<n_types>{});

struct op_rule {
	uint8_t classes;  /* datatype classes the op takes */
	uint8_t families; /* W / F / C */
	const char *why;  /* said when the datatype class is refused */
};
constexpr const char *bitwise = "bitwise ops and FI_MSWAP take integer datatypes only";
constexpr const char *order = "FI_MIN, FI_MAX and FI_CSWAP_LE..GT do not take complex datatypes";
/* In enum fi_op order. */
constexpr op_rule rules[] = {
	{ORD, W | F, order},   /* FI_MIN */
	{ORD, W | F, order},   /* FI_MAX */
	{ANY, W | F, nullptr}, /* FI_SUM */
	{ANY, W | F, nullptr}, /* FI_PROD */
	{ANY, W | F, nullptr}, /* FI_LOR */
	{ANY, W | F, nullptr}, /* FI_LAND */
	{INT, W | F, bitwise}, /* FI_BOR */
	{INT, W | F, bitwise}, /* FI_BAND */
	{ANY, W | F, nullptr}, /* FI_LXOR */
	{INT, W | F, bitwise}, /* FI_BXOR */
	{ANY, F, nullptr},     /* FI_ATOMIC_READ */
	{ANY, W | F, nullptr}, /* FI_ATOMIC_WRITE */
	{ANY, C, nullptr},     /* FI_CSWAP */
	{ANY, C, nullptr},     /* FI_CSWAP_NE */
	{ORD, C, order},       /* FI_CSWAP_LE */
	{ORD, C, order},       /* FI_CSWAP_LT */
	{ORD, C, order},       /* FI_CSWAP_GE */
	{ORD, C, order},       /* FI_CSWAP_GT */
	{INT, C, bitwise},     /* FI_MSWAP */
};
static_assert(std::size(rules) == FI_ATOMIC_OP_LAST);

uint8_t family_bit(kind k)
{
	return k == kind::write ? W : k == kind::fetch ? F : C;
}

bool in_range(int datatype, int op)
{
	return datatype >= 0 && datatype < n_types && op >= 0 && op < FI_ATOMIC_OP_LAST;
}

/* ---- arithmetic ---- */

template <class T>
struct uns {
	using type = std::make_unsigned_t<T>;
};
template <>
struct uns<i128> {
	using type = u128;
};
template <>
struct uns<u128> {
	using type = u128;
};
/* Integer sums and products wrap: computed unsigned, at least as wide as
 * unsigned int (narrower types would promote to signed int and overflow). */
template <class T>
using wide_u = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, typename uns<T>::type>;

template <class T>
T add(T a, T b)
{
	if constexpr (is_int<T>)
		return T(wide_u<T>(a) + wide_u<T>(b));
	else
		return a + b;
}
template <class T>
T mul(T a, T b)
{
	if constexpr (is_int<T>)
		return T(wide_u<T>(a) * wide_u<T>(b));
	else
		return a * b;
}

/* The new value of one element, or false when it keeps its old one. */
template <class T>
bool compute(int op, const T &old, const T &x, const T &c, T &out)
{
	const T zero{};
	auto set = [&](const T &v) {
		out = v;
		return true;
	};
	auto swap_if = [&](bool cond) { return cond ? set(x) : false; };
	if constexpr (ordered<T>) {
		switch (op) {
		case FI_MIN: return swap_if(x < old);
		case FI_MAX: return swap_if(x > old);
		case FI_CSWAP_LE: return swap_if(c <= old);
		case FI_CSWAP_LT: return swap_if(c < old);
		case FI_CSWAP_GE: return swap_if(c >= old);
		case FI_CSWAP_GT: return swap_if(c > old);
		}
	}
	if constexpr (is_int<T>) {
		switch (op) {
		case FI_BOR: return set(T(old | x));
		case FI_BAND: return set(T(old & x));
		case FI_BXOR: return set(T(old ^ x));
		case FI_MSWAP: return set(T((x & c) | (old & ~c)));
		}
	}
	switch (op) {
	case FI_SUM: return set(add(old, x));
	case FI_PROD: return set(mul(old, x));
	case FI_LOR: return set(T((old != zero) || (x != zero)));
	case FI_LAND: return set(T((old != zero) && (x != zero)));
	case FI_LXOR: return set(T((old != zero) != (x != zero)));
	case FI_ATOMIC_WRITE: return set(x);
	case FI_CSWAP: return swap_if(c == old);
	case FI_CSWAP_NE: return swap_if(c != old);
	}
	return false; /* FI_ATOMIC_READ */
}

/* ---- locking ---- */

struct alignas(64) stripe {
	std::mutex m;
};
constexpr size_t n_stripes = 256;
stripe stripes[n_stripes];

size_t stripe_of(const char *p)
{
	/* 64-byte granules; an element of at most 32 bytes touches two. */
	uint64_t g = uint64_t(reinterpret_cast<uintptr_t>(p)) >> 6;
	return size_t(fib_hash(g) >> 56);
}
static_assert(n_stripes == 256);

/* Locks the stripes of an element's first and last byte: two elements that
 * share a byte share one of those granules. */
class element_lock {
	size_t a_, b_;

public:
	element_lock(const char *p, size_t n) : a_(stripe_of(p)), b_(stripe_of(p + n - 1))
	{
		if (a_ > b_)
			std::swap(a_, b_);
		stripes[a_].m.lock();
		if (b_ != a_)
			stripes[b_].m.lock();
	}
	~element_lock()
	{
		if (b_ != a_)
			stripes[b_].m.unlock();
		stripes[a_].m.unlock();
	}
	element_lock(const element_lock &) = delete;
	element_lock &operator=(const element_lock &) = delete;
};

template <class T>
void run(int op, char *dst, const char *operand, const char *compare, char *result, size_t count)
{
	constexpr size_t n = sizeof(T);
	for (size_t i = 0; i < count; i++) {
		T x{}, c{}, old, nv;
		if (operand)
			memcpy(&x, operand + i * n, n);
		if (compare)
			memcpy(&c, compare + i * n, n);
		char *d = dst + i * n;
		element_lock g(d, n);
		memcpy(&old, d, n);
		if (result)
			memcpy(result + i * n, &old, n);
		if (compute(op, old, x, c, nv))
			memcpy(d, &nv, n);
	}
}

template <class F, size_t... I>
void with_type(int datatype, F &&f, std::index_sequence<I...>)
{
	(void)((datatype == int(I) ? (f(std::type_identity<std::tuple_element_t<I, types>>{}), true) : false) ||
	       ...);
}

} // namespace

size_t size_of(int datatype) noexcept
{
	return datatype >= 0 && datatype < n_types ? dts[size_t(datatype)].size : 0;
}

bool valid(int datatype, int op, kind k) noexcept
{
	if (!in_range(datatype, op))
		return false;
	const op_rule &r = rules[op];
	return (r.families & family_bit(k)) && (r.classes & dts[size_t(datatype)].cls);
}

int check(int datatype, int op, kind k, size_t *count, const char **why) noexcept
{
	auto fail = [&](int err, const char *text) {
		if (why)
			*why = text;
		return err;
	};
	if (datatype < 0 || datatype >= n_types)
		return fail(-FI_EINVAL, "datatype out of range (FI_INT8..FI_UINT128)");
	if (op < 0 || op >= FI_ATOMIC_OP_LAST)
		return fail(-FI_EINVAL, "op out of range (FI_MIN..FI_MSWAP)");
	const op_rule &r = rules[op];
	if (!(r.families & family_bit(k)))
		return fail(-FI_EOPNOTSUPP,
			    k == kind::write	   ? "op is not a base atomic (fi_atomic: FI_MIN..FI_BXOR, FI_ATOMIC_WRITE)"
			    : k == kind::fetch ? "op is not a fetch atomic (fi_fetch_atomic: FI_MIN..FI_BXOR, "
						 "FI_ATOMIC_READ, FI_ATOMIC_WRITE)"
					       : "op is not a compare atomic (fi_compare_atomic: FI_CSWAP..FI_MSWAP)");
	if (!(r.classes & dts[size_t(datatype)].cls))
		return fail(-FI_EOPNOTSUPP, r.why);
	if (count)
		*count = max_bytes / dts[size_t(datatype)].size;
	return 0;
}

int query(int datatype, int op, fi_atomic_attr *attr, uint64_t flags, const char **why) noexcept
{
	auto fail = [&](int err, const char *text) {
		if (why)
			*why = text;
		return err;
	};
	if (!attr)
		return fail(-FI_EINVAL, "attr is NULL");
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
		return fail(-FI_EINVAL, "unknown flags (FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC, FI_TAGGED)");
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return fail(-FI_EINVAL, "FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC may not both be set");
	kind k = (flags & FI_FETCH_ATOMIC) ? kind::fetch : (flags & FI_COMPARE_ATOMIC) ? kind::compare : kind::write;
	size_t count = 0;
	int ret = check(datatype, op, k, &count, why);
	if (ret)
		return ret;
	if (flags & FI_TAGGED)
		return fail(-FI_EOPNOTSUPP, "atomics on tagged receive buffers (FI_TAGGED) are not supported");
	attr->count = count;
	attr->size = size_of(datatype);
	return 0;
}

unsigned operands(int op) noexcept
{
	if (op == FI_ATOMIC_READ)
		return 0;
	return op >= FI_CSWAP && op <= FI_MSWAP ? 2 : 1;
}

bool apply(int op, int datatype, void *dst, const void *operand, const void *compare, void *result,
	   size_t count) noexcept
{
	if (!valid(datatype, op, kind::write) && !valid(datatype, op, kind::fetch) &&
	    !valid(datatype, op, kind::compare))
		return false;
	with_type(
		datatype,
		[&]<class T>(std::type_identity<T>) {
			run<T>(op, static_cast<char *>(dst), static_cast<const char *>(operand),
			       static_cast<const char *>(compare), static_cast<char *>(result), count);
		},
		std::make_index_sequence<n_types>{});
	return true;
}

namespace {

/* Elements over an ioc list as byte iovecs of elements of size bytes;
 * false for a malformed list (no entries, too many, NULL addresses). */
bool ioc_bytes(const fi_ioc *v, size_t cnt, size_t size, iovec *out, size_t &elems) noexcept
{
	if (!v || !cnt || cnt > max_iocs)
		return false;
	elems = 0;
	for (size_t i = 0; i < cnt; i++) {
		if ((!v[i].addr && v[i].count) || v[i].count > max_bytes)
			return false;
		out[i] = {v[i].addr, v[i].count * size};
		elems += v[i].count;
	}
	return true;
}

int refused(const char **why, int err, const char *what) noexcept
{
	*why = what;
	return err;
}

} // namespace

int check_call(const prov::atomic_xfer &a, size_t inject_size, call *out, const char **why) noexcept
{
	const fi_msg_atomic *m = a.m;
	if (!m)
		return refused(why, -FI_EINVAL, "msg is NULL");
	size_t max = 0;
	if (int r = check(m->datatype, m->op, a.k, &max, why))
		return r;
	if (a.flags & FI_TAGGED)
		return refused(why, -FI_EOPNOTSUPP, "atomics on tagged receive buffers (FI_TAGGED) are not supported");
	if (a.flags & FI_REMOTE_CQ_DATA)
		return refused(why, -FI_EOPNOTSUPP, "remote CQ data is not carried by atomics");
	call &c = *out;
	c.size = size_of(m->datatype);
	c.fetch = a.k != kind::write;
	c.nops = operands(m->op);
	size_t count = 0, n = 0;
	c.k = 0;
	if (c.nops) {
		if (!ioc_bytes(m->msg_iov, m->iov_count, c.size, c.v, count))
			return refused(why, -FI_EINVAL, "operand iocs missing, NULL or more than iov_limit");
		c.k = m->iov_count;
	}
	if (c.nops == 2) {
		if (!ioc_bytes(a.cmp, a.cmp_cnt, c.size, c.v + c.k, n) || n != count)
			return refused(why, -FI_EINVAL,
				       "compare iocs missing, NULL, too many or not matching the operands");
		c.k += a.cmp_cnt;
	}
	c.res_cnt = 0;
	if (c.fetch) {
		if (!ioc_bytes(a.res, a.res_cnt, c.size, c.res, n) || (c.nops && n != count))
			return refused(why, -FI_EINVAL,
				       "result iocs missing, NULL, too many or not matching the operands");
		c.res_cnt = a.res_cnt;
		count = n; /* ATOMIC_READ: the results say how many */
	}
	if (!count)
		return refused(why, -FI_EINVAL, "count is 0");
	if (count > max)
		return refused(why, -FI_EMSGSIZE, "more elements than fi_atomicvalid's count");
	if (!m->rma_iov || m->rma_iov_count != 1 || m->rma_iov->count != count)
		return refused(why, -FI_EINVAL, "needs one remote ioc of as many elements as the operands");
	c.count = count;
	c.bytes = count * c.size;
	if ((a.inject_api || (a.flags & FI_INJECT)) && c.bytes > inject_size)
		return refused(why, -FI_EINVAL, "FI_INJECT operands above inject_size");
	return 0;
}

} // namespace wu::atomic
