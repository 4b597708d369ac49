/* SPDX-License-Identifier: BSD-3-Clause */
/* What the wire-up stores in PMIx: records with a header that names the
 * job, the rank and the address format, so that a blob that is too short,
 * of another format or from another job is caught before anything is
 * inserted.  All integers little-endian as on the hosts we run on (x86-64,
 * aarch64); a byte-order mismatch shows as a bad magic.
 *
 *   ep record   (key wireup.ep / wireup.lp / wireup.sl, one per rank):
 *       ep_hdr, then len bytes of endpoint name (fi_getname's blob)
 *   node record (key wireup.node, one per node, symmetric mode):
 *       node_hdr, then addr_len bytes of the node's slot-0 address, then
 *       ndev times { u32 slot, ep record } for ranks off the layout
 *   node table  (job key wireup.lpn, launcher-published per node):
 *       u32 count, then count node records, in the launcher's node order
 *   node blob   (key wireup.nb, modex and direct, put by a node's first
 *       rank with its own wireup.ep):
 *       blob_hdr, then count entries in ascending rank order, each
 *       blob_ent and lit bytes; the entry's name is the first keep bytes
 *       of the previous entry's name, the lit bytes, then zeros zero bytes
 *       (names of one node share their host part and end in padding).
 *       Read only; a node's first rank now puts version 2:
 *   node blob v2 (key wireup.nb, "WUB2", issue 30: O(1) in the node's ranks
 *       when they follow the node port rule):
 *       blob2_hdr, then tmpl_lit bytes of the template (tmpl_zeros zero
 *       bytes follow it), then nranges blob_range, then nexc entries coded
 *       as version 1's (the first keeps bytes of the template).  The ranges
 *       list the node's ranks, strictly ascending; a rank's slot is its
 *       index in them.  A rank's name is its exception entry when it has
 *       one (no bytes at all: the blob lacks it, fetch its own record),
 *       else the template with the big-endian u16 at port_off set to
 *       port0 + slot.  Names are what ranks of other nodes need (the
 *       wireup provider's without their shm part). */
#ifndef WU_PMIX_GLUE_WIRE_H
#define WU_PMIX_GLUE_WIRE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wu::pmix::wire {

inline constexpr const char *key_ep = "wireup.ep";     /* modex and direct */
inline constexpr const char *key_local = "wireup.sl";  /* symmetric: to the node leader */
inline constexpr const char *key_node = "wireup.node"; /* symmetric: from the node leader */
inline constexpr const char *key_lp = "wireup.lp";     /* launcher: per rank */
inline constexpr const char *key_lpn = "wireup.lpn";   /* launcher: per node (job key) */
inline constexpr const char *key_blob = "wireup.nb";   /* modex, direct: per node */

inline constexpr uint32_t ep_magic = 0x31455557;   /* "WUE1" */
inline constexpr uint32_t node_magic = 0x314e5557; /* "WUN1" */
inline constexpr uint32_t blob_magic = 0x31425557; /* "WUB1" */
inline constexpr uint16_t blob_version = 1;
inline constexpr uint32_t blob2_magic = 0x32425557; /* "WUB2" */
inline constexpr uint16_t blob2_version = 2;
/* port_off of a blob without a port rule (every rank an exception). */
inline constexpr uint16_t no_port = 0xffff;

struct ep_hdr {
	uint32_t magic;
	uint32_t addr_format;
	uint64_t job; /* job_id(nspace) */
	uint32_t rank;
	uint32_t len; /* name bytes that follow */
};
static_assert(sizeof(ep_hdr) == 24);

struct node_hdr {
	uint32_t magic;
	uint32_t addr_format;
	uint64_t job;
	uint32_t node;	   /* position of the node in the layout */
	uint16_t port_base;
	uint16_t addr_len; /* slot-0 address bytes that follow */
	uint32_t ndev;	   /* deviant entries after the address */
	uint32_t pad;
};
static_assert(sizeof(node_hdr) == 32);

struct blob_hdr {
	uint32_t magic;
	uint16_t version; /* blob_version; another is refused, not guessed at */
	uint16_t flags;	  /* 0 */
	uint32_t addr_format;
	uint32_t count; /* entries that follow */
	uint64_t job;
	uint32_t leader; /* the rank that put it */
	uint32_t node;	 /* its PMIX_NODEID (for log lines) */
};
static_assert(sizeof(blob_hdr) == 32);

struct blob_ent {
	uint32_t rank;
	uint8_t keep;  /* leading bytes equal to the previous entry's name */
	uint8_t lit;   /* bytes stored after this header */
	uint8_t zeros; /* zero bytes at the end, not stored */
	uint8_t pad;   /* 0 */
};
static_assert(sizeof(blob_ent) == 8);

struct blob2_hdr {
	uint32_t magic;	  /* blob2_magic */
	uint16_t version; /* blob2_version */
	uint16_t flags;	  /* 0 */
	uint32_t addr_format;
	uint32_t nranges; /* blob_range entries */
	uint64_t job;
	uint32_t leader;
	uint32_t node;
	uint16_t port_off; /* no_port, or where the template's port is */
	uint16_t port0;	   /* port of slot 0 */
	uint8_t tmpl_lit;  /* template bytes stored (0: no template) */
	uint8_t tmpl_zeros;
	uint16_t pad; /* 0 */
	uint32_t nexc; /* exception entries */
	uint32_t pad2; /* 0 */
};
static_assert(sizeof(blob2_hdr) == 48);

