# SPDX-License-Identifier: BSD-3-Clause
# shm provider: addresses (names from a job and a rank, fi_getinfo, the
# FI_ADDR_STR AV) and transfers above the bounce size with and without
# the single copy, peers that die or close, flow control and progress.
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_addr
TESTS += test/prov/shm/test_shm_addr
UNIT_TESTS += test/prov/shm/test_shm_addr
TSAN_TESTS += test/prov/shm/test_shm_addr
test_prov_shm_test_shm_addr_SOURCES = test/prov/shm/test_shm_addr.cpp test/prov/common/prov_fixture.h
test_prov_shm_test_shm_addr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_addr_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
