/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_av(3) through the real tcp provider, one suite per man-page section. */
#include "test/av/av_fixture.h"

#include "core/addr.h"

#include <climits>
#include <cstdint>

using namespace wu::test;

/* ---------------- fi_av_open ---------------- */

TEST(AvOpen, TypesAreReported)
{
	tcp_domain d;
	for (fi_av_type t : {FI_AV_TABLE, FI_AV_MAP, FI_AV_UNSPEC}) {
		fi_av_attr a{};
		a.type = t;
		fid_av *av = d.open(a);
		ASSERT_NE(av, nullptr);
		EXPECT_EQ(d.last_attr.type, t == FI_AV_UNSPEC ? FI_AV_TABLE : t);
		EXPECT_TRUE(wu::av::is_av(&av->fid));
		close_av(av);
	}
}

TEST(AvOpen, MapValuesAreUsableHandles)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_MAP);
	sockaddr_in s[3] = {v4("10.0.0.1", 1), v4("10.0.0.2", 2), v4("10.0.0.3", 3)};
	fi_addr_t fa[3];
	ASSERT_EQ(fi_av_insert(av, s, 3, fa, 0, nullptr), 3);
	EXPECT_EQ(lookup_str(av, fa[0]), "10.0.0.1:1");
	EXPECT_EQ(lookup_str(av, fa[2]), "10.0.0.3:3");
	close_av(av);
}

TEST(AvOpen, UnknownFlagsAndBadAttributes)
{
	tcp_domain d;
	fi_av_attr a{};
	a.flags = FI_MORE;
	d.open(a, -FI_EBADFLAGS);
	a = {};
	a.flags = FI_READ; /* read-only needs a name */
	d.open(a, -FI_EINVAL);
	a = {};
	a.rx_ctx_bits = 65;
	d.open(a, -FI_EINVAL);
	a = {};
	a.type = fi_av_type(7);
	d.open(a, -FI_EINVAL);
}

TEST(AvOpen, CountIsOnlyTheFirstAllocation)
{
	tcp_domain d;
	fi_av_attr a{};
	a.type = FI_AV_TABLE;
	a.count = 4;
	a.ep_per_node = 2;
	fid_av *av = d.open(a);
	std::vector<sockaddr_in> s;
	for (int i = 0; i < 5000; i++)
		s.push_back(v4("10.1.0.0", uint16_t(i)));
	EXPECT_EQ(fi_av_insert(av, s.data(), s.size(), nullptr, 0, nullptr), 5000);
	EXPECT_EQ(lookup_str(av, 4999), "10.1.0.0:4999");
	close_av(av);
}

TEST(AvOpen, RxCtxBitsAreIgnoredByLookup)
{
	tcp_domain d;
	fi_av_attr a{};
	a.type = FI_AV_TABLE;
	a.rx_ctx_bits = 8;
	fid_av *av = d.open(a);
	sockaddr_in s = v4("10.0.0.9", 9);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(lookup_str(av, fi_rx_addr(fa, 5, 8)), "10.0.0.9:9");
	char buf[16];
	EXPECT_EQ(wu::av::addr_of(av, fi_rx_addr(fa, 255, 8), buf, sizeof buf), sizeof(sockaddr_in));
	close_av(av);
}

/* A count no AV can hold once hung in a doubling loop (it wrapped to 0). */
TEST(AvOpen, CountPastWhatAnAvHoldsIsRefused)
{
	tcp_domain d;
	for (size_t count : {SIZE_MAX, SIZE_MAX / 2 + 2, (size_t{1} << 40) + 1}) {
		fi_av_attr a{};
		a.type = FI_AV_TABLE;
		a.count = count;
		d.open(a, -FI_EINVAL);
		a.name = "test-huge-count";
		d.open(a, -FI_EINVAL);
	}
}

/* ---------------- fi_av_insert ---------------- */

TEST(AvInsert, TableIndicesAreSequentialAcrossCalls)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s[4] = {v4("1.1.1.1", 1), v4("1.1.1.2", 2), v4("1.1.1.3", 3), v4("1.1.1.4", 4)};
	fi_addr_t fa[4];
	ASSERT_EQ(fi_av_insert(av, s, 2, fa, 0, nullptr), 2);
	EXPECT_EQ(fa[0], 0u);
	EXPECT_EQ(fa[1], 1u);
	ASSERT_EQ(fi_av_insert(av, s + 2, 2, nullptr, 0, nullptr), 2); /* fi_addr may be NULL */
	EXPECT_EQ(lookup_str(av, 3), "1.1.1.4:4");
	close_av(av);
}

