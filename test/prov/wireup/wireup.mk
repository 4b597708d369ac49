# SPDX-License-Identifier: BSD-3-Clause
# wireup provider (issue 15): routing, the merged matching engine, getinfo
# order (test_wireup); Debian's fi_pingpong and fi_info on it (wireup_fi_*.sh).
EXTRA_DIST += test/prov/wireup/wireup_fi_pingpong.sh test/prov/wireup/wireup_fi_info.sh test/prov/common/fi_info_lib.sh
if WU_GTEST_WIREUP
check_PROGRAMS += test/prov/wireup/test_wireup
TESTS += test/prov/wireup/test_wireup
UNIT_TESTS += test/prov/wireup/test_wireup
TSAN_TESTS += test/prov/wireup/test_wireup
test_prov_wireup_test_wireup_SOURCES = test/prov/wireup/test_wireup.cpp test/prov/common/prov_fixture.h test/prov/common/tcp_fixture.h
test_prov_wireup_test_wireup_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_wireup_test_wireup_LDADD = $(GTEST_LDADD_ALL) -lpthread
# Issue 28: sockaddr mode (FI_SOCKADDR* hints, fabtests' fi_av_test).
check_PROGRAMS += test/prov/wireup/test_wireup_sockaddr
TESTS += test/prov/wireup/test_wireup_sockaddr
UNIT_TESTS += test/prov/wireup/test_wireup_sockaddr
TSAN_TESTS += test/prov/wireup/test_wireup_sockaddr
test_prov_wireup_test_wireup_sockaddr_SOURCES = test/prov/wireup/test_wireup_sockaddr.cpp test/prov/common/prov_fixture.h
test_prov_wireup_test_wireup_sockaddr_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_wireup_test_wireup_sockaddr_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
if WU_PROV_WIREUP
TESTS += test/prov/wireup/wireup_fi_pingpong.sh test/prov/wireup/wireup_fi_info.sh
endif
