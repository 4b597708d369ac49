# SPDX-License-Identifier: BSD-3-Clause
# shm provider: fi_inject's short path hands what it cannot finish to the
# general one (send counter, full queue, refusals) (issue 14's latency).
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_inject
TESTS += test/prov/shm/test_shm_inject
UNIT_TESTS += test/prov/shm/test_shm_inject
TSAN_TESTS += test/prov/shm/test_shm_inject
test_prov_shm_test_shm_inject_SOURCES = test/prov/shm/test_shm_inject.cpp test/prov/common/prov_fixture.h
test_prov_shm_test_shm_inject_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_inject_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
