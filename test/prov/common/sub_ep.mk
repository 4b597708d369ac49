# SPDX-License-Identifier: BSD-3-Clause
# shm and tcp endpoints as sub-endpoints of the wireup provider
# (prov/common/sub_ep.h): one lock, one lent receive context, one CQ and a
# two-part AV.
if WU_GTEST_WIREUP
check_PROGRAMS += test/prov/common/test_sub_ep
TESTS += test/prov/common/test_sub_ep
UNIT_TESTS += test/prov/common/test_sub_ep
TSAN_TESTS += test/prov/common/test_sub_ep
test_prov_common_test_sub_ep_SOURCES = test/prov/common/test_sub_ep.cpp test/prov/common/prov_fixture.h
test_prov_common_test_sub_ep_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_sub_ep_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
