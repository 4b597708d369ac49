# SPDX-License-Identifier: BSD-3-Clause
# The tcp provider's own suites (GoogleTest): its frames and handshake,
# connections and MSG connection management, rendezvous and the eager
# window, faults with killed peer processes, concurrency, atomics' wire
# frames, shared receive contexts; plus Debian's fi_pingpong on our
# library.  The suites of every provider are in suites.mk.
EXTRA_DIST += test/fuzz/fuzz_tcp_frame.cpp test/prov/common/tcp_fixture.h test/prov/tcp/fi_pingpong.sh test/prov/common/debian_bin.sh
if WU_GTEST_TCP
tcp_gtests = \
	test/prov/tcp/test_tcp_rdm \
	test/prov/tcp/test_tcp_msg \
	test/prov/tcp/test_tcp_threads \
	test/prov/tcp/test_tcp_auto \
	test/prov/tcp/test_tcp_peek \
	test/prov/tcp/test_tcp_conn \
	test/prov/tcp/test_tcp_cm \
	test/prov/tcp/test_tcp_window \
	test/prov/tcp/test_tcp_wire \
	test/prov/tcp/test_tcp_limits \
	test/prov/tcp/test_tcp_atomic \
	test/prov/tcp/test_tcp_linger
check_PROGRAMS += $(tcp_gtests)
TESTS += $(tcp_gtests)
UNIT_TESTS += $(tcp_gtests)
test_prov_tcp_test_tcp_rdm_SOURCES = test/prov/tcp/test_tcp_rdm.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_msg_SOURCES = test/prov/tcp/test_tcp_msg.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_threads_SOURCES = test/prov/tcp/test_tcp_threads.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_auto_SOURCES = test/prov/tcp/test_tcp_auto.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_peek_SOURCES = test/prov/tcp/test_tcp_peek.cpp test/prov/common/peek_fixture.h
test_prov_tcp_test_tcp_conn_SOURCES = test/prov/tcp/test_tcp_conn.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_cm_SOURCES = test/prov/tcp/test_tcp_cm.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_window_SOURCES = test/prov/tcp/test_tcp_window.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_wire_SOURCES = test/prov/tcp/test_tcp_wire.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_limits_SOURCES = test/prov/tcp/test_tcp_limits.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_atomic_SOURCES = test/prov/tcp/test_tcp_atomic.cpp test/prov/common/atomic_fixture.h
test_prov_tcp_test_tcp_linger_SOURCES = test/prov/tcp/test_tcp_linger.cpp test/prov/common/tcp_fixture.h
test_prov_tcp_test_tcp_rdm_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_msg_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_threads_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_auto_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_peek_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_conn_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_cm_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_window_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_wire_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_limits_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_atomic_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_linger_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_tcp_test_tcp_rdm_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_msg_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_threads_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_auto_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_peek_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_conn_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_cm_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_window_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_wire_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_limits_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_atomic_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_tcp_test_tcp_linger_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
if WU_PROV_TCP
TESTS += test/prov/tcp/fi_pingpong.sh test/prov/tcp/ompi_mtl.sh test/prov/tcp/msg_cm.sh test/prov/tcp/srx_msg.sh
endif
EXTRA_DIST += test/prov/tcp/msg_cm.sh test/prov/tcp/msg_cm.c test/prov/tcp/srx_msg.sh test/prov/tcp/srx_msg.c test/prov/common/diff_prog.sh test/prov/common/diff_prog.h
EXTRA_DIST += test/prov/tcp/ompi_mtl.sh test/prov/common/mpi_pingpong.c

# Concurrency suite for the ThreadSanitizer run (make check-tsan).
if WU_GTEST_TCP
TSAN_TESTS += test/prov/tcp/test_tcp_threads test/prov/tcp/test_tcp_auto test/prov/tcp/test_tcp_wire test/prov/tcp/test_tcp_atomic
endif
