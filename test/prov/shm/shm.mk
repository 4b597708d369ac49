# SPDX-License-Identifier: BSD-3-Clause
# shm transport (src/prov/shm/region.h) alone: regions, queue, bounce
# slots, cross-memory copy, wake-up, liveness, refusals.  No fabric
# objects, so it also runs under ASan (check-unit) and TSan (check-tsan).
# test_shm_region_user needs root (a second uid): SKIP otherwise.
EXTRA_DIST += test/prov/shm/shm_test_util.h
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_region test/prov/shm/test_shm_region_user
TESTS += test/prov/shm/test_shm_region test/prov/shm/test_shm_region_user
UNIT_TESTS += test/prov/shm/test_shm_region
TSAN_TESTS += test/prov/shm/test_shm_region
test_prov_shm_test_shm_region_SOURCES = test/prov/shm/test_shm_region.cpp test/prov/shm/shm_test_util.h
test_prov_shm_test_shm_region_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_region_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_shm_test_shm_region_user_SOURCES = test/prov/shm/test_shm_region_user.cpp test/prov/shm/shm_test_util.h
test_prov_shm_test_shm_region_user_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_region_user_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
