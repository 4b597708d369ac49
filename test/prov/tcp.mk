# SPDX-License-Identifier: BSD-3-Clause
# The tcp provider's own suites (GoogleTest): its frames and handshake,
# connections and MSG connection management, rendezvous and the eager
# window, faults with killed peer processes, concurrency, atomics' wire
# frames, shared receive contexts; plus Debian's fi_pingpong on our
# library.  The suites of every provider are in suites.mk.
EXTRA_DIST += test/fuzz/fuzz_tcp_frame.cpp test/prov/tcp_fixture.h test/prov/fi_pingpong.sh test/prov/debian_bin.sh
if WU_HAVE_GTEST
tcp_gtests = \
	test/prov/test_tcp_rdm \
	test/prov/test_tcp_msg \
	test/prov/test_tcp_threads \
	test/prov/test_tcp_auto \
	test/prov/test_tcp_peek \
	test/prov/test_tcp_conn \
	test/prov/test_tcp_cm \
	test/prov/test_tcp_window \
	test/prov/test_tcp_wire \
	test/prov/test_tcp_limits \
	test/prov/test_tcp_atomic \
	test/prov/test_tcp_linger
check_PROGRAMS += $(tcp_gtests)
TESTS += $(tcp_gtests)
UNIT_TESTS += $(tcp_gtests)
test_prov_test_tcp_rdm_SOURCES = test/prov/test_tcp_rdm.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_msg_SOURCES = test/prov/test_tcp_msg.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_threads_SOURCES = test/prov/test_tcp_threads.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_auto_SOURCES = test/prov/test_tcp_auto.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_peek_SOURCES = test/prov/test_tcp_peek.cpp test/prov/peek_fixture.h
test_prov_test_tcp_conn_SOURCES = test/prov/test_tcp_conn.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_cm_SOURCES = test/prov/test_tcp_cm.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_window_SOURCES = test/prov/test_tcp_window.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_wire_SOURCES = test/prov/test_tcp_wire.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_limits_SOURCES = test/prov/test_tcp_limits.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_atomic_SOURCES = test/prov/test_tcp_atomic.cpp test/prov/atomic_fixture.h
test_prov_test_tcp_linger_SOURCES = test/prov/test_tcp_linger.cpp test/prov/tcp_fixture.h
test_prov_test_tcp_rdm_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_msg_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_threads_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_auto_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_peek_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_conn_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_cm_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_window_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_wire_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_limits_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_atomic_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_linger_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_test_tcp_rdm_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_msg_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_threads_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_auto_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_peek_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_conn_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_cm_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_window_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_wire_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_limits_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_atomic_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_test_tcp_linger_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
TESTS += test/prov/fi_pingpong.sh test/prov/ompi_mtl.sh test/prov/msg_cm.sh test/prov/srx_msg.sh
EXTRA_DIST += test/prov/msg_cm.sh test/prov/msg_cm.c test/prov/srx_msg.sh test/prov/srx_msg.c test/prov/diff_prog.sh test/prov/diff_prog.h
EXTRA_DIST += test/prov/ompi_mtl.sh test/prov/mpi_pingpong.c

# Concurrency suite for the ThreadSanitizer run (make check-tsan).
if WU_HAVE_GTEST
TSAN_TESTS += test/prov/test_tcp_threads test/prov/test_tcp_auto test/prov/test_tcp_wire test/prov/test_tcp_atomic
endif
