#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# renames29.sh [TOP]: the mechanical renames of issue 29 ("names that explain
# themselves", "tests mirror the parts"), rerunnable on a merged tree: files
# are moved with git mv where they still sit at their old path, identifiers
# and paths rewritten with sed over the tree.  Each step is idempotent.
#   1. test/prov split into common/ tcp/ shm/ ucx/ wireup/ (src/prov's parts);
#      program paths and automake variables follow.
#   2. one GoogleTest naming style in test/prov: snake_case suites and tests.
#   3. names with one meaning each:
#      src/pmix_glue/wireup*   -> session*      (the PMIx glue's session, not the provider)
#      src/getinfo/match.*     -> filter.*      (fi_getinfo's template filter, not tag matching)
#      src/core/shm.*          -> shm_object.*  (wu::shm_object: checked POSIX shm objects,
#                                                not the shm provider's wu::shm)
#      src/av/region*          -> arena*        (wu::av::arena: the memory an AV lives in,
#                                                not the shm provider's region nor an MR)
set -eu
top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top"

mv_if() { # mv_if OLD NEW
	if [ -e "$1" ] && [ ! -e "$2" ]; then
		mkdir -p "$(dirname "$2")"
		git mv "$1" "$2"
	fi
}
# Text files that may name a path or identifier (not generated ones).
tree_files() {
	git ls-files -- src test contrib util docs man include Makefile.am configure.ac README.md NEWS.md .ci m4 |
		grep -vE '\.(xml|png|svg|txt)$|/corpus/' | grep -v '^contrib/dev/renames29.sh$'
}
sed_tree() { # sed_tree SED-SCRIPT: over every tree file that changes
	tree_files | xargs grep -lE "$2" 2>/dev/null | xargs -r sed -i -E "$1" || true
}

# ---- 1. test/prov/{common,tcp,shm,ucx,wireup} ----
common="prov_fixture.h cq_fixture.h peek_fixture.h atomic_fixture.h tcp_fixture.h
	debian_bin.sh fi_info_lib.sh diff_prog.sh diff_prog.h mpi_pingpong.c
	test_cq.cpp test_cntr.cpp test_mr.cpp test_poll.cpp test_idle_yield.cpp test_ep_ops.cpp
	test_auto_runner.cpp test_ep_base.cpp test_match.cpp test_sub_ep.cpp test_addr_svc.cpp
	test_prov_rdm.cpp test_prov_msg.cpp test_prov_peek.cpp test_prov_atomic.cpp test_prov_flood.cpp
	test_prov_av_blobs.cpp test_prov_dead_peer.cpp test_prov_api26.cpp test_prov_rma_event.cpp
	cq.mk suites.mk ep_ops.mk match.mk sub_ep.mk addr_svc.mk"
tcp="test_tcp_rdm.cpp test_tcp_msg.cpp test_tcp_threads.cpp test_tcp_auto.cpp test_tcp_peek.cpp
	test_tcp_conn.cpp test_tcp_cm.cpp test_tcp_window.cpp test_tcp_wire.cpp test_tcp_limits.cpp
	test_tcp_atomic.cpp test_tcp_linger.cpp test_tcp_srx.cpp test_tcp_auth.cpp test_tcp_auth_user.cpp
	test_tcp_flood.cpp fi_pingpong.sh msg_cm.sh msg_cm.c srx_msg.sh srx_msg.c ompi_mtl.sh
	tcp.mk auth.mk"
shm="test_shm_region.cpp test_shm_region_user.cpp test_shm_addr.cpp test_shm_inject.cpp
	test_shm_scale.cpp test_shm_faults.cpp test_shm_user.cpp test_shm_pid_reuse.cpp test_shm_reap.cpp
	test_shm_split.cpp test_shm_pipe.cpp test_shm_ux.cpp test_shm_cq_full.cpp
	shm_proc.h shm_test_util.h shm_faults_pipelined.sh shm_fi_info.sh shm_fi_pingpong.sh
	shm.mk shm_addr.mk shm_inject.mk shm_prov.mk shm_ux.mk"
