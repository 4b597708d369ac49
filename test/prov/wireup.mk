# SPDX-License-Identifier: BSD-3-Clause
# wireup provider (issue 15): routing, the merged matching engine, getinfo
# order (test_wireup); Debian's fi_pingpong and fi_info on it (wireup_fi_*.sh).
EXTRA_DIST += test/prov/wireup_fi_pingpong.sh test/prov/wireup_fi_info.sh test/prov/fi_info_lib.sh
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/test_wireup
TESTS += test/prov/test_wireup
UNIT_TESTS += test/prov/test_wireup
TSAN_TESTS += test/prov/test_wireup
test_prov_test_wireup_SOURCES = test/prov/test_wireup.cpp test/prov/prov_fixture.h test/prov/tcp_fixture.h
test_prov_test_wireup_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_wireup_LDADD = $(GTEST_LDADD_ALL) -lpthread
# Issue 28: sockaddr mode (FI_SOCKADDR* hints, fabtests' fi_av_test).
check_PROGRAMS += test/prov/test_wireup_sockaddr
TESTS += test/prov/test_wireup_sockaddr
UNIT_TESTS += test/prov/test_wireup_sockaddr
TSAN_TESTS += test/prov/test_wireup_sockaddr
test_prov_test_wireup_sockaddr_SOURCES = test/prov/test_wireup_sockaddr.cpp test/prov/prov_fixture.h
test_prov_test_wireup_sockaddr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_wireup_sockaddr_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
TESTS += test/prov/wireup_fi_pingpong.sh test/prov/wireup_fi_info.sh