TEST(AvInsert, LowestFreeIndexIsReused)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	std::vector<sockaddr_in> s;
	for (int i = 0; i < 10; i++)
		s.push_back(v4("2.2.2.2", uint16_t(i)));
	ASSERT_EQ(fi_av_insert(av, s.data(), 10, nullptr, 0, nullptr), 10);
	fi_addr_t rm[2] = {7, 3};
	ASSERT_EQ(fi_av_remove(av, rm, 2, 0), 0);
	fi_addr_t fa[3];
	sockaddr_in n[3] = {v4("3.3.3.3", 1), v4("3.3.3.3", 2), v4("3.3.3.3", 3)};
	ASSERT_EQ(fi_av_insert(av, n, 3, fa, 0, nullptr), 3);
	EXPECT_EQ(fa[0], 3u);
	EXPECT_EQ(fa[1], 7u);
	EXPECT_EQ(fa[2], 10u);
	close_av(av);
}

TEST(AvInsert, FailedAddressGetsNotAvailAndIsNotCounted)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s[3] = {v4("4.4.4.4", 1), v4("4.4.4.4", 2), v4("4.4.4.4", 3)};
	s[1].sin_family = AF_UNIX;
	fi_addr_t fa[3];
	EXPECT_EQ(fi_av_insert(av, s, 3, fa, 0, nullptr), 2);
	EXPECT_EQ(fa[0], 0u);
	EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fa[2], 1u);
	close_av(av);
}

TEST(AvInsert, SyncErrFillsTheStatusArray)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s[3] = {v4("5.5.5.5", 1), v4("5.5.5.5", 2), v4("5.5.5.5", 3)};
	s[2].sin_family = AF_UNIX;
	int st[3] = {-1, -1, -1};
	EXPECT_EQ(fi_av_insert(av, s, 3, nullptr, FI_SYNC_ERR, st), 2);
	EXPECT_EQ(st[0], 0);
	EXPECT_EQ(st[1], 0);
	EXPECT_EQ(st[2], FI_EINVAL);
	EXPECT_EQ(fi_av_insert(av, s, 1, nullptr, FI_SYNC_ERR, nullptr), -FI_EINVAL);
	close_av(av);
}

TEST(AvInsert, MoreAggregatesAndStillAssignsInOrder)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s[3] = {v4("6.6.6.6", 1), v4("6.6.6.6", 2), v4("6.6.6.6", 3)};
	fi_addr_t fa[3];
	EXPECT_EQ(fi_av_insert(av, s, 1, fa, FI_MORE, nullptr), 1);
	EXPECT_EQ(fi_av_insert(av, s + 1, 1, fa + 1, FI_MORE, nullptr), 1);
	EXPECT_EQ(fi_av_insert(av, s + 2, 1, fa + 2, 0, nullptr), 1);
	EXPECT_EQ(fa[2], 2u);
	EXPECT_EQ(wu::av::reverse(av, &s[1], sizeof s[1]), 1u);
	close_av(av);
}

TEST(AvInsert, UnknownFlagsAreRefused)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("7.7.7.7", 7);
	EXPECT_EQ(fi_av_insert(av, &s, 1, nullptr, FI_SYMMETRIC, nullptr), -FI_EBADFLAGS);
	close_av(av);
}

TEST(AvInsert, DuplicateGivesASecondEntry)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("8.8.8.8", 8);
	fi_addr_t a, b;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &a, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(av, &s, 1, &b, 0, nullptr), 1);
	EXPECT_NE(a, b);
	EXPECT_EQ(lookup_str(av, b), "8.8.8.8:8");
	ASSERT_EQ(fi_av_remove(av, &a, 1, 0), 0);
	EXPECT_EQ(wu::av::reverse(av, &s, sizeof s), b);
	close_av(av);
}

