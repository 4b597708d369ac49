/* SPDX-License-Identifier: BSD-3-Clause */
/* What the files of the PMIx wire-up share: the session and the helpers
 * that talk to PMIx (session.cpp), and the filling of an AV in each mode
 * (fill.cpp).  Internal to src/pmix_glue; other parts use session.h. */
#ifndef WU_PMIX_GLUE_SESSION_IMPL_H
#define WU_PMIX_GLUE_SESSION_IMPL_H

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_wireup.h>

#include "core/launcher.h"
#include "pmix_glue/client.h"
#include "pmix_glue/layout.h"
#include "pmix_glue/wire.h"
#include "pmix_glue/session.h"

namespace wu::pmix {
/* Registered by providers in core (launcher.h). */
using launcher::local_format;
using launcher::local_format_for;
} // namespace wu::pmix

namespace wu::pmix::detail {

struct session;

/* The node blobs (wire.h) a fill reads, one per node, fetched from each
 * node's first rank the first time a rank of that node is needed. */
struct node_blobs {
	node_blobs(std::string n, uint64_t j, uint32_t f, uint32_t sz, get_kind k)
		: ns(std::move(n)), job(j), addr_format(f), size(sz), kind(k)
	{
	}
	std::string ns;
	uint64_t job;
	uint32_t addr_format, size;
	get_kind kind;
	int mapped = 0; /* 0 not yet, 1 node map read, -1 none: per-rank records */
	std::vector<uint32_t> node_of; /* rank -> node */
	std::vector<uint32_t> leader;  /* node -> its first rank */
	std::vector<int8_t> state;     /* node: 0 not fetched, 1 read, -1 none */
	std::vector<wire::blob_view> names;
	/* 0 with rank's name; -FI_ENODATA when no blob holds it (fetch its
	 * own record); another negative FI_E* for a bad blob (logged). */
	int find(session &s, uint32_t rank, std::vector<uint8_t> &out);
};

/* What a direct-mode AV needs to resolve an entry. */
struct resolver_ctx {
	std::string nspace;
	uint64_t job;
	uint32_t addr_format;
	fi_addr_t base;
	std::unique_ptr<node_blobs> nb; /* nullptr: per-rank records */
};

struct session {
	std::unique_ptr<client> cl;
	bool up = false;
	bool fake = false;
	std::string nspace;
	uint64_t job = 0;
	uint32_t rank = 0, size = 0, local_rank = 0, local_size = 0, num_nodes = 0, node_id = 0;
	std::vector<uint32_t> local_peers;
	/* The job's sizes, node and peers above were read for job and rank:
	 * an MPI library's process begins and ends our session for each
	 * fi_domain and fi_enable, and they do not change in between. */
	bool job_read = false;
	int mode = FI_WIREUP_AUTO; /* decided for the own namespace */
	bool published = false;
	std::vector<uint8_t> own_name;
	uint32_t own_format = 0;
	bool have_layout = false;
	std::string layout_why; /* why symmetric was declined ("" if not) */
	layout lay;
	uint32_t deviants = 0;
	uint64_t bytes_put = 0, gets = 0, fences = 0;
	/* Fetches of node-local peers' data (zero when their format has a
	 * local_format), bytes every get returned, local peers computed or
	 * found in a note (local.cpp). */
	uint64_t local_gets = 0, local_bytes = 0, bytes_got = 0;
	uint32_t local_computed = 0, local_noted = 0;
	uint64_t gets_again = 0;
	std::string note_path; /* this rank's note, "" when none */
	std::string card_path; /* this rank's card for its node's first rank */
	std::vector<wire::blob_name> own_blob; /* the node blob this rank put */
	std::list<resolver_ctx> resolvers; /* kept while the process lives */
};
extern std::recursive_mutex g_mu;
extern session *g_sess; /* never freed: AV resolvers point into it */

/* ---- session.cpp ---- */

const char *mode_name(int m);
std::string knob_string(const char *name);
int get_peer(session &s, const std::string &ns, uint32_t rank, const char *key, get_kind kind,
	     std::vector<uint8_t> &out);
int put(session &s, const char *key, const std::vector<uint8_t> &v, bool local_only);
int fence(session &s, bool collect);
bool launcher_has_nodes(session &s, const std::string &ns, std::vector<uint8_t> &table);
int ensure_layout(session &s);
int decide_mode(session &s, uint64_t flags);

/* ---- local.cpp ---- */

bool is_local_peer(const session &s, const std::string &ns, uint32_t rank);
/* The local_format of addr_format when rank of ns runs on this node, else
 * nullptr: its address is then built, not fetched. */
const local_format *computed_here(const session &s, const std::string &ns, uint32_t rank,
				  uint32_t addr_format);
/* The address of local peer rank (computed, or from its note); 0 or a
 * negative FI_E*, logged. */
int local_name(session &s, const local_format &f, const std::string &ns, uint32_t rank,
	       std::vector<uint8_t> &out);
/* After publish: leaves this rank's note when its name is not the
 * computed one (and removes an old one of this process when it is). */
int note_own(session &s, uint32_t addr_format, const void *name, size_t len);
/* Removes this rank's note and card (those it wrote). */
void drop_note(session &s);
/* Node blobs: a rank that is not its node's first leaves its ep record
 * in a card on this node (/dev/shm/wu<uid>.c<job id>.<rank>, written as a
 * note is) for the first rank to put in the blob.  read_card: 0 with the
 * name, -FI_ENOENT when there is none yet (or its writer is gone), another
 * negative FI_E* for a bad one (logged). */
int write_card(session &s, uint32_t addr_format, const void *name, size_t len);
int read_card(const session &s, uint32_t rank, uint32_t addr_format, std::vector<uint8_t> &out);
/* The node's first rank took rank's card into its blob: the file goes now,
 * so a rank killed before it exits leaves nothing in /dev/shm. */
void consume_card(const session &s, uint32_t rank) noexcept;

/* ---- node.cpp ---- */

/* FI_PMIX_NODE_RECORDS, and a mode that uses node blobs. */
bool node_records_on(int mode);
/* At publish (before its commit): the node's first rank puts the node
 * blob, waiting up to FI_PMIX_CARD_WAIT for its local peers' cards (also
 * when a provider publishes from fi_enable in a session of our own: a
 * direct-mode peer that fetched a blob without them keeps it); the others
 * leave their card.  !wait: the cards already there, and no card left. */
int publish_node(session &s, uint32_t addr_format, bool wait = true);

/* ---- fill.cpp ---- */

/* Who publishes: a call of fi_wireup_publish, or a provider enabling an
 * endpoint (FI_PMIX_AUTO_PUBLISH). */
enum class publish_origin { call, enable };
int publish_body(session &s, uint32_t addr_format, const void *name, size_t len, uint64_t flags,
		 publish_origin origin = publish_origin::call);
void fill_info(const session &s, fi_wireup_info *info, int mode, fi_addr_t base,
	       const std::string &ns, uint32_t size);
int fill_body(session &s, fid_av *av, uint32_t addr_format, const char *nspace, uint64_t flags,
	      fi_wireup_info *info);

} // namespace wu::pmix::detail

#endif
