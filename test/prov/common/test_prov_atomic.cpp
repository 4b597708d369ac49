/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_atomic(3) on every provider (tcp's wire frames: test_tcp_atomic.cpp), and the
 * shared atomic engine (src/prov/common/atomic.h) on its own.  Expected results come from a
 * reference written here from the man page's pseudo-code; which (op,
 * datatype) pairs each family takes comes from an independent table. */
#include <atomic>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <rdma/fi_atomic.h>

#include "prov/common/atomic.h"
#include "atomic_fixture.h"

using namespace wu::test;
using wu::atomic::kind;

namespace {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* In enum fi_datatype order. */
using types = std::tuple<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t, float,
			 double, std::complex<float>, std::complex<double>, long double,
			 std::complex<long double>, i128, u128>;
constexpr int n_types = int(std::tuple_size_v<types>);

template <class T>
constexpr bool is_int = std::is_integral_v<T> || std::is_same_v<T, i128> || std::is_same_v<T, u128>;
template <class T>
constexpr bool is_cplx = !is_int<T> && !std::is_floating_point_v<T>;

bool dt_int(int dt)
{
	return dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128;
}
bool dt_cplx(int dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX || dt == FI_LONG_DOUBLE_COMPLEX;
}

/* fi_atomic(3): which ops each family lists, and the datatypes they take. */
bool expect_valid(int dt, int op, kind k)
{
	bool in_family = k == kind::write   ? (op <= FI_BXOR || op == FI_ATOMIC_WRITE)
			 : k == kind::fetch ? op <= FI_ATOMIC_WRITE
					    : op >= FI_CSWAP && op <= FI_MSWAP;
	if (!in_family)
		return false;
	switch (op) {
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		return dt_int(dt);
	case FI_MIN:
	case FI_MAX:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		return !dt_cplx(dt);
	default:
		return true;
	}
}

template <class T>
T make(int v)
{
	if constexpr (is_cplx<T>)
		return T(v, v % 3);
	else
		return T(v);
}

/* The man page's pseudo-code, element by element (integers wrap). */
template <class T>
T reference(int op, T a, T b, T c)
{
	auto truth = [](T v) { return v != T{}; };
	if constexpr (is_int<T>) {
		switch (op) {
		case FI_BOR: return T(a | b);
		case FI_BAND: return T(a & b);
		case FI_BXOR: return T(a ^ b);
		case FI_MSWAP: return T((b & c) | (a & ~c));
		case FI_SUM: return T(u128(a) + u128(b));
		case FI_PROD: return T(u128(a) * u128(b));
		}
	}
	if constexpr (!is_cplx<T>) {
		switch (op) {
		case FI_MIN: return b < a ? b : a;
		case FI_MAX: return b > a ? b : a;
		case FI_CSWAP_LE: return c <= a ? b : a;
		case FI_CSWAP_LT: return c < a ? b : a;
		case FI_CSWAP_GE: return c >= a ? b : a;
		case FI_CSWAP_GT: return c > a ? b : a;
		}
	}
	switch (op) {
	case FI_SUM: return a + b;
	case FI_PROD: return a * b;
	case FI_LOR: return T(truth(a) || truth(b));
	case FI_LAND: return T(truth(a) && truth(b));
	case FI_LXOR: return T((truth(a) && !truth(b)) || (!truth(a) && truth(b)));
	case FI_ATOMIC_READ: return a;
	case FI_ATOMIC_WRITE: return b;
	case FI_CSWAP: return c == a ? b : a;
	case FI_CSWAP_NE: return c != a ? b : a;
	}
	ADD_FAILURE() << "no reference for op " << op;
	return a;
}

/* Element values: equal, smaller and larger operands and compares, zeros
 * for the logical ops, a product that wraps in 8 bits. */
constexpr int n_elems = 6;
constexpr int dst_v[n_elems] = {3, 0, 5, 7, 1, 100};
constexpr int opd_v[n_elems] = {5, 0, 2, 7, 0, 3};
constexpr int cmp_v[n_elems] = {3, 1, 9, 7, 2, 50};

template <class T>
std::vector<char> pack(const int (&v)[n_elems])
{
	std::vector<char> out(n_elems * sizeof(T));
	for (int i = 0; i < n_elems; i++) {
		T x = make<T>(v[i]);
		memcpy(out.data() + i * sizeof(T), &x, sizeof(T));
	}
	return out;
}
template <class T>
T at(const char *p, int i)
{
	T x;
	memcpy(&x, p + i * sizeof(T), sizeof(T));
	return x;
}

template <class F, size_t... I>
void each_type(F &&f, std::index_sequence<I...>)
{
	(f(std::integral_constant<int, int(I)>{}, std::type_identity<std::tuple_element_t<I, types>>{}), ...);
}
template <class F>
void each_type(F &&f)
{
	each_type(f, std::make_index_sequence<n_types>{});
}

const kind families[] = {kind::write, kind::fetch, kind::compare};

/* ---- the engine alone ---- */

TEST(atomic_engine, sizes_and_validity_follow_the_man_page)
{
	each_type([](auto dt, auto t) {
		using T = typename decltype(t)::type;
		EXPECT_EQ(wu::atomic::size_of(dt), sizeof(T)) << "datatype " << dt;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
			for (kind k : families) {
				size_t count = 0;
				const char *why = nullptr;
				bool want = expect_valid(dt, op, k);
				EXPECT_EQ(wu::atomic::valid(dt, op, k), want) << "dt " << dt << " op " << op;
				int r = wu::atomic::check(dt, op, k, &count, &why);
				EXPECT_EQ(r, want ? 0 : -FI_EOPNOTSUPP) << "dt " << dt << " op " << op;
				if (want) {
					EXPECT_EQ(count, wu::atomic::max_bytes / sizeof(T));
				} else {
					EXPECT_NE(why, nullptr);
				}
			}
	});
	EXPECT_EQ(wu::atomic::size_of(-1), 0u);
	EXPECT_EQ(wu::atomic::size_of(FI_UINT128 + 1), 0u);
	EXPECT_EQ(wu::atomic::size_of(FI_VOID), 0u);
	size_t count;
	EXPECT_EQ(wu::atomic::check(FI_UINT128 + 1, FI_SUM, kind::write, &count, nullptr), -FI_EINVAL);
	EXPECT_EQ(wu::atomic::check(FI_INT32, FI_ATOMIC_OP_LAST, kind::write, &count, nullptr), -FI_EINVAL);
	EXPECT_EQ(wu::atomic::check(FI_INT32, -1, kind::write, &count, nullptr), -FI_EINVAL);
	EXPECT_FALSE(wu::atomic::apply(FI_BOR, FI_FLOAT, &count, &count, nullptr, nullptr, 1));
}

TEST(atomic_engine, apply_matches_the_reference_at_any_alignment)
{
	each_type([](auto dt, auto t) {
		using T = typename decltype(t)::type;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			if (!expect_valid(dt, op, kind::fetch) && !expect_valid(dt, op, kind::compare))
				continue;
			for (size_t misalign : {size_t(0), size_t(3)}) {
				std::vector<char> mem(misalign + n_elems * sizeof(T));
				auto d = pack<T>(dst_v), x = pack<T>(opd_v), c = pack<T>(cmp_v);
				memcpy(mem.data() + misalign, d.data(), d.size());
				std::vector<char> res(d.size());
				ASSERT_TRUE(wu::atomic::apply(op, dt, mem.data() + misalign, x.data(), c.data(), res.data(),
							      n_elems));
				for (int i = 0; i < n_elems; i++) {
					T want = reference<T>(op, make<T>(dst_v[i]), make<T>(opd_v[i]), make<T>(cmp_v[i]));
					EXPECT_TRUE(at<T>(mem.data() + misalign, i) == want)
						<< "dt " << dt << " op " << op << " element " << i;
					EXPECT_TRUE(at<T>(res.data(), i) == make<T>(dst_v[i]))
						<< "dt " << dt << " op " << op << " element " << i;
				}
			}
		}
	});
}

