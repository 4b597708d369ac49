/* tcp provider: what a peer may make this side do (issue 12).  A closed
 * memory region is closed: once fi_close(mr) returns, no remote operation
 * reads or writes it, in flight or later.  Raw peers speak the wire
 * directly, so that a frame can be cut in the middle of a close. */
#include "tcp_fixture.h"

#include <cstdlib>
#include <string>
#include <vector>

using namespace wu::test;
namespace frame = wu::tcp::frame;

namespace {

constexpr size_t mib = size_t(1) << 20;

/* An RDM endpoint with RMA, a raw peer that said HELLO and read HELLO_ACK. */
struct target {
	tcp_env env{FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA};
	rdm_ep a{env};
	raw_peer peer{a, 0};

	target()
	{
		frame::header ack;
		EXPECT_TRUE(peer.get(ack));
		EXPECT_EQ(ack.type, frame::HELLO_ACK);
	}
	uint64_t base(const void *p) const
	{
		return (env.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? uint64_t(uintptr_t(p)) : 0;
	}
	/* The next frame of type t (skipping CREDIT and such). */
	bool next(frame::header &h, uint8_t t)
	{
		for (int i = 0; i < 8; i++) {
			if (!peer.get(h))
				return false;
			if (h.type == t)
				return true;
			EXPECT_EQ(h.len, 0u);
		}
		return false;
	}
	/* Reads up to n payload bytes into out; stops at EOF.  Bytes read. */
	size_t drain(std::vector<char> &out, size_t n)
	{
		out.resize(n);
		size_t have = 0;
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (have < n && std::chrono::steady_clock::now() < until) {
			spin({a.tx, a.rx}, 1);
			ssize_t r = recv(peer.fd, out.data() + have, n - have, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
				break;
			if (r > 0)
				have += size_t(r);
		}
		return have;
	}
};

} // namespace

/* An RMA write whose body is arriving when its region closes: what came
 * before the close landed, nothing after it does, and the initiator's write
 * fails with FI_EACCES. */
TEST(tcp_mr_close, write_body_after_close_does_not_land)
{
	target t;
	std::vector<char> buf(mib, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_WRITE, 0, 9, 0, &mr, nullptr), 0);
	const size_t first = 4096;
	std::vector<char> body(mib, char(0xab));
	frame::header h;
	h.type = frame::WRITE;
	h.tag = 9;
	h.aux = t.base(buf.data());
	h.len = mib;
	h.id = 5;
	t.peer.put(h, body.data(), first);
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (buf[first - 1] != char(0xab) && std::chrono::steady_clock::now() < until)
		spin({t.a.tx, t.a.rx}, 1);
	ASSERT_EQ(buf[first - 1], char(0xab)) << "the first part did not land";
	ASSERT_EQ(fi_close(&mr->fid), 0);
	ASSERT_TRUE(t.peer.put_raw(body.data() + first, mib - first));
	frame::header ack;
	ASSERT_TRUE(t.next(ack, frame::WRITE_ACK));
	EXPECT_EQ(ack.id, 5u);
	EXPECT_EQ(ack.data, uint64_t(FI_EACCES));
	size_t landed = 0;
	for (size_t i = first; i < mib; i++)
		landed += buf[i] != 0;
	EXPECT_EQ(landed, 0u) << "bytes written into a closed region";
	/* The connection still works: a later write to another region lands. */
	std::vector<char> buf2(64, 0);
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf2.data(), buf2.size(), FI_REMOTE_WRITE, 0, 10, 0, &mr, nullptr), 0);
	h.tag = 10;
	h.aux = t.base(buf2.data());
	h.len = buf2.size();
	h.id = 6;
	t.peer.put(h, body.data(), buf2.size());
	ASSERT_TRUE(t.next(ack, frame::WRITE_ACK));
	EXPECT_EQ(ack.id, 6u);
	EXPECT_EQ(ack.data, 0u);
	EXPECT_EQ(buf2[63], char(0xab));
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

/* A read response partly written when its region closes: no byte more is
 * read from the region (the frame cannot be finished, so the connection
 * ends), and a response not yet started becomes an FI_EACCES one. */
TEST(tcp_mr_close, read_response_stops_reading_at_close)
{
	target t;
	const size_t big = 64 * mib; /* far more than the socket buffers hold */
	std::vector<char> buf(big, char(0x11));
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_READ, 0, 11, 0, &mr, nullptr), 0);
	frame::header h;
	h.type = frame::READ_REQ;
	h.tag = 11;
	h.aux = t.base(buf.data());
	h.data = big;
	h.id = 7;
	t.peer.put(h, nullptr, 0);
	spin({t.a.tx, t.a.rx}, 2000);
	ASSERT_EQ(fi_close(&mr->fid), 0);
	/* No longer the region's: what the response carries from here on
	 * was read after the close. */
	std::fill(buf.begin(), buf.end(), char(0x22));
	frame::header r;
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 7u);
	std::vector<char> got;
	size_t n = t.drain(got, big);
	EXPECT_LT(n, big) << "the whole response was sent from a closed region";
	size_t late = 0;
	for (size_t i = 0; i < n; i++)
		late += got[i] == char(0x22);
	EXPECT_EQ(late, 0u) << "bytes read from a closed region";
}

TEST(tcp_mr_close, queued_read_response_becomes_an_access_error)
{
	target t;
	const size_t big = 64 * mib;
	std::vector<char> buf(big, char(0x11)), small(4096, char(0x33));
	fid_mr *mr = nullptr, *mr2 = nullptr;
	ASSERT_EQ(fi_mr_reg(t.env.domain, buf.data(), buf.size(), FI_REMOTE_READ, 0, 12, 0, &mr, nullptr), 0);
	ASSERT_EQ(fi_mr_reg(t.env.domain, small.data(), small.size(), FI_REMOTE_READ, 0, 13, 0, &mr2, nullptr), 0);
	frame::header h;
	h.type = frame::READ_REQ;
	h.tag = 12;
	h.aux = t.base(buf.data());
	h.data = big;
	h.id = 8;
	t.peer.put(h, nullptr, 0);
	h.tag = 13;
	h.aux = t.base(small.data());
	h.data = small.size();
	h.id = 9;
	t.peer.put(h, nullptr, 0);
	spin({t.a.tx, t.a.rx}, 2000);
	/* The second response waits behind the first, which the socket
	 * cannot take yet. */
	ASSERT_EQ(fi_close(&mr2->fid), 0);
	frame::header r;
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 8u);
	EXPECT_EQ(r.data, 0u);
	std::vector<char> got;
	ASSERT_EQ(t.drain(got, big), big);
	ASSERT_TRUE(t.next(r, frame::READ_RESP));
	EXPECT_EQ(r.id, 9u);
	EXPECT_EQ(r.data, uint64_t(FI_EACCES));
	EXPECT_EQ(r.len, 0u);
	EXPECT_EQ(fi_close(&mr->fid), 0);
}
