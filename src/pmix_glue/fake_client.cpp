/* SPDX-License-Identifier: BSD-3-Clause */
/* In-memory PMIx (fake_client.h). */
#include "pmix_glue/fake_client.h"

#include <pmix.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include <rdma/fi_errno.h>

#include "pmix_glue/wire.h"

namespace wu::pmix {

std::vector<uint8_t> fake_client::addr_of(uint32_t r) const
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(job.ip0 + pos_of(r) * job.ip_step);
	uint32_t port = deviants.count(r) ? 40000 + r % 20000 : job.port_base + slot_of(r);
	a.sin_port = htons(uint16_t(port));
	const auto *p = reinterpret_cast<const uint8_t *>(&a);
	return {p, p + sizeof a};
}

int fake_client::init(std::string &nspace, uint32_t &rank)
{
	nspace = job.nspace;
	rank = job.me;
	return 0;
}

int fake_client::job_u32(const std::string &ns, const char *key, uint32_t &out)
{
	if (ns != job.nspace)
		return -FI_ENODATA;
	if (!strcmp(key, PMIX_JOB_SIZE))
		out = size();
	else if (!strcmp(key, PMIX_LOCAL_SIZE))
		out = job.ppn;
	else if (!strcmp(key, PMIX_NUM_NODES))
		out = job.nodes;
	else
		return -FI_ENODATA;
	return 0;
}

int fake_client::proc_u32(const std::string &ns, uint32_t rank, const char *key, uint32_t &out)
{
	if (ns != job.nspace || rank >= size())
		return -FI_ENODATA;
	if (!strcmp(key, PMIX_LOCAL_RANK))
		out = slot_of(rank);
	else if (!strcmp(key, PMIX_NODEID))
		out = pos_of(rank);
	else
		return -FI_ENODATA;
	return 0;
}

int fake_client::job_string(const std::string &ns, const char *key, std::string &out)
{
	if (ns != job.nspace || strcmp(key, PMIX_LOCAL_PEERS))
		return -FI_ENODATA;
	out.clear();
	for (uint32_t s = 0; s < job.ppn; s++)
		out += (s ? "," : "") + std::to_string(rank_at(pos_of(job.me), s));
	return 0;
}

int fake_client::nodes(const std::string &ns, node_map &out)
{
	if (ns != job.nspace)
		return -FI_ENODATA;
	out.nodes.resize(job.nodes);
	out.ranks.assign(job.nodes, std::vector<uint32_t>(job.ppn));
	for (uint32_t k = 0; k < job.nodes; k++) {
		char name[32];
		snprintf(name, sizeof name, "node%05u", k);
		out.nodes[k] = name;
		for (uint32_t s = 0; s < job.ppn; s++)
			out.ranks[k][s] = rank_at(k, s);
	}
	return 0;
}

int fake_client::put(const char *key, const void *data, size_t len, bool)
{
	put_calls++;
	const auto *p = static_cast<const uint8_t *>(data);
	store[{job.me, key}] = std::vector<uint8_t>(p, p + len);
	return 0;
}

std::vector<uint8_t> fake_client::node_record(uint32_t pos) const
{
	uint64_t jid = wire::job_id(job.nspace);
	std::vector<wire::deviant> devs;
	for (uint32_t s = 0; s < job.ppn; s++) {
		uint32_t r = rank_at(pos, s);
		if (deviants.count(r)) {
			auto a = addr_of(r);
			devs.push_back({s, wire::encode_ep(job.addr_format, jid, r, a.data(), a.size())});
		}
	}
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(job.ip0 + pos * job.ip_step);
	a.sin_port = htons(job.port_base);
	return wire::encode_node(job.addr_format, jid, pos, job.port_base, &a, sizeof a, devs);
}

int fake_client::get(const std::string &ns, uint32_t rank, const char *key, get_kind kind,
		     std::vector<uint8_t> &out)
{
	get_calls++;
	gets_of[rank]++;
	if (ns != job.nspace)
		return -FI_ENODATA;
	auto it = store.find({rank, key});
	if (it != store.end()) {
		out = it->second;
		return 0;
	}
	const uint64_t jid = wire::job_id(job.nspace);
	if (rank == wildcard_rank) {
		if (!launcher_nodes || strcmp(key, wire::key_lpn))
			return -FI_ENODATA;
		uint32_t n = job.nodes;
		out.assign(reinterpret_cast<uint8_t *>(&n), reinterpret_cast<uint8_t *>(&n) + 4);
		for (uint32_t k = 0; k < job.nodes; k++) {
			auto rec = node_record(k);
			out.insert(out.end(), rec.begin(), rec.end());
		}
		return 0;
	}
	if (rank >= size())
		return -FI_ENODATA;
	auto a = name_of ? name_of(rank) : addr_of(rank);
	if (!strcmp(key, wire::key_lp)) {
		if (!launcher_ranks)
			return -FI_ENODATA;
		out = wire::encode_ep(job.addr_format, jid, rank, a.data(), a.size());
		return 0;
	}
	if (rank == job.me || silent.count(rank))
		return -FI_ENODATA; /* own data only from what was put */
	if (kind == get_kind::optional)
		return -FI_ENODATA; /* peers' puts are not launcher data */
	if (!strcmp(key, wire::key_ep) || !strcmp(key, wire::key_local)) {
		out = wire::encode_ep(job.addr_format, jid, rank, a.data(), a.size());
		return 0;
	}
	if (!strcmp(key, wire::key_blob) && slot_of(rank) == 0) {
		/* The node's first rank: every rank of its node that publishes
		 * (version 2, as a real first rank puts it). */
		std::vector<std::pair<uint32_t, std::vector<uint8_t>>> v;
		for (uint32_t s = 0; s < job.ppn; s++) {
			uint32_t r = rank_at(pos_of(rank), s);
			/* This process is in it once it has published. */
			bool me_out = r == job.me && !store.count({r, wire::key_ep});
			v.push_back({r, {}});
			if (!silent.count(r) && !me_out)
				v.back().second = name_of ? name_of(r) : addr_of(r);
		}
		std::sort(v.begin(), v.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
		std::vector<uint32_t> ranks;
		std::vector<std::vector<uint8_t>> views;
		for (auto &[r, n] : v) {
			ranks.push_back(r);
			views.push_back(std::move(n));
		}
		const bool sa = job.addr_format == FI_SOCKADDR_IN || job.addr_format == FI_SOCKADDR_IN6;
		out = wire::encode_blob2(job.addr_format, jid, rank, pos_of(rank), ranks, views,
					 sa ? 2 : wire::no_port);
		return 0;
	}
	if (!strcmp(key, wire::key_node) && slot_of(rank) == 0) {
		out = node_record(pos_of(rank));
		return 0;
	}
	return -FI_ENODATA;
}

} // namespace wu::pmix