TEST(AvInsert, PerInsertUserIds)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s[2] = {v4("9.9.9.9", 1), v4("9.9.9.9", 2)};
	fi_addr_t fa[2] = {1000, 2000};
	ASSERT_EQ(fi_av_insert(av, s, 2, fa, FI_AV_USER_ID, nullptr), 2);
	EXPECT_EQ(fa[0], 0u); /* output is still the fi_addr */
	EXPECT_EQ(fa[1], 1u);
	EXPECT_EQ(wu::av::source_id(av, 0), 1000u);
	EXPECT_EQ(wu::av::source_id(av, 1), 2000u);
	sockaddr_in t = v4("9.9.9.9", 3);
	fi_addr_t plain;
	ASSERT_EQ(fi_av_insert(av, &t, 1, &plain, 0, nullptr), 1);
	EXPECT_EQ(wu::av::source_id(av, plain), plain);
	EXPECT_EQ(fi_av_insert(av, s, 1, nullptr, FI_AV_USER_ID, nullptr), -FI_EINVAL);
	close_av(av);

	fid_av *uav = d.open_type(FI_AV_TABLE, FI_AV_USER_ID);
	fi_addr_t id = 5;
	EXPECT_EQ(fi_av_insert(uav, s, 1, &id, FI_AV_USER_ID, nullptr), -FI_EINVAL);
	close_av(uav);
}

/* The int return cannot count past INT_MAX: refused before a byte of the
 * (here far too short) array is read. */
TEST(AvInsert, CountPastIntMaxIsRefused)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("10.2.2.2", 1);
	fi_addr_t fa = 7;
	EXPECT_EQ(fi_av_insert(av, &s, size_t(INT_MAX) + 1, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_av_insert(av, &s, SIZE_MAX, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(fa, 0u); /* nothing was stored before */
	close_av(av);
}

namespace {

/* An AV (FI_SYMMETRIC, 2^26 slots) with `room` slots left: one generator
 * takes the rest without storing anything per address. */
fid_av *nearly_full(tcp_domain &d, uint64_t room, const char *node)
{
	fid_av *av = d.open_type(FI_AV_TABLE, FI_SYMMETRIC);
	const uint64_t slots = uint64_t{1} << 26;
	EXPECT_EQ(fi_av_insertsym(av, node, size_t(slots - room), "1000", 1, nullptr, 0, nullptr),
		  int(slots - room));
	return av;
}

} // namespace

/* A full AV fails what does not fit address by address (fi_av(3)): what
 * was stored is reported, the rest reads FI_ADDR_NOTAVAIL. */
TEST(AvInsert, FullAvFailsTheRestAddressByAddress)
{
	const fi_addr_t last = (fi_addr_t{1} << 26) - 1;
	{
		tcp_domain d; /* IPv4: the bulk path */
		fid_av *av = nearly_full(d, 2, "10.0.0.1");
		sockaddr_in s[5];
		for (int i = 0; i < 5; i++)
			s[i] = v4("192.168.0.1", uint16_t(10 + i));
		fi_addr_t fa[5] = {1, 2, 3, 4, 5};
		EXPECT_EQ(fi_av_insert(av, s, 5, fa, 0, nullptr), 2);
		EXPECT_EQ(fa[0], last - 1);
		EXPECT_EQ(fa[1], last);
		for (int i = 2; i < 5; i++)
			EXPECT_EQ(fa[i], FI_ADDR_NOTAVAIL) << i;
		EXPECT_EQ(lookup_str(av, last), "192.168.0.1:11");
		int st[2] = {-1, -1};
		EXPECT_EQ(fi_av_insert(av, s, 2, nullptr, FI_SYNC_ERR, st), 0);
		EXPECT_EQ(st[0], FI_ENOSPC);
		EXPECT_EQ(st[1], FI_ENOSPC);
		fa[0] = 1;
		EXPECT_EQ(fi_av_insertsvc(av, "10.3.3.3", "9", fa, 0, nullptr), 0);
		EXPECT_EQ(fa[0], FI_ADDR_NOTAVAIL);
		close_av(av);
	}
	{
		tcp_domain d(FI_SOCKADDR_IN6); /* the staged path */
		fid_av *av = nearly_full(d, 1, "2001:db8::1");
		sockaddr_in6 s[3] = {v6("2001:db8::99", 1), v6("2001:db8::99", 2), v6("2001:db8::99", 3)};
		fi_addr_t fa[3] = {1, 2, 3};
		EXPECT_EQ(fi_av_insert(av, s, 3, fa, 0, nullptr), 1);
		EXPECT_EQ(fa[0], last);
		EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
		EXPECT_EQ(fa[2], FI_ADDR_NOTAVAIL);
		EXPECT_EQ(lookup_str(av, last), "[2001:db8::99]:1");
		close_av(av);
	}
	{
		tcp_domain d; /* no room for a generator: insertsym stores one by one */
		fid_av *av = nearly_full(d, 2, "10.0.0.1");
		fi_addr_t fa[3] = {1, 2, 3};
		EXPECT_EQ(fi_av_insertsym(av, "10.6.0.1", 3, "7", 1, fa, 0, nullptr), 2);
		EXPECT_EQ(fa[0], last - 1);
		EXPECT_EQ(fa[1], last);
		EXPECT_EQ(fa[2], FI_ADDR_NOTAVAIL);
		close_av(av);
	}
}

/* ---------------- asynchronous inserts (FI_EVENT) ---------------- */

TEST(AvEvent, InsertBeforeBindIsNoEq)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_EVENT);
	sockaddr_in s = v4("10.9.9.9", 1);
	EXPECT_EQ(fi_av_insert(av, &s, 1, nullptr, 0, nullptr), -FI_ENOEQ);
	close_av(av);
}

