# SPDX-License-Identifier: BSD-3-Clause
# node/service addressing on tcp, shm and wireup (issue 28): getinfo's
# src_addr/dest_addr, endpoints reached without exchange, insertsvc and
# insertsym, a shm name squatted by another user (root: else skipped).
if WU_GTEST_WIREUP
check_PROGRAMS += test/prov/common/test_addr_svc
TESTS += test/prov/common/test_addr_svc
test_prov_common_test_addr_svc_SOURCES = test/prov/common/test_addr_svc.cpp
test_prov_common_test_addr_svc_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_addr_svc_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
