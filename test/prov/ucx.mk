# ucx provider (issue 16): its own suite (tag layout limits, lazy UCP
# endpoints, corrupt addresses, peer death, provider order) and Debian's
# fi_pingpong on it; the provider suites run it through prov_fixture.h.
EXTRA_DIST += test/prov/ucx_fi_pingpong.sh
if WU_HAVE_UCX
TESTS += test/prov/ucx_fi_pingpong.sh
endif