TEST(AvEvent, ErrorsThenOneCompletion)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_EVENT);
	fid_eq *eq = d.open_eq();
	ASSERT_EQ(fi_av_bind(av, &eq->fid, 1), -FI_EBADFLAGS);
	for (int bit = 0; bit < 64; bit++) /* no flag is defined for fi_av_bind */
		ASSERT_EQ(fi_av_bind(av, &eq->fid, uint64_t{1} << bit), -FI_EBADFLAGS) << bit;
	ASSERT_EQ(fi_av_bind(av, &eq->fid, 0), 0);
	sockaddr_in s[4] = {v4("10.9.9.9", 1), v4("10.9.9.9", 2), v4("10.9.9.9", 3), v4("10.9.9.9", 4)};
	s[1].sin_family = AF_UNIX;
	s[3].sin_family = AF_UNIX;
	fi_addr_t fa[4];
	int ctx;
	EXPECT_EQ(fi_av_insert(av, s, 4, fa, 0, &ctx), 0);
	EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
	std::vector<uint64_t> failed;
	for (;;) {
		fi_eq_err_entry err{};
		if (fi_eq_readerr(eq, &err, 0) <= 0)
			break;
		EXPECT_EQ(err.fid, &av->fid);
		EXPECT_EQ(err.context, &ctx);
		EXPECT_EQ(err.err, FI_EINVAL);
		failed.push_back(err.data);
	}
	EXPECT_EQ(failed, (std::vector<uint64_t>{1, 3}));
	uint32_t event = 0;
	fi_eq_entry e{};
	ASSERT_EQ(fi_eq_read(eq, &event, &e, sizeof e, 0), ssize_t(sizeof e));
	EXPECT_EQ(event, uint32_t(FI_AV_COMPLETE));
	EXPECT_EQ(e.data, 2u);
	EXPECT_EQ(e.context, &ctx);
	EXPECT_EQ(fi_eq_read(eq, &event, &e, sizeof e, 0), -FI_EAGAIN);
	/* Events still queued survive the AV's close. */
	EXPECT_EQ(fi_av_insertsvc(av, "127.0.0.1", "7", nullptr, 0, &ctx), 0);
	close_av(av);
	ASSERT_EQ(fi_eq_read(eq, &event, &e, sizeof e, 0), ssize_t(sizeof e));
	EXPECT_EQ(event, uint32_t(FI_AV_COMPLETE));
	EXPECT_EQ(e.data, 1u);
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

/* ---------------- fi_av_insertsvc ---------------- */

TEST(AvInsertSvc, NodeAndService)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insertsvc(av, "127.0.0.1", "4242", &fa, 0, nullptr), 1);
	EXPECT_EQ(lookup_str(av, fa), "127.0.0.1:4242");
	ASSERT_EQ(fi_av_insertsvc(av, "localhost", "99", &fa, 0, nullptr), 1);
	EXPECT_EQ(lookup_str(av, fa), "127.0.0.1:99");
	EXPECT_EQ(fi_av_insertsvc(av, "127.0.0.1", nullptr, &fa, 0, nullptr), -FI_EINVAL);
	close_av(av);
}

TEST(AvInsertSvc, AddrStrNodeWithNullService)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insertsvc(av, "fi_sockaddr_in://10.2.3.4:77", nullptr, &fa, 0, nullptr), 1);
	EXPECT_EQ(lookup_str(av, fa), "10.2.3.4:77");
	close_av(av);
}

/* ---------------- fi_av_insertsym ---------------- */

