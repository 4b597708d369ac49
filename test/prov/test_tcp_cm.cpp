/* tcp provider connection management under issue 12: a peer that ends its
 * connection at the end of a job logs no warning (EOF or reset between
 * frames), a passive endpoint flooded with connection requests never
 * overruns its EQ and serves a client that comes afterwards. */
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "prov/tcp/frame.h"
#include "prov/tcp/tcp_ep.h"
#include "tcp_fixture.h"

using namespace wu::test;

namespace {

/* Lines of captured stderr at warn level. */
std::string warnings(const std::string &log)
{
	std::string out;
	size_t at = 0;
	while (at < log.size()) {
		size_t nl = log.find('\n', at);
		std::string line = log.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
		if (line.find("<warn>") != std::string::npos)
			out += line;
		at = nl == std::string::npos ? log.size() : nl + 1;
	}
	return out;
}

/* a sends b one message; with unread, b then sends a one that a never
 * reads, so that a's close resets the connection instead of ending it. */
void peer_leaves(bool unread)
{
	tcp_env env{FI_EP_RDM};
	rdm_ep a{env}, b{env};
	fi_addr_t a_to_b = a.insert(b), b_to_a = b.insert(a);
	int v = 7, got = 0;
	fi_cq_tagged_entry e;
	ASSERT_EQ(fi_recv(b.ep, &got, sizeof got, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
	ASSERT_EQ(fi_send(a.ep, &v, sizeof v, nullptr, a_to_b, nullptr), 0);
	ASSERT_EQ(wait_one(b.rx, e, nullptr, {a.tx}), 1);
	ASSERT_EQ(wait_one(a.tx, e, nullptr, {b.rx}), 1);
	EXPECT_EQ(got, 7);
	if (unread) {
		ASSERT_EQ(fi_send(b.ep, &v, sizeof v, nullptr, b_to_a, nullptr), 0);
		ASSERT_EQ(wait_one(b.tx, e), 1); /* written; a does not progress */
	}
	testing::internal::CaptureStderr();
	a.close(); /* over loopback b's socket has the EOF / reset now */
	spin({b.rx, b.tx}, 2000);
	std::string log = testing::internal::GetCapturedStderr();
	EXPECT_EQ(warnings(log), "") << "a peer leaving between messages is not a fault";
}

} // namespace

TEST(tcp_peer_close, end_of_connection_between_messages_logs_no_warning)
{
	peer_leaves(false);
}

TEST(tcp_peer_close, reset_between_messages_logs_no_warning)
{
	peer_leaves(true);
}
