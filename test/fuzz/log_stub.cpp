/* SPDX-License-Identifier: BSD-3-Clause */
/* The logging seam for fuzz targets: the core's log API without the rest
 * of the core (params, providers).  Every message is still formatted, so
 * format/argument mistakes and overreads in log lines are caught by the
 * sanitizers; printing is off unless WU_FUZZ_LOG=1 (libFuzzer runs
 * millions of rejected inputs). */
#include <cstdio>
#include <cstdlib>

#include "core/log.h"

namespace wu {

struct fi_provider core_prov = {
	.version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.context = {},
	.name = "core",
	.getinfo = nullptr,
	.fabric = nullptr,
	.cleanup = nullptr,
};

namespace log_detail {
constinit std::atomic<std::uint64_t> mask{~std::uint64_t{0}};

bool enabled_slow(const struct fi_provider *, int, int) noexcept { return true; }
} // namespace log_detail

void log_vemit(const struct fi_provider *prov, enum fi_log_level, enum fi_log_subsys,
	       const char *func, int line, const char *fmt, va_list ap) noexcept
{
	static const bool print = [] {
		const char *e = getenv("WU_FUZZ_LOG");
		return e && *e == '1';
	}();
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (print)
		fprintf(stderr, "libfabric:%s:%s():%d %s", prov ? prov->name : "?", func, line, buf);
}

void log_emit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	      const char *func, int line, const char *fmt, ...) noexcept
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit(prov, level, subsys, func, line, fmt, ap);
	va_end(ap);
}

/* Every line is formatted: no per-site limit here. */
bool log_admit(log_site *, enum fi_log_level, std::uint64_t *suppressed) noexcept
{
	*suppressed = 0;
	return true;
}

void log_emit_site(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys, const char *func, int line, std::uint64_t,
		   const char *fmt, ...) noexcept
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit(prov, level, subsys, func, line, fmt, ap);
	va_end(ap);
}

} // namespace wu