TEST(AvInsertSym, NodeMajorOrder)
{
	tcp_domain d;
	for (uint64_t flags : {uint64_t{0}, uint64_t{FI_SYMMETRIC}}) {
		fid_av *av = d.open_type(FI_AV_TABLE, flags);
		fi_addr_t fa[4];
		ASSERT_EQ(fi_av_insertsym(av, "10.1.1.1", 2, "5000", 2, fa, 0, nullptr), 4);
		EXPECT_EQ(lookup_str(av, fa[0]), "10.1.1.1:5000");
		EXPECT_EQ(lookup_str(av, fa[1]), "10.1.1.1:5001");
		EXPECT_EQ(lookup_str(av, fa[2]), "10.1.1.2:5000");
		EXPECT_EQ(lookup_str(av, fa[3]), "10.1.1.2:5001");
		EXPECT_EQ(fa[3], 3u);
		close_av(av);
	}
}

TEST(AvInsertSym, Ipv4CarriesAcrossOctets)
{
	tcp_domain d;
	for (uint64_t flags : {uint64_t{0}, uint64_t{FI_SYMMETRIC}}) {
		fid_av *av = d.open_type(FI_AV_TABLE, flags);
		ASSERT_EQ(fi_av_insertsym(av, "10.0.255.254", 3, "1", 1, nullptr, 0, nullptr), 3);
		EXPECT_EQ(lookup_str(av, 1), "10.0.255.255:1");
		EXPECT_EQ(lookup_str(av, 2), "10.1.0.0:1");
		close_av(av);
	}
}

TEST(AvInsertSym, Ipv6Carries)
{
	tcp_domain d(FI_SOCKADDR_IN6);
	for (uint64_t flags : {uint64_t{0}, uint64_t{FI_SYMMETRIC}}) {
		fid_av *av = d.open_type(FI_AV_TABLE, flags);
		ASSERT_EQ(fi_av_insertsym(av, "fe80::ffff:ffff:ffff:ffff", 2, "10", 2, nullptr, 0, nullptr), 4);
		EXPECT_EQ(lookup_str(av, 1), "[fe80::ffff:ffff:ffff:ffff]:11");
		EXPECT_EQ(lookup_str(av, 2), "[fe80:0:0:1::]:10");
		sockaddr_in6 q = v6("fe80:0:0:1::", 11);
		EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), 3u);
		close_av(av);
	}
}

TEST(AvInsertSym, HostNamesCountUpTheirSuffix)
{
	/* The arithmetic insertsym uses for names (no DNS needed). */
	std::string n = "host09";
	ASSERT_EQ(wu::addr::next_node(n), 0);
	EXPECT_EQ(n, "host10");
	n = "node099";
	ASSERT_EQ(wu::addr::next_node(n), 0);
	EXPECT_EQ(n, "node100");
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	EXPECT_EQ(fi_av_insertsym(av, "localhost", 2, "1", 1, nullptr, 0, nullptr), -FI_EINVAL);
	ASSERT_EQ(fi_av_insertsym(av, "localhost", 1, "80", 3, nullptr, 0, nullptr), 3);
	EXPECT_EQ(lookup_str(av, 2), "127.0.0.1:82");
	close_av(av);
}

TEST(AvInsertSym, NamesResolveOncePerNode)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	uint64_t before = wu::av::get_stats().resolves;
	ASSERT_EQ(fi_av_insertsym(av, "127.0.0.1", 3, "100", 4, nullptr, 0, nullptr), 12);
	EXPECT_EQ(wu::av::get_stats().resolves - before, 3u);
	before = wu::av::get_stats().resolves;
	ASSERT_EQ(fi_av_insertsym(av, "localhost", 1, "100", 50, nullptr, 0, nullptr), 50);
	EXPECT_EQ(wu::av::get_stats().resolves - before, 1u);
	close_av(av);
}

/* 2^31 addresses returned INT_MIN after storing them: refused instead. */
TEST(AvInsertSym, CountPastIntMaxIsRefused)
{
	tcp_domain d;
	fi_av_attr a{};
	a.type = FI_AV_TABLE;
	a.flags = FI_SYMMETRIC;
	a.count = size_t{1} << 31; /* room for them all */
	fid_av *av = d.open(a);
	ASSERT_NE(av, nullptr);
	EXPECT_EQ(fi_av_insertsym(av, "10.0.0.1", 65536, "1000", 32768, nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_av_insertsym(av, "10.0.0.1", 65535, "1000", 32768, nullptr, 0, nullptr),
		  65535 * 32768);
	close_av(av);
}

/* ---------------- FI_SYMMETRIC generators ---------------- */

TEST(AvSymmetric, MillionEntriesInOneGenerator)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_SYMMETRIC);
	ASSERT_EQ(fi_av_insertsym(av, "10.0.0.0", 1024, "1024", 1024, nullptr, 0, nullptr), 1 << 20);
	EXPECT_EQ(lookup_str(av, 0), "10.0.0.0:1024");
	EXPECT_EQ(lookup_str(av, 1024 * 5 + 7), "10.0.0.5:1031");
	EXPECT_EQ(lookup_str(av, (1 << 20) - 1), "10.0.3.255:2047");
	sockaddr_in q = v4("10.0.2.1", 1500);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), fi_addr_t(513 * 1024 + 476));
	q = v4("10.0.4.0", 1500);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), FI_ADDR_NOTAVAIL);
	/* One header page, the object, no per-address storage. */
	EXPECT_LE(wu::av::resident_bytes(av), 4096u + 1024u);
	close_av(av);
}

