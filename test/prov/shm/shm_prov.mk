# SPDX-License-Identifier: BSD-3-Clause
# The shm provider at process level, through the public API (issue 14):
# 1,024 endpoints across 9 processes (test_shm_scale), peers killed with
# SIGKILL mid-transfer (test_shm_faults; shm_faults_pipelined.sh: the
# large ones again without single copy), another user's process
# (test_shm_user, run as root: SKIP otherwise), a dead peer's pid given to
# another user's process before a single copy (test_shm_pid_reuse, root
# and a pid namespace: SKIP otherwise), the region of a killed process
# removed by the next endpoint (test_shm_reap, in a private /dev/shm: SKIP
# without a mount namespace); Debian's fi_info and
# fi_pingpong on our library (shm_fi_*.sh).  Each SKIPs (77) while the
# library has no provider "shm".
EXTRA_DIST += test/prov/shm/shm_proc.h test/prov/shm/shm_fi_info.sh test/prov/shm/shm_fi_pingpong.sh \
	test/prov/shm/shm_faults_pipelined.sh
if WU_GTEST_SHM
shm_prov_gtests = \
	test/prov/shm/test_shm_scale \
	test/prov/shm/test_shm_faults \
	test/prov/shm/test_shm_user \
	test/prov/shm/test_shm_pid_reuse \
	test/prov/shm/test_shm_reap
check_PROGRAMS += $(shm_prov_gtests)
TESTS += $(shm_prov_gtests)
UNIT_TESTS += test/prov/shm/test_shm_faults
test_prov_shm_test_shm_reap_SOURCES = test/prov/shm/test_shm_reap.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_reap_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_reap_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_shm_test_shm_scale_SOURCES = test/prov/shm/test_shm_scale.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_faults_SOURCES = test/prov/shm/test_shm_faults.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_user_SOURCES = test/prov/shm/test_shm_user.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_pid_reuse_SOURCES = test/prov/shm/test_shm_pid_reuse.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_scale_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_faults_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_user_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_pid_reuse_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_scale_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_shm_test_shm_faults_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_shm_test_shm_user_LDADD = $(GTEST_LDADD_ALL) -lpthread
test_prov_shm_test_shm_pid_reuse_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
if WU_PROV_SHM
TESTS += test/prov/shm/shm_fi_info.sh test/prov/shm/shm_fi_pingpong.sh
endif
if WU_GTEST_SHM
TESTS += test/prov/shm/shm_faults_pipelined.sh
endif
# The split copy of LARGE messages (src/prov/shm/split.h): both sides
# copying, iovecs, truncation, a sender not progressing, a receiver
# without single copy, either side killed mid-split.
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_split
TESTS += test/prov/shm/test_shm_split
test_prov_shm_test_shm_split_SOURCES = test/prov/shm/test_shm_split.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_split_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_split_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
# The pipelined eager path of medium messages (src/prov/shm/pipe.cpp):
# sizes, unexpected arrival, iovecs, truncation, a receive posted
# mid-stream, FI_SHM_UNEXP_LIMIT, the sender killed mid-message.
if WU_GTEST_SHM
check_PROGRAMS += test/prov/shm/test_shm_pipe
TESTS += test/prov/shm/test_shm_pipe
test_prov_shm_test_shm_pipe_SOURCES = test/prov/shm/test_shm_pipe.cpp test/prov/shm/shm_proc.h
test_prov_shm_test_shm_pipe_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_prov_shm_test_shm_pipe_LDADD = $(GTEST_LDADD_ALL) -lpthread
endif
