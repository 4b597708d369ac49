/* SPDX-License-Identifier: BSD-3-Clause */
/* What the entry points set up once before any object opens: the parts
 * below that offer hooks to each other are joined here, from above, so no
 * part reaches up (e.g. the AV engine learns of "pmix:" names). */
#ifndef WU_API_INIT_H
#define WU_API_INIT_H

namespace wu::api {

/* Idempotent and cheap after the first call. */
void init_once() noexcept;

} // namespace wu::api

#endif
