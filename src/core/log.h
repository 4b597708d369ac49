/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal logging: libfabric-compatible lines (FI_LOG_LEVEL, FI_LOG_PROV,
 * FI_LOG_SUBSYS) behind printf-checked macros.
 *
 *   WU_WARN(prov, subsys, fmt, ...)   always compiled in
 *   WU_INFO(prov, subsys, fmt, ...)   always compiled in
 *   WU_DBG(prov, subsys, fmt, ...)    compiled in while WU_LOG_CEILING >= 2
 *   WU_TRACE(prov, subsys, fmt, ...)  compiled in while WU_LOG_CEILING >= 3
 *                                     (default only with WU_ENABLE_DEBUG)
 *   WU_WARN_SPARSE(prov, subsys, ...) rate limited by FI_LOG_INTERVAL
 *   WU_WARN_ONCE(prov, subsys, ...)   first time only
 *
 * WU_WARN and WU_INFO are limited per call site, so that a flood (of bad
 * connections, say) cannot write thousands of lines: a burst of
 * log_site_burst lines, then one per FI_LOG_INTERVAL ms, which says how
 * many lines from that site were suppressed since the last one printed.
 * FI_LOG_INTERVAL=0 turns the limit off.  Debug and trace, asked for
 * explicitly, are never limited.
 *
 * Messages end in "\n" by libfabric convention (one is added if missing).
 * A disabled call costs one relaxed load and one predictable branch; the
 * environment is parsed once, lazily, with no static constructor. */
#ifndef WU_CORE_LOG_H
#define WU_CORE_LOG_H

#include <atomic>
#include <cstdarg>
#include <cstdint>

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "core/func.h"

/* Verbosity ceiling for compile-time removal: 0 warn, 1 info, 2 debug,
 * 3 trace (per-operation tracing, the noisiest). */
#ifndef WU_LOG_CEILING
#if defined(WU_ENABLE_DEBUG) && WU_ENABLE_DEBUG
#define WU_LOG_CEILING 3
#else
#define WU_LOG_CEILING 2
#endif
#endif

namespace wu {

/* The "core" provider: owner of core log lines and of FI_<NAME> params. */
extern struct fi_provider core_prov;

namespace log_detail {

/* Bit (subsys * FI_LOG_MAX + level) is set when that pair passes
 * FI_LOG_LEVEL and FI_LOG_SUBSYS.  Starts with every bit set (uninit is
 * bit 63) so the first check of any pair takes the slow path, which
 * parses the environment. */
inline constexpr std::uint64_t uninit_bit = std::uint64_t{1} << 63;
extern constinit std::atomic<std::uint64_t> mask;

constexpr std::uint64_t bit(int level, int subsys) noexcept
{
	return std::uint64_t{1} << (subsys * FI_LOG_MAX + level);
}

/* Finishes the check: parses the environment if needed, applies the
 * FI_LOG_PROV filter. */
bool enabled_slow(const struct fi_provider *prov, int level, int subsys) noexcept;

} // namespace log_detail

/* True when a message of this provider/level/subsystem would be printed. */
inline bool log_enabled(const struct fi_provider *prov, enum fi_log_level level,
			enum fi_log_subsys subsys) noexcept
{
	std::uint64_t m = log_detail::mask.load(std::memory_order_relaxed);
	if (__builtin_expect(!(m & log_detail::bit(level, subsys)), 1))
		return false;
	return log_detail::enabled_slow(prov, level, subsys);
}

/* Formats and writes one line (one write(2)) to stderr, unfiltered;
 * keeps errno. */
void log_emit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	      const char *func, int line, const char *fmt, ...) noexcept
	__attribute__((format(printf, 6, 7)));
void log_vemit(const struct fi_provider *prov, enum fi_log_level level,
	       enum fi_log_subsys subsys, const char *func, int line, const char *fmt,
	       va_list ap) noexcept __attribute__((format(printf, 6, 0)));

/* One call site's limiter state (zero-initialised static storage in the
 * macro; guarded by a lock in log.cpp). */
struct log_site {
	std::uint64_t refilled_ms; /* time tokens were last topped up */
	std::uint64_t suppressed;  /* lines dropped since the last printed */
	std::uint32_t tokens;
	bool started;
};
inline constexpr std::uint32_t log_site_burst = 10;

/* True when this site may print a line now; *suppressed is then how many
 * were dropped before it (the count restarts). */
