/* SPDX-License-Identifier: BSD-3-Clause */
/* Visibility of the exported fi_* entry points.  The library is built with
 * -fvisibility=hidden; a version script picks what is exported.  Embedded
 * builds keep everything hidden so a parent library never re-exports fi_*. */
#ifndef WU_CORE_EXPORT_H
#define WU_CORE_EXPORT_H

#ifdef WU_EMBEDDED
#define WU_EXPORT
/* No symbol versions when embedded: the parent links us statically. */
#define WU_SYMVER(impl, name_at_node)
#else
#define WU_EXPORT __attribute__((visibility("default")))
#define WU_SYMVER(impl, name_at_node) __asm__(".symver " #impl "," name_at_node)
#endif

#endif