ucx="test_ucx.cpp ucx_fi_pingpong.sh ucx.mk"
wireup="test_wireup.cpp test_wireup_sockaddr.cpp test_wx_addr.cpp test_wx_addr_netns.cpp
	wireup_fi_info.sh wireup_fi_pingpong.sh wireup.mk wx_addr.mk"
# Paths and automake names of the test/prov files rewritten first (a file
# moved by hand since is rewritten all the same), then the files moved.
for d in common tcp shm ucx wireup; do
	eval "list=\$$d"
	for f in $list; do
		stem=${f%.*}
		case $f in
		*.mk) sed_tree "s#test/prov/$f\b#test/prov/$d/$f#g" "test/prov/$f" ;;
		test_*.cpp)
			sed_tree "s#test/prov/$stem\b#test/prov/$d/$stem#g; s#\btest_prov_${stem}_(SOURCES|CPPFLAGS|LDADD|LDFLAGS|CXXFLAGS|DEPENDENCIES)\b#test_prov_${d}_${stem}_\1#g" \
				"test/prov/$stem\b|test_prov_${stem}_" ;;
		*) sed_tree "s#test/prov/$f\b#test/prov/$d/$f#g" "test/prov/$f" ;;
		esac
		mv_if "test/prov/$f" "test/prov/$d/$f"
	done