TEST(AvSymmetric, MixedWithOrdinaryInsertsAndRemoves)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_SYMMETRIC);
	sockaddr_in s = v4("192.168.0.1", 1);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(fa, 0u);
	ASSERT_EQ(fi_av_insertsym(av, "10.0.0.1", 4, "10", 4, nullptr, 0, nullptr), 16);
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(fa, 17u);
	EXPECT_EQ(lookup_str(av, 1), "10.0.0.1:10");
	EXPECT_EQ(lookup_str(av, 16), "10.0.0.4:13");
	fi_addr_t rm = 5;
	ASSERT_EQ(fi_av_remove(av, &rm, 1, 0), 0);
	char buf[32];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, 5, buf, &len), -FI_EINVAL);
	sockaddr_in q = v4("10.0.0.2", 10);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), FI_ADDR_NOTAVAIL);
	q = v4("10.0.0.2", 11);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), 6u);
	EXPECT_EQ(wu::av::reverse(av, &s, sizeof s), 0u);
	close_av(av);
}

TEST(AvSymmetric, NamedNodes)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_SYMMETRIC);
	ASSERT_EQ(fi_av_insertsym(av, "localhost", 1, "300", 8, nullptr, 0, nullptr), 8);
	EXPECT_EQ(lookup_str(av, 7), "127.0.0.1:307");
	sockaddr_in q = v4("127.0.0.1", 303);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), 3u);
	close_av(av);
}

/* ---------------- fi_av_remove ---------------- */

TEST(AvRemove, InvalidatesAndReinsertWorks)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("11.0.0.1", 1);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	ASSERT_EQ(fi_av_remove(av, &fa, 1, 0), 0);
	char buf[32];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, fa, buf, &len), -FI_EINVAL);
	EXPECT_EQ(fi_av_remove(av, &fa, 1, 0), -FI_EINVAL);
	EXPECT_EQ(wu::av::reverse(av, &s, sizeof s), FI_ADDR_NOTAVAIL);
	fi_addr_t again;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &again, 0, nullptr), 1);
	EXPECT_EQ(again, fa);
	EXPECT_EQ(wu::av::reverse(av, &s, sizeof s), fa);
	EXPECT_EQ(fi_av_remove(av, &fa, 1, FI_MORE), -FI_EBADFLAGS);
	close_av(av);
}

/* ---------------- fi_av_lookup / fi_av_straddr ---------------- */

TEST(AvLookup, TruncatesAndReportsTheNeededLength)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("12.0.0.1", 12);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	unsigned char buf[64];
	memset(buf, 0xee, sizeof buf);
	size_t len = 4;
	ASSERT_EQ(fi_av_lookup(av, fa, buf, &len), 0);
	EXPECT_EQ(len, sizeof(sockaddr_in));
	EXPECT_EQ(memcmp(buf, &s, 4), 0);
	EXPECT_EQ(buf[4], 0xee);
	EXPECT_EQ(fi_av_lookup(av, 99, buf, &len), -FI_EINVAL);
	close_av(av);
}

TEST(AvLookup, AddrStrDomainStoresAndReturnsStrings)
{
	tcp_domain d(FI_ADDR_STR);
	fid_av *av = d.open_type(FI_AV_TABLE);
	const char *addrs[2] = {"fi_sockaddr_in://10.3.3.3:33", "fi_sockaddr_in6://[fe80::1]:44"};
	fi_addr_t fa[2];
	ASSERT_EQ(fi_av_insert(av, addrs, 2, fa, 0, nullptr), 2);
	char buf[128];
	size_t len = sizeof buf;
	ASSERT_EQ(fi_av_lookup(av, fa[0], buf, &len), 0);
	EXPECT_STREQ(buf, "fi_sockaddr_in://10.3.3.3:33");
	EXPECT_EQ(len, strlen(buf) + 1);
	len = sizeof buf;
	ASSERT_EQ(fi_av_lookup(av, fa[1], buf, &len), 0);
	EXPECT_STREQ(buf, "fi_sockaddr_in6://[fe80::1]:44");
	len = 5;
	ASSERT_EQ(fi_av_lookup(av, fa[0], buf, &len), 0);
	EXPECT_STREQ(buf, "fi_s");
	EXPECT_EQ(len, strlen("fi_sockaddr_in://10.3.3.3:33") + 1);
	close_av(av);
}

