/* SPDX-License-Identifier: BSD-3-Clause */
/* Loads UCX (libucp, and through it libucs) on first use: see ucx_dl.h. */
#define WU_UCX_DL_IMPL
#include "prov/ucx/ucx_dl.h"

#include <dlfcn.h>

#include "prov/ucx/ucx.h"
#include "core/log.h"

namespace wu::ucx {
namespace {

ucx_api &table() noexcept
{
	static ucx_api t; /* function-local: no static constructor at load */
	return t;
}

/* UCX's soname major; the API this file was compiled against. */
constexpr const char *ucp_lib = "libucp.so.0";

bool load_once() noexcept
{
	ucx_api &t = table();
	/* GLOBAL: as when linked, so UCX's own modules (libuct_*.so) and a
	 * second user of UCX in the process (Open MPI's pml ucx) share it. */
	void *h = dlopen(ucp_lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		WU_WARN(prov_desc(), FI_LOG_CORE, "ucx: cannot load %s: %s\n", ucp_lib, e ? e : "?");
		return false;
	}
	bool ok = true;
	auto sym = [&](const char *name) -> void * {
		void *s = dlsym(h, name); /* libucp's dependencies (libucs) are searched too */
		if (!s) {
			const char *e = dlerror();
			WU_WARN(prov_desc(), FI_LOG_CORE, "ucx: %s has no %s: %s\n", ucp_lib, name, e ? e : "?");
			ok = false;
		}
		return s;
	};
#define WU_UCX_LOAD(f) t.f = reinterpret_cast<decltype(t.f)>(sym(#f));
	WU_UCX_FUNCS(WU_UCX_LOAD)
#undef WU_UCX_LOAD
	t.global_opts = static_cast<ucs_global_opts_t *>(sym("ucs_global_opts"));
	t.ok = ok; /* the handle stays open: UCX keeps atexit handlers */
	return ok;
}

} // namespace

const ucx_api &api() noexcept
{
	return table();
}

bool load() noexcept
{
	static const bool ok = load_once(); /* thread-safe once */
	return ok;
}

} // namespace wu::ucx
