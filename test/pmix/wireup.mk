# SPDX-License-Identifier: BSD-3-Clause
# PMIx wire-up tests (issue 7): GoogleTest suites on the in-memory PMIx, and
# a PMIx client run under mpirun and srun by wireup_launchers.sh.
if WU_HAVE_PMIX
if WU_HAVE_GTEST
check_PROGRAMS += test/pmix/test_wireup_unit
TESTS += test/pmix/test_wireup_unit
UNIT_TESTS += test/pmix/test_wireup_unit
test_pmix_test_wireup_unit_SOURCES = test/pmix/test_wireup_unit.cpp src/pmix_glue/fake_client.cpp src/pmix_glue/fake_client.h
test_pmix_test_wireup_unit_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_pmix_test_wireup_unit_LDADD = $(GTEST_LDADD_ALL)
# fi_open_ops("wireup_pmix") on every provider's domain (core/launcher.h).
check_PROGRAMS += test/pmix/test_ext_every_domain
TESTS += test/pmix/test_ext_every_domain
UNIT_TESTS += test/pmix/test_ext_every_domain
test_pmix_test_ext_every_domain_SOURCES = test/pmix/test_ext_every_domain.cpp
test_pmix_test_ext_every_domain_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_pmix_test_ext_every_domain_LDADD = $(GTEST_LDADD_ALL)
endif
endif
if WU_HAVE_PMIX
check_PROGRAMS += test/pmix/test_wireup_launch
test_pmix_test_wireup_launch_SOURCES = test/pmix/test_wireup_launch.cpp
test_pmix_test_wireup_launch_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_launch_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
TESTS += test/pmix/wireup_launchers.sh
endif
EXTRA_DIST += test/pmix/wireup_launchers.sh
# Launcher-published data from a PMIx server of our own, and its faults.
if WU_HAVE_PMIX
check_PROGRAMS += test/pmix/test_wireup_server test/pmix/test_wireup_lp
test_pmix_test_wireup_server_SOURCES = test/pmix/test_wireup_server.cpp
test_pmix_test_wireup_server_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_server_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
test_pmix_test_wireup_lp_SOURCES = test/pmix/test_wireup_lp.cpp test/pmix/rank_report.h
test_pmix_test_wireup_lp_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_lp_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
TESTS += test/pmix/wireup_server.sh
endif
EXTRA_DIST += test/pmix/wireup_server.sh
# Several nodes on one machine: network namespaces joined by a bridge, one
# PMIx server of ours per node, fences and direct modex relayed between them.
if WU_HAVE_PMIX
if WU_PROV_WIREUP
check_PROGRAMS += test/pmix/test_wireup_nodes
test_pmix_test_wireup_nodes_SOURCES = test/pmix/test_wireup_nodes.cpp test/pmix/nodes_wx.cpp test/pmix/nodes_wx.h test/pmix/rank_report.h
test_pmix_test_wireup_nodes_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_nodes_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
TESTS += test/pmix/netns.sh
endif
endif
EXTRA_DIST += test/pmix/netns.sh
# Issue 15: nothing fetched for node-local peers of a format that computes
# them (core/launcher.h's local_format), on the in-memory PMIx with a test format.
if WU_HAVE_PMIX
if WU_PROV_WIREUP
if WU_HAVE_GTEST
check_PROGRAMS += test/pmix/test_wireup_local
TESTS += test/pmix/test_wireup_local
UNIT_TESTS += test/pmix/test_wireup_local
test_pmix_test_wireup_local_SOURCES = test/pmix/test_wireup_local.cpp src/pmix_glue/fake_client.cpp src/pmix_glue/fake_client.h
test_pmix_test_wireup_local_CPPFLAGS = $(GTEST_CPPFLAGS_ALL)
test_pmix_test_wireup_local_LDADD = $(GTEST_LDADD_ALL)
endif
endif
endif
# Issue 15: zero bytes for node-local peers with the wireup provider under
# mpirun (all ranks on this node).
if WU_HAVE_PMIX
if WU_PROV_WIREUP
check_PROGRAMS += test/pmix/test_wireup_local_launch
test_pmix_test_wireup_local_launch_SOURCES = test/pmix/test_wireup_local_launch.cpp test/pmix/rank_report.h
test_pmix_test_wireup_local_launch_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_local_launch_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
TESTS += test/pmix/wireup_local_launch.sh
endif
endif
EXTRA_DIST += test/pmix/wireup_local_launch.sh
# Issue 28: fi_av_insertsym fills a wireup AV from launcher data only.
if WU_HAVE_PMIX
if WU_PROV_WIREUP
check_PROGRAMS += test/pmix/test_wireup_sym_launch
test_pmix_test_wireup_sym_launch_SOURCES = test/pmix/test_wireup_sym_launch.cpp test/pmix/rank_report.h
test_pmix_test_wireup_sym_launch_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CPPFLAGS)
test_pmix_test_wireup_sym_launch_LDADD = src/libwireup.la $(PMIX_LDFLAGS) $(PMIX_LIBS)
TESTS += test/pmix/wireup_sym_launch.sh
endif
endif
EXTRA_DIST += test/pmix/wireup_sym_launch.sh
# Issue 30: PMIx gets per rank bounded by the remote nodes (node blobs;
# symmetric by host names: none), 2 simulated nodes x 3 ranks under mpirun.
if WU_HAVE_PMIX
TESTS += test/pmix/wireup_node_gets.sh
endif
EXTRA_DIST += test/pmix/wireup_node_gets.sh
