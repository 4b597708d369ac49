# SPDX-License-Identifier: BSD-3-Clause
# Completion queues, counters and memory regions shared by every provider
# (GoogleTest, parameterised over the providers of prov_fixture.h); all
# also run under TSan.
EXTRA_DIST += test/prov/prov_fixture.h
if WU_HAVE_GTEST
cq_gtests = \
	test/prov/test_cq \
	test/prov/test_cntr \
	test/prov/test_mr \
	test/prov/test_poll \
	test/prov/test_idle_yield
check_PROGRAMS += $(cq_gtests)
TESTS += $(cq_gtests)
UNIT_TESTS += $(cq_gtests)

test_prov_test_cq_SOURCES = test/prov/test_cq.cpp test/prov/cq_fixture.h
test_prov_test_cntr_SOURCES = test/prov/test_cntr.cpp test/prov/cq_fixture.h
test_prov_test_mr_SOURCES = test/prov/test_mr.cpp test/prov/cq_fixture.h
test_prov_test_cq_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_cntr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_mr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_cq_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_cntr_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_mr_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_idle_yield_SOURCES = test/prov/test_idle_yield.cpp test/prov/prov_fixture.h
test_prov_test_idle_yield_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_idle_yield_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_poll_SOURCES = test/prov/test_poll.cpp test/prov/cq_fixture.h test/prov/tcp_fixture.h
test_prov_test_poll_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_poll_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif

# Concurrency suites for the ThreadSanitizer run (make check-tsan).
if WU_HAVE_GTEST
TSAN_TESTS += test/prov/test_cq test/prov/test_cntr test/prov/test_mr test/prov/test_poll test/prov/test_idle_yield
endif
