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

namespace {

/* Version 1's entry coding (wire.h), shared by version 2's exceptions:
 * each keeps bytes of the previous name (of *prev first). */
void put_entries(std::vector<uint8_t> &out, const std::vector<blob_name> &names,
		 const std::vector<uint8_t> *prev)
{
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
		if (n)
			prev = &b.name;
	}
}

/* Reads count entries at rec[p..]; advances p.  allow_empty: an entry of
 * no bytes (a lacking rank, version 2) is taken.  "" or why it failed. */
std::string get_entries(const std::vector<uint8_t> &rec, size_t &p, uint32_t count,
			const std::vector<uint8_t> *prev, uint32_t addr_format, uint32_t size,
			bool allow_empty, std::vector<blob_name> &out)
{
	/* Every entry takes at least its 8-byte header: a count past that is
	 * a lie, caught before anything is allocated for it. */
	if (count > (rec.size() - p) / sizeof(blob_ent))
		return "node blob claims " + std::to_string(count) + " entries in " +
		       std::to_string(rec.size() - p) + " bytes";
	out.reserve(count);
	for (uint32_t i = 0; i < count; i++) {
		blob_ent e;
		if (rec.size() - p < sizeof e)
			return "node blob cut short in entry " + std::to_string(i);
		memcpy(&e, rec.data() + p, sizeof e);
		p += sizeof e;
		size_t n = size_t(e.keep) + e.lit + e.zeros;
		if (e.pad || e.rank >= size || (!out.empty() && e.rank <= out.back().rank))
			return "node blob entry " + std::to_string(i) + ": rank " +
			       std::to_string(e.rank) + " (pad " + std::to_string(e.pad) +
			       "; ranks must ascend below " + std::to_string(size) + ")";
		if (e.keep > (prev ? prev->size() : 0) || (n == 0 && !allow_empty) || n > FI_NAME_MAX)
			return "node blob entry " + std::to_string(i) + " (rank " +
			       std::to_string(e.rank) + "): keeps " + std::to_string(e.keep) +
			       " bytes of a " + std::to_string(prev ? prev->size() : 0) +
			       "-byte name, " + std::to_string(n) + " bytes in all";
		if (rec.size() - p < e.lit)
			return "node blob cut short in the name of rank " + std::to_string(e.rank);
		blob_name b{e.rank, std::vector<uint8_t>(n, 0)};
		if (e.keep)
			memcpy(b.name.data(), prev->data(), e.keep);
		if (e.lit)
			memcpy(b.name.data() + e.keep, rec.data() + p, e.lit);
		p += e.lit;
		std::string w;
		if (n && !validate_name(addr_format, b.name.data(), n, w))
			return "node blob, rank " + std::to_string(e.rank) + ": " + w;
		out.push_back(std::move(b));
		if (n)
			prev = &out.back().name;
	}
	return "";
}

/* rank's slot when ranges (ascending) hold it. */
bool find_slot(const std::vector<blob_view::range> &ranges, uint32_t rank, uint32_t &slot)
{
	auto it = std::upper_bound(ranges.begin(), ranges.end(), rank,
				   [](uint32_t r, const blob_view::range &g) { return r < g.first; });
	if (it == ranges.begin())
		return false;
	--it;
	uint32_t d = rank - it->first;
	if (d % it->stride || d / it->stride >= it->count)
		return false;
	slot = it->slot0 + d / it->stride;
	return true;
}

uint16_t get_be16(const std::vector<uint8_t> &v, size_t off)
{
	return uint16_t(v[off] << 8 | v[off + 1]);
}

void set_be16(std::vector<uint8_t> &v, size_t off, uint16_t x)
{
	v[off] = uint8_t(x >> 8);
	v[off + 1] = uint8_t(x);
}

