/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging in libfabric's line format:
 *   libfabric:PID:SECONDS::PROV:SUBSYS:FUNC():LINE<LEVEL> message
 * Filters (FI_LOG_LEVEL, FI_LOG_SUBSYS) are folded into one bit mask at
 * first use; FI_LOG_PROV is applied only to calls that pass the mask. */
#include "core/log.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <strings.h>
#include <unistd.h>

#include "core/export.h"
#include "core/param.h"

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
}

namespace {

const char *const level_names[FI_LOG_MAX] = {"warn", "trace", "info", "debug"};
const char *const subsys_names[FI_LOG_SUBSYS_MAX] = {
	"core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr",
};

/* Settings behind the mask; written under g_mu before the mask is
 * published (release), read after an acquire load. */
constinit std::mutex g_mu;
constinit int g_level = FI_LOG_WARN;
constinit std::uint32_t g_subsys = (1u << FI_LOG_SUBSYS_MAX) - 1;
constinit std::atomic<int> g_interval_ms{2000};
constinit bool g_prov_filter = false;
constinit bool g_prov_negate = false;
constinit char g_prov_names[256] = {};

const char *level_name(int level) noexcept
{
	return level >= 0 && level < FI_LOG_MAX ? level_names[level] : "unknown";
}

const char *subsys_name(int subsys) noexcept
{
	return subsys >= 0 && subsys < FI_LOG_SUBSYS_MAX ? subsys_names[subsys] : "unknown";
}

/* Calls fn(token, len) for each comma-separated token. */
template <class F> void for_each_token(const char *list, F &&fn)
{
	while (*list) {
		const char *end = std::strchr(list, ',');
		std::size_t len = end ? static_cast<std::size_t>(end - list) : std::strlen(list);
		if (len)
			fn(list, len);
		list += len;
		if (*list == ',')
			++list;
	}
}

bool token_is(const char *tok, std::size_t len, const char *word) noexcept
{
	return std::strlen(word) == len && !strncasecmp(tok, word, len);
}

/* Problems found while parsing, reported once the lock is dropped. */
struct parse_notes {
	std::string bad_level;
	std::string bad_subsys;
	bool prov_too_long = false;
};

void parse_locked(parse_notes &notes)
{
	using param::knob;
	g_level = FI_LOG_WARN;
	g_subsys = (1u << FI_LOG_SUBSYS_MAX) - 1;
	g_prov_filter = g_prov_negate = false;
	g_prov_names[0] = '\0';
	g_interval_ms.store(2000, std::memory_order_relaxed);

	/* quiet: the registry must not log while logging is being set up. */
	auto lv = param::get_string(knob::log_level, true);
	if (lv.src == param::source::env && !lv.value.empty()) {
		int found = -1;
		for (int i = 0; i < FI_LOG_MAX; ++i)
			if (!strcasecmp(lv.value.c_str(), level_names[i]))
				found = i;
		if (found >= 0)
			g_level = found;
		else
			notes.bad_level = lv.value; /* Debian also falls back to warn */
	}

	auto ss = param::get_string(knob::log_subsys, true);
	if (ss.src == param::source::env && !ss.value.empty()) {
		const char *list = ss.value.c_str();
		bool negate = *list == '^';
		std::uint32_t named = 0;
		for_each_token(list + negate, [&](const char *tok, std::size_t len) {
			bool known = false;
			for (int i = 0; i < FI_LOG_SUBSYS_MAX; ++i)
				if (token_is(tok, len, subsys_names[i]))
					named |= 1u << i, known = true;
			if (!known) {
				if (!notes.bad_subsys.empty())
					notes.bad_subsys += ',';
				notes.bad_subsys.append(tok, len);
			}
		});
		std::uint32_t all = (1u << FI_LOG_SUBSYS_MAX) - 1;
		g_subsys = negate ? all & ~named : named;
	}

	auto pv = param::get_string(knob::log_prov, true);
	if (pv.src == param::source::env && !pv.value.empty()) {
		const char *list = pv.value.c_str();
		g_prov_negate = *list == '^';
		list += g_prov_negate;
		std::size_t n = std::strlen(list);
		if (n >= sizeof g_prov_names) {
			notes.prov_too_long = true;
			n = sizeof g_prov_names - 1;
		}
		std::memcpy(g_prov_names, list, n);
		g_prov_names[n] = '\0';
		g_prov_filter = true;
	}

	auto iv = param::get_int(knob::log_interval, true);
	if (iv.src != param::source::unset && iv.value >= 0)
		g_interval_ms.store(iv.value, std::memory_order_relaxed);
}

std::uint64_t compute_mask() noexcept
{
	std::uint64_t m = 0;
	for (int s = 0; s < FI_LOG_SUBSYS_MAX; ++s)
		if (g_subsys & (1u << s))
			for (int l = 0; l <= g_level; ++l)
				m |= log_detail::bit(l, s);
	return m;
}

std::uint64_t init() noexcept
{
	parse_notes notes;
	std::uint64_t m;
	{
		std::lock_guard lk(g_mu);
		m = log_detail::mask.load(std::memory_order_acquire);
		if (!(m & log_detail::uninit_bit))
			return m;
		try {
			parse_locked(notes);
		} catch (...) {
			/* Out of memory this early: keep the defaults. */
		}
		m = compute_mask();
		log_detail::mask.store(m, std::memory_order_release);
	}
	/* Tell the user about settings we could not use, once. */
	try {
		if (!notes.bad_level.empty())
			log_emit(&core_prov, FI_LOG_WARN, FI_LOG_CORE, __func__, __LINE__,
				 "FI_LOG_LEVEL=\"%s\" is not a level; use warn, trace, info or debug (using warn)\n",
				 notes.bad_level.c_str());
		if (!notes.bad_subsys.empty())
			log_emit(&core_prov, FI_LOG_WARN, FI_LOG_CORE, __func__, __LINE__,
				 "FI_LOG_SUBSYS: unknown subsystem(s) \"%s\"; known: core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr\n",
				 notes.bad_subsys.c_str());
		if (notes.prov_too_long)
			log_emit(&core_prov, FI_LOG_WARN, FI_LOG_CORE, __func__, __LINE__,
				 "FI_LOG_PROV is longer than %zu characters; the rest is ignored\n",
				 sizeof g_prov_names - 1);
	} catch (...) {
	}
	return m;
}

bool prov_passes(const struct fi_provider *prov) noexcept
{
	if (!g_prov_filter)
		return true;
	const char *name = prov && prov->name ? prov->name : "core";
	bool listed = false;
	for_each_token(g_prov_names, [&](const char *tok, std::size_t len) {
		listed = listed || token_is(tok, len, name);
	});
	return listed != g_prov_negate;
}

std::uint64_t now_ms() noexcept
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
	       static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

bool in_range(int level, int subsys) noexcept
{
	return level >= 0 && level < FI_LOG_MAX && subsys >= 0 && subsys < FI_LOG_SUBSYS_MAX;
}

} // namespace

