/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo benchmark (issue 3).  Plain C, public API only, so the same
 * binary runs on our library and on Debian's (LD_LIBRARY_PATH decides).
 *
 *   getinfo_bench [-n CALLS] [-r REPS] [-p PROV]   warm loop, one line per hint set
 *   getinfo_bench --once [null|prov|rdm]            exactly one fi_getinfo call, then exit
 *
 * Warm mode: one untimed call per hint set first (loads providers, builds
 * caches), then REPS repetitions of CALLS calls (fi_getinfo + fi_freeinfo);
 * the reported time is the median over repetitions of the per-call mean,
 * by the wall clock and by this thread's CPU time (the latter is immune to
 * other processes taking the CPU).  Output lines:
 *   "version <major>.<minor>"       fi_version() of the library that ran
 *   "warm <set> <wall_median_ns> <wall_min_ns> <wall_max_ns> <cpu_median_ns> <entries>" */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

/* Bind to the symbol versions Debian's libfabric 1.17 exports (FABRIC_1.3,
 * what every binary built against it imports), not to our headers' default
 * FABRIC_1.8, so the one binary loads on both libraries.  The 1.3 layout of
 * fi_domain_attr is a prefix of ours; we never touch domain_attr. */
__asm__(".symver fi_getinfo,fi_getinfo@FABRIC_1.3");
__asm__(".symver fi_freeinfo,fi_freeinfo@FABRIC_1.3");
__asm__(".symver fi_dupinfo,fi_dupinfo@FABRIC_1.3");

enum hint_set { SET_NULL, SET_PROV, SET_RDM, SET_COUNT };

static const char *const set_names[SET_COUNT] = {"null", "prov", "rdm_tagged"};

/* Built with this header's version: Debian's 1.17 library accepts up to
 * 1.17, ours up to 2.0; 1.17 is asked of both so the work is the same. */
#define BENCH_API FI_VERSION(1, 17)

static const char *prov_name = "tcp";

static struct fi_info *make_hints(enum hint_set s)
{
	struct fi_info *h;

	if (s == SET_NULL)
		return NULL;
	h = fi_allocinfo();
	if (!h) {
		fprintf(stderr, "fi_allocinfo failed\n");
		exit(2);
	}
	if (s == SET_PROV) {
		h->fabric_attr->prov_name = strdup(prov_name);
	} else {
		h->ep_attr->type = FI_EP_RDM;
		h->caps = FI_TAGGED;
	}
	return h;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int call_once(const struct fi_info *hints, int *entries)
{
	struct fi_info *info = NULL, *i;
	int ret = fi_getinfo(BENCH_API, NULL, NULL, 0, hints, &info);

	if (ret)
		return ret;
	if (entries) {
		*entries = 0;
		for (i = info; i; i = i->next)
			(*entries)++;
	}
	fi_freeinfo(info);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int parse_set(const char *s, enum hint_set *out)
{
	int k;

	for (k = 0; k < SET_COUNT; k++) {
		if (strcmp(s, set_names[k]) == 0 || (k == SET_RDM && strcmp(s, "rdm") == 0)) {
			*out = (enum hint_set)k;
			return 0;
		}
	}
	return -1;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-n CALLS] [-r REPS] [-p PROV] [-s null|prov|rdm]...\n"
		"       %s --once [null|prov|rdm] [-p PROV]\n",
		argv0, argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	long calls = 2000, reps = 15;
	int once = 0, nsel = 0, a, k;
	enum hint_set sel[SET_COUNT * 4];
	enum hint_set once_set = SET_NULL;
	uint32_t v;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--once") == 0) {
			once = 1;
			if (a + 1 < argc && argv[a + 1][0] != '-') {
				if (parse_set(argv[++a], &once_set))
					usage(argv[0]);
			}
		} else if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
			calls = strtol(argv[++a], NULL, 10);
		} else if (strcmp(argv[a], "-r") == 0 && a + 1 < argc) {
			reps = strtol(argv[++a], NULL, 10);
		} else if (strcmp(argv[a], "-p") == 0 && a + 1 < argc) {
			prov_name = argv[++a];
		} else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc &&
			   nsel < (int)(sizeof(sel) / sizeof(sel[0]))) {
			if (parse_set(argv[++a], &sel[nsel++]))
				usage(argv[0]);
		} else {
			usage(argv[0]);
		}
	}
	if (calls < 1 || reps < 1)
		usage(argv[0]);

	if (once) {
		/* Whole-process timing: nothing but the one call. */
		struct fi_info *h = make_hints(once_set);
		int ret = call_once(h, NULL);

		if (h)
			fi_freeinfo(h);
		if (ret) {
			fprintf(stderr, "fi_getinfo(%s): %s\n", set_names[once_set], fi_strerror(-ret));
			return 1;
		}
		return 0;
	}

	if (nsel == 0)
		for (k = 0; k < SET_COUNT; k++)
			sel[nsel++] = (enum hint_set)k;

	v = fi_version();
	printf("version %u.%u\n", FI_MAJOR(v), FI_MINOR(v));
	for (k = 0; k < nsel; k++) {
		struct fi_info *h = make_hints(sel[k]);
		uint64_t *per = calloc((size_t)reps, sizeof(*per));
		uint64_t *cpu = calloc((size_t)reps, sizeof(*cpu));
		int entries = 0, ret;
		long r, c;

		if (!per || !cpu) {
			fprintf(stderr, "out of memory\n");
			return 2;
		}
		/* Warm-up: the first call pays for loading and caches. */
		ret = call_once(h, &entries);
		if (ret) {
			fprintf(stderr, "fi_getinfo(%s): %s\n", set_names[sel[k]], fi_strerror(-ret));
			return 1;
		}
		for (r = 0; r < reps; r++) {
			uint64_t t0 = now_ns(CLOCK_MONOTONIC);
			uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

			for (c = 0; c < calls; c++) {
				ret = call_once(h, NULL);
				if (ret) {
					fprintf(stderr, "fi_getinfo(%s): %s\n", set_names[sel[k]],
						fi_strerror(-ret));
					return 1;
				}
			}
			cpu[r] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (uint64_t)calls;
			per[r] = (now_ns(CLOCK_MONOTONIC) - t0) / (uint64_t)calls;
		}
		qsort(per, (size_t)reps, sizeof(*per), cmp_u64);
		qsort(cpu, (size_t)reps, sizeof(*cpu), cmp_u64);
		printf("warm %s %llu %llu %llu %llu %d\n", set_names[sel[k]],
		       (unsigned long long)per[reps / 2], (unsigned long long)per[0],
		       (unsigned long long)per[reps - 1], (unsigned long long)cpu[reps / 2], entries);
		fflush(stdout);
		free(per);
		free(cpu);
		if (h)
			fi_freeinfo(h);
	}
	return 0;
}