/* Copies a node blob header of either version; "" or why not. */
template <class H> std::string read_hdr(const std::vector<uint8_t> &rec, uint32_t magic, H &h)
{
	if (rec.size() < sizeof h)
		return std::to_string(rec.size()) + " bytes, shorter than the " + std::to_string(sizeof h) +
		       "-byte node blob header";
	memcpy(&h, rec.data(), sizeof h);
	if (h.magic != magic)
		return "not a Wireup node blob";
	return "";
}

/* Checks version 1's header fields that version 2 shares. */
std::string check_common(uint64_t h_job, uint32_t h_leader, uint32_t h_format, uint64_t job,
			 uint32_t leader, uint32_t addr_format)
{
	if (h_job != job)
		return "node blob of another job (job id differs from this namespace's)";
	if (h_leader != leader)
		return "node blob put by rank " + std::to_string(h_leader);
	if (h_format != addr_format)
		return std::string("node blob of address format ") + format_name(h_format) +
		       ", the AV holds " + format_name(addr_format);
	return "";
}

} // namespace

std::vector<uint8_t> encode_blob(uint32_t addr_format, uint64_t job, uint32_t leader,
				 uint32_t node, const std::vector<blob_name> &names)
{
	blob_hdr h{blob_magic, blob_version, 0, addr_format, uint32_t(names.size()), job, leader, node};
	std::vector<uint8_t> out(sizeof h);
	memcpy(out.data(), &h, sizeof h);
	put_entries(out, names, nullptr);
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
	if (std::string w = read_hdr(rec, blob_magic, h); !w.empty())
		return fail(w);
	if (h.version != blob_version || h.flags)
		return fail("node blob version " + std::to_string(h.version) + " flags " +
			    std::to_string(h.flags) + ", this library reads version " +
			    std::to_string(blob_version) + " flags 0");
	if (std::string w = check_common(h.job, h.leader, h.addr_format, job, leader, addr_format);
	    !w.empty())
		return fail(w);
	size_t p = sizeof h;
	if (std::string w = get_entries(rec, p, h.count, nullptr, addr_format, size, false, out);
	    !w.empty())
		return fail(w);
	if (p != rec.size())
		return fail(std::to_string(rec.size() - p) + " bytes after the node blob's last entry");
	return 0;
}

