/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetric layout of a job from the launcher's node map (layout.h). */
#include "pmix_glue/layout.h"

namespace wu::pmix {

bool analyze(const node_map &m, uint32_t size, uint32_t me, layout &out, std::string &why)
{
	out = {};
	const size_t nn = m.nodes.size();
	if (nn == 0 || m.ranks.size() != nn) {
		why = "the launcher gave no node map";
		return false;
	}
	const size_t ppn = m.ranks[0].size();
	for (size_t i = 0; i < nn; i++)
		if (m.ranks[i].size() != ppn) {
			why = "node " + m.nodes[i] + " runs " + std::to_string(m.ranks[i].size()) +
			      " ranks, node " + m.nodes[0] + " " + std::to_string(ppn) +
			      ": not the same number on every node";
			return false;
		}
	if (ppn == 0 || nn * ppn != size) {
		why = std::to_string(nn) + " nodes x " + std::to_string(ppn) + " ranks is not the job size " +
		      std::to_string(size);
		return false;
	}
	out.nn = uint32_t(nn);
	out.ppn = uint32_t(ppn);
	out.pos_of_node.assign(nn, UINT32_MAX);
	out.hosts.assign(nn, {});
	/* Block when every node holds ranks [k*ppn, (k+1)*ppn); cyclic when it
	 * holds k, k+nn, ...  (one node or one rank per node: both; block). */
	for (int pass = 0; pass < 2; pass++) {
		bool cyclic = pass == 1, ok = true;
		std::vector<uint32_t> pos(nn, UINT32_MAX);
		std::vector<bool> taken(nn, false);
		for (size_t i = 0; i < nn && ok; i++) {
			const std::vector<uint32_t> &r = m.ranks[i];
			uint32_t k = cyclic ? r[0] : r[0] / uint32_t(ppn);
			if ((!cyclic && r[0] % ppn) || k >= nn || taken[k]) {
				ok = false;
				break;
			}
			for (size_t j = 0; j < ppn; j++)
				if (r[j] != (cyclic ? r[0] + j * nn : r[0] + j)) {
					ok = false;
					break;
				}
			taken[k] = true;
			pos[i] = k;
		}
		if (!ok)
			continue;
		out.cyclic = cyclic;
		out.pos_of_node = pos;
		for (size_t i = 0; i < nn; i++)
			out.hosts[pos[i]] = m.nodes[i];
		out.my_pos = cyclic ? me % uint32_t(nn) : me / uint32_t(ppn);
		out.my_slot = cyclic ? me / uint32_t(nn) : me % uint32_t(ppn);
		why.clear();
		return true;
	}
	why = "the launcher maps ranks neither by node in blocks nor round-robin (";
	for (size_t i = 0; i < nn && i < 3; i++) {
		why += (i ? "; " : "") + m.nodes[i] + " holds";
		for (size_t j = 0; j < ppn && j < 4; j++)
			why += " " + std::to_string(m.ranks[i][j]);
	}
	why += nn > 3 ? "; ...)" : ")";
	return false;
}

} // namespace wu::pmix
