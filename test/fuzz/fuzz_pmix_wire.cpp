/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for src/pmix_glue/wire.cpp: arbitrary bytes as what a
 * PMIx get hands back, i.e. what any process of the job (or a launcher)
 * could have put there.  The first byte picks how the blob is read: as an
 * ep record (check_ep), as a node table (bit 1: u32 count, then node
 * records, parse_node, each deviant's record through check_ep) or as a
 * node blob (bits 1 and 7: parse_blob, issue 30); its low bit makes
 * the expected job, rank and format those the record itself claims, so the
 * decoder's deeper checks are reached.  Invariants besides the sanitizers:
 * a record that checks re-encodes to the same bytes, its name lies inside
 * the blob and validates; a rejection always says why; parse_node advances
 * past exactly what it parsed and leaves off alone on failure; a node blob
 * that parses has ascending ranks below the job size and valid names, and
 * encode_blob of what it gave parses back to the same names.  Node blobs
 * of version 2 ("WUB2", same mode bits; either version goes through
 * parse_blob_view): every rank the view names is below the job size, its
 * name (rule or exception) validates, and encode_blob2 of the ranks and
 * names it gives parses back to the same name for every rank. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "pmix_glue/wire.h"

using namespace wu::pmix::wire;

namespace {

[[noreturn]] void fail(const char *what)
{
	fprintf(stderr, "fuzz_pmix_wire invariant broken: %s\n", what);
	abort();
}

/* The formats the wire-up may see, and one nobody knows. */
constexpr uint32_t formats[] = {FI_SOCKADDR_IN, FI_SOCKADDR_IN6, FI_SOCKADDR, FI_ADDR_STR,
				FI_FORMAT_UNSPEC, 0x7777};

void one_ep(const std::vector<uint8_t> &rec, bool own, uint32_t fmt)
{
	uint64_t job = 0x1122334455667788ULL;
	uint32_t rank = 3;
	if (own && rec.size() >= sizeof(ep_hdr)) {
		ep_hdr h;
		memcpy(&h, rec.data(), sizeof h);
		job = h.job, rank = h.rank, fmt = h.addr_format;
	}
	const uint8_t *name = nullptr;
	size_t len = 0;
	std::string why;
	int r = check_ep(rec, fmt, job, rank, &name, &len, why);
	if (r != 0) {
		if (r > 0 || why.empty())
			fail("check_ep rejected without a negative error and a reason");
		return;
	}
	if (name != rec.data() + sizeof(ep_hdr) || len > rec.size() - sizeof(ep_hdr))
		fail("check_ep's name is not inside the record");
	std::string why2;
	if (!validate_name(fmt, name, len, why2))
		fail("check_ep accepted a name validate_name refuses");
	if (name_len(fmt) && len != name_len(fmt))
		fail("check_ep accepted a name of the wrong length for its format");
	std::vector<uint8_t> again = encode_ep(fmt, job, rank, name, len);
	if (again.size() > rec.size() || memcmp(again.data(), rec.data(), again.size()) != 0)
		fail("an ep record that checks does not re-encode to its own bytes");
}

void node_table(const std::vector<uint8_t> &rec, bool own, uint32_t fmt)
{
	if (rec.size() < 4)
		return;
	uint32_t count;
	memcpy(&count, rec.data(), 4);
	size_t off = 4;
	for (uint32_t i = 0; i < count && off < rec.size(); i++) {
		uint64_t job = 0x1122334455667788ULL;
		uint32_t f = fmt;
		if (own && rec.size() - off >= sizeof(node_hdr)) {
			node_hdr h;
			memcpy(&h, rec.data() + off, sizeof h);
			job = h.job, f = h.addr_format;
		}
		node_view v;
		std::string why;
		size_t before = off;
		int r = parse_node(rec, off, f, job, v, why);
		if (r != 0) {
			if (r > 0 || why.empty())
				fail("parse_node rejected without a negative error and a reason");
			if (off != before)
				fail("parse_node moved off on failure");
			return;
		}
		if (off <= before || off > rec.size())
			fail("parse_node's off did not advance inside the blob");
		std::vector<uint8_t> again =
			encode_node(f, job, v.node, v.port_base, v.addr.data(), v.addr.size(), v.devs);
		/* The header's pad is not kept (encode writes zero). */
		std::vector<uint8_t> seen(rec.begin() + before, rec.begin() + off);
		memset(seen.data() + offsetof(node_hdr, pad), 0, sizeof(uint32_t));
		if (again != seen)
			fail("a node record that parses does not re-encode to its own bytes");
		for (const deviant &d : v.devs)
			one_ep(d.record, true, f);
	}
}

/* With own: the job, leader and format the blob's header H claims. */
template <class H>
void claimed(const std::vector<uint8_t> &rec, bool own, uint64_t &job, uint32_t &leader, uint32_t &fmt)
{
	if (!own || rec.size() < sizeof(H))
		return;
	H h;
	memcpy(&h, rec.data(), sizeof h);
	job = h.job, leader = h.leader, fmt = h.addr_format;
}

void node_blob(const std::vector<uint8_t> &rec, bool own, uint32_t fmt)
{
	uint64_t job = 0x1122334455667788ULL;
	uint32_t leader = 3, size = 1u << 20;
	claimed<blob_hdr>(rec, own, job, leader, fmt);
	std::vector<blob_name> out;
	std::string why;
	int r = parse_blob(rec, fmt, job, leader, size, out, why);
	if (r != 0) {
		if (r > 0 || why.empty() || !out.empty())
			fail("parse_blob rejected without a negative error, a reason and an empty result");
		return;
	}
	for (size_t i = 0; i < out.size(); i++) {
		std::string w;
		if (out[i].rank >= size || (i && out[i].rank <= out[i - 1].rank))
			fail("parse_blob gave ranks out of order or past the job");
		if (!validate_name(fmt, out[i].name.data(), out[i].name.size(), w))
			fail("parse_blob accepted a name validate_name refuses");
	}
	std::vector<blob_name> again;
	if (parse_blob(encode_blob(fmt, job, leader, 0, out), fmt, job, leader, size, again, why) != 0 ||
	    again.size() != out.size())
		fail("a node blob's names do not survive encode_blob and parse_blob");
	for (size_t i = 0; i < out.size(); i++)
		if (again[i].rank != out[i].rank || again[i].name != out[i].name)
			fail("a node blob's names do not survive encode_blob and parse_blob");
}

void node_blob2(const std::vector<uint8_t> &rec, bool own, uint32_t fmt)
{
	uint64_t job = 0x1122334455667788ULL;
	/* Small enough that materialising every rank stays fast. */
	uint32_t leader = 3, size = 1u << 14;
	claimed<blob2_hdr>(rec, own, job, leader, fmt);
	blob_view v;
	std::string why;
	int r = parse_blob_view(rec, fmt, job, leader, size, v, why);
	if (r != 0) {
		if (r > 0 || why.empty() || !v.exc.empty() || !v.ranges.empty() || !v.tmpl.empty())
			fail("parse_blob_view rejected without a negative error, a reason and an empty view");
		return;
	}
	std::vector<uint32_t> ranks;
	std::vector<std::vector<uint8_t>> names;
	int64_t last = -1;
	v.each_rank([&](uint32_t rk) {
		if (rk >= size || int64_t(rk) <= last)
			fail("a node blob view names ranks out of order or past the job");
		last = rk;
		std::vector<uint8_t> nm;
		int e = v.name_of(rk, nm);
		std::string w;
		if (e == 0 && !validate_name(fmt, nm.data(), nm.size(), w))
			fail("a node blob view gives a name validate_name refuses");
		if (e != 0 && e != -FI_ENODATA)
			fail("name_of failed with another error than -FI_ENODATA");
		ranks.push_back(rk);
		names.push_back(e == 0 ? nm : std::vector<uint8_t>{});
		return true;
	});
	if (ranks.empty())
		return;
	uint16_t off = v.tmpl.empty() ? no_port : v.port_off;
	blob_view again;
	if (parse_blob_view(encode_blob2(fmt, job, leader, 0, ranks, names, off), fmt, job, leader, size,
			    again, why) != 0)
		fail("a node blob's names do not survive encode_blob2 and parse_blob_view");
	for (size_t i = 0; i < ranks.size(); i++) {
		std::vector<uint8_t> nm;
		int e = again.name_of(ranks[i], nm);
		if ((e == 0) != !names[i].empty() || (e == 0 && nm != names[i]))
			fail("a node blob's names do not survive encode_blob2 and parse_blob_view");
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	std::vector<uint8_t> rec(data + 1, data + size);
	bool own = mode & 1;
	uint32_t fmt = formats[(mode >> 2) % (sizeof formats / sizeof formats[0])];
	if ((mode & 0x82) == 0x82) {
		node_blob(rec, own, fmt);
		node_blob2(rec, own, fmt);
	}
	else if (mode & 2)
		node_table(rec, own, fmt);
	else
		one_ep(rec, own, fmt);
	return 0;
}
