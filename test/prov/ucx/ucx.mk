# SPDX-License-Identifier: BSD-3-Clause
# ucx provider (issue 16): its own suite (tag layout limits, lazy UCP
# endpoints, corrupt addresses, peer death, provider order) and Debian's
# fi_pingpong on it; the provider suites run it through prov_fixture.h.
EXTRA_DIST += test/prov/ucx/ucx_fi_pingpong.sh
if WU_PROV_UCX
TESTS += test/prov/ucx/ucx_fi_pingpong.sh
endif
if WU_PROV_UCX
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/ucx/test_ucx
TESTS += test/prov/ucx/test_ucx
UNIT_TESTS += test/prov/ucx/test_ucx
test_prov_ucx_test_ucx_SOURCES = test/prov/ucx/test_ucx.cpp test/prov/common/prov_fixture.h
test_prov_ucx_test_ucx_CPPFLAGS = $(GTEST_CPPFLAGS_ALL) $(UCX_CPPFLAGS)
test_prov_ucx_test_ucx_LDADD = $(GTEST_LDADD_ALL) $(UCX_LDFLAGS) $(UCX_LIBS) -lpthread
endif
endif
