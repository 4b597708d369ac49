/* SPDX-License-Identifier: BSD-3-Clause */
/* Node blobs (issue 30): in the modex and direct modes the first rank of
 * each node puts one record with the addresses of all its node's ranks
 * (wire.h, key wireup.nb), so that a rank fetches one record per remote
 * node, not one per remote rank.  The first rank learns its peers'
 * addresses from their cards on this node (local.cpp), not from PMIx.
 * The blob (version 2) holds what other nodes need of each address (the
 * format's remote_view) as one template and a port rule: ranks listen on
 * a port of the node's rule (node_port below), so a blob costs the same
 * for 2 or 200 ranks, and a rank off the rule is an exception in it.
 * Every rank still puts its own wireup.ep: ranks a blob lacks (a card
 * that came late, a node whose first rank published nothing) are fetched
 * one by one as before. */
#include "pmix_glue/session_impl.h"

#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <rdma/fi_errno.h>

#include "core/log.h"
#include "core/param.h"

namespace wu::pmix::detail {

namespace {

/* What ranks of other nodes need of name: the format's remote_view (the
 * wireup provider's drops the shm part), else the name itself. */
std::vector<uint8_t> remote_view(uint32_t f, const std::vector<uint8_t> &name)
{
	const local_format *lf = local_format_for(f);
	uint8_t buf[FI_NAME_MAX];
	long n = lf && lf->remote_view ? lf->remote_view(name.data(), name.size(), buf, sizeof buf)
				       : -FI_ENOSYS;
	if (n <= 0 || size_t(n) > sizeof buf)
		return name;
	return {buf, buf + n};
}

/* Where a name of format f holds its big-endian port: a sockaddr's at 2,
 * a local format's at its net_part's (found in the name), else no_port. */
uint16_t port_offset(uint32_t f, const std::vector<uint8_t> &view)
{
	if (f == FI_SOCKADDR_IN || f == FI_SOCKADDR_IN6)
		return 2;
	const local_format *lf = local_format_for(f);
	uint8_t sa[sizeof(sockaddr_in6)];
	long n = lf && lf->net_part ? lf->net_part(view.data(), view.size(), sa, sizeof sa) : -1;
	if (n < 4 || size_t(n) > sizeof sa)
		return wire::no_port;
	auto it = std::search(view.begin(), view.end(), sa, sa + n);
	if (it == view.end())
		return wire::no_port;
	return uint16_t(it - view.begin() + 2);
}


} // namespace

bool node_records_on(int mode)
{
	return (mode == FI_WIREUP_MODEX || mode == FI_WIREUP_DIRECT) &&
	       param::get_bool(&pmix_prov, "node_records").value;
}

int publish_node(session &s, uint32_t addr_format, bool wait)
{
	if (s.local_peers.empty() || s.local_peers.front() != s.rank) {
		/* A card that cannot be written only costs remote ranks a get;
		 * one that no first rank waits for would only lie there. */
		if (wait)
			write_card(s, addr_format, s.own_name.data(), s.own_name.size());
		return 0;
	}
	std::vector<wire::blob_name> names{{s.rank, s.own_name}};
	std::vector<uint32_t> pending;
	for (uint32_t r : s.local_peers) {
		if (r == s.rank)
			continue;
		/* A card taken by an earlier publish of this rank is gone: reuse. */
		auto had = std::find_if(s.own_blob.begin(), s.own_blob.end(),
					[&](const wire::blob_name &b) { return b.rank == r; });
		if (had != s.own_blob.end())
			names.push_back(*had);
		else
			pending.push_back(r);
	}
	/* In modex mode every local rank reaches the fence that follows, so
	 * waiting for its card costs nothing a live job does not wait for
	 * anyway; 16 ranks starting on a loaded node take seconds (a 2 s wait
	 * left 155 ranks out of the blobs at 16 x 16: 170 gets per rank).  In
	 * direct mode too: a rank missing from the blob costs every remote rank
	 * a get of its own (2 s there: 71 gets per rank at 16 x 16 instead of
	 * 15), the wait only this rank's commit, which remote gets wait for. */
	const int wait_ms = wait ? std::max(1, param::get_int(&pmix_prov, "card_wait").value) : 0;
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
	/* Polled, 1 ms apart at first, then less often: a first rank that
	 * polls every millisecond while its peers start takes CPU from them
	 * (16 such ranks were most of a 2-core machine at 16 x 16). */
	auto pause = std::chrono::milliseconds(1);
	for (;;) {
		for (auto it = pending.begin(); it != pending.end();) {
			std::vector<uint8_t> nm;
			int r = read_card(s, *it, addr_format, nm);
			if (r == 0) {
				names.push_back({*it, std::move(nm)});
				consume_card(s, *it);
			}
			if (r != -FI_ENOENT)
				it = pending.erase(it); /* a bad card was logged */
			else
				++it;
		}
		if (pending.empty() || std::chrono::steady_clock::now() >= deadline)
			break;
		std::this_thread::sleep_for(pause);
		pause = std::min(pause * 2, std::chrono::milliseconds(16));
	}
	if (!pending.empty() && wait)
		WU_INFO(&pmix_prov, FI_LOG_CORE,
			"wire-up: %zu local ranks (first: rank %u) left no card within %d ms; the node blob of rank %u lacks them and remote ranks fetch their records one by one\n",
			pending.size(), pending.front(), wait_ms, s.rank);
	std::sort(names.begin(), names.end(),
		  [](const auto &a, const auto &b) { return a.rank < b.rank; });
	/* Every local peer in rank order, its slot its index (as node_port's);
	 * one without a card is listed as lacking. */
	std::vector<uint32_t> ranks = s.local_peers;
	std::sort(ranks.begin(), ranks.end());
	std::vector<std::vector<uint8_t>> views(ranks.size());
	for (size_t i = 0, j = 0; i < ranks.size(); i++) {
		while (j < names.size() && names[j].rank < ranks[i])
			j++;
		if (j < names.size() && names[j].rank == ranks[i])
			views[i] = remote_view(addr_format, names[j].name);
	}
	const uint16_t off = port_offset(addr_format, remote_view(addr_format, s.own_name));
	auto blob = wire::encode_blob2(addr_format, s.job, s.rank, s.node_id, ranks, views, off);
	if (int r = put(s, wire::key_blob, blob, false))
		return r;
	s.own_blob = std::move(names);
	return 0;
}

int node_blobs::find(session &s, uint32_t rank, std::vector<uint8_t> &out)
{
	if (mapped == 0) {
		node_map m;
		mapped = -1;
		if (s.cl->nodes(ns, m) == 0 && !m.ranks.empty()) {
			node_of.assign(size, UINT32_MAX);
			leader.assign(m.ranks.size(), UINT32_MAX);
			for (uint32_t k = 0; k < m.ranks.size(); k++)
				for (uint32_t r : m.ranks[k])
					if (r < size) {
						node_of[r] = k;
						leader[k] = std::min(leader[k], r);
					}
			state.assign(m.ranks.size(), 0);
			names.assign(m.ranks.size(), {});
			mapped = 1;
		} else {
			WU_INFO(&pmix_prov, FI_LOG_AV,
				"wire-up: no node map of %s: every rank's record is fetched on its own\n",
				ns.c_str());
		}
	}
	if (mapped < 0 || rank >= size || node_of[rank] == UINT32_MAX)
		return -FI_ENODATA;
	const uint32_t k = node_of[rank];
	if (state[k] == 0) {
		const uint32_t first = leader[k];
		state[k] = -1;
		if (ns == s.nspace && first == s.rank) {
			if (!s.own_blob.empty()) {
				names[k] = wire::blob_view{};
				names[k].exc = s.own_blob;
				state[k] = 1;
			}
		} else {
			std::vector<uint8_t> rec;
			int r = get_peer(s, ns, first, wire::key_blob, kind, rec);
			std::string why;
			if (r) {
				WU_INFO(&pmix_prov, FI_LOG_AV,
					"wire-up: rank %u of %s put no %s (%s): the ranks of its node are fetched one by one\n",
					first, ns.c_str(), wire::key_blob, fi_strerror(-r));
			} else if (wire::parse_blob_view(rec, addr_format, job, first, size, names[k], why) ==
				   0) {
				state[k] = 1;
				names[k].each_rank([&](uint32_t r) {
					if (node_of[r] == k)
						return true;
					why = "it lists rank " + std::to_string(r) + ", which runs on another node";
					state[k] = 2;
					return false;
				});
			} else {
				state[k] = 2;
			}
			if (state[k] == 2) {
				WU_WARN(&pmix_prov, FI_LOG_AV,
					"wire-up: node blob of rank %u of %s (key %s, %zu bytes): %s; no rank of that node is inserted\n",
					first, ns.c_str(), wire::key_blob, rec.size(), why.c_str());
				names[k] = wire::blob_view{};
			}
		}
	}
	if (state[k] == 2)
		return -FI_EINVAL;
	if (state[k] < 0)
		return -FI_ENODATA;
	return names[k].name_of(rank, out);
}

} // namespace wu::pmix::detail