TEST(atomic_engine, concurrent_sums_lose_nothing)
{
	/* One aligned and one unaligned counter, four threads. */
	alignas(8) char mem[16] = {};
	const int threads = 4, rounds = 20000;
	std::vector<std::thread> ts;
	for (int t = 0; t < threads; t++)
		ts.emplace_back([&] {
			uint64_t one = 1;
			uint32_t one32 = 1;
			for (int i = 0; i < rounds; i++) {
				wu::atomic::apply(FI_SUM, FI_UINT64, mem, &one, nullptr, nullptr, 1);
				wu::atomic::apply(FI_SUM, FI_UINT32, mem + 9, &one32, nullptr, nullptr, 1);
			}
		});
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(at<uint64_t>(mem, 0), uint64_t(threads) * rounds);
	EXPECT_EQ(at<uint32_t>(mem + 9, 0), uint32_t(threads) * rounds);
}

/* ---- over a provider ---- */

struct atomics : atomic_pair {};
WU_TEST_ATOMIC_PROVIDER_LIST(WU_TEST_INSTANTIATE_ONE, atomics)

TEST_P(atomics, valid_calls_and_query_atomic_agree_with_the_man_page)
{
	using valid_fn = int (*)(fid_ep *, fi_datatype, fi_op, size_t *);
	const valid_fn fns[] = {fi_atomicvalid, fi_fetch_atomicvalid, fi_compare_atomicvalid};
	const uint64_t qflags[] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};
	each_type([&](auto dt, auto t) {
		using T = typename decltype(t)::type;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
			for (int f = 0; f < 3; f++) {
				bool want = expect_valid(dt, op, families[f]);
				size_t count = 0;
				int r = fns[f](a.ep, fi_datatype(int(dt)), fi_op(op), &count);
				EXPECT_EQ(r, want ? 0 : -FI_EOPNOTSUPP) << "dt " << dt << " op " << op << " family " << f;
				fi_atomic_attr attr{};
				int q = fi_query_atomic(env.domain, fi_datatype(int(dt)), fi_op(op), &attr, qflags[f]);
				EXPECT_EQ(q, r) << "dt " << dt << " op " << op << " family " << f;
				if (want) {
					EXPECT_GE(count, 1u);
					EXPECT_EQ(attr.count, count);
					EXPECT_EQ(attr.size, sizeof(T));
				}
				q = fi_query_atomic(env.domain, fi_datatype(int(dt)), fi_op(op), &attr, qflags[f] | FI_TAGGED);
				EXPECT_EQ(q, want ? -FI_EOPNOTSUPP : r);
			}
	});
	size_t count;
	fi_atomic_attr attr;
	EXPECT_EQ(fi_atomicvalid(a.ep, fi_datatype(FI_UINT128 + 1), FI_SUM, &count), -FI_EINVAL);
	EXPECT_EQ(fi_atomicvalid(a.ep, FI_INT32, FI_ATOMIC_OP_LAST, &count), -FI_EINVAL);
	EXPECT_EQ(fi_atomicvalid(a.ep, FI_INT32, FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_query_atomic(env.domain, FI_INT32, FI_SUM, nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_query_atomic(env.domain, FI_INT32, FI_SUM, &attr, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
		  -FI_EINVAL);
	EXPECT_EQ(fi_query_atomic(env.domain, fi_datatype(FI_VOID), FI_SUM, &attr, 0), -FI_EINVAL);
}

/* MPICH probes every (op, datatype) pair at MPI_Init and its test runner
 * fails on any warning output: an unsupported pair is an expected answer,
 * logged at info (silent at the default warn level). */
TEST_P(atomics, an_unsupported_pair_is_refused_without_a_warning)
{
	if (getenv("FI_LOG_LEVEL"))
		GTEST_SKIP() << "FI_LOG_LEVEL is set";
	size_t count = 0;
	fi_atomic_attr attr{};
	::testing::internal::CaptureStderr();
	EXPECT_EQ(fi_atomicvalid(a.ep, FI_FLOAT_COMPLEX, FI_BOR, &count), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_fetch_atomicvalid(a.ep, FI_DOUBLE, FI_MSWAP, &count), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_compare_atomicvalid(a.ep, FI_INT32, FI_SUM, &count), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_query_atomic(env.domain, FI_FLOAT, FI_BAND, &attr, 0), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_query_atomic(env.domain, FI_INT32, FI_SUM, &attr, FI_TAGGED), -FI_EOPNOTSUPP);
	EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

/* Atomics from one peer travel in order on its one connection and the
 * target applies them as they arrive: fi_getinfo says so (MPICH ranks
 * providers without these bits lower). */
TEST_P(atomics, atomic_ordering_is_advertised)
{
	const uint64_t want = FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW;
	EXPECT_EQ(env.info->tx_attr->msg_order & want, want);
	EXPECT_EQ(env.info->rx_attr->msg_order & want, want);
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_ATOMIC;
	hints->tx_attr->msg_order = want;
	hints->rx_attr->msg_order = want;
	fi_info *got = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &got), 0);
	EXPECT_NE(got, nullptr);
	fi_freeinfo(got);
	fi_freeinfo(hints);
}

/* Every (op, datatype) of every family against the reference, through
 * fi_atomic / fi_fetch_atomic / fi_compare_atomic, at an unaligned target. */
TEST_P(atomics, every_op_and_datatype_matches_the_reference)
{
	const size_t off = 3;
	int calls = 0;
	each_type([&](auto dt, auto t) {
		using T = typename decltype(t)::type;
		const fi_datatype fdt = fi_datatype(int(dt));
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
			for (kind k : families) {
				if (!expect_valid(dt, op, k))
					continue;
				auto d = pack<T>(dst_v), x = pack<T>(opd_v), c = pack<T>(cmp_v);
				std::vector<char> res(d.size(), 'r');
				memcpy(target.data() + off, d.data(), d.size());
				int ctx;
				ssize_t r;
				if (k == kind::write)
					r = fi_atomic(a.ep, x.data(), n_elems, nullptr, a_to_b, base + off, key, fdt, fi_op(op),
						      &ctx);
				else if (k == kind::fetch)
					r = fi_fetch_atomic(a.ep, op == FI_ATOMIC_READ ? nullptr : x.data(), n_elems, nullptr,
							    res.data(), nullptr, a_to_b, base + off, key, fdt, fi_op(op), &ctx);
				else
					r = fi_compare_atomic(a.ep, x.data(), n_elems, nullptr, c.data(), nullptr, res.data(),
							      nullptr, a_to_b, base + off, key, fdt, fi_op(op), &ctx);
				ASSERT_EQ(r, 0) << "dt " << dt << " op " << op;
				ASSERT_NO_FATAL_FAILURE(done(FI_ATOMIC | (k == kind::write ? FI_WRITE : FI_READ), &ctx));
				calls++;
				for (int i = 0; i < n_elems; i++) {
					T want = reference<T>(op, make<T>(dst_v[i]), make<T>(opd_v[i]), make<T>(cmp_v[i]));
					EXPECT_TRUE(at<T>(target.data() + off, i) == want)
						<< "dt " << dt << " op " << op << " element " << i;
					if (k != kind::write) {
						EXPECT_TRUE(at<T>(res.data(), i) == make<T>(dst_v[i]))
							<< "dt " << dt << " op " << op << " old value " << i;
					}
				}
			}
	});
	EXPECT_GT(calls, 400);
	/* Unsupported pairs are refused before anything is sent. */
	float f = 1;
	EXPECT_EQ(fi_atomic(a.ep, &f, 1, nullptr, a_to_b, base, key, FI_FLOAT, FI_BOR, nullptr), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_atomic(a.ep, &f, 1, nullptr, a_to_b, base, key, FI_FLOAT, FI_CSWAP, nullptr), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_fetch_atomic(a.ep, &f, 1, nullptr, &f, nullptr, a_to_b, base, key, FI_FLOAT, FI_MSWAP, nullptr),
		  -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_compare_atomic(a.ep, &f, 1, nullptr, &f, nullptr, &f, nullptr, a_to_b, base, key, FI_FLOAT,
				    FI_SUM, nullptr),
		  -FI_EOPNOTSUPP);
}

TEST_P(atomics, argument_checks)
{
	uint64_t v = 1, res = 0, cmp = 0;
	const fi_datatype u64 = FI_UINT64;
	EXPECT_EQ(fi_atomic(a.ep, &v, 0, nullptr, a_to_b, base, key, u64, FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_atomic(a.ep, nullptr, 1, nullptr, a_to_b, base, key, u64, FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_atomic(a.ep, &v, 1, nullptr, a_to_b, base, key, fi_datatype(99), FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_atomic(a.ep, &v, 1, nullptr, a_to_b, base, key, u64, fi_op(99), nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_fetch_atomic(a.ep, &v, 1, nullptr, nullptr, nullptr, a_to_b, base, key, u64, FI_SUM, nullptr),
		  -FI_EINVAL);
	EXPECT_EQ(fi_compare_atomic(a.ep, &v, 1, nullptr, nullptr, nullptr, &res, nullptr, a_to_b, base, key, u64,
				    FI_CSWAP, nullptr),
		  -FI_EINVAL);
	EXPECT_EQ(fi_atomicv(a.ep, nullptr, nullptr, 1, a_to_b, base, key, u64, FI_SUM, nullptr), -FI_EINVAL);
	fi_ioc five[5] = {{&v, 1}, {&v, 1}, {&v, 1}, {&v, 1}, {&v, 1}};
	EXPECT_EQ(fi_atomicv(a.ep, five, nullptr, 5, a_to_b, base, key, u64, FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_atomicmsg(a.ep, nullptr, 0), -FI_EINVAL);
	/* Too many elements, and too many bytes for FI_INJECT. */
	std::vector<uint64_t> big(wu::atomic::max_bytes / 8 + 1);
	EXPECT_EQ(fi_atomic(a.ep, big.data(), big.size(), nullptr, a_to_b, base, key, u64, FI_SUM, nullptr),
		  -FI_EMSGSIZE);
	EXPECT_EQ(fi_inject_atomic(a.ep, big.data(), env.info->tx_attr->inject_size / 8 + 1, a_to_b, base, key, u64,
				   FI_SUM),
		  -FI_EINVAL);
	/* A remote ioc that does not match the operands, FI_TAGGED targets, remote CQ data. */
	fi_ioc io{&v, 1};
	fi_rma_ioc rio{base, 2, key};
	fi_msg_atomic m = one_msg(&io, &rio, u64, FI_SUM, nullptr);
	EXPECT_EQ(fi_atomicmsg(a.ep, &m, 0), -FI_EINVAL);
	rio.count = 1;
	EXPECT_EQ(fi_atomicmsg(a.ep, &m, FI_TAGGED), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_atomicmsg(a.ep, &m, FI_REMOTE_CQ_DATA), -FI_EOPNOTSUPP);
	m.rma_iov_count = 2;
	EXPECT_EQ(fi_atomicmsg(a.ep, &m, 0), -FI_EINVAL);
	/* Compare and result lists must cover the operands. */
	fi_ioc cio{&cmp, 1}, rio2{&res, 2};
	EXPECT_EQ(fi_compare_atomicv(a.ep, &io, nullptr, 1, &cio, nullptr, 1, &rio2, nullptr, 1, a_to_b, base, key,
				     u64, FI_CSWAP, nullptr),
		  -FI_EINVAL);
	/* Nothing went out. */
	fi_cq_tagged_entry e;
	spin({a.tx, b.rx}, 200);
	EXPECT_EQ(fi_cq_read(a.tx, &e, 1), -FI_EAGAIN);
}

TEST_P(atomics, iov_msg_and_inject_forms)
{
	/* Five uint32 at the target, operands and results split over iocs. */
	auto *t32 = reinterpret_cast<uint32_t *>(target.data());
	for (int i = 0; i < 5; i++)
		t32[i] = 10 * uint32_t(i);
	uint32_t x[5] = {1, 2, 3, 4, 5};
	fi_ioc ops[2] = {{x, 2}, {x + 2, 3}};
	int ctx;
	ASSERT_EQ(fi_atomicv(a.ep, ops, nullptr, 2, a_to_b, base, key, FI_UINT32, FI_SUM, &ctx), 0);
	done(FI_ATOMIC | FI_WRITE, &ctx);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(t32[i], 10u * i + x[i]);
	uint32_t r[5] = {};
	fi_ioc res[3] = {{r, 1}, {r + 1, 1}, {r + 2, 3}};
	ASSERT_EQ(fi_fetch_atomicv(a.ep, ops, nullptr, 2, res, nullptr, 3, a_to_b, base, key, FI_UINT32,
				   FI_ATOMIC_WRITE, &ctx),
		  0);
	done(FI_ATOMIC | FI_READ, &ctx);
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(r[i], 10u * i + x[i]);
		EXPECT_EQ(t32[i], x[i]);
	}
	/* Compare, vectored: elements equal to the compare value take the operand. */
	uint32_t cmpv[5] = {1, 0, 3, 0, 5}, nv[5] = {9, 9, 9, 9, 9};
	fi_ioc cio[2] = {{cmpv, 4}, {cmpv + 4, 1}}, nio[1] = {{nv, 5}};
	ASSERT_EQ(fi_compare_atomicv(a.ep, nio, nullptr, 1, cio, nullptr, 2, res, nullptr, 3, a_to_b, base, key,
				     FI_UINT32, FI_CSWAP, &ctx),
		  0);
	done(FI_ATOMIC | FI_READ, &ctx);
	const uint32_t after[5] = {9, 2, 9, 4, 9};
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(r[i], x[i]);
		EXPECT_EQ(t32[i], after[i]);
	}
	/* fi_atomicmsg with FI_INJECT: the operand buffer is free on return. */
	uint32_t once = 100;
	fi_ioc io{&once, 1};
	fi_rma_ioc rio{base, 1, key};
	fi_msg_atomic m = one_msg(&io, &rio, FI_UINT32, FI_SUM, &ctx);
	ASSERT_EQ(fi_atomicmsg(a.ep, &m, FI_INJECT | FI_COMPLETION), 0);
	once = 0xdead;
	done(FI_ATOMIC | FI_WRITE, &ctx);
	EXPECT_EQ(t32[0], 109u);
	/* fi_fetch_atomicmsg / fi_compare_atomicmsg. */
	once = 1;
	uint32_t old = 0;
	fi_ioc oio{&old, 1};
	ASSERT_EQ(fi_fetch_atomicmsg(a.ep, &m, &oio, nullptr, 1, 0), 0);
	done(FI_ATOMIC | FI_READ, &ctx);
	EXPECT_EQ(old, 109u);
	EXPECT_EQ(t32[0], 110u);
	uint32_t c110 = 110;
	fi_ioc c1{&c110, 1};
	m.op = FI_CSWAP;
	once = 7;
	ASSERT_EQ(fi_compare_atomicmsg(a.ep, &m, &c1, nullptr, 1, &oio, nullptr, 1, 0), 0);
	done(FI_ATOMIC | FI_READ, &ctx);
	EXPECT_EQ(old, 110u);
	EXPECT_EQ(t32[0], 7u);
	/* fi_inject_atomic: no completion, the buffer is free at once. */
	uint64_t add = 5;
	auto *t64 = reinterpret_cast<uint64_t *>(target.data() + 64);
	*t64 = 1;
	ASSERT_EQ(fi_inject_atomic(a.ep, &add, 1, a_to_b, base + 64, key, FI_UINT64, FI_SUM), 0);
	add = 1000;
	/* A fetch behind it sees its result (one connection, in order). */
	uint64_t seen = 0, zero = 0;
	ASSERT_EQ(fi_fetch_atomic(a.ep, &zero, 1, nullptr, &seen, nullptr, a_to_b, base + 64, key, FI_UINT64,
				  FI_ATOMIC_READ, &ctx),
		  0);
	done(FI_ATOMIC | FI_READ, &ctx);
	EXPECT_EQ(seen, 6u);
	fi_cq_tagged_entry e;
	EXPECT_EQ(fi_cq_read(a.tx, &e, 1), -FI_EAGAIN) << "fi_inject_atomic generated a completion";
}

TEST_P(atomics, bad_key_range_or_access_is_eacces)
{
	uint64_t v = 1, old = 0;
	int ctx;
	ASSERT_EQ(fi_atomic(a.ep, &v, 1, nullptr, a_to_b, base, key + 1, FI_UINT64, FI_SUM, &ctx), 0);
	EXPECT_EQ(failed(&ctx), FI_EACCES);
	ASSERT_EQ(fi_fetch_atomic(a.ep, &v, 1, nullptr, &old, nullptr, a_to_b, base + target.size() - 4, key,
				  FI_UINT64, FI_SUM, &ctx),
		  0);
	EXPECT_EQ(failed(&ctx), FI_EACCES);
	/* A region without FI_REMOTE_READ takes writes but no fetches;
	 * one without FI_REMOTE_WRITE takes FI_ATOMIC_READ only. */
	uint64_t wo = 0, ro = 42;
	fid_mr *mw = nullptr, *mrd = nullptr;
	ASSERT_EQ(fi_mr_reg(env.domain, &wo, sizeof wo, FI_REMOTE_WRITE, 0, 100, 0, &mw, nullptr), 0);
	ASSERT_EQ(fi_mr_reg(env.domain, &ro, sizeof ro, FI_REMOTE_READ, 0, 101, 0, &mrd, nullptr), 0);
	bool virt = env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	uint64_t wa = virt ? uint64_t(uintptr_t(&wo)) : 0, ra = virt ? uint64_t(uintptr_t(&ro)) : 0;
	ASSERT_EQ(fi_atomic(a.ep, &v, 1, nullptr, a_to_b, wa, fi_mr_key(mw), FI_UINT64, FI_SUM, &ctx), 0);
	done(FI_ATOMIC | FI_WRITE, &ctx);
	EXPECT_EQ(wo, 1u);
	ASSERT_EQ(fi_fetch_atomic(a.ep, &v, 1, nullptr, &old, nullptr, a_to_b, wa, fi_mr_key(mw), FI_UINT64, FI_SUM,
				  &ctx),
		  0);
	EXPECT_EQ(failed(&ctx), FI_EACCES);
	ASSERT_EQ(fi_fetch_atomic(a.ep, nullptr, 1, nullptr, &old, nullptr, a_to_b, ra, fi_mr_key(mrd), FI_UINT64,
				  FI_ATOMIC_READ, &ctx),
		  0);
	done(FI_ATOMIC | FI_READ, &ctx);
	EXPECT_EQ(old, 42u);
	ASSERT_EQ(fi_fetch_atomic(a.ep, &v, 1, nullptr, &old, nullptr, a_to_b, ra, fi_mr_key(mrd), FI_UINT64,
				  FI_ATOMIC_WRITE, &ctx),
		  0);
	EXPECT_EQ(failed(&ctx), FI_EACCES);
	EXPECT_EQ(ro, 42u);
	EXPECT_EQ(wo, 1u);
	EXPECT_EQ(fi_close(&mw->fid), 0);
	EXPECT_EQ(fi_close(&mrd->fid), 0);
	/* The connection stays: the next operation works. */
	ASSERT_EQ(fi_atomic(a.ep, &v, 1, nullptr, a_to_b, base, key, FI_UINT64, FI_SUM, &ctx), 0);
	done(FI_ATOMIC | FI_WRITE, &ctx);
}

TEST_P(atomics, counters_count_both_sides)
{
	fi_cntr_attr ca{};
	ca.events = FI_CNTR_EVENTS_COMP;
	fid_cntr *w = nullptr, *r = nullptr, *rw = nullptr, *rr = nullptr;
	for (fid_cntr **c : {&w, &r, &rw, &rr})
		ASSERT_EQ(fi_cntr_open(env.domain, &ca, c, nullptr), 0);
	ASSERT_EQ(fi_ep_bind(a.ep, &w->fid, FI_WRITE), 0);
	ASSERT_EQ(fi_ep_bind(a.ep, &r->fid, FI_READ), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &rw->fid, FI_REMOTE_WRITE), 0);
	ASSERT_EQ(fi_ep_bind(b.ep, &rr->fid, FI_REMOTE_READ), 0);
	uint64_t one = 1, old = 0;
	int ctx;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(fi_atomic(a.ep, &one, 1, nullptr, a_to_b, base, key, FI_UINT64, FI_SUM, &ctx), 0);
		done(FI_ATOMIC | FI_WRITE, &ctx);
	}
	ASSERT_EQ(fi_inject_atomic(a.ep, &one, 1, a_to_b, base, key, FI_UINT64, FI_SUM), 0);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(fi_fetch_atomic(a.ep, &one, 1, nullptr, &old, nullptr, a_to_b, base, key, FI_UINT64, FI_SUM,
					  &ctx),
			  0);
		done(FI_ATOMIC | FI_READ, &ctx);
	}
	ASSERT_EQ(fi_fetch_atomic(a.ep, nullptr, 1, nullptr, &old, nullptr, a_to_b, base, key, FI_UINT64,
				  FI_ATOMIC_READ, &ctx),
		  0);
	done(FI_ATOMIC | FI_READ, &ctx);
	EXPECT_EQ(old, 6u);
	/* A failed one counts as an error. */
	ASSERT_EQ(fi_atomic(a.ep, &one, 1, nullptr, a_to_b, base, key + 9, FI_UINT64, FI_SUM, &ctx), 0);
	EXPECT_EQ(failed(&ctx), FI_EACCES);
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (fi_cntr_read(w) < 4 && std::chrono::steady_clock::now() < until)
		spin({a.tx, b.rx}, 1);
	EXPECT_EQ(fi_cntr_read(w), 4u);
	EXPECT_EQ(fi_cntr_readerr(w), 1u);
	EXPECT_EQ(fi_cntr_read(r), 3u);
	EXPECT_EQ(fi_cntr_read(rw), 6u);
	EXPECT_EQ(fi_cntr_read(rr), 3u);
	a.close();
	b.close();
	for (fid_cntr *c : {w, r, rw, rr})
		EXPECT_EQ(fi_close(&c->fid), 0);
}

/* Two initiators, each in its own thread with several operations in
 * flight, add to one target counter while a third thread drives the target. */
TEST_P(atomics, two_initiators_hammering_one_counter_lose_nothing)
{
	rdm_ep c{env};
	fi_addr_t c_to_b = c.insert(b);
	b.insert(c);
	auto *counter = reinterpret_cast<uint64_t *>(target.data() + 128);
	*counter = 0;
	const int per = 3000, window = 32;
	std::atomic<bool> stop{false};
	std::thread target_thread([&] {
		while (!stop.load())
			spin({b.rx, b.tx}, 1);
	});
	auto hammer = [&](rdm_ep &who, fi_addr_t to, int *fails) {
		uint64_t one = 1;
		int posted = 0, completed = 0;
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
		while (completed < per && std::chrono::steady_clock::now() < until) {
			while (posted < per && posted - completed < window) {
				ssize_t r = fi_atomic(who.ep, &one, 1, nullptr, to, base + 128, key, FI_UINT64, FI_SUM,
						      nullptr);
				if (r == -FI_EAGAIN)
					break;
				if (r) {
					(*fails)++;
					return;
				}
				posted++;
			}
			fi_cq_tagged_entry e[16];
			ssize_t n = fi_cq_read(who.tx, e, 16);
			if (n > 0)
				completed += int(n);
			else if (n != -FI_EAGAIN) {
				(*fails)++;
				return;
			}
		}
		if (completed != per)
			(*fails)++;
	};
	int fails_a = 0, fails_c = 0;
	std::thread ta([&] { hammer(a, a_to_b, &fails_a); });
	std::thread tc([&] { hammer(c, c_to_b, &fails_c); });
	ta.join();
	tc.join();
	stop = true;
	target_thread.join();
	EXPECT_EQ(fails_a, 0);
	EXPECT_EQ(fails_c, 0);
	uint64_t final_value;
	memcpy(&final_value, counter, sizeof final_value);
	EXPECT_EQ(final_value, uint64_t(2 * per));
}

} // namespace
