/* SPDX-License-Identifier: BSD-3-Clause */
/* Records the wire-up stores in PMIx (see wire.h). */
#include "pmix_glue/wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace wu::pmix::wire {

uint64_t job_id(const std::string &nspace) noexcept
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char c : nspace) {
		h ^= c;
		h *= 0x100000001b3ULL;
	}
	return h;
}

std::vector<uint8_t> encode_ep(uint32_t addr_format, uint64_t job, uint32_t rank, const void *name,
			       size_t len)
{
	ep_hdr h{ep_magic, addr_format, job, rank, uint32_t(len)};
	std::vector<uint8_t> out(sizeof h + len);
	memcpy(out.data(), &h, sizeof h);
	if (len)
		memcpy(out.data() + sizeof h, name, len);
	return out;
}

std::vector<uint8_t> encode_node(uint32_t addr_format, uint64_t job, uint32_t node,
				 uint16_t port_base, const void *addr, size_t addr_len,
				 const std::vector<deviant> &devs)
{
	node_hdr h{node_magic, addr_format, job, node, port_base, uint16_t(addr_len),
		   uint32_t(devs.size()), 0};
	size_t total = sizeof h + addr_len;
	for (const deviant &d : devs)
		total += 4 + d.record.size();
	std::vector<uint8_t> out(total);
	uint8_t *p = out.data();
	memcpy(p, &h, sizeof h);
	p += sizeof h;
	memcpy(p, addr, addr_len);
	p += addr_len;
	for (const deviant &d : devs) {
		memcpy(p, &d.slot, 4);
		memcpy(p + 4, d.record.data(), d.record.size());
		p += 4 + d.record.size();
	}
	return out;
}

size_t name_len(uint32_t addr_format) noexcept
{
	switch (addr_format) {
	case FI_SOCKADDR_IN:
		return sizeof(sockaddr_in);
	case FI_SOCKADDR_IN6:
		return sizeof(sockaddr_in6);
	default:
		return 0;
	}
}

const char *format_name(uint32_t f)
{
	switch (f) {
	case FI_SOCKADDR_IN: return "FI_SOCKADDR_IN";
	case FI_SOCKADDR_IN6: return "FI_SOCKADDR_IN6";
	case FI_SOCKADDR: return "FI_SOCKADDR";
	case FI_ADDR_STR: return "FI_ADDR_STR";
	default: return "another format";
	}
}

bool validate_name(uint32_t addr_format, const void *name, size_t len, std::string &why)
{
	size_t want = name_len(addr_format);
	if (want && len != want) {
		why = std::to_string(len) + "-byte name, " + format_name(addr_format) + " needs " +
		      std::to_string(want);
		return false;
	}
	if (len == 0 || len > FI_NAME_MAX) {
		why = "name of " + std::to_string(len) + " bytes (1 to 64 accepted)";
		return false;
	}
	if (addr_format == FI_SOCKADDR_IN || addr_format == FI_SOCKADDR_IN6) {
		sa_family_t fam;
		memcpy(&fam, name, sizeof fam);
		int want_fam = addr_format == FI_SOCKADDR_IN ? AF_INET : AF_INET6;
		if (fam != want_fam) {
			why = "address family " + std::to_string(fam) + ", " + format_name(addr_format) +
			      " needs " + std::to_string(want_fam);
			return false;
		}
	}
	return true;
}

