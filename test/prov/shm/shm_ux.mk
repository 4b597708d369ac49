# SPDX-License-Identifier: BSD-3-Clause
# shm provider: robustness (issue 14): the bound on unexpected messages
# (FI_SHM_UNEXP_LIMIT), the atomics' operand limit, and the fi_av /
# fi_endpoint / CQ behaviour issue 14 asks of shm.
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_ux
TESTS += test/prov/shm/test_shm_ux
UNIT_TESTS += test/prov/shm/test_shm_ux
TSAN_TESTS += test/prov/shm/test_shm_ux
test_prov_shm_test_shm_ux_SOURCES = test/prov/shm/test_shm_ux.cpp test/prov/common/prov_fixture.h
test_prov_shm_test_shm_ux_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_ux_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# A full CQ: completions kept back arrive once it has room (MPICH
# rma/strided_acc_onelock hung).
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_cq_full
TESTS += test/prov/shm/test_shm_cq_full
UNIT_TESTS += test/prov/shm/test_shm_cq_full
TSAN_TESTS += test/prov/shm/test_shm_cq_full
test_prov_shm_test_shm_cq_full_SOURCES = test/prov/shm/test_shm_cq_full.cpp test/prov/common/prov_fixture.h
test_prov_shm_test_shm_cq_full_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_cq_full_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
