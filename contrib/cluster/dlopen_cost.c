/* SPDX-License-Identifier: BSD-3-Clause */
/* What loading a library costs a process that already has some others
 * (init_icount.sh counts it under callgrind, --toggle-collect=load_target):
 *   dlopen_cost TARGET [ALREADY_LOADED...]
 * loads the ALREADY_LOADED libraries first (in passes, so each comes after
 * what it needs), then TARGET inside load_target(),
 * as Open MPI's component loader does (RTLD_LAZY | RTLD_GLOBAL), and runs
 * its constructors there too. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) void *load_target(const char *path)
{
	return dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TARGET [ALREADY_LOADED...]\n", argv[0]);
		return 2;
	}
	/* A library whose symbols come from another one of the list fails
	 * until that one is loaded: retry while a pass loads something. */
	int left = argc - 2;
	for (int progress = 1; left && progress;) {
		progress = 0;
		for (int i = 2; i < argc; i++) {
			if (argv[i] && dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL)) {
				argv[i] = NULL;
				left--;
				progress = 1;
			}
		}
	}
	for (int i = 2; i < argc; i++) {
		if (argv[i]) {
			dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL);
			fprintf(stderr, "dlopen_cost: %s\n", dlerror());
			return 1;
		}
	}
	if (!load_target(argv[1])) {
		fprintf(stderr, "dlopen_cost: %s\n", dlerror());
		return 1;
	}
	return 0;
}
