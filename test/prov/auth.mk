# tcp provider job-key handshake: key file, challenge-response, refusals,
# address takeover (test_tcp_auth); a second user's process against a
# root job (test_tcp_auth_user, run as root: SKIP otherwise).
if WU_HAVE_GTEST
tcp_auth_gtests = test/prov/test_tcp_auth test/prov/test_tcp_auth_user
check_PROGRAMS += $(tcp_auth_gtests)
TESTS += $(tcp_auth_gtests)
UNIT_TESTS += test/prov/test_tcp_auth
test_prov_test_tcp_auth_SOURCES = test/prov/test_tcp_auth.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_auth_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_auth_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_auth_user_SOURCES = test/prov/test_tcp_auth_user.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_auth_user_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_auth_user_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
