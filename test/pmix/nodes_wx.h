/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_nodes' client for the wireup provider (nodes_wx.cpp). */
#ifndef WU_TEST_PMIX_NODES_WX_H
#define WU_TEST_PMIX_NODES_WX_H

#include <cstdint>
#include <string>
#include <vector>

namespace wu::test {

/* One rank of a VARIANT wx (modex) or wxdirect job of addrs.size() nodes
 * with ppn ranks each, mapped by block or cyclic; exit status. */
int wx_client(const std::string &variant, uint32_t ppn, bool cyclic,
	      const std::vector<std::string> &addrs);

} // namespace wu::test

#endif
