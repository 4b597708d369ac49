/* SPDX-License-Identifier: BSD-3-Clause */
/* The symmetric layout of a job: every node runs ppn ranks, mapped by
 * node (block: rank = position * ppn + slot) or round-robin (cyclic:
 * rank = slot * nodes + position), so that a node's position and a rank's
 * slot on its node are arithmetic and fi_insertsym generators can give
 * fi_addr == rank.  Built from the launcher's node map alone. */
#ifndef WU_PMIX_GLUE_LAYOUT_H
#define WU_PMIX_GLUE_LAYOUT_H

#include <cstdint>
#include <string>
#include <vector>

#include "pmix_glue/client.h"

namespace wu::pmix {

struct layout {
	uint32_t nn = 0, ppn = 0;
	bool cyclic = false;
	std::vector<uint32_t> pos_of_node; /* launcher's node index -> position */
	std::vector<std::string> hosts;	   /* host name by position */
	uint32_t my_pos = 0, my_slot = 0;
	uint32_t rank_at(uint32_t pos, uint32_t slot) const
	{
		return cyclic ? slot * nn + pos : pos * ppn + slot;
	}
};

/* False, with why set to a sentence for the log, when the job does not
 * follow one layout (uneven nodes, another rank mapping, ranks missing). */
bool analyze(const node_map &m, uint32_t size, uint32_t me, layout &out, std::string &why);

} // namespace wu::pmix

#endif
