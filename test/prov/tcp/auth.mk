# SPDX-License-Identifier: BSD-3-Clause
# tcp provider job-key handshake: key file, challenge-response, refusals,
# address takeover, handshake relays (test_tcp_auth); a second user's
# process against a root job (test_tcp_auth_user, run as root: SKIP
# otherwise); a flood of connections that never authenticate
# (test_tcp_flood, from a second user when run as root).
if WU_GTEST_TCP
tcp_auth_gtests = test/prov/tcp/test_tcp_auth test/prov/tcp/test_tcp_auth_user test/prov/tcp/test_tcp_flood
check_PROGRAMS += $(tcp_auth_gtests)
TESTS += $(tcp_auth_gtests)
UNIT_TESTS += test/prov/tcp/test_tcp_auth
test_prov_tcp_test_tcp_auth_SOURCES = test/prov/tcp/test_tcp_auth.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_auth_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_auth_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_auth_user_SOURCES = test/prov/tcp/test_tcp_auth_user.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_auth_user_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_auth_user_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_flood_SOURCES = test/prov/tcp/test_tcp_flood.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_flood_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_flood_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
