/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain C client: dlopen the built libfabric.so.1 (never Debian's), check it
 * is ours, and call the versioned entry points old binaries bind to. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

typedef uint32_t (*version_fn)(void);
typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);
typedef void (*freeinfo_fn)(struct fi_info *);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);
typedef const char *(*strerror_fn)(int);

static int failures;

#define CHECK(cond, ...)                                      \
	do {                                                  \
		if (!(cond)) {                                \
			fprintf(stderr, "FAIL: " __VA_ARGS__); \
			fputc('\n', stderr);                  \
			failures++;                           \
		}                                             \
	} while (0)

int main(void)
{
	const char *path = getenv("WU_LIB");
	if (!path || !*path) {
		fprintf(stderr, "WU_LIB is not set\n");
		return 99;
	}
	if (getenv("WU_EMBEDDED") && strcmp(getenv("WU_EMBEDDED"), "yes") == 0) {
		printf("SKIP: embedded builds make no shared library\n");
		return 77;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
		return 1;
	}
	version_fn ver = (version_fn)dlsym(h, "fi_version");
	CHECK(ver != NULL, "fi_version not exported");
	if (ver)
		CHECK(ver() == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "fi_version() = %u.%u: not our library",
		      FI_MAJOR(ver()), FI_MINOR(ver()));

	getinfo_fn gi_new = (getinfo_fn)dlsym(h, "fi_getinfo");
	getinfo_fn gi_13 = (getinfo_fn)dlvsym(h, "fi_getinfo", "FABRIC_1.3");
	freeinfo_fn fr_13 = (freeinfo_fn)dlvsym(h, "fi_freeinfo", "FABRIC_1.3");
	dupinfo_fn dup_13 = (dupinfo_fn)dlvsym(h, "fi_dupinfo", "FABRIC_1.3");
	CHECK(gi_new && gi_13 && fr_13 && dup_13, "versioned getinfo entry points missing");
	CHECK(dlvsym(h, "fi_getinfo", "FABRIC_1.9") == (void *)gi_new,
	      "fi_getinfo default version is not FABRIC_1.9");
	CHECK(dlvsym(h, "fi_fabric", "FABRIC_1.1") != NULL, "fi_fabric@FABRIC_1.1 missing");
	CHECK(dlvsym(h, "fi_tostr_r", "FABRIC_1.4") != NULL, "fi_tostr_r@FABRIC_1.4 missing");
	CHECK(dlvsym(h, "fi_open", "FABRIC_1.5") != NULL, "fi_open@FABRIC_1.5 missing");
	CHECK(dlsym(h, "fi_getinfo_1_3") == NULL, "implementation names must stay hidden");

	if (gi_13 && fr_13 && dup_13) {
		struct fi_info *hints = dup_13(NULL);
		CHECK(hints && hints->domain_attr && hints->fabric_attr, "fi_allocinfo@1.3 incomplete");
		struct fi_info *info = NULL;
		int ret = gi_13(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
		CHECK(ret == 0 || ret == -FI_ENODATA, "fi_getinfo@1.3 returned %d", ret);
		fr_13(info);
		fr_13(hints);
		ret = gi_13(FI_VERSION(9, 0), NULL, NULL, 0, NULL, &info);
		CHECK(ret == -FI_ENOSYS, "a newer API version must give -FI_ENOSYS, got %d", ret);
	}
	strerror_fn se = (strerror_fn)dlsym(h, "fi_strerror");
	CHECK(se && strcmp(se(FI_ENODATA), "No data available") == 0, "fi_strerror(FI_ENODATA)");
	dlclose(h);
	printf("%s: %d failure(s)\n", path, failures);
	return failures ? 1 : 0;
}