bool log_detail::enabled_slow(const struct fi_provider *prov, int level, int subsys) noexcept
{
	std::uint64_t m = mask.load(std::memory_order_acquire);
	if (m & uninit_bit)
		m = init();
	if (!(m & bit(level, subsys)))
		return false;
	return prov_passes(prov);
}

namespace {

constinit std::mutex g_site_mu;
constinit std::atomic<std::uint64_t (*)()> g_clock{nullptr};

void vemit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	   const char *func, int line, std::uint64_t suppressed, const char *fmt, va_list ap) noexcept;

} // namespace

bool log_admit(log_site *site, enum fi_log_level level, std::uint64_t *suppressed) noexcept
{
	*suppressed = 0;
	if (level != FI_LOG_WARN && level != FI_LOG_INFO)
		return true;
	std::uint64_t interval = static_cast<std::uint64_t>(g_interval_ms.load(std::memory_order_relaxed));
	std::uint64_t (*clock)() = g_clock.load(std::memory_order_relaxed);
	std::uint64_t now = clock ? clock() : now_ms();
	std::lock_guard lk(g_site_mu);
	if (!site->started) {
		site->started = true;
		site->tokens = log_site_burst;
		site->refilled_ms = now;
	}
	if (interval == 0) {
		site->tokens = log_site_burst;
	} else if (now > site->refilled_ms) {
		/* A token back per interval, up to the burst; the refill time
		 * moves by whole intervals so no partial interval is lost. */
		std::uint64_t gained = (now - site->refilled_ms) / interval;
		if (gained) {
			site->tokens = static_cast<std::uint32_t>(
				std::min<std::uint64_t>(log_site_burst, site->tokens + gained));
			site->refilled_ms += gained * interval;
		}
	}
	if (!site->tokens) {
		site->suppressed++;
		return false;
	}
	site->tokens--;
	*suppressed = site->suppressed;
	site->suppressed = 0;
	return true;
}

void log_emit_site(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys, const char *func, int line, std::uint64_t suppressed,
		   const char *fmt, ...) noexcept
{
	va_list ap;
	va_start(ap, fmt);
	vemit(prov, level, subsys, func, line, suppressed, fmt, ap);
	va_end(ap);
}

