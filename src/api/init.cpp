/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include "api/init.h"

#include <mutex>

#ifdef WU_HAVE_PMIX
#include "pmix_glue/session.h"
#endif
#if WU_PROV_WIREUP
#include "prov/wireup/wireup.h"
#endif

namespace wu::api {

void init_once() noexcept
{
	/* once_flag is constant-initialised: no static constructor (embedded). */
	static std::once_flag once;
	try {
		std::call_once(once, [] {
#ifdef WU_HAVE_PMIX
			/* "pmix:" AV names and core/launcher.h's hooks. */
			pmix::register_hooks();
#endif
#if WU_PROV_WIREUP
			wireup::register_local_format();
#endif
		});
	} catch (...) {
		/* call_once throws only on a system error; registration retries
		 * on the next fabric open. */
	}
}

} // namespace wu::api
