/* SPDX-License-Identifier: BSD-3-Clause */
/* Compares the ABI table built from Debian's 1.17 headers with the one built
 * from ours. Exit 0: no mismatch, 1: mismatches, 77: skipped, 99: error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_table.h"

/* Structs that may grow at the end (every shared member is still checked). */
static const char *const growable[] = {
	"struct fi_domain_attr", /* max_ep_auth_key, max_group_id */
	"struct fi_cq_err_entry", /* src_addr */
	"struct fi_ops_av",       /* insert_auth_key, lookup_auth_key, ... */
	"struct fi_mr_attr",      /* hmem_data, page_size, base_mr, sub_mr_cnt */
	"struct fi_mr_modify",    /* ends with a fi_mr_attr */
};

/* Members that are such a growable struct and end their own struct. */
static const char *const growable_members[] = { "struct fi_mr_modify.attr" };

/* Constants expected to differ: our API level is 2.6. */
static const char *const api_level[] = { "FI_MAJOR_VERSION", "FI_MINOR_VERSION" };

/* Constants 2.x changed on purpose (test/abi/abi26_check.c checks their 2.6
 * values):
 * - FI_ERRNO_MAX: 2.x appends FI_ENOMR and FI_EFIREWALLADDR.
 * - FI_VARIABLE_MSG: 2.x gave its bit 48 to FI_EXACT_DIRECTED_RECV and
 *   defines the name as 0; fi_getinfo still reads bit 48 from an api < 2.0
 *   caller as FI_VARIABLE_MSG (which no provider offers). */
static const char *const changed_in_2x[] = { "FI_ERRNO_MAX", "FI_VARIABLE_MSG" };

static int verbose;

static int listed(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return 1;
	return 0;
}

static void fmt_const(char *buf, size_t len, unsigned long long v,
		      unsigned long long size, unsigned long long sign)
{
	if (sign && (long long)v < 0)
		snprintf(buf, len, "%lld", (long long)v);
	else if (v < 10)
		snprintf(buf, len, "%llu", v);
	else
		snprintf(buf, len, "%llu (0x%llx)", v, v);
	(void)size;
}

static const char *type_desc(char *buf, size_t len, unsigned long long size,
			     unsigned long long sign)
{
	snprintf(buf, len, "%s %llu-byte", sign ? "signed" : "unsigned", size);
	return buf;
}

static int compare_entry(const struct abi_entry *d, const struct abi_entry *o)
{
	char b1[64], b2[64];
	int bad = 0;

	switch (d->kind) {
	case ABI_E_TYPE:
		if (d->a != o->a) {
			int grow = listed(d->owner, growable,
					  sizeof(growable) / sizeof(growable[0]));
			if (grow && o->a > d->a) {
				printf("ok (allowed end growth): %s: size %llu (debian) vs %llu (ours)\n",
				       d->owner, d->a, o->a);
			} else {
				printf("MISMATCH %s: size %llu (debian) vs %llu (ours)\n",
				       d->owner, d->a, o->a);
				bad++;
			}
		}
		if (d->b != o->b) {
			printf("MISMATCH %s: alignment %llu (debian) vs %llu (ours)\n",
			       d->owner, d->b, o->b);
			bad++;
		}
		break;
	case ABI_E_MEMBER:
	case ABI_E_FLEX_MEMBER:
		if (d->a != o->a) {
			printf("MISMATCH %s.%s: offset %llu (debian) vs %llu (ours)\n",
			       d->owner, d->member, d->a, o->a);
			bad++;
		}
		if (d->kind == ABI_E_MEMBER && d->b != o->b) {
			char path[160];

			snprintf(path, sizeof(path), "%s.%s", d->owner, d->member);
			if (listed(path, growable_members,
				   sizeof(growable_members) / sizeof(growable_members[0])) &&
			    o->b > d->b) {
				printf("ok (allowed end growth): %s: size %llu (debian) vs %llu (ours)\n",
				       path, d->b, o->b);
				break;
			}
			printf("MISMATCH %s.%s: size %llu (debian) vs %llu (ours)\n",
			       d->owner, d->member, d->b, o->b);
			bad++;
		}
		break;
	case ABI_E_CONST:
		if (d->a != o->a) {
			fmt_const(b1, sizeof(b1), d->a, d->b, d->c);
			fmt_const(b2, sizeof(b2), o->a, o->b, o->c);
			if (listed(d->owner, api_level,
				   sizeof(api_level) / sizeof(api_level[0]))) {
				printf("ok (API level): %s: %s (debian) vs %s (ours)\n",
				       d->owner, b1, b2);
			} else if (listed(d->owner, changed_in_2x,
					  sizeof(changed_in_2x) / sizeof(changed_in_2x[0]))) {
				printf("ok (changed in 2.x): %s: %s (debian) vs %s (ours)\n",
				       d->owner, b1, b2);
			} else {
				printf("MISMATCH %s: value %s (debian) vs %s (ours)\n",
				       d->owner, b1, b2);
				bad++;
			}
		}
		if (d->b != o->b || d->c != o->c) {
			printf("MISMATCH %s: type %s (debian) vs %s (ours)\n", d->owner,
			       type_desc(b1, sizeof(b1), d->b, d->c),
			       type_desc(b2, sizeof(b2), o->b, o->c));
			bad++;
		}
		break;
	}
	if (verbose && !bad)
		printf("same %s%s%s: %llu %llu %llu\n", d->owner, d->member ? "." : "",
		       d->member ? d->member : "", o->a, o->b, o->c);
	return bad;
}

int main(int argc, char **argv)
{
	const struct abi_table *deb = abi_debian_table();
	const struct abi_table *ours = abi_ours_table();
	size_t counts[4] = { 0 }, mismatches = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else {
			fprintf(stderr, "usage: %s [-v]\n", argv[0]);
			return 99;
		}
	}

	if (deb->unavailable) {
		printf("SKIP: %s\n", deb->unavailable);
		return 77;
	}
	if (ours->unavailable) {
		printf("ERROR: %s\n", ours->unavailable);
		return 99;
	}
	if (deb->count != ours->count) {
		printf("ERROR: tables differ in length (%zu vs %zu): stale objects?\n",
		       deb->count, ours->count);
		return 99;
	}

	for (size_t i = 0; i < deb->count; i++) {
		const struct abi_entry *d = &deb->entries[i], *o = &ours->entries[i];

		if (d->kind != o->kind || strcmp(d->owner, o->owner) ||
		    (d->member && strcmp(d->member, o->member))) {
			printf("ERROR: entry %zu differs in name: stale objects?\n", i);
			return 99;
		}
		counts[d->kind]++;
		mismatches += compare_entry(d, o);
	}

	printf("abi_compare: %s vs %s: %zu types, %zu members, %zu constants checked, "
	       "%zu mismatch%s\n", deb->origin, ours->origin, counts[ABI_E_TYPE],
	       counts[ABI_E_MEMBER] + counts[ABI_E_FLEX_MEMBER], counts[ABI_E_CONST],
	       mismatches, mismatches == 1 ? "" : "es");
	return mismatches ? 1 : 0;
}
