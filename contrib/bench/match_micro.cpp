/* SPDX-License-Identifier: BSD-3-Clause */
/* The matching engine alone (src/prov/common/match.h), no transport: the
 * same two patterns as match_bench (N exact-tag receives posted, messages
 * arriving in reverse; N messages queued, receives posted in reverse), and
 * for contrast a deque scanned front to back, as a provider without the
 * engine matches.  Prints RESULT <engine|scan>-<posted|unexpected> <N> <ns
 * per message>, medians of RUNS runs.
 *
 *   match_micro [-n N,N,...] [-r RUNS] */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <unistd.h>
#include <vector>

#include "prov/common/match.h"

using namespace wu::match;

namespace {

struct null_transport final : transport {
	size_t starts = 0;
	void start(engine &, recv *, const message &, size_t, size_t) override { starts++; }
};

double now_ns()
{
	return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
			      std::chrono::steady_clock::now().time_since_epoch())
			      .count());
}

/* MPI-like tags: context, rank and tag packed. */
uint64_t tag_of(long i)
{
	return (uint64_t(5) << 48) | (uint64_t(i % 64) << 32) | uint64_t(i);
}

double engine_posted(long n)
{
	engine e;
	null_transport tp;
	std::vector<recv> rs(static_cast<size_t>(n));
	for (long i = 0; i < n; i++) {
		rs[size_t(i)].tag = tag_of(i);
		rs[size_t(i)].len = 8;
		e.post(queue_kind::tagged, &rs[size_t(i)]);
	}
	double t0 = now_ns();
	for (long i = n - 1; i >= 0; i--) {
		message m;
		m.tp = &tp;
		m.tag = tag_of(i);
		m.src = 1;
		m.len = 8;
		match_result res;
		if (e.arrive(queue_kind::tagged, m, &res) || !res.r)
			std::abort();
	}
	return (now_ns() - t0) / double(n);
}

double engine_unexpected(long n)
{
	engine e;
	null_transport tp;
	std::vector<recv> rs(static_cast<size_t>(n));
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		message m;
		m.tp = &tp;
		m.tag = tag_of(i);
		m.src = 1;
		m.len = 8;
		match_result res;
		if (e.arrive(queue_kind::tagged, m, &res) || res.r)
			std::abort();
	}
	for (long i = n - 1; i >= 0; i--) {
		rs[size_t(i)].tag = tag_of(i);
		rs[size_t(i)].len = 8;
		if (e.post(queue_kind::tagged, &rs[size_t(i)]))
			std::abort();
	}
	if (tp.starts != size_t(n))
		std::abort();
	return (now_ns() - t0) / double(n);
}

struct scan_entry {
	uint64_t tag, ignore;
	fi_addr_t src;
};

template <class Q> long scan_take(Q &q, uint64_t tag)
{
	for (auto it = q.begin(); it != q.end(); ++it)
		if (((it->tag ^ tag) & ~it->ignore) == 0 && (it->src == FI_ADDR_UNSPEC || it->src == 1)) {
			q.erase(it);
			return 1;
		}
	return 0;
}

double scan_posted(long n)
{
	std::deque<scan_entry> q;
	for (long i = 0; i < n; i++)
		q.push_back({tag_of(i), 0, FI_ADDR_UNSPEC});
	double t0 = now_ns();
	for (long i = n - 1; i >= 0; i--)
		if (!scan_take(q, tag_of(i)))
			std::abort();
	return (now_ns() - t0) / double(n);
}

double scan_unexpected(long n)
{
	std::deque<scan_entry> q;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		q.push_back({tag_of(i), 0, 1});
	for (long i = n - 1; i >= 0; i--)
		if (!scan_take(q, tag_of(i)))
			std::abort();
	return (now_ns() - t0) / double(n);
}

} // namespace

int main(int argc, char **argv)
{
	std::string sizes = "16,1024,65536";
	int runs = 5, c;
	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		if (c == 'n')
			sizes = optarg;
		else if (c == 'r')
			runs = std::max(1, atoi(optarg));
		else
			return 2;
	}
	struct {
		const char *name;
		double (*fn)(long);
	} tests[] = {{"engine-posted", engine_posted},
		     {"engine-unexpected", engine_unexpected},
		     {"scan-posted", scan_posted},
		     {"scan-unexpected", scan_unexpected}};
	for (auto &t : tests) {
		for (const char *s = sizes.c_str(); *s;) {
			long n = strtol(s, nullptr, 10);
			if (n <= 0)
				break;
			/* Small N: many repetitions per run, so the clock resolves it. */
			long reps = std::max(1L, 65536 / n);
			std::vector<double> v;
			for (int k = 0; k < runs; k++) {
				double sum = 0;
				for (long r = 0; r < reps; r++)
					sum += t.fn(n);
				v.push_back(sum / double(reps));
			}
			std::sort(v.begin(), v.end());
			size_t m = v.size();
			printf("RESULT %s %ld %.1f\n", t.name, n, m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2);
			fflush(stdout);
			s += strcspn(s, ",");
			if (*s)
				s++;
		}
	}
	return 0;
}
