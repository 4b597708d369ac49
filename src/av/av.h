/* SPDX-License-Identifier: BSD-3-Clause */
/* Address vectors (fi_av(3)): one engine for every provider.
 *
 * A provider describes its addresses with an av_format and opens AVs with
 * wu::av::open; IP providers (tcp) use ip_av_open, which picks the built-in
 * descriptor from the domain's addr_format.  Endpoints use the fast API at
 * the bottom (address of an fi_addr, reverse lookup for FI_SOURCE, the
 * completion source id, bind counts for fi_close's -FI_EBUSY).
 *
 * Storage: every AV lives in one arena (anonymous memory, or a POSIX shm
 * object for named AVs) indexed directly by fi_addr.  The arena is
 * reserved up front and never moves, so readers need no lock; pages are
 * only resident once written.  An IPv4 entry is one 8-byte record word;
 * other addresses add a fixed-size blob at the same index.  A record word
 * is published with a release store after its blob is written, which is
 * what makes a writer that dies mid-insert harmless. */
#ifndef WU_AV_AV_H
#define WU_AV_AV_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

namespace wu::prov {
struct domain;
}

namespace wu::av {

/* What the engine needs to know about a provider's addresses. */
struct av_format {
	const char *name;
	/* The app-facing format (fi_info addr_format of the domain). */
	uint32_t addr_format;
	/* Largest binary address stored (bytes); at most max_blob. */
	size_t max_addrlen;
	/* Length of the binary address at addr (at most avail bytes read),
	 * or a negative FI_E* when it is not a valid address of this format. */
	ssize_t (*validate)(const void *addr, size_t avail);
	/* Optional compact form in 48 bits (IPv4 + port); false: none. */
	bool (*pack)(const void *addr, size_t len, uint64_t *out48);
	/* Writes the binary address of a compact form; returns its length. */
	size_t (*unpack)(uint64_t in48, void *out);
	/* Format used to print stored binaries (wu::addr::format). */
	uint32_t print_format;
	/* Text (FI_ADDR_STR, insertsvc) is parsed to a binary of this family
	 * set: FI_SOCKADDR (any IP), FI_SOCKADDR_IN or FI_SOCKADDR_IN6. */
	uint32_t text_format;
	/* Optional (the wireup provider's composite addresses): the address of
	 * sub-provider `which` (0 tcp, 1 shm) held in the stored address
	 * (addr, len), written to out (outlen bytes) exactly as that provider's
	 * own AV would store it; returns its length (may exceed outlen:
	 * truncated), 0 when the address has no such part. */
	size_t (*part)(const void *addr, size_t len, int which, void *out, size_t outlen) = nullptr;
	/* Optional: fi_av_straddr's text of a stored address (len bytes),
	 * NUL-terminated and truncated to buflen (buf may be NULL when buflen
	 * is 0); returns the size needed with the NUL, or a negative FI_E*.
	 * Unset: addr::format with print_format. */
	ssize_t (*print)(const void *addr, size_t len, char *buf, size_t buflen) = nullptr;
	/* Optional (providers whose addresses are not sockaddrs): the address
	 * node/service names (fi_av_insertsvc, each of fi_av_insertsym's),
	 * written to out (outlen bytes) as fi_av_insert takes it; returns its
	 * length or a negative FI_E* (logged by the provider).  Set, it
	 * replaces text_format's parsing for those calls. */
	ssize_t (*from_service)(const char *node, const char *service, void *out, size_t outlen) = nullptr;
};

/* Part indices av_format::part may be asked for (0 .. max_parts - 1). */
inline constexpr int max_parts = 2;

/* Largest stored address; blobs are this plus a length word (each AV's
 * blobs are sized by its format's max_addrlen, not by this).  512: the
 * ucx provider's addresses hold a UCP worker address. */
inline constexpr size_t max_blob = 512;

/* Built-in descriptors for sockaddr-based providers. */
const av_format *ip_format(uint32_t addr_format) noexcept;

int open(prov::domain *dom, const av_format *fmt, fi_av_attr *attr, fid_av **av,
	 void *context) noexcept;

/* fi_ops_domain::av_open for IP providers: picks ip_format from the
 * domain's addr_format. */
int ip_av_open(fid_domain *domain, fi_av_attr *attr, fid_av **av, void *context) noexcept;

/* ---- endpoint API ---- */

bool is_av(const fid *f) noexcept;

/* Copies the address of fi_addr (rx context and group bits ignored) into
 * buf; returns its length (may exceed buflen: truncated), 0 when fi_addr
 * names no entry.  Entries reserved for a resolver are resolved here. */
size_t addr_of(fid_av *av, fi_addr_t fi_addr, void *buf, size_t buflen) noexcept;

/* Source address to fi_addr, FI_ADDR_NOTAVAIL when absent.  O(1): a hash
 * over the entries (built on first use, then kept up to date), arithmetic
 * for symmetric ranges. */
fi_addr_t reverse(fid_av *av, const void *addr, size_t len) noexcept;

/* The same for one part of a composite address (av_format::part): the
 * address of fi_addr's part `which`, 0 when the entry or the part is
 * absent or the format has no parts. */
size_t addr_of_part(fid_av *av, fi_addr_t fi_addr, int which, void *buf, size_t buflen) noexcept;
/* The entry whose part `which` equals addr (len bytes, as the
 * sub-provider's AV stores it), FI_ADDR_NOTAVAIL when none.  O(1) like
 * reverse: one hash per part, built on first use, kept up to date. */
fi_addr_t reverse_part(fid_av *av, int which, const void *addr, size_t len) noexcept;

/* What a completion reports as the source of fi_addr: its user id when the
 * AV has user ids (FI_AV_USER_ID), else fi_addr itself. */
fi_addr_t source_id(fid_av *av, fi_addr_t fi_addr) noexcept;

/* Endpoints bound to the AV (fi_close is -FI_EBUSY while any is). */
int ep_bind(fid_av *av) noexcept;
int ep_unbind(fid_av *av) noexcept;
/* An enabled endpoint uses auth key handle `key` (FI_AUTH_KEY remove is
 * -FI_EBUSY while it does). */
int auth_key_use(fid_av *av, fi_addr_t key, bool in_use) noexcept;
/* Removal notices: after fi_av_remove has removed entries, fn(arg, fi_addr)
 * runs once per removed fi_addr (as the caller passed it), in the caller's
 * thread, with no AV lock held.  An endpoint uses it to drop what it keeps
 * for that peer (tcp: the connection).  unwatch_removes returns once no
 * notice to (fn, arg) is running; then none will start.  0 or -FI_EINVAL. */
using removed_fn = void (*)(void *arg, fi_addr_t fi_addr) noexcept;
int watch_removes(fid_av *av, removed_fn fn, void *arg) noexcept;
int unwatch_removes(fid_av *av, removed_fn fn, void *arg) noexcept;

/* Removal notices only cover this process.  A named AV that other processes
 * write (is_shared) can have an entry removed or replaced behind the
 * endpoint's back: entry_stamp changes whenever that happens, so what an
 * endpoint derived from an entry is checked on use with one load.  0 for a
 * bad handle or an index past the end. */
bool is_shared(fid_av *av) noexcept;
uint64_t entry_stamp(fid_av *av, fi_addr_t fi_addr) noexcept;
/* The AV's change count: it moves with every insert, remove and user id
 * change, in this process or (a shared AV) another, so what an endpoint
 * derived from any entries is current while the count reads as it did
 * then (one load, for a per-message path; read it with a relaxed atomic
 * load).  nullptr for a bad handle. */
const uint64_t *change_count(fid_av *av) noexcept;

/* ---- reserved entries (PMIx wire-up) ---- */

/* Fills addr (buffer of *len bytes) for the entry reserved with token;
 * sets *len; 0 or a negative FI_E*. */
using resolver_fn = int (*)(void *ctx, fi_addr_t fi_addr, uint64_t token, void *addr,
			    size_t *len);
int set_resolver(fid_av *av, resolver_fn fn, void *ctx) noexcept;
/* Reserves count entries (sequential indices, like an insert); token i
 * (48 bits) goes to the resolver on first use of out[i].  Returns how
 * many were reserved: on a full AV, fewer, and the rest of out reads
 * FI_ADDR_NOTAVAIL. */
int reserve(fid_av *av, const uint64_t *tokens, size_t count, fi_addr_t *out) noexcept;

/* ---- reserved AV names (PMIx wire-up: "pmix:") ---- */

/* fi_av_open with attr->name starting with a registered prefix is handed
 * to fn instead of opening shared memory (kept here, inline, so the engine
 * needs one call in its open path). */
using named_open_fn = int (*)(prov::domain *dom, const av_format *fmt, fi_av_attr *attr,
			      fid_av **av, void *context);
/* A part that reserves names (src/pmix_glue) registers its handler here;
 * src/api does it once before the first fabric opens, so every AV (which
 * needs a domain, so a fabric) sees it. */
namespace named_detail {
struct slot {
	std::atomic<const char *> prefix{nullptr};
	std::atomic<named_open_fn> fn{nullptr};
};
inline slot slots[4];
} // namespace named_detail
/* prefix must be a literal; at most 4 prefixes.  0 or -FI_ENOSPC. */
inline int register_named_open(const char *prefix, named_open_fn fn) noexcept
{
	for (named_detail::slot &s : named_detail::slots) {
		const char *none = nullptr;
		if (s.prefix.load() == prefix || s.prefix.compare_exchange_strong(none, prefix)) {
			s.fn.store(fn);
			return 0;
		}
	}
	return -FI_ENOSPC;
}
/* The handler of name, or nullptr. */
inline named_open_fn named_open_for(const char *name) noexcept
{
	for (named_detail::slot &s : named_detail::slots) {
		const char *p = s.prefix.load();
		if (p && std::strncmp(name, p, std::strlen(p)) == 0)
			return s.fn.load();
	}
	return nullptr;
}

/* ---- for tests ---- */
struct stats {
	uint64_t resolves;    /* node names looked up (getaddrinfo or literal) */
	uint64_t recoveries;  /* shared AVs repaired after a dead writer */
};
stats get_stats() noexcept;
/* Called at numbered points of a shared insert while the writer holds the
 * lock (1: blob written, record not yet; 2: record written, end not
 * yet); a test makes it _exit to simulate a crash. */
extern void (*test_crash_hook)(int point);
/* Resident bytes of the AV's arena pages (mincore), header included. */
size_t resident_bytes(fid_av *av) noexcept;

} // namespace wu::av

#endif
