# SPDX-License-Identifier: BSD-3-Clause
# The generated msg/tagged/rma/atomic ops tables (src/prov/common/ep_ops.h)
# against a fake provider: no transport, so it also runs under ASan
# (check-unit).
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_ep_ops
TESTS += test/prov/common/test_ep_ops
UNIT_TESTS += test/prov/common/test_ep_ops
test_prov_common_test_ep_ops_SOURCES = test/prov/common/test_ep_ops.cpp
test_prov_common_test_ep_ops_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_ep_ops_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# The switch to auto progress (src/prov/common/progress.h) on the cm engine.
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_auto_runner
TESTS += test/prov/common/test_auto_runner
UNIT_TESTS += test/prov/common/test_auto_runner
TSAN_TESTS += test/prov/common/test_auto_runner
test_prov_common_test_auto_runner_SOURCES = test/prov/common/test_auto_runner.cpp
test_prov_common_test_auto_runner_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_auto_runner_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# The endpoint base and the receive core (src/prov/common/ep_base.h, rx.h)
# on a real domain's objects, with no transport (a tcp domain's).
if WU_GTEST_TCP
check_PROGRAMS += test/prov/common/test_ep_base
TESTS += test/prov/common/test_ep_base
UNIT_TESTS += test/prov/common/test_ep_base
test_prov_common_test_ep_base_SOURCES = test/prov/common/test_ep_base.cpp
test_prov_common_test_ep_base_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_ep_base_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