std::vector<uint8_t> encode_blob2(uint32_t addr_format, uint64_t job, uint32_t leader,
				  uint32_t node, const std::vector<uint32_t> &ranks,
				  const std::vector<std::vector<uint8_t>> &views, uint16_t port_off)
{
	const size_t n = std::min(ranks.size(), views.size());
	/* The rule: the port most names have at slot s, less s. */
	std::vector<uint16_t> cand;
	if (port_off != no_port)
		for (size_t i = 0; i < n && i < 65536; i++)
			if (views[i].size() >= size_t(port_off) + 2 && get_be16(views[i], port_off) >= i)
				cand.push_back(uint16_t(get_be16(views[i], port_off) - i));
	std::sort(cand.begin(), cand.end());
	uint16_t port0 = 0;
	size_t best = 0;
	for (size_t i = 0, j; i < cand.size(); i = j) {
		for (j = i; j < cand.size() && cand[j] == cand[i]; j++)
			;
		if (j - i > best)
			best = j - i, port0 = cand[i];
	}
	if (n && size_t(port0) + n - 1 > 65535)
		best = 0; /* the last slots would have no port */
	std::vector<uint8_t> tmpl;
	for (size_t i = 0; best && i < n; i++)
		if (views[i].size() >= size_t(port_off) + 2 && get_be16(views[i], port_off) == port0 + i) {
			tmpl = views[i];
			set_be16(tmpl, port_off, port0);
			break;
		}
	/* A rule must give every slot a valid name (a port that overlaps what
	 * the format checks may not): else none, every name an exception. */
	std::string w;
	if (!tmpl.empty() && !validate_name(addr_format, tmpl.data(), tmpl.size(), w))
		tmpl.clear();
	for (size_t i = 0; !tmpl.empty() && i < n; i++) {
		std::vector<uint8_t> g = tmpl;
		set_be16(g, port_off, uint16_t(port0 + i));
		if (!validate_name(addr_format, g.data(), g.size(), w))
			tmpl.clear();
	}
	if (tmpl.empty())
		port_off = no_port, port0 = 0;
	std::vector<blob_name> exc;
	std::vector<uint8_t> gen;
	for (size_t i = 0; i < n; i++) {
		if (!tmpl.empty() && views[i].size() == tmpl.size()) {
			gen = tmpl;
			set_be16(gen, port_off, uint16_t(port0 + i));
			if (gen == views[i])
				continue;
		}
		exc.push_back({ranks[i], views[i]});
	}
	std::vector<blob_range> rg;
	for (size_t i = 0; i < n; i++) {
		if (!rg.empty()) {
			blob_range &g = rg.back();
			uint32_t last = g.first + (g.count - 1) * g.stride;
			if (g.count == 1 && ranks[i] > last) {
				g.stride = ranks[i] - last;
				g.count++;
				continue;
			}
			if (ranks[i] - last == g.stride) {
				g.count++;
				continue;
			}
		}
		rg.push_back({ranks[i], 1, 1});
	}
	size_t tz = 0;
	while (tz < tmpl.size() && tmpl[tmpl.size() - 1 - tz] == 0)
		tz++;
	blob2_hdr h{blob2_magic, blob2_version, 0, addr_format, uint32_t(rg.size()), job, leader, node,
		    port_off, port0, uint8_t(tmpl.size() - tz), uint8_t(tz), 0, uint32_t(exc.size()), 0};
	const size_t lit = tmpl.size() - tz, at = sizeof h + lit;
	std::vector<uint8_t> out(at + rg.size() * sizeof(blob_range));
	memcpy(out.data(), &h, sizeof h);
	if (lit)
		memcpy(out.data() + sizeof h, tmpl.data(), lit);
	if (!rg.empty())
		memcpy(out.data() + at, rg.data(), rg.size() * sizeof(blob_range));
	put_entries(out, exc, tmpl.empty() ? nullptr : &tmpl);
	return out;
}

