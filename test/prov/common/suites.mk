# SPDX-License-Identifier: BSD-3-Clause
# The msg, tagged, peek/claim, RMA and atomic suites of every provider
# (GoogleTest, parameterised over the providers of prov_fixture.h); each
# provider's own wire and connection tests stay in its test_<name>_*
# programs (tcp.mk).  rdm, peek and atomic also run under TSan.
EXTRA_DIST += test/prov/common/peek_fixture.h test/prov/common/atomic_fixture.h
if WU_GTEST_TCP
prov_gtests = \
	test/prov/common/test_prov_rdm \
	test/prov/common/test_prov_msg \
	test/prov/common/test_prov_peek \
	test/prov/common/test_prov_atomic
check_PROGRAMS += $(prov_gtests)
TESTS += $(prov_gtests)
UNIT_TESTS += $(prov_gtests)
TSAN_TESTS += test/prov/common/test_prov_rdm test/prov/common/test_prov_peek test/prov/common/test_prov_atomic
test_prov_common_test_prov_rdm_SOURCES = test/prov/common/test_prov_rdm.cpp test/prov/common/tcp_fixture.h
test_prov_common_test_prov_msg_SOURCES = test/prov/common/test_prov_msg.cpp test/prov/common/tcp_fixture.h
test_prov_common_test_prov_peek_SOURCES = test/prov/common/test_prov_peek.cpp test/prov/common/peek_fixture.h
test_prov_common_test_prov_atomic_SOURCES = test/prov/common/test_prov_atomic.cpp test/prov/common/atomic_fixture.h
test_prov_common_test_prov_rdm_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_msg_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_peek_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_atomic_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_rdm_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_prov_msg_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_prov_peek_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_prov_atomic_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# Shared receive contexts on tcp, shm and wireup (fi_srx_context, its own
# provider list: ucx has none); also under TSan.
if WU_GTEST_WIREUP
check_PROGRAMS += test/prov/common/test_prov_srx
TESTS += test/prov/common/test_prov_srx
UNIT_TESTS += test/prov/common/test_prov_srx
TSAN_TESTS += test/prov/common/test_prov_srx
test_prov_common_test_prov_srx_SOURCES = test/prov/common/test_prov_srx.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_srx_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_srx_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# Issue 32 on every provider: a flood of small unexpected messages (the
# receiver holds a bounded number, the sender is held back, none is lost;
# not under TSan: 300,000 messages a run), and fi_av_insert of blobs not in
# the AV's format.
if WU_GTEST_WIREUP
issue32_gtests = test/prov/common/test_prov_flood test/prov/common/test_prov_av_blobs
check_PROGRAMS += $(issue32_gtests)
TESTS += $(issue32_gtests)
UNIT_TESTS += $(issue32_gtests)
test_prov_common_test_prov_flood_SOURCES = test/prov/common/test_prov_flood.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_av_blobs_SOURCES = test/prov/common/test_prov_av_blobs.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_flood_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_av_blobs_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_flood_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_common_test_prov_av_blobs_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# Issue 30: receives directed at a peer killed with -9 fail with
# FI_EHOSTDOWN (tcp, shm, wireup).
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_prov_dead_peer
TESTS += test/prov/common/test_prov_dead_peer
UNIT_TESTS += test/prov/common/test_prov_dead_peer
test_prov_common_test_prov_dead_peer_SOURCES = test/prov/common/test_prov_dead_peer.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_dead_peer_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_dead_peer_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# Issue 27: what a program built against libfabric 2.6 relies on.
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_prov_api26
TESTS += test/prov/common/test_prov_api26
UNIT_TESTS += test/prov/common/test_prov_api26
test_prov_common_test_prov_api26_SOURCES = test/prov/common/test_prov_api26.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_api26_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_api26_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# Issue 28 on every provider: RMA ordering (getinfo hints, back-to-back
# operations) and FI_RMA_EVENT counters.
if WU_HAVE_GTEST
check_PROGRAMS += test/prov/common/test_prov_rma_event
TESTS += test/prov/common/test_prov_rma_event
UNIT_TESTS += test/prov/common/test_prov_rma_event
TSAN_TESTS += test/prov/common/test_prov_rma_event
test_prov_common_test_prov_rma_event_SOURCES = test/prov/common/test_prov_rma_event.cpp test/prov/common/prov_fixture.h
test_prov_common_test_prov_rma_event_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_common_test_prov_rma_event_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
