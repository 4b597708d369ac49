#!/bin/sh
# embedded-check.sh BUILD_DIR
# Builds Wireup the way an MPI stack's configure drives it (--enable-embedded
# with options it does not know), links src/libfabric.la into a small C shared
# library with the C driver and libtool, calls it, and checks that library
# exports no fi_* symbol.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$1
rm -rf "$b" && mkdir -p "$b"
cd "$b"
"$top/configure" -q --enable-embedded --disable-option-checking --with-parent-only-option=1 \
	--enable-parent-feature >configure.out 2>&1 || { tail -20 configure.out; exit 1; }
make -j2 src/libfabric.la >make.out 2>&1 || { tail -30 make.out; exit 1; }
for f in src/libfabric.la libfabric.pc "$top/include/rdma/fabric.h" "$top/include/rdma/fi_domain.h"; do
	[ -e "$f" ] || { echo "missing $f"; exit 1; }
done
grep -q -- '-lstdc++' src/libfabric.la || { echo "libfabric.la does not carry the C++ runtime"; exit 1; }
grep -q "^Libs.private:.*-lstdc++" libfabric.pc || { echo "libfabric.pc lacks the C++ runtime"; exit 1; }
PKG_CONFIG_PATH=$b pkg-config --cflags libfabric | grep -q -- "-I$top/include" ||
	{ echo "libfabric.pc does not point at the source include dir"; exit 1; }

mkdir -p parent && cd parent
cat > parent.c <<'EOC'
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
uint32_t parent_version(void) { return fi_version(); }
int parent_probe(void)
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
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	uint32_t (*ver)(void) = (uint32_t (*)(void))dlsym(h, "parent_version");
	int (*probe)(void) = (int (*)(void))dlsym(h, "parent_probe");
	if (!ver || !probe || dlsym(h, "fi_getinfo")) { fprintf(stderr, "bad exports\n"); return 1; }
	int r = probe();
	printf("parent_version=0x%x parent_probe=%d\n", ver(), r);
	return (ver() == ((2u << 16) | 0u) && (r == 0 || r == -61)) ? 0 : 1;
}
EOC
lt=../libtool
$lt --quiet --mode=compile --tag=CC gcc -I"$top/include" -c parent.c
$lt --quiet --mode=link --tag=CC gcc -o libparent.la parent.lo ../src/libfabric.la -rpath /usr/local/lib
if nm -D --defined-only .libs/libparent.so | grep -E ' fi_' ; then
	echo "FAIL: the parent library re-exports fi_* symbols"; exit 1
fi
gcc -o main main.c -ldl
./main "$PWD/.libs/libparent.so"
echo "embedded: ok"