TEST(AvStraddr, PrintsTruncatesAndReturnsBuf)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("13.0.0.1", 1313);
	char buf[64];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_straddr(av, &s, buf, &len), buf);
	EXPECT_STREQ(buf, "fi_sockaddr_in://13.0.0.1:1313");
	EXPECT_EQ(len, strlen(buf) + 1);
	char small[8];
	len = sizeof small;
	EXPECT_EQ(fi_av_straddr(av, &s, small, &len), small);
	EXPECT_STREQ(small, "fi_sock");
	EXPECT_EQ(len, strlen("fi_sockaddr_in://13.0.0.1:1313") + 1);
	close_av(av);
}

/* ---------------- user ids ---------------- */

TEST(AvUserId, DefaultIsNotAvailAndSetUserIdIsReported)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE, FI_AV_USER_ID);
	sockaddr_in s[2] = {v4("14.0.0.1", 1), v4("14.0.0.2", 2)};
	fi_addr_t fa[2];
	ASSERT_EQ(fi_av_insert(av, s, 2, fa, 0, nullptr), 2);
	EXPECT_EQ(wu::av::source_id(av, fa[0]), FI_ADDR_NOTAVAIL);
	ASSERT_EQ(fi_av_set_user_id(av, fa[1], 0xabc, 0), 0);
	/* What a completion reports for a message from s[1]. */
	EXPECT_EQ(wu::av::source_id(av, wu::av::reverse(av, &s[1], sizeof s[1])), 0xabcu);
	EXPECT_EQ(fi_av_set_user_id(av, 77, 1, 0), -FI_EINVAL);
	EXPECT_EQ(fi_av_set_user_id(av, fa[0], 1, 1), -FI_EBADFLAGS);
	close_av(av);
}

/* ---------------- auth keys ---------------- */

static void auth_domain(fi_info *i)
{
	i->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
	i->domain_attr->max_ep_auth_key = 2;
}

TEST(AvAuthKey, InsertLookupAndUseWithAddresses)
{
	tcp_domain d(FI_SOCKADDR_IN, auth_domain);
	fid_av *av = d.open_type(FI_AV_TABLE);
	fi_addr_t k1, k2, k3;
	ASSERT_EQ(fi_av_insert_auth_key(av, "secret", 6, &k1, 0), 0);
	ASSERT_EQ(fi_av_insert_auth_key(av, "other!!", 7, &k2, 0), 0);
	EXPECT_EQ(fi_av_insert_auth_key(av, "third", 5, &k3, 0), -FI_ENOSPC); /* max_ep_auth_key */
	char buf[16];
	size_t len = sizeof buf;
	ASSERT_EQ(fi_av_lookup_auth_key(av, k1, buf, &len), 0);
	EXPECT_EQ(std::string(buf, len), "secret");
	sockaddr_in s = v4("15.0.0.1", 1);
	fi_addr_t fa = k2;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, FI_AUTH_KEY, nullptr), 1);
	len = 3;
	ASSERT_EQ(fi_av_lookup_auth_key(av, fa, buf, &len), 0);
	EXPECT_EQ(len, 7u);
	EXPECT_EQ(std::string(buf, 3), "oth");
	/* Per-insert user ids are refused on an auth-key domain. */
	fi_addr_t id = 1;
	EXPECT_EQ(fi_av_insert(av, &s, 1, &id, FI_AV_USER_ID, nullptr), -FI_EINVAL);
	/* Handles need FI_AUTH_KEY to be removed, and not while in use. */
	EXPECT_EQ(fi_av_remove(av, &k1, 1, 0), -FI_EINVAL);
	ASSERT_EQ(wu::av::auth_key_use(av, k1, true), 0);
	EXPECT_EQ(fi_av_remove(av, &k1, 1, FI_AUTH_KEY), -FI_EBUSY);
	ASSERT_EQ(wu::av::auth_key_use(av, k1, false), 0);
	EXPECT_EQ(fi_av_remove(av, &k1, 1, FI_AUTH_KEY), 0);
	len = sizeof buf;
	EXPECT_EQ(fi_av_lookup_auth_key(av, k1, buf, &len), -FI_EINVAL);
	close_av(av);
}