bool log_admit(log_site *site, enum fi_log_level level, std::uint64_t *suppressed) noexcept;

/* log_emit that appends "(N lines like this suppressed)" when N > 0. */
void log_emit_site(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys, const char *func, int line, std::uint64_t suppressed,
		   const char *fmt, ...) noexcept __attribute__((format(printf, 7, 8)));

/* Tests only: the millisecond clock of the per-site limit (nullptr: the
 * monotonic clock). */
void log_set_clock_for_tests(std::uint64_t (*now_ms)()) noexcept;

/* Rate limiter behind fi_log_ready: true at most once per FI_LOG_INTERVAL
 * ms per *showtime (thread-safe). */
bool log_ready(const struct fi_provider *prov, enum fi_log_level level,
	       enum fi_log_subsys subsys, std::uint64_t *showtime) noexcept;

/* Parsed settings, for tests and diagnostics. */
struct log_settings {
	int level;		/* highest enabled fi_log_level */
	std::uint32_t subsys_mask; /* bit per fi_log_subsys */
	int interval_ms;	/* FI_LOG_INTERVAL */
};
log_settings log_current() noexcept;

/* Tests only: forget the parsed environment so the next call re-reads it.
 * Not safe while other threads log. */
void log_reset_for_tests() noexcept;

} // namespace wu

#define WU_LOG(prov, level, subsys, fmt, ...)                                                      \
	do {                                                                                       \
		static ::wu::log_site wu_site_;                                                    \
		std::uint64_t wu_suppressed_;                                                      \
		if (::wu::log_enabled((prov), (level), (subsys)) &&                                \
		    ::wu::log_admit(&wu_site_, (level), &wu_suppressed_))                          \
			::wu::log_emit_site((prov), (level), (subsys), WU_FUNC_, __LINE__,         \
					    wu_suppressed_, fmt __VA_OPT__(, ) __VA_ARGS__);       \
	} while (0)

/* Compiled out, but the format is still checked against the arguments. */
#define WU_LOG_OFF(prov, level, subsys, fmt, ...)                                                  \
	do {                                                                                       \
		if (0)                                                                             \
			::wu::log_emit((prov), (level), (subsys), WU_FUNC_, __LINE__,              \
				       fmt __VA_OPT__(, ) __VA_ARGS__);                            \
	} while (0)

#define WU_WARN(prov, subsys, fmt, ...) WU_LOG(prov, FI_LOG_WARN, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#define WU_INFO(prov, subsys, fmt, ...) WU_LOG(prov, FI_LOG_INFO, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)

#if WU_LOG_CEILING >= 2
#define WU_DBG(prov, subsys, fmt, ...) WU_LOG(prov, FI_LOG_DEBUG, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#else
#define WU_DBG(prov, subsys, fmt, ...) WU_LOG_OFF(prov, FI_LOG_DEBUG, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#endif

/* Emitted at libfabric's FI_LOG_TRACE level (FI_LOG_LEVEL=trace shows it). */
#if WU_LOG_CEILING >= 3
#define WU_TRACE(prov, subsys, fmt, ...) WU_LOG(prov, FI_LOG_TRACE, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#else
#define WU_TRACE(prov, subsys, fmt, ...) WU_LOG_OFF(prov, FI_LOG_TRACE, subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#endif

#define WU_WARN_SPARSE(prov, subsys, fmt, ...)                                                     \
	do {                                                                                       \
		static std::uint64_t wu_showtime_;                                                 \
		if (::wu::log_enabled((prov), FI_LOG_WARN, (subsys)) &&                            \
		    ::wu::log_ready((prov), FI_LOG_WARN, (subsys), &wu_showtime_))                 \
			::wu::log_emit((prov), FI_LOG_WARN, (subsys), WU_FUNC_, __LINE__,          \
				       fmt __VA_OPT__(, ) __VA_ARGS__);                            \
	} while (0)

#define WU_WARN_ONCE(prov, subsys, fmt, ...)                                                       \
	do {                                                                                       \
		static std::atomic<bool> wu_warned_{false};                                        \
		if (::wu::log_enabled((prov), FI_LOG_WARN, (subsys)) &&                            \
		    !wu_warned_.exchange(true, std::memory_order_relaxed))                         \
			::wu::log_emit((prov), FI_LOG_WARN, (subsys), WU_FUNC_, __LINE__,          \
				       fmt __VA_OPT__(, ) __VA_ARGS__);                            \
	} while (0)

#endif
