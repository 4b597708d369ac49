/* SPDX-License-Identifier: BSD-3-Clause */
/* ABI table shared by abi_debian.c, abi_ours.c and abi_compare.c. */
#ifndef WIREUP_TEST_ABI_TABLE_H
#define WIREUP_TEST_ABI_TABLE_H

#include <stddef.h>

enum abi_entry_kind {
	ABI_E_TYPE,        /* a: sizeof, b: alignof */
	ABI_E_MEMBER,      /* a: offsetof, b: sizeof member */
	ABI_E_FLEX_MEMBER, /* a: offsetof (flexible array, no size) */
	ABI_E_CONST,       /* a: value, b: sizeof, c: 1 if signed */
};

struct abi_entry {
	int kind;
	const char *owner;  /* type spelling, or constant name */
	const char *member; /* member path, NULL otherwise */
	unsigned long long a, b, c;
};

struct abi_table {
	const char *unavailable; /* non-NULL: why this table is empty */
	const char *origin;      /* e.g. "libfabric 1.17 headers" */
	size_t count;
	const struct abi_entry *entries;
};

const struct abi_table *abi_debian_table(void);
const struct abi_table *abi_ours_table(void);

#endif