int check_ep(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job, uint32_t rank,
	     const uint8_t **name, size_t *len, std::string &why)
{
	ep_hdr h;
	if (rec.size() < sizeof h) {
		why = std::to_string(rec.size()) + " bytes, shorter than the " +
		      std::to_string(sizeof h) + "-byte record header";
		return -FI_EINVAL;
	}
	memcpy(&h, rec.data(), sizeof h);
	if (h.magic != ep_magic) {
		why = "not a Wireup endpoint record (magic 0x" + [&] {
			char b[16];
			snprintf(b, sizeof b, "%08x", h.magic);
			return std::string(b);
		}() + ")";
		return -FI_EINVAL;
	}
	if (h.job != job) {
		why = "record of another job (job id differs from this namespace's)";
		return -FI_EINVAL;
	}
	if (h.rank != rank) {
		why = "record of rank " + std::to_string(h.rank);
		return -FI_EINVAL;
	}
	if (h.addr_format != addr_format) {
		why = std::string("address format ") + format_name(h.addr_format) + " (" +
		      std::to_string(h.addr_format) + "), the AV holds " + format_name(addr_format);
		return -FI_EINVAL;
	}
	if (rec.size() - sizeof h < h.len) {
		why = "record cut short: " + std::to_string(rec.size() - sizeof h) + " of " +
		      std::to_string(h.len) + " name bytes";
		return -FI_EINVAL;
	}
	const uint8_t *p = rec.data() + sizeof h;
	if (!validate_name(addr_format, p, h.len, why))
		return -FI_EINVAL;
	*name = p;
	*len = h.len;
	return 0;
}

int parse_node(const std::vector<uint8_t> &rec, size_t &off, uint32_t addr_format, uint64_t job,
	       node_view &out, std::string &why)
{
	node_hdr h;
	if (rec.size() < off || rec.size() - off < sizeof h) {
		why = std::to_string(rec.size() - std::min(off, rec.size())) +
		      " bytes, shorter than the 32-byte node record header";
		return -FI_EINVAL;
	}
	memcpy(&h, rec.data() + off, sizeof h);
	if (h.magic != node_magic) {
		why = "not a Wireup node record";
		return -FI_EINVAL;
	}
	if (h.job != job) {
		why = "node record of another job";
		return -FI_EINVAL;
	}
	if (h.addr_format != addr_format) {
		why = std::string("node address format ") + format_name(h.addr_format) +
		      ", the AV holds " + format_name(addr_format);
		return -FI_EINVAL;
	}
	size_t p = off + sizeof h;
	if (rec.size() - p < h.addr_len) {
		why = "node record cut short in its address";
		return -FI_EINVAL;
	}
	if (!validate_name(addr_format, rec.data() + p, h.addr_len, why))
		return -FI_EINVAL;
	out.node = h.node;
	out.port_base = h.port_base;
	out.addr.assign(rec.data() + p, rec.data() + p + h.addr_len);
	p += h.addr_len;
	out.devs.clear();
	for (uint32_t i = 0; i < h.ndev; i++) {
		ep_hdr e;
		if (rec.size() - p < 4 + sizeof e) {
			why = "node record cut short in deviant " + std::to_string(i);
			return -FI_EINVAL;
		}
		deviant d;
		memcpy(&d.slot, rec.data() + p, 4);
		memcpy(&e, rec.data() + p + 4, sizeof e);
		size_t n = sizeof e + e.len;
		if (rec.size() - p - 4 < n) {
			why = "node record cut short in deviant " + std::to_string(i);
			return -FI_EINVAL;
		}
		d.record.assign(rec.data() + p + 4, rec.data() + p + 4 + n);
		p += 4 + n;
		out.devs.push_back(std::move(d));
	}
	off = p;
	return 0;
}

std::vector<uint8_t> encode_blob(uint32_t addr_format, uint64_t job, uint32_t leader,
				 uint32_t node, const std::vector<blob_name> &names)
{
	blob_hdr h{blob_magic, blob_version, 0, addr_format, uint32_t(names.size()), job, leader, node};
	std::vector<uint8_t> out(sizeof h);
	memcpy(out.data(), &h, sizeof h);
	const std::vector<uint8_t> *prev = nullptr;
	for (const blob_name &b : names) {
		/* Names are at most FI_NAME_MAX bytes: every count fits a u8. */
		size_t n = std::min(b.name.size(), size_t(FI_NAME_MAX));
		size_t zeros = 0;
		while (zeros < n && b.name[n - 1 - zeros] == 0)
			zeros++;
		size_t keep = 0;
		while (prev && keep < n - zeros && keep < prev->size() && (*prev)[keep] == b.name[keep])
			keep++;
		blob_ent e{b.rank, uint8_t(keep), uint8_t(n - zeros - keep), uint8_t(zeros), 0};
		size_t at = out.size();
		out.resize(at + sizeof e + e.lit);
		memcpy(out.data() + at, &e, sizeof e);
		if (e.lit)
			memcpy(out.data() + at + sizeof e, b.name.data() + keep, e.lit);
		prev = &b.name;
	}
	return out;
}

