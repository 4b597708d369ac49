# SPDX-License-Identifier: BSD-3-Clause
# Completion queues, counters and memory regions shared by every provider
# (GoogleTest, parameterised over the providers of prov_fixture.h); all
# also run under TSan.
EXTRA_DIST += test/prov/common/prov_fixture.h
if WU_HAVE_GTEST
cq_gtests = \
	test/prov/common/test_cq \
	test/prov/common/test_cntr \
	test/prov/common/test_mr
if WU_PROV_TCP
cq_gtests += test/prov/common/test_poll
endif
if WU_PROV_SHM
cq_gtests += test/prov/common/test_idle_yield
endif
check_PROGRAMS += $(cq_gtests)
TESTS += $(cq_gtests)
UNIT_TESTS += $(cq_gtests)

test_prov_common_test_cq_SOURCES = test/prov/common/test_cq.cpp test/prov/common/cq_fixture.h
test_prov_common_test_cntr_SOURCES = test/prov/common/test_cntr.cpp test/prov/common/cq_fixture.h
test_prov_common_test_mr_SOURCES = test/prov/common/test_mr.cpp test/prov/common/cq_fixture.h
test_prov_common_test_cq_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_cntr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_mr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_cq_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_cntr_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_mr_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_idle_yield_SOURCES = test/prov/common/test_idle_yield.cpp test/prov/common/prov_fixture.h
test_prov_common_test_idle_yield_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_idle_yield_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_poll_SOURCES = test/prov/common/test_poll.cpp test/prov/common/cq_fixture.h test/prov/common/tcp_fixture.h
test_prov_common_test_poll_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_poll_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif

# Concurrency suites for the ThreadSanitizer run (make check-tsan).
if WU_HAVE_GTEST
TSAN_TESTS += $(cq_gtests)
endif
