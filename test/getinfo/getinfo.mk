# SPDX-License-Identifier: BSD-3-Clause
# fi_getinfo(3) suites (the lead's; test/getinfo/Makefile.include holds the NIC suites).
if WU_HAVE_GTEST
check_PROGRAMS += test/getinfo/test_getinfo
TESTS += test/getinfo/test_getinfo
UNIT_TESTS += test/getinfo/test_getinfo
test_getinfo_test_getinfo_SOURCES = test/getinfo/test_getinfo.cpp test/util/fake_provider.h
test_getinfo_test_getinfo_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_getinfo_test_getinfo_LDADD = $(GTEST_LDADD_ALL)
endif
# Progress modes: the matcher's template_opts and the tcp provider's AUTO.
if WU_HAVE_GTEST
check_PROGRAMS += test/getinfo/test_getinfo_progress
TESTS += test/getinfo/test_getinfo_progress
UNIT_TESTS += test/getinfo/test_getinfo_progress
test_getinfo_test_getinfo_progress_SOURCES = test/getinfo/test_getinfo_progress.cpp
test_getinfo_test_getinfo_progress_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_getinfo_test_getinfo_progress_LDADD = $(GTEST_LDADD_ALL)
endif
