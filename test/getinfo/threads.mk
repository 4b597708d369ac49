# SPDX-License-Identifier: BSD-3-Clause
# fi_getinfo under concurrency (GoogleTest); meant to also run under
# --enable-sanitizers=thread.
if WU_HAVE_GTEST
check_PROGRAMS += test/getinfo/test_getinfo_threads
TESTS += test/getinfo/test_getinfo_threads
UNIT_TESTS += test/getinfo/test_getinfo_threads
test_getinfo_test_getinfo_threads_SOURCES = test/getinfo/test_getinfo_threads.cpp
test_getinfo_test_getinfo_threads_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_getinfo_test_getinfo_threads_LDADD = $(GTEST_LDADD_ALL)
endif
