/* SPDX-License-Identifier: BSD-3-Clause */
/* tcp provider concurrency (run under ThreadSanitizer by check-tsan-tcp):
 * FI_THREAD_SAFE endpoints used from several threads at once — senders,
 * receivers and CQ pollers — with every message delivered exactly once. */
#include <atomic>
#include <thread>

#include "../common/tcp_fixture.h"

using namespace wu::test;

TEST(tcp_threads, concurrent_senders_receivers_and_pollers)
{
	tcp_env env{FI_EP_RDM, FI_TAGGED | FI_MSG};
	ASSERT_EQ(env.info->domain_attr->threading, FI_THREAD_SAFE);
	rdm_ep a{env}, b{env};
	fi_addr_t to_b = a.insert(b);
	b.insert(a);
	const int per = 300, senders = 2;
	std::vector<uint32_t> slots(per * senders, 0);
	std::atomic<int> received{0}, sent{0};
	std::atomic<bool> stop{false};
	/* Receives posted from one thread while others send. */
	std::thread poster([&] {
		for (int i = 0; i < per * senders; i++) {
			while (fi_trecv(b.ep, &slots[i], 4, nullptr, FI_ADDR_UNSPEC, 5, 0, nullptr) == -FI_EAGAIN)
				std::this_thread::yield();
		}
	});
	std::vector<std::thread> ts;
	for (int s = 0; s < senders; s++)
		ts.emplace_back([&, s] {
			for (int i = 0; i < per; i++) {
				uint32_t v = uint32_t(s * per + i + 1);
				ssize_t r;
				while ((r = fi_tinject(a.ep, &v, 4, to_b, 5)) == -FI_EAGAIN) {
					fi_cq_tagged_entry x;
					(void)fi_cq_read(a.tx, &x, 0);
				}
				EXPECT_EQ(r, 0);
				sent++;
			}
		});
	std::thread txpoll([&] {
		while (!stop) {
			fi_cq_tagged_entry x;
			(void)fi_cq_read(a.tx, &x, 0);
		}
	});
	std::thread rxpoll([&] {
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (received < per * senders && std::chrono::steady_clock::now() < until) {
			fi_cq_tagged_entry x[8];
			ssize_t r = fi_cq_read(b.rx, x, 8);
			if (r > 0)
				received += int(r);
			if (r == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				fi_cq_readerr(b.rx, &err, 0);
				ADD_FAILURE() << "error completion: " << fi_strerror(err.err);
				break;
			}
		}
	});
	for (auto &t : ts)
		t.join();
	poster.join();
	rxpoll.join();
	stop = true;
	txpoll.join();
	ASSERT_EQ(sent.load(), per * senders);
	ASSERT_EQ(received.load(), per * senders);
	std::vector<int> seen(per * senders + 1, 0);
	for (uint32_t v : slots) {
		ASSERT_GE(v, 1u);
		ASSERT_LE(v, uint32_t(per * senders));
		seen[v]++;
	}
	for (int i = 1; i <= per * senders; i++)
		EXPECT_EQ(seen[i], 1) << i;
}

/* Rendezvous-sized messages (RTS / CTS / RDATA) from two sender threads
 * while another thread posts the receives and two more poll the CQs. */
TEST(tcp_threads, concurrent_rendezvous_sends_and_receives)
{
	tcp_env env{FI_EP_RDM, FI_TAGGED | FI_MSG};
	rdm_ep a{env}, b{env};
	fi_addr_t to_b = a.insert(b);
	b.insert(a);
	const size_t sz = 200000;
	const int per = 20, senders = 2;
	std::vector<std::vector<char>> src(senders, std::vector<char>(sz));
	for (int s = 0; s < senders; s++)
		for (size_t i = 0; i < sz; i++)
			src[s][i] = char(s * 31 + i);
	std::vector<std::vector<char>> dst(per * senders, std::vector<char>(sz));
	std::atomic<int> received{0}, sent_done{0};
	std::atomic<bool> stop{false};
	std::thread poster([&] {
		for (int i = 0; i < per * senders; i++)
			while (fi_trecv(b.ep, dst[i].data(), sz, nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr) == -FI_EAGAIN)
				std::this_thread::yield();
	});
	std::vector<std::thread> ts;
	for (int s = 0; s < senders; s++)
		ts.emplace_back([&, s] {
			for (int i = 0; i < per; i++) {
				ssize_t r;
				while ((r = fi_tsend(a.ep, src[s].data(), sz, nullptr, to_b, 9, nullptr)) == -FI_EAGAIN)
					std::this_thread::yield();
				EXPECT_EQ(r, 0);
			}
		});
	std::thread txpoll([&] {
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (!stop && std::chrono::steady_clock::now() < until) {
			fi_cq_tagged_entry x[4];
			ssize_t r = fi_cq_read(a.tx, x, 4);
			if (r > 0)
				sent_done += int(r);
			if (r == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				fi_cq_readerr(a.tx, &err, 0);
				ADD_FAILURE() << "send error completion: " << fi_strerror(err.err);
				break;
			}
		}
	});
	std::thread rxpoll([&] {
		auto until = std::chrono::steady_clock::now() + wait_limit;
		while (received < per * senders && std::chrono::steady_clock::now() < until) {
			fi_cq_tagged_entry x[4];
			ssize_t r = fi_cq_read(b.rx, x, 4);
			if (r > 0)
				received += int(r);
			if (r == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				fi_cq_readerr(b.rx, &err, 0);
				ADD_FAILURE() << "receive error completion: " << fi_strerror(err.err);
				break;
			}
		}
	});
	for (auto &t : ts)
		t.join();
	poster.join();
	rxpoll.join();
	auto until = std::chrono::steady_clock::now() + wait_limit;
	while (sent_done < per * senders && std::chrono::steady_clock::now() < until)
		std::this_thread::yield();
	stop = true;
	txpoll.join();
	ASSERT_EQ(received.load(), per * senders);
	ASSERT_EQ(sent_done.load(), per * senders);
	for (auto &d : dst)
		EXPECT_TRUE(d == src[0] || d == src[1]);
}
