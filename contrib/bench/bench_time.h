/* SPDX-License-Identifier: BSD-3-Clause */
/* Timing helpers shared by the C benchmarks in contrib/bench: a monotonic
 * clock in nanoseconds and the median of a run's samples. */
#ifndef WU_BENCH_TIME_H
#define WU_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static inline double median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
