# SPDX-License-Identifier: BSD-3-Clause
# The matching engine alone (src/prov/common/match.h): no transport, so it
# also runs under ASan (check-unit) and TSan (check-tsan).
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_match
TESTS += test/prov/common/test_match
UNIT_TESTS += test/prov/common/test_match
TSAN_TESTS += test/prov/common/test_match
test_prov_common_test_match_SOURCES = test/prov/common/test_match.cpp
test_prov_common_test_match_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_match_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
