/* SPDX-License-Identifier: BSD-3-Clause */
/* Body of abi_debian.c / abi_ours.c: define ABI_TABLE_FUNC and include this
 * after the <rdma/...> headers. Expands abi_list.h into a table. */
#include <stddef.h>
#include "abi_table.h"

#define ABI_STR_(x) #x
#define ABI_STR(x) ABI_STR_(x)
/* signedness of the promoted type (long and long long are equivalent here) */
#define ABI_SIGNED(x) _Generic((x) + 0, int: 1, long: 1, long long: 1, default: 0)

static const struct abi_entry abi_entries[] = {
#define ABI_STRUCT(T) { ABI_E_TYPE, #T, NULL, sizeof(T), _Alignof(T), 0 },
#define ABI_TYPE(T) { ABI_E_TYPE, #T, NULL, sizeof(T), _Alignof(T), 0 },
#define ABI_MEMBER(T, m) \
	{ ABI_E_MEMBER, #T, #m, offsetof(T, m), sizeof(((T *)0)->m), 0 },
#define ABI_FLEX_MEMBER(T, m) { ABI_E_FLEX_MEMBER, #T, #m, offsetof(T, m), 0, 0 },
#define ABI_CONST(N) \
	{ ABI_E_CONST, #N, NULL, (unsigned long long)(N), sizeof(N), ABI_SIGNED(N) },
#ifdef ABI_LIST_FILE /* e.g. a partial list from gen-abi-list.py --probe */
#include ABI_LIST_FILE
#else
#include "abi_list.h"
#endif
#undef ABI_STRUCT
#undef ABI_TYPE
#undef ABI_MEMBER
#undef ABI_FLEX_MEMBER
#undef ABI_CONST
};

const struct abi_table *ABI_TABLE_FUNC(void)
{
	static const struct abi_table table = {
		NULL,
		"libfabric " ABI_STR(FI_MAJOR_VERSION) "." ABI_STR(FI_MINOR_VERSION)
			" headers",
		sizeof(abi_entries) / sizeof(abi_entries[0]),
		abi_entries,
	};
	return &table;
}