int parse_blob(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job,
	       uint32_t leader, uint32_t size, std::vector<blob_name> &out, std::string &why)
{
	out.clear();
	auto fail = [&](std::string w) {
		why = std::move(w);
		out.clear();
		return -FI_EINVAL;
	};
	blob_hdr h;
	if (rec.size() < sizeof h)
		return fail(std::to_string(rec.size()) + " bytes, shorter than the " +
			    std::to_string(sizeof h) + "-byte node blob header");
	memcpy(&h, rec.data(), sizeof h);
	if (h.magic != blob_magic)
		return fail("not a Wireup node blob");
	if (h.version != blob_version || h.flags)
		return fail("node blob version " + std::to_string(h.version) + " flags " +
			    std::to_string(h.flags) + ", this library reads version " +
			    std::to_string(blob_version) + " flags 0");
	if (h.job != job)
		return fail("node blob of another job (job id differs from this namespace's)");
	if (h.leader != leader)
		return fail("node blob put by rank " + std::to_string(h.leader));
	if (h.addr_format != addr_format)
		return fail(std::string("node blob of address format ") + format_name(h.addr_format) +
			    ", the AV holds " + format_name(addr_format));
	/* Every entry takes at least its 8-byte header: a count past that is
	 * a lie, caught before anything is allocated for it. */
	if (h.count > (rec.size() - sizeof h) / sizeof(blob_ent))
		return fail("node blob claims " + std::to_string(h.count) + " entries in " +
			    std::to_string(rec.size()) + " bytes");
	out.reserve(h.count);
	size_t p = sizeof h;
	for (uint32_t i = 0; i < h.count; i++) {
		blob_ent e;
		if (rec.size() - p < sizeof e)
			return fail("node blob cut short in entry " + std::to_string(i));
		memcpy(&e, rec.data() + p, sizeof e);
		p += sizeof e;
		const std::vector<uint8_t> *prev = out.empty() ? nullptr : &out.back().name;
		size_t n = size_t(e.keep) + e.lit + e.zeros;
		if (e.pad || e.rank >= size || (prev && e.rank <= out.back().rank))
			return fail("node blob entry " + std::to_string(i) + ": rank " +
				    std::to_string(e.rank) + " (pad " + std::to_string(e.pad) +
				    "; ranks must ascend below " + std::to_string(size) + ")");
		if (e.keep > (prev ? prev->size() : 0) || n == 0 || n > FI_NAME_MAX)
			return fail("node blob entry " + std::to_string(i) + " (rank " +
				    std::to_string(e.rank) + "): keeps " + std::to_string(e.keep) +
				    " bytes of a " + std::to_string(prev ? prev->size() : 0) +
				    "-byte name, " + std::to_string(n) + " bytes in all");
		if (rec.size() - p < e.lit)
			return fail("node blob cut short in the name of rank " + std::to_string(e.rank));
		blob_name b{e.rank, std::vector<uint8_t>(n, 0)};
		if (e.keep)
			memcpy(b.name.data(), prev->data(), e.keep);
		if (e.lit)
			memcpy(b.name.data() + e.keep, rec.data() + p, e.lit);
		p += e.lit;
		std::string w;
		if (!validate_name(addr_format, b.name.data(), n, w))
			return fail("node blob, rank " + std::to_string(e.rank) + ": " + w);
		out.push_back(std::move(b));
	}
	if (p != rec.size())
		return fail(std::to_string(rec.size() - p) + " bytes after the node blob's last entry");
	return 0;
}

} // namespace wu::pmix::wire
