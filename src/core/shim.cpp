/* SPDX-License-Identifier: BSD-3-Clause */
#include "core/shim.h"

#include "core/log.h"

namespace wu {

void shim_report(const char *where, const char *what) noexcept
{
	WU_WARN(&core_prov, FI_LOG_CORE, "%s: internal error caught at the API boundary: %s\n",
		where ? where : "?", what ? what : "?");
}

} // namespace wu
