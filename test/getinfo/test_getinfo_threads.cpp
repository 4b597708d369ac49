/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo, fi_dupinfo and fi_freeinfo from many threads at once, on the
 * real tcp provider, including the very first call of a process (which
 * builds the NIC table and the provider's templates).  Meant to run under
 * ThreadSanitizer too (--enable-sanitizers=thread). */
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace {

constexpr uint32_t api = FI_VERSION(1, 17);

struct info_deleter {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using info_ptr = std::unique_ptr<fi_info, info_deleter>;

/* The hint sets the threads take turns with. */
enum class variant { null, prov, rdm_tagged, msg, dest_node, source_port, none_match, count };

struct call {
	info_ptr hints;
	const char *node = nullptr;
	const char *service = nullptr;
	uint64_t flags = 0;
	bool may_fail = false;
};

call make_call(variant v)
{
	call c;
	if (v == variant::null)
		return c;
	c.hints.reset(fi_allocinfo());
	if (!c.hints)
		return c;
	c.hints->fabric_attr->prov_name = strdup("tcp");
	switch (v) {
	case variant::rdm_tagged:
		c.hints->ep_attr->type = FI_EP_RDM;
		c.hints->caps = FI_TAGGED;
		break;
	case variant::msg:
		c.hints->ep_attr->type = FI_EP_MSG;
		c.hints->caps = FI_MSG;
		break;
	case variant::dest_node:
		c.node = "127.0.0.1";
		c.service = "4242";
		c.flags = FI_NUMERICHOST;
		c.hints->addr_format = FI_SOCKADDR_IN;
		break;
	case variant::source_port:
		c.service = "0";
		c.flags = FI_SOURCE;
		break;
	case variant::none_match:
		/* tcp offers no collectives: -FI_ENODATA with its explanation. */
		c.hints->caps = FI_COLLECTIVE;
		c.may_fail = true;
		break;
	default:
		break;
	}
	return c;
}

/* What one result list says, to compare calls made in different threads. */
std::string describe(const fi_info *list)
{
	std::string s;
	for (const fi_info *i = list; i; i = i->next) {
		s += i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
		s += '/';
		s += i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "?";
		s += '/';
		s += i->fabric_attr && i->fabric_attr->name ? i->fabric_attr->name : "?";
		s += '/' + std::to_string(i->ep_attr ? i->ep_attr->type : -1);
		s += '/' + std::to_string(i->addr_format);
		s += i->nic && i->nic->device_attr && i->nic->device_attr->name ? i->nic->device_attr->name : "-";
		s += ';';
	}
	return s;
}

/* Checks a list and a deep copy of each of its entries; "" when fine. */
std::string check(variant v, const fi_info *list)
{
	if (!list)
		return "empty list";
	for (const fi_info *i = list; i; i = i->next) {
		if (!i->fabric_attr || !i->domain_attr || !i->ep_attr || !i->tx_attr || !i->rx_attr)
			return "entry without its attributes";
		if (v == variant::rdm_tagged && (i->ep_attr->type != FI_EP_RDM || !(i->caps & FI_TAGGED)))
			return "rdm_tagged entry is not RDM + FI_TAGGED";
		if (v == variant::msg && i->ep_attr->type != FI_EP_MSG)
			return "msg entry is not FI_EP_MSG";
		if (v == variant::dest_node && !i->dest_addr)
			return "dest_node entry has no dest_addr";
		info_ptr d(fi_dupinfo(i));
		if (!d)
			return "fi_dupinfo failed";
		if (d->next)
			return "fi_dupinfo copied more than one entry";
		std::string a = describe(d.get()), b = describe(i);
		if (a != b.substr(0, a.size()))
			return "fi_dupinfo differs: " + a + " vs " + b;
		if (i->nic && (!d->nic || d->nic == i->nic))
			return "fi_dupinfo did not copy the NIC";
	}
	return {};
}

/* Every thread waits here so the calls really start together. */
class start_line {
public:
	explicit start_line(int n) : waiting_(n) {}
	void arrive_and_wait()
	{
		waiting_.fetch_sub(1, std::memory_order_acq_rel);
		while (waiting_.load(std::memory_order_acquire) > 0)
			std::this_thread::yield();
	}

private:
	std::atomic<int> waiting_;
};

int thread_count()
{
	unsigned hw = std::thread::hardware_concurrency();
	return hw < 4 ? 8 : static_cast<int>(2 * hw);
}

/* Runs in a fresh process: nothing has called fi_getinfo yet, so the
 * lazy construction (provider registry, NIC table, tcp templates) races. */
int first_calls_race()
{
	const int n = thread_count();
	start_line start(n);
	std::atomic<int> bad{0};
	std::vector<std::string> seen(n);
	std::vector<std::thread> ts;
	for (int t = 0; t < n; t++)
		ts.emplace_back([&, t] {
			variant v = t % 2 ? variant::prov : variant::null;
			call c = make_call(v);
			start.arrive_and_wait();
			fi_info *out = nullptr;
			int ret = fi_getinfo(api, c.node, c.service, c.flags, c.hints.get(), &out);
			info_ptr res(out);
			if (ret != 0 || !check(v, out).empty())
				bad++;
			seen[t] = describe(out);
		});
	for (auto &t : ts)
		t.join();
	for (int t = 2; t < n; t++)
		if (seen[t] != seen[t % 2])
			bad++;
	return bad.load();
}

TEST(fi_getinfo_threads, first_call_races_in_a_fresh_process)
{
	/* "threadsafe" re-executes this binary for the statement alone, so the
	 * calls inside are the process's first whatever ran before here. */
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_EXIT(std::exit(first_calls_race() == 0 ? 0 : 1), testing::ExitedWithCode(0), "");
}

TEST(fi_getinfo_threads, mixed_hints_dup_and_free_across_threads)
{
	constexpr int vcount = static_cast<int>(variant::count);
	/* Single-threaded reference answer for each hint set. */
	std::vector<std::string> want(vcount);
	for (int k = 0; k < vcount; k++) {
		call c = make_call(static_cast<variant>(k));
		ASSERT_TRUE(k == 0 || c.hints);
		fi_info *out = nullptr;
		int ret = fi_getinfo(api, c.node, c.service, c.flags, c.hints.get(), &out);
		if (c.may_fail) {
			EXPECT_EQ(ret, -FI_ENODATA);
		} else {
			ASSERT_EQ(ret, 0) << "hint set " << k << ": " << fi_strerror(-ret);
		}
		want[k] = describe(out);
		fi_freeinfo(out);
	}

	const int n = thread_count();
#ifdef __SANITIZE_THREAD__
	const int iters = 60;
#else
	const int iters = 300;
#endif
	start_line start(n);
	/* Results handed from one thread to another, freed by the taker. */
	std::atomic<fi_info *> mailbox{nullptr};
	std::atomic<int> failures{0};
	std::vector<std::string> first_error(n);
	std::vector<std::thread> ts;
	for (int t = 0; t < n; t++)
		ts.emplace_back([&, t] {
			std::vector<call> calls;
			for (int k = 0; k < vcount; k++)
				calls.push_back(make_call(static_cast<variant>(k)));
			start.arrive_and_wait();
			for (int i = 0; i < iters; i++) {
				int k = (t + i) % vcount;
				/* Keep the -FI_ENODATA warnings few. */
				if (static_cast<variant>(k) == variant::none_match && i % 16)
					k = 0;
				const call &c = calls[k];
				fi_info *out = nullptr;
				int ret = fi_getinfo(api, c.node, c.service, c.flags, c.hints.get(), &out);
				std::string err;
				if (c.may_fail) {
					if (ret != -FI_ENODATA || out)
						err = "expected -FI_ENODATA, got " + std::to_string(ret);
				} else if (ret != 0) {
					err = std::string("fi_getinfo: ") + fi_strerror(-ret);
				} else if (describe(out) != want[k]) {
					err = "result differs from the single-threaded one: " + describe(out);
				} else {
					err = check(static_cast<variant>(k), out);
				}
				if (!err.empty()) {
					failures++;
					if (first_error[t].empty())
						first_error[t] = "hint set " + std::to_string(k) + ": " + err;
				}
				/* Every other result is freed by whichever thread
				 * takes it next. */
				if (out && i % 2)
					out = mailbox.exchange(out, std::memory_order_acq_rel);
				fi_freeinfo(out);
			}
		});
	for (auto &t : ts)
		t.join();
	fi_freeinfo(mailbox.exchange(nullptr));
	for (int t = 0; t < n; t++)
		EXPECT_TRUE(first_error[t].empty()) << "thread " << t << ": " << first_error[t];
	EXPECT_EQ(failures.load(), 0);
}

} // namespace
