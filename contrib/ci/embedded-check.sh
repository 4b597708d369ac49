#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# embedded-check.sh BUILD_DIR
# Builds Wireup the way MPICH's configure and make drive it for
# --with-libfabric=embedded (confdb's PAC_CONFIG_SUBDIR_ARGS and the
# ch4/ofi subconfigure): a VPATH build in BUILD_DIR/modules/libfabric of a
# parent build tree, the parent's flags reset to CFLAGS=' -fvisibility=hidden',
# its own options passed through, then `make all` and `make install` as the
# parent's recursion runs them.  Checks that the build is optimised, installs
# nothing, that the uninstalled libfabric.pc gives only what MPICH copies into
# its compiler wrappers, and that a C shared library linked from
# src/libfabric.la the way MPICH links libmpi.so calls into it and exports
# nothing of ours (no fi_*, no std:: template instantiations).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$1" && mkdir -p "$1"
b=$(cd "$1" && pwd)
sub=$b/modules/libfabric
mkdir -p "$sub"
cd "$sub"
fail() { echo "FAIL: $*"; exit 1; }

# PAC_RESET_ALL_FLAGS empties the parent's flags; the subconfigure gets the
# visibility flag, --disable-option-checking, the parent's prefix, the
# embedded options and the parent's own options.
env CFLAGS=' -fvisibility=hidden' CPPFLAGS= CXXFLAGS= FFLAGS= FCFLAGS= LDFLAGS= LIBS= \
	${SHELL:-/bin/sh} "$top/configure" --disable-option-checking "--prefix=$b/prefix" \
	--enable-embedded --disable-psm3 --with-device=ch4:ofi --with-libfabric=embedded \
	--with-parent-only-option=1 --enable-parent-feature \
	--cache-file=/dev/null "--srcdir=$top" >configure.out 2>&1 || { tail -20 configure.out; exit 1; }
# The parent's `make` recurses with `make all`; benchmarks and tools are not
# part of it (they would not link without symbol versions).
make -j2 V=1 all >make.out 2>&1 || { tail -30 make.out; fail "make all in the embedded build"; }
for f in src/libfabric.la libfabric.pc "$top/include/rdma/fabric.h" "$top/include/rdma/fi_domain.h"; do
	[ -e "$f" ] || fail "missing $f"
done
for p in contrib/bench/eq_bench contrib/bench/getinfo_bench util/fi_info; do
	[ ! -e "$p" ] || fail "the embedded make all built $p"
done

# Optimised although the parent passes no -O: -O2 -DNDEBUG before its flags.
line=$(grep -- '-c .*prov/tcp/ep\.cpp' make.out | head -1)
[ -n "$line" ] || fail "no compile line for prov/tcp/ep.cpp in make.out"
case "$line" in
*" -O2 -DNDEBUG "*) ;;
*) echo "$line"; fail "prov/tcp/ep.cpp compiled without -O2 -DNDEBUG" ;;
esac
line=$(grep -- '-c .*hide_syms\.c' make.out | head -1)
case "$line" in
*"-O2 -DNDEBUG "*"-fvisibility=hidden"*) ;;
*) echo "$line"; fail "C sources lack -O2 -DNDEBUG before the parent's CFLAGS" ;;
esac

# The parent's `make install` recurses into us: nothing may land in its prefix.
make install DESTDIR="$b/dest" >install.out 2>&1 || { tail -20 install.out; fail "make install"; }
if [ -d "$b/dest" ] && [ -n "$(find "$b/dest" ! -type d)" ]; then
	find "$b/dest" ! -type d
	fail "the embedded build installed files"
fi

grep -q -- '-lstdc++' src/libfabric.la || fail "libfabric.la does not carry the C++ runtime"
grep -q "^Libs.private:.*-lstdc++" libfabric.pc || fail "libfabric.pc lacks the C++ runtime"
PKG_CONFIG_PATH=$sub pkg-config --cflags libfabric | grep -q -- "-I$top/include" ||
	fail "libfabric.pc does not point at the source include dir"
# MPICH's PAC_LIB_DEPS copies this (minus -lfabric) into mpicc: no build
# directory, no optional packages the parent's users would then need.
libs=$(pkg-config --static --libs "$sub/libfabric.pc")
[ "$(pkg-config --libs "$sub/libfabric.pc" | tr -d " ")" = "-lfabric" ] || fail "libfabric.pc Libs is not just -lfabric"
case " $libs " in
*" -L"* | *-libverbs* | *-lpmix* | *-lhwloc*) fail "libfabric.pc gives the parent's wrappers: $libs" ;;
esac

mkdir -p "$b/parent" && cd "$b/parent"
cat > parent.c <<'EOC'
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#define API __attribute__((visibility("default")))
API uint32_t parent_version(void) { return fi_version(); }
API int parent_probe(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return ret;
}
EOC
cat > main.c <<'EOC'
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <rdma/fabric.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	uint32_t (*ver)(void) = (uint32_t (*)(void))dlsym(h, "parent_version");
	int (*probe)(void) = (int (*)(void))dlsym(h, "parent_probe");
	if (!ver || !probe || dlsym(h, "fi_getinfo")) { fprintf(stderr, "bad exports\n"); return 1; }
	int r = probe();
	printf("parent_version=0x%x parent_probe=%d\n", ver(), r);
	return (ver() == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) && (r == 0 || r == -61)) ? 0 : 1;
}
EOC
# As MPICH links libmpi.so: libtool, the C driver, our .la as a convenience
# library, -fvisibility=hidden.
lt=$sub/libtool
$lt --quiet --mode=compile --tag=CC gcc -fvisibility=hidden -I"$top/include" -c parent.c
$lt --quiet --mode=link --tag=CC gcc -o libparent.la parent.lo "$sub/src/libfabric.la" -rpath /usr/local/lib
nm -D --defined-only .libs/libparent.so >exports.txt
if grep -E ' fi_' exports.txt; then
	fail "the parent library re-exports fi_* symbols"
fi
if grep -E ' _Z' exports.txt; then
	fail "the parent library exports $(grep -c ' _Z' exports.txt) C++ symbols of ours"
fi
extra=$(grep -v -E ' (parent_version|parent_probe)$' exports.txt | grep -v -E ' [A-Z] (_init|_fini|_edata|_end|__bss_start)$' || true)
[ -z "$extra" ] || { echo "$extra"; fail "the parent library exports symbols of ours"; }
gcc -I"$top/include" -o main main.c -ldl
./main "$PWD/.libs/libparent.so"
echo "embedded: ok"