done
# Includes across the new folders: the fixtures live in common/, shm's
# helpers in shm/; util/ is one level further up.
for f in prov_fixture.h cq_fixture.h peek_fixture.h atomic_fixture.h tcp_fixture.h diff_prog.h; do
	for g in test/prov/tcp/* test/prov/shm/* test/prov/ucx/* test/prov/wireup/*; do
		[ -f "$g" ] && sed -i -E "s#^(\#include \")$f\"#\1../common/$f\"#" "$g"
	done
done
for g in test/prov/*/*.h test/prov/*/*.cpp; do
	[ -f "$g" ] && sed -i -E 's#^(\#include ")\.\./util/#\1../../util/#' "$g"
done
# Scripts: the top of the tree is one folder further up; shared helpers in common/.
for g in test/prov/*/*.sh; do
	sed -i -E 's#(\$\(dirname "\$0"\)/\.\./\.\.)"#\1/.."#g; s#"\$here/\.\./\.\."#"$here/../../.."#g' "$g"
	case $g in
	test/prov/common/*) ;;
	*) sed -i -E 's#"\$\(dirname "\$0"\)/(debian_bin|fi_info_lib|diff_prog)\.sh"#"$(dirname "$0")/../common/\1.sh"#' "$g" ;;
	esac
done
# fi_info_lib.sh is sourced from a provider's folder: debian_bin.sh is in common/.
sed -i -E 's#^\. "\$\(dirname "\$0"\)/debian_bin\.sh"#. "$(dirname "$0")/../common/debian_bin.sh"#' \
	test/prov/common/fi_info_lib.sh
# diff_prog.sh builds the caller's C program, found beside the caller.
sed -i -E 's#"\$srcdir/test/prov/\$prog\.c"#"$(cd "$(dirname "$0")" \&\& pwd)/$prog.c"#' test/prov/common/diff_prog.sh
sed -i -E 's#"\$here/mpi_pingpong\.c"#"$here/../common/mpi_pingpong.c"#' test/prov/tcp/ompi_mtl.sh
sed -i -E 's#"\$\(dirname "\$0"\)/shm_fi_pingpong\.sh"#"$(dirname "$0")/../shm/shm_fi_pingpong.sh"#' \
	test/prov/wireup/wireup_fi_pingpong.sh
sed -i -E 's#"\$here/shm_fi_pingpong\.sh"#"$here/../shm/shm_fi_pingpong.sh"#' test/prov/ucx/ucx_fi_pingpong.sh

# ---- 2. snake_case suites and tests (the majority style of test/prov) ----
snake() { # camelCase words after TEST*( or a fixture's name -> snake_case
	perl -pi -e 's/\b(AutoRunner|EpOps|Api26|WxAddr)\b/my $s=$1; $s=~s{(?<=[a-z0-9])([A-Z])}{_\l$1}g; lc $s/ge;
		s/^(\s*(?:TEST|TEST_F|TEST_P)\(\s*\w+\s*,\s*)([A-Z]\w*)/my ($h,$t)=($1,$2); $t=~s{(?<=[a-z0-9])([A-Z])}{_$1}g; $t=~s{(?<=[A-Z])([A-Z])(?=[a-z])}{_$1}g; $h . lc $t/e' "$@"
}
for g in test/prov/common/test_auto_runner.cpp test/prov/common/test_ep_ops.cpp \
	test/prov/common/test_prov_api26.cpp test/prov/wireup/test_wx_addr.cpp test/prov/common/test_match.cpp \
	test/prov/common/test_cntr.cpp test/prov/shm/test_shm_pipe.cpp test/prov/shm/test_shm_split.cpp; do
	[ -f "$g" ] && snake "$g"
done

# ---- 3. one meaning per name ----
# The PMIx glue's session (pmix_glue/wireup.* named the glue after the provider).
mv_if src/pmix_glue/wireup.cpp src/pmix_glue/session.cpp
mv_if src/pmix_glue/wireup.h src/pmix_glue/session.h
mv_if src/pmix_glue/wireup_impl.h src/pmix_glue/session_impl.h
sed_tree 's#pmix_glue/wireup(_impl)?\.(h|cpp)\b#pmix_glue/session\1.\2#g; s#\bWU_PMIX_GLUE_WIREUP(_IMPL)?_H\b#WU_PMIX_GLUE_SESSION\1_H#g' \
	'pmix_glue/wireup|WU_PMIX_GLUE_WIREUP'
# Within the glue, its files named alone ("see wireup.h").
for g in $(git ls-files src/pmix_glue); do
	sed -i -E 's#\bwireup(_impl)?\.(h|cpp)\b#session\1.\2#g' "$g"
done
# fi_getinfo's template filter (getinfo/match.* beside prov/common/match.*, the tag matching engine).
mv_if src/getinfo/match.cpp src/getinfo/filter.cpp
mv_if src/getinfo/match.h src/getinfo/filter.h
sed_tree 's#getinfo/match\.(h|cpp)\b#getinfo/filter.\1#g; s#\bWU_GETINFO_MATCH_H\b#WU_GETINFO_FILTER_H#g' \
	'getinfo/match\.|WU_GETINFO_MATCH_H'
# Checked POSIX shm objects (core/shm.h's wu::shm, the shm provider's namespace too).
mv_if src/core/shm.cpp src/core/shm_object.cpp
mv_if src/core/shm.h src/core/shm_object.h
sed_tree 's#core/shm\.(h|cpp)\b#core/shm_object.\1#g; s#\bWU_CORE_SHM_H\b#WU_CORE_SHM_OBJECT_H#g; s#\b(wu::)?shm::(create_excl|open_ours|check_ours)\b#\1shm_object::\2#g' \
	'core/shm\.|WU_CORE_SHM_H|shm::(create_excl|open_ours|check_ours)'
sed -i -E 's#^namespace wu::shm \{#namespace wu::shm_object {#; s#^\} // namespace wu::shm$#} // namespace wu::shm_object#' \
	src/core/shm_object.h src/core/shm_object.cpp
# The AV's arena (av/region.h's wu::av::region; "region" is the shm provider's
# per-endpoint object and, in fi_mr, a memory region).
mv_if src/av/region.cpp src/av/arena.cpp
mv_if src/av/region.h src/av/arena.h
mv_if src/av/region_map.cpp src/av/arena_map.cpp
sed_tree 's#av/region(_map)?\.(h|cpp)\b#av/arena\1.\2#g; s#\bWU_AV_REGION_H\b#WU_AV_ARENA_H#g' 'av/region|WU_AV_REGION_H'
for g in $(git ls-files src/av test/av test/fuzz contrib/bench | grep -E '\.(h|cpp)$'); do
	case $g in src/av/*) ;; *) grep -q '"av/arena.h"' "$g" || continue ;; esac
	sed -i -E 's/\ba region\b/an arena/g; s/\bA region\b/An arena/g; s/\bRegion\b/Arena/g;
		s/\b(new_)?region(_ptr|_release|_unmap|s)?\b/\1arena\2/g' "$g"
done
echo "renames29.sh: done (review with git status / git diff)"