void log_set_clock_for_tests(std::uint64_t (*now)()) noexcept
{
	g_clock.store(now, std::memory_order_relaxed);
}

void log_vemit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	       const char *func, int line, const char *fmt, va_list ap) noexcept
{
	vemit(prov, level, subsys, func, line, 0, fmt, ap);
}

namespace {

void vemit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	   const char *func, int line, std::uint64_t suppressed, const char *fmt, va_list ap) noexcept
{
	int saved_errno = errno;
	/* One buffer and one write(2) per line: lines from threads never mix. */
	char buf[4096];
	constexpr std::size_t cap = sizeof buf;
	int h = std::snprintf(buf, cap, "libfabric:%d:%lu::%s:%s:%s():%d<%s> ",
			      static_cast<int>(getpid()), static_cast<unsigned long>(std::time(nullptr)),
			      prov && prov->name ? prov->name : "core", subsys_name(subsys),
			      func ? func : "(null)", line, level_name(level));
	std::size_t len = h < 0 ? 0 : std::min(static_cast<std::size_t>(h), cap - 1);
	if (fmt) {
		int b = std::vsnprintf(buf + len, cap - len, fmt, ap);
		if (b > 0)
			len += static_cast<std::size_t>(b);
	}
	if (suppressed && len < cap - 1) {
		/* The count goes on the same line, before its newline. */
		if (len && buf[len - 1] == '\n')
			len--;
		int n = std::snprintf(buf + len, cap - len, " (%llu lines like this suppressed)",
				      static_cast<unsigned long long>(suppressed));
		if (n > 0)
			len = std::min(len + static_cast<std::size_t>(n), cap - 1);
	}
	if (len >= cap - 1) {
		/* Truncated: say so and still end the line. */
		std::memcpy(buf + cap - 5, "...\n", 4);
		len = cap - 1;
	} else if (len == 0 || buf[len - 1] != '\n') {
		buf[len++] = '\n';
	}
	for (std::size_t off = 0; off < len;) {
		ssize_t w = ::write(STDERR_FILENO, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += static_cast<std::size_t>(w);
	}
	errno = saved_errno;
}

} // namespace

void log_emit(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	      const char *func, int line, const char *fmt, ...) noexcept
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit(prov, level, subsys, func, line, fmt, ap);
	va_end(ap);
}

bool log_ready(const struct fi_provider *prov, enum fi_log_level level,
	       enum fi_log_subsys subsys, std::uint64_t *showtime) noexcept
{
	if (!showtime || !in_range(level, subsys) || !log_enabled(prov, level, subsys))
		return false;
	std::uint64_t now = now_ms();
	std::atomic_ref<std::uint64_t> st(*showtime);
	std::uint64_t due = st.load(std::memory_order_relaxed);
	std::uint64_t next = now + static_cast<std::uint64_t>(
					   g_interval_ms.load(std::memory_order_relaxed));
	/* Only the thread that moves the deadline gets to print. */
	while (now >= due)
		if (st.compare_exchange_weak(due, next, std::memory_order_relaxed))
			return true;
	return false;
}

log_settings log_current() noexcept
{
	if (log_detail::mask.load(std::memory_order_acquire) & log_detail::uninit_bit)
		init();
	std::lock_guard lk(g_mu);
	return {g_level, g_subsys, g_interval_ms.load(std::memory_order_relaxed)};
}

void log_reset_for_tests() noexcept
{
	std::lock_guard lk(g_mu);
	log_detail::mask.store(~std::uint64_t{0}, std::memory_order_release);
}

} // namespace wu

/* The C entry points.  None of them can throw (the bodies are noexcept),
 * so they need no guard; out-of-range enums from old callers are refused
 * rather than shifted into other bits. */
extern "C" WU_EXPORT int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
					enum fi_log_subsys subsys)
{
	if (!wu::in_range(level, subsys))
		return 0;
	return wu::log_enabled(prov, level, subsys);
}

extern "C" WU_EXPORT int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
				      enum fi_log_subsys subsys, uint64_t *showtime)
{
	return wu::log_ready(prov, level, subsys, showtime);
}

/* Like Debian, prints without checking the filters: FI_LOG() checks
 * fi_log_enabled first. */
extern "C" WU_EXPORT void fi_log(const struct fi_provider *prov, enum fi_log_level level,
				 enum fi_log_subsys subsys, const char *func, int line,
				 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	wu::log_vemit(prov, level, subsys, func, line, fmt, ap);
	va_end(ap);
}