/* Ranks first, first + stride, ... (count of them). */
struct blob_range {
	uint32_t first, stride, count;
};
static_assert(sizeof(blob_range) == 12);

/* FNV-1a of the namespace name. */
uint64_t job_id(const std::string &nspace) noexcept;

std::vector<uint8_t> encode_ep(uint32_t addr_format, uint64_t job, uint32_t rank, const void *name,
			       size_t len);

/* A deviant: the slot it should have had, and its own ep record. */
struct deviant {
	uint32_t slot;
	std::vector<uint8_t> record;
};

std::vector<uint8_t> encode_node(uint32_t addr_format, uint64_t job, uint32_t node,
				 uint16_t port_base, const void *addr, size_t addr_len,
				 const std::vector<deviant> &devs);

/* Checks an ep record: magic, job, rank, format, and that the name is a
 * valid address of that format (validate_name).  On failure fills why
 * (what was wrong, for a log line naming rank and key) and returns a
 * negative FI_E*; on success points name/len into rec. */
int check_ep(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job, uint32_t rank,
	     const uint8_t **name, size_t *len, std::string &why);

/* Length an address of this format must have, or 0: any up to 64 bytes
 * (FI_NAME_MAX: the wireup provider's addresses). */
size_t name_len(uint32_t addr_format) noexcept;
/* True when name is a well-formed address of addr_format. */
bool validate_name(uint32_t addr_format, const void *name, size_t len, std::string &why);

struct node_view {
	uint32_t node;
	uint16_t port_base;
	std::vector<uint8_t> addr;
	std::vector<deviant> devs;
};
/* Parses a node record at rec[off..]; advances off.  Checks as check_ep. */
int parse_node(const std::vector<uint8_t> &rec, size_t &off, uint32_t addr_format, uint64_t job,
	       node_view &out, std::string &why);

/* A rank's name in a node blob. */
struct blob_name {
	uint32_t rank;
	std::vector<uint8_t> name;
};

/* names in ascending rank order, each a valid name of addr_format. */
std::vector<uint8_t> encode_blob(uint32_t addr_format, uint64_t job, uint32_t leader,
				 uint32_t node, const std::vector<blob_name> &names);

/* Checks a node blob as check_ep does a record (magic, version, job, the
 * leader it was fetched from, format), then every entry: ranks ascending
 * and below size, names valid, nothing cut short or left over.  All or
 * nothing: on failure out is empty and why says what was wrong. */
int parse_blob(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job,
	       uint32_t leader, uint32_t size, std::vector<blob_name> &out, std::string &why);

/* A node blob as read (either version): names by rank without one vector
 * per rank, so a blob costs memory as its bytes do. */
struct blob_view {
	std::vector<uint8_t> tmpl; /* empty: no port rule */
	uint16_t port_off = no_port, port0 = 0;
	struct range {
		uint32_t first, stride, count, slot0;
	};
	std::vector<range> ranges;
	std::vector<blob_name> exc; /* ascending ranks; an empty name: lacking */
	/* 0 with rank's name; -FI_ENODATA when the blob lacks it. */
	int name_of(uint32_t rank, std::vector<uint8_t> &out) const;
	/* Every rank the blob names (covered or listed), ascending; stops when
	 * f returns false. */
	template <class F> void each_rank(F f) const
	{
		size_t e = 0;
		for (const range &g : ranges)
			for (uint32_t i = 0; i < g.count; i++) {
				uint32_t r = g.first + i * g.stride;
				for (; e < exc.size() && exc[e].rank < r; e++)
					if (!f(exc[e].rank))
						return;
				if (e < exc.size() && exc[e].rank == r)
					e++;
				if (!f(r))
					return;
			}
		for (; e < exc.size(); e++)
			if (!f(exc[e].rank))
				return;
	}
};

/* Version 2 of the node's ranks (ascending) and their names (views[i] of
 * ranks[i]; empty: lacking).  port_off: where a name's big-endian port
 * is (no_port: none); the most common port - slot becomes the rule, and
 * names that differ from it are exceptions. */
std::vector<uint8_t> encode_blob2(uint32_t addr_format, uint64_t job, uint32_t leader,
				  uint32_t node, const std::vector<uint32_t> &ranks,
				  const std::vector<std::vector<uint8_t>> &views, uint16_t port_off);

/* Either version, all checks of parse_blob and, for version 2: ranges
 * ascending below size, the template a valid name with room for its
 * port, every slot's port below 65536 and every generated name valid,
 * exceptions ascending and covered, every covered rank named (by rule or
 * exception).  All or nothing, as parse_blob. */
int parse_blob_view(const std::vector<uint8_t> &rec, uint32_t addr_format, uint64_t job,
		    uint32_t leader, uint32_t size, blob_view &out, std::string &why);

} // namespace wu::pmix::wire

#endif