TEST(AvAuthKey, RefusedWithoutAvAuthKeyDomain)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	fi_addr_t k;
	EXPECT_EQ(fi_av_insert_auth_key(av, "x", 1, &k, 0), -FI_EINVAL);
	sockaddr_in s = v4("15.0.0.1", 1);
	fi_addr_t fa = 0;
	EXPECT_EQ(fi_av_insert(av, &s, 1, &fa, FI_AUTH_KEY, nullptr), -FI_EINVAL);
	close_av(av);
}

/* ---------------- peer groups ---------------- */

static void group_domain(fi_info *i)
{
	i->domain_attr->max_group_id = 3;
}

TEST(AvGroup, GroupAddrBoundedByMaxGroupId)
{
	tcp_domain d(FI_SOCKADDR_IN, group_domain);
	fid_av *av = d.open_type(FI_AV_TABLE);
	sockaddr_in s = v4("16.0.0.1", 16);
	fi_addr_t fa;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(lookup_str(av, fi_group_addr(fa, 3)), "16.0.0.1:16");
	char buf[32];
	size_t len = sizeof buf;
	EXPECT_EQ(fi_av_lookup(av, fi_group_addr(fa, 4), buf, &len), -FI_EINVAL);
	close_av(av);
	tcp_domain plain;
	av = plain.open_type(FI_AV_TABLE);
	ASSERT_EQ(fi_av_insert(av, &s, 1, &fa, 0, nullptr), 1);
	EXPECT_EQ(fi_av_lookup(av, fi_group_addr(fa, 1), buf, &len), -FI_EINVAL);
	close_av(av);
}

/* ---------------- fi_close ---------------- */

TEST(AvClose, BusyWhileEndpointsAreBound)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	ASSERT_EQ(wu::av::ep_bind(av), 0);
	EXPECT_EQ(fi_close(&av->fid), -FI_EBUSY);
	/* And the domain refuses to close while the AV lives. */
	EXPECT_EQ(fi_close(&d.domain->fid), -FI_EBUSY);
	ASSERT_EQ(wu::av::ep_unbind(av), 0);
	close_av(av);
}

/* ---------------- reserved entries (resolver hook) ---------------- */

static int resolve_rank(void *ctx, fi_addr_t, uint64_t token, void *addr, size_t *len)
{
	++*static_cast<int *>(ctx);
	sockaddr_in s = v4("17.0.0.0", uint16_t(1000 + token));
	memcpy(addr, &s, sizeof s);
	*len = sizeof s;
	return 0;
}

TEST(AvReserved, ResolvedOnFirstUseOnly)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	uint64_t tokens[3] = {0, 1, 2};
	fi_addr_t fa[3];
	ASSERT_EQ(wu::av::reserve(av, tokens, 3, fa), 3);
	int calls = 0;
	ASSERT_EQ(wu::av::set_resolver(av, resolve_rank, &calls), 0);
	EXPECT_EQ(lookup_str(av, fa[2]), "17.0.0.0:1002");
	EXPECT_EQ(lookup_str(av, fa[2]), "17.0.0.0:1002");
	EXPECT_EQ(calls, 1);
	sockaddr_in q = v4("17.0.0.0", 1002);
	EXPECT_EQ(wu::av::reverse(av, &q, sizeof q), fa[2]);
	sockaddr_in s = v4("17.0.0.1", 1);
	fi_addr_t next;
	ASSERT_EQ(fi_av_insert(av, &s, 1, &next, 0, nullptr), 1);
	EXPECT_EQ(next, 3u);
	close_av(av);
}

/* ---------------- memory ---------------- */

TEST(AvMemory, Ipv4TableEntryIsAtMost24Bytes)
{
	tcp_domain d;
	fid_av *av = d.open_type(FI_AV_TABLE);
	const size_t n = 200000;
	std::vector<sockaddr_in> s(n);
	for (size_t i = 0; i < n; i++)
		s[i] = v4("10.0.0.0", 0), s[i].sin_addr.s_addr = htonl(0x0a000000u + uint32_t(i));
	ASSERT_EQ(fi_av_insert(av, s.data(), n, nullptr, 0, nullptr), int(n));
	EXPECT_EQ(wu::av::reverse(av, &s[n / 2], sizeof s[0]), n / 2); /* builds the index */
	size_t bytes = wu::av::resident_bytes(av);
	EXPECT_LE(double(bytes) / n, 24.0) << bytes << " bytes";
	close_av(av);
}
