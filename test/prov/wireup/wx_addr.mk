# SPDX-License-Identifier: BSD-3-Clause
# wireup provider: addresses (encode/decode, host id, the AV format).
# test_wx_addr_netns needs root (unshare(CLONE_NEWNET)): SKIP otherwise.
if WU_GTEST_WIREUP
check_PROGRAMS += test/prov/wireup/test_wx_addr
TESTS += test/prov/wireup/test_wx_addr
UNIT_TESTS += test/prov/wireup/test_wx_addr
test_prov_wireup_test_wx_addr_SOURCES = test/prov/wireup/test_wx_addr.cpp
test_prov_wireup_test_wx_addr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_wireup_test_wx_addr_LDADD = $(GTEST_LDADD_ALL)
endif
if WU_PROV_WIREUP
check_PROGRAMS += test/prov/wireup/test_wx_addr_netns
TESTS += test/prov/wireup/test_wx_addr_netns
test_prov_wireup_test_wx_addr_netns_SOURCES = test/prov/wireup/test_wx_addr_netns.cpp
test_prov_wireup_test_wx_addr_netns_CPPFLAGS = $(AM_CPPFLAGS)
test_prov_wireup_test_wx_addr_netns_LDADD = src/libwireup.la
endif