int parse_blob_view(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job,
		    uint32_t leader, uint32_t size, blob_view &out, std::string &why)
{
	out = blob_view{};
	auto fail = [&](std::string w) {
		why = std::move(w);
		out = blob_view{};
		return -FI_EINVAL;
	};
	uint32_t magic = 0;
	if (rec.size() >= 4)
		memcpy(&magic, rec.data(), 4);
	if (magic == blob_magic)
		return parse_blob(rec, addr_format, job, leader, size, out.exc, why);
	blob2_hdr h;
	if (std::string w = read_hdr(rec, blob2_magic, h); !w.empty())
		return fail(w);
	if (h.version != blob2_version || h.flags || h.pad || h.pad2)
		return fail("node blob version " + std::to_string(h.version) + " flags " +
			    std::to_string(h.flags) + " pad " + std::to_string(h.pad | h.pad2) +
			    ", this library reads version 2 flags 0 pad 0 (or version 1)");
	if (std::string w = check_common(h.job, h.leader, h.addr_format, job, leader, addr_format);
	    !w.empty())
		return fail(w);
	/* The template: a valid name with its port inside, or none at all. */
	const size_t tlen = size_t(h.tmpl_lit) + h.tmpl_zeros;
	size_t p = sizeof h;
	if (tlen == 0) {
		if (h.port_off != no_port || h.port0)
			return fail("node blob has a port rule but no template");
	} else {
		std::string w;
		if (rec.size() - p < h.tmpl_lit)
			return fail("node blob cut short in its template");
		out.tmpl.assign(rec.data() + p, rec.data() + p + h.tmpl_lit);
		out.tmpl.resize(tlen, 0);
		p += h.tmpl_lit;
		if (tlen > FI_NAME_MAX || !validate_name(addr_format, out.tmpl.data(), tlen, w))
			return fail("node blob template of " + std::to_string(tlen) + " bytes: " +
				    (w.empty() ? "longer than 64" : w));
		if (h.port_off == no_port || size_t(h.port_off) + 2 > tlen)
			return fail("node blob port at " + std::to_string(h.port_off) + " of a " +
				    std::to_string(tlen) + "-byte template");
		if (get_be16(out.tmpl, h.port_off) != h.port0)
			return fail("node blob template's port is not the rule's");
	}
	out.port_off = h.port_off;
	out.port0 = h.port0;
	/* Ranges: ascending, below size, no more ranks than the job has. */
	if (h.nranges > (rec.size() - p) / sizeof(blob_range))
		return fail("node blob claims " + std::to_string(h.nranges) + " rank ranges in " +
			    std::to_string(rec.size() - p) + " bytes");
	out.ranges.reserve(h.nranges);
	uint64_t slots = 0;
	int64_t last = -1;
	for (uint32_t i = 0; i < h.nranges; i++) {
		blob_range g;
		memcpy(&g, rec.data() + p, sizeof g);
		p += sizeof g;
		uint64_t end = uint64_t(g.first) + uint64_t(g.stride) * (uint64_t(g.count) - 1);
		if (g.count == 0 || g.stride == 0 || int64_t(g.first) <= last || end >= size)
			return fail("node blob rank range " + std::to_string(i) + " (first " +
				    std::to_string(g.first) + ", stride " + std::to_string(g.stride) +
				    ", count " + std::to_string(g.count) +
				    "): ranges must be non-empty and ascend below " + std::to_string(size));
		out.ranges.push_back({g.first, g.stride, g.count, uint32_t(slots)});
		slots += g.count;
		last = int64_t(end);
	}
	if (tlen && slots && h.port0 + (slots - 1) > 65535)
		return fail("node blob's last slot's port " + std::to_string(h.port0 + slots - 1) +
			    " is past 65535");
	/* Every generated name must be valid (the port may overlap what the
	 * format checks, a sockaddr's family). */
	if (tlen) {
		std::vector<uint8_t> g = out.tmpl;
		std::string w;
		for (uint64_t k = 0; k < slots; k++) {
			set_be16(g, h.port_off, uint16_t(h.port0 + k));
			if (!validate_name(addr_format, g.data(), g.size(), w))
				return fail("node blob's rule gives slot " + std::to_string(k) +
					    " an invalid name: " + w);
		}
	}
	if (std::string w = get_entries(rec, p, h.nexc, out.tmpl.empty() ? nullptr : &out.tmpl,
					addr_format, size, true, out.exc);
	    !w.empty())
		return fail(w);
	if (p != rec.size())
		return fail(std::to_string(rec.size() - p) + " bytes after the node blob's last entry");
	/* Exceptions are of covered ranks; without a template every covered
	 * rank has one (they ascend, so as many as there are slots). */
	for (const blob_name &x : out.exc) {
		uint32_t slot;
		if (!find_slot(out.ranges, x.rank, slot))
			return fail("node blob lists rank " + std::to_string(x.rank) +
				    ", which its rank ranges do not hold");
	}
	if (tlen == 0 && out.exc.size() != slots)
		return fail("node blob without a template names " + std::to_string(out.exc.size()) +
			    " of its " + std::to_string(slots) + " ranks");
	return 0;
}

int blob_view::name_of(uint32_t rank, std::vector<uint8_t> &out) const
{
	auto it = std::lower_bound(exc.begin(), exc.end(), rank,
				   [](const blob_name &b, uint32_t r) { return b.rank < r; });
	if (it != exc.end() && it->rank == rank) {
		if (it->name.empty())
			return -FI_ENODATA;
		out = it->name;
		return 0;
	}
	uint32_t slot;
	if (tmpl.empty() || !find_slot(ranges, rank, slot))
		return -FI_ENODATA;
	out = tmpl;
	set_be16(out, port_off, uint16_t(port0 + slot));
	return 0;
}

} // namespace wu::pmix::wire
