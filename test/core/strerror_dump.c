/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints fi_strerror(n) for n in -300..300 (plus the int extremes) from the
 * libfabric .so named on the command line.  Not linked to libfabric: the
 * library is dlopen'ed so the same binary can dump Debian's and ours. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>

typedef const char *(*strerror_fn)(int);

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s /path/to/libfabric.so.1\n", argv[0]);
		return 2;
	}
	/* DEEPBIND: our symbols win inside the library even if another
	 * libfabric is already in the process. */
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	/* Binaries bind fi_strerror@FABRIC_1.0; an unversioned (embedded-style)
	 * build has no version node, so fall back to the plain name. */
	strerror_fn fn = (strerror_fn)dlvsym(h, "fi_strerror", "FABRIC_1.0");
	if (!fn)
		fn = (strerror_fn)dlsym(h, "fi_strerror");
	if (!fn) {
		fprintf(stderr, "%s: no fi_strerror: %s\n", argv[1], dlerror());
		return 1;
	}
	for (int n = -300; n <= 300; n++)
		printf("%d\t%s\n", n, fn(n));
	printf("%d\t%s\n", INT_MAX, fn(INT_MAX));
	printf("%d\t%s\n", INT_MIN, fn(INT_MIN));
	dlclose(h);
	return 0;
}
