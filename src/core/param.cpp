/* SPDX-License-Identifier: BSD-3-Clause */
/* The parameter registry: one list of knobs, core ones from params.def and
 * provider ones from fi_param_define / wu::param::define, feeding
 * fi_param_get and fi_getparams. */
#include "core/param.h"

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <strings.h>

#include <rdma/fi_errno.h>

#include "core/export.h"
#include "core/log.h"
#include "core/shim.h"

namespace wu::param {
namespace {

const def core_defs[] = {
#define WU_PARAM(type, name, dflt, help) {FI_PARAM_##type, #name, dflt, help},
#include "core/params.def"
#undef WU_PARAM
};
static_assert(std::size(core_defs) == static_cast<std::size_t>(knob::count_));

struct entry {
	const struct fi_provider *prov;
	std::string name; /* as defined; lookups are case-sensitive like Debian */
	std::string env;
	std::string help;
	enum fi_param_type type;
	std::optional<std::string> dflt;
	bool core_table; /* from params.def: survives reset_for_tests */
	source last_src = source::unset;
};

/* Never destroyed: logging may read params during exit. */
struct registry {
	std::deque<entry> entries;
};

/* constexpr-constructed, trivially destroyed: no static constructor. */
constinit std::mutex g_mu;
constinit registry *g_reg = nullptr;

const struct fi_provider *canon(const struct fi_provider *prov) noexcept
{
	return prov ? prov : &core_prov;
}

/* int, not the enum: old callers may pass any number. */
bool valid_type(int t) noexcept
{
	return t == FI_PARAM_STRING || t == FI_PARAM_INT || t == FI_PARAM_BOOL ||
	       t == FI_PARAM_SIZE_T;
}

const char *type_name(enum fi_param_type t) noexcept
{
	switch (t) {
	case FI_PARAM_STRING: return "string";
	case FI_PARAM_INT: return "int";
	case FI_PARAM_BOOL: return "bool";
	case FI_PARAM_SIZE_T: return "size_t";
	}
	return "?";
}

/* Caller holds g_mu. */
registry &reg_locked()
{
	if (!g_reg) {
		auto r = std::make_unique<registry>();
		for (const def &d : core_defs) {
			entry e{&core_prov, d.name, env_name(&core_prov, d.name), d.help, d.type,
				std::nullopt, true};
			if (d.dflt)
				e.dflt = d.dflt;
			r->entries.push_back(std::move(e));
		}
		g_reg = r.release(); /* never destroyed: knobs are read from atexit handlers too */
	}
	return *g_reg;
}

entry *find_locked(const struct fi_provider *prov, const char *name)
{
	for (entry &e : reg_locked().entries)
		if (e.prov == prov && e.name == name)
			return &e;
	return nullptr;
}

/* Adds or checks a definition; help already formatted. */
int define_locked(const struct fi_provider *prov, const char *name, enum fi_param_type type,
		  std::string help, const char *dflt, enum fi_param_type *old_type)
{
	if (entry *e = find_locked(prov, name)) {
		*old_type = e->type;
		return e->type == type ? 0 : -FI_EALREADY;
	}
	entry e{prov, name, env_name(prov, name), std::move(help), type, std::nullopt, false};
	if (dflt)
		e.dflt = dflt;
	reg_locked().entries.push_back(std::move(e));
	return 0;
}

std::string prefixed_help(const struct fi_provider *prov, const char *help)
{
	std::string h;
	/* Debian prefixes provider knobs' help with the provider name. */
	if (prov != &core_prov) {
		h = prov->name;
		h += ": ";
	}
	h += help ? help : "";
	return h;
}

int check_define(const struct fi_provider *prov, const char *name, int type)
{
	if (!name || !*name) {
		WU_WARN(&core_prov, FI_LOG_CORE, "fi_param_define: parameter name is %s\n",
			name ? "empty" : "NULL");
		return -FI_EINVAL;
	}
	if (!prov->name || !*prov->name) {
		WU_WARN(&core_prov, FI_LOG_CORE,
			"fi_param_define(%s): the provider has no name, so FI_<PROV>_%s cannot be formed\n",
			name, name);
		return -FI_EINVAL;
	}
	if (!valid_type(type)) {
		WU_WARN(prov, FI_LOG_CORE,
			"fi_param_define(%s): type %d is not a fi_param_type (string 0, int 1, bool 2, size_t 3)\n",
			name, type);
		return -FI_EINVAL;
	}
	return 0;
}

int report_define(const struct fi_provider *prov, const char *name, enum fi_param_type type,
		  enum fi_param_type old_type, int ret)
{
	if (ret == -FI_EALREADY)
		WU_WARN(prov, FI_LOG_CORE,
			"%s is already defined as %s; the new definition as %s is ignored\n",
			env_name(prov, name).c_str(), type_name(old_type), type_name(type));
	return ret;
}

/* What one read found, copied out so the lock is not held while logging. */
struct raw {
	bool defined = false;
	enum fi_param_type type = FI_PARAM_STRING;
	std::string env;
	std::optional<std::string> dflt;
};

raw snapshot(const struct fi_provider *prov, const char *name)
{
	std::lock_guard lk(g_mu);
	raw r;
	if (entry *e = find_locked(prov, name)) {
		r.defined = true;
		r.type = e->type;
		r.env = e->env;
		r.dflt = e->dflt;
	}
	return r;
}

void record(const struct fi_provider *prov, const char *name, source src)
{
	std::lock_guard lk(g_mu);
	if (entry *e = find_locked(prov, name))
		e->last_src = src;
}

/* Typed conversion of one text; false when it cannot be used. */
template <class T>
bool convert(const struct fi_provider *prov, const std::string &var, enum fi_param_type type,
	     const char *text, T *out, bool quiet)
{
	bool exact = true;
	if constexpr (std::is_same_v<T, std::string>) {
		*out = text;
		return true;
	} else if constexpr (std::is_same_v<T, bool>) {
		int b;
		if (!parse_bool(text, &b)) {
			if (!quiet)
				WU_WARN(prov, FI_LOG_CORE,
					"%s=\"%s\" is not a boolean; use 0/1, yes/no, true/false or on/off\n",
					var.c_str(), text);
			return false;
		}
		*out = b != 0;
	} else if constexpr (std::is_same_v<T, int>) {
		*out = parse_int(text, &exact);
	} else {
		*out = parse_size(text, &exact);
	}
	if constexpr (!std::is_same_v<T, std::string>)
		if (!exact && !quiet)
			WU_WARN(prov, FI_LOG_CORE, "%s=\"%s\" is not a clean %s; using %s\n",
				var.c_str(), text, type_name(type), std::to_string(*out).c_str());
	return true;
}

template <class T> constexpr enum fi_param_type type_of()
{
	if constexpr (std::is_same_v<T, std::string>)
		return FI_PARAM_STRING;
	else if constexpr (std::is_same_v<T, bool>)
		return FI_PARAM_BOOL;
	else if constexpr (std::is_same_v<T, int>)
		return FI_PARAM_INT;
	else
		return FI_PARAM_SIZE_T;
}

template <class T> got<T> get_typed(const struct fi_provider *prov, const char *name, bool quiet)
{
	prov = canon(prov);
	got<T> g;
	if (!name)
		return g;
	raw r = snapshot(prov, name);
	if (!r.defined || r.type != type_of<T>()) {
		if (!quiet)
			WU_WARN(prov, FI_LOG_CORE,
				"internal: parameter %s read as %s but it is %s\n", name,
				type_name(type_of<T>()), r.defined ? type_name(r.type) : "not defined");
		return g;
	}
	const char *used = nullptr;
	if (const char *text = std::getenv(r.env.c_str());
	    text && convert(prov, r.env, r.type, text, &g.value, quiet)) {
		g.src = source::env;
		used = text;
	} else if (r.dflt && convert(prov, r.env, r.type, r.dflt->c_str(), &g.value, quiet)) {
		g.src = source::dflt;
		used = r.dflt->c_str();
	}
	record(prov, name, g.src);
	if (!quiet && used)
		WU_INFO(prov, FI_LOG_CORE, "%s=%s (%s)\n", r.env.c_str(), used, to_string(g.src));
	return g;
}

/* Writes a value of the param's type through fi_param_get's void *. */
int store(const struct fi_provider *prov, const raw &r, const char *text, void *value)
{
	switch (r.type) {
	case FI_PARAM_STRING:
		/* Like Debian: the environment's own storage. */
		*static_cast<char **>(value) = const_cast<char *>(text);
		return 0;
	case FI_PARAM_BOOL: {
		int b;
		if (!parse_bool(text, &b)) {
			WU_WARN(prov, FI_LOG_CORE,
				"%s=\"%s\" is not a boolean; use 0/1, yes/no, true/false or on/off\n",
				r.env.c_str(), text);
			return -FI_EINVAL;
		}
		*static_cast<int *>(value) = b;
		return 0;
	}
	case FI_PARAM_INT: {
		bool exact;
		int v = parse_int(text, &exact);
		if (!exact)
			WU_WARN(prov, FI_LOG_CORE, "%s=\"%s\" is not a clean int; using %d\n",
				r.env.c_str(), text, v);
		*static_cast<int *>(value) = v;
		return 0;
	}
	case FI_PARAM_SIZE_T: {
		bool exact;
		std::size_t v = parse_size(text, &exact);
		if (!exact)
			WU_WARN(prov, FI_LOG_CORE, "%s=\"%s\" is not a clean size_t; using %zu\n",
				r.env.c_str(), text, v);
		*static_cast<std::size_t *>(value) = v;
		return 0;
	}
	}
	return -FI_EINVAL;
}

} // namespace

const char *to_string(source s) noexcept
{
	switch (s) {
	case source::env: return "environment";
	case source::dflt: return "default";
	case source::unset: break;
	}
	return "unset";
}

const def &core_def(knob k) noexcept
{
	return core_defs[static_cast<unsigned>(k)];
}

std::string env_name(const struct fi_provider *prov, const char *name)
{
	prov = canon(prov);
	std::string s = "FI_";
	auto up = [&s](const char *p) {
		for (; p && *p; ++p)
			s += static_cast<char>(
				(*p >= 'a' && *p <= 'z') ? *p - 'a' + 'A' : *p);
	};
	if (prov != &core_prov) {
		up(prov->name);
		s += '_';
	}
	up(name);
	return s;
}

bool parse_bool(const char *text, int *out) noexcept
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	if (!text)
		return false;
	for (const char *w : yes)
		if (!strcasecmp(text, w))
			return *out = 1, true;
	for (const char *w : no)
		if (!strcasecmp(text, w))
			return *out = 0, true;
	return false;
}

/* Debian reads both through strtol(base 0) and truncates: keep the
 * value, flag anything a user would not mean. */
int parse_int(const char *text, bool *exact) noexcept
{
	char *end;
	errno = 0;
	long v = std::strtol(text, &end, 0);
	*exact = end != text && !*end && errno != ERANGE && v >= INT_MIN && v <= INT_MAX;
	return static_cast<int>(v);
}

std::size_t parse_size(const char *text, bool *exact) noexcept
{
	char *end;
	errno = 0;
	long v = std::strtol(text, &end, 0);
	*exact = end != text && !*end && errno != ERANGE && v >= 0;
	return static_cast<std::size_t>(v);
}

int define(const struct fi_provider *prov, const def &d) noexcept
{
	return guard(__func__, [&]() -> int {
		prov = canon(prov);
		if (int r = check_define(prov, d.name, d.type))
			return r;
		std::string help = prefixed_help(prov, d.help);
		enum fi_param_type old = d.type;
		int ret;
		{
			std::lock_guard lk(g_mu);
			ret = define_locked(prov, d.name, d.type, std::move(help), d.dflt, &old);
		}
		return report_define(prov, d.name, d.type, old, ret);
	});
}

got<std::string> get_string(const struct fi_provider *prov, const char *name, bool quiet)
{
	return get_typed<std::string>(prov, name, quiet);
}
got<int> get_int(const struct fi_provider *prov, const char *name, bool quiet)
{
	return get_typed<int>(prov, name, quiet);
}
got<bool> get_bool(const struct fi_provider *prov, const char *name, bool quiet)
{
	return get_typed<bool>(prov, name, quiet);
}
got<std::size_t> get_size(const struct fi_provider *prov, const char *name, bool quiet)
{
	return get_typed<std::size_t>(prov, name, quiet);
}
got<std::string> get_string(knob k, bool quiet)
{
	return get_typed<std::string>(&core_prov, core_def(k).name, quiet);
}
got<int> get_int(knob k, bool quiet)
{
	return get_typed<int>(&core_prov, core_def(k).name, quiet);
}
got<bool> get_bool(knob k, bool quiet)
{
	return get_typed<bool>(&core_prov, core_def(k).name, quiet);
}
got<std::size_t> get_size(knob k, bool quiet)
{
	return get_typed<std::size_t>(&core_prov, core_def(k).name, quiet);
}

source last_source(const struct fi_provider *prov, const char *name) noexcept
{
	if (!name)
		return source::unset;
	std::lock_guard lk(g_mu);
	if (!g_reg)
		return source::unset;
	entry *e = find_locked(canon(prov), name);
	return e ? e->last_src : source::unset;
}

void reset_for_tests() noexcept
{
	std::lock_guard lk(g_mu);
	if (!g_reg)
		return;
	auto &v = g_reg->entries;
	std::erase_if(v, [](const entry &e) { return !e.core_table; });
	for (entry &e : v)
		e.last_src = source::unset;
}

} // namespace wu::param

namespace wu::param {
namespace {

/* Named (not a lambda) so log lines show a useful function name. */
int param_get(const struct fi_provider *prov, const char *param_name, void *value)
{
	if (!param_name || !value) {
		WU_WARN(prov, FI_LOG_CORE, "fi_param_get: %s is NULL\n",
			param_name ? "value" : "param_name");
		return -FI_EINVAL;
	}
	raw r = snapshot(prov, param_name);
	if (!r.defined) {
		WU_WARN(prov, FI_LOG_CORE,
			"fi_param_get: parameter \"%s\" of provider %s was never defined; call fi_param_define first\n",
			param_name, prov->name ? prov->name : "(unnamed)");
		return -FI_ENOENT;
	}
	const char *text = std::getenv(r.env.c_str());
	if (!text) {
		record(prov, param_name, source::unset);
		WU_INFO(prov, FI_LOG_CORE, "variable %s=<not set>\n", r.env.c_str());
		return -FI_ENODATA;
	}
	int ret = store(prov, r, text, value);
	if (!ret) {
		record(prov, param_name, source::env);
		WU_INFO(prov, FI_LOG_CORE, "read %s variable %s=%s\n", type_name(r.type),
			r.env.c_str(), text);
	}
	return ret;
}

int param_define(const struct fi_provider *prov, const char *param_name, int raw_type,
		 const char *help_fmt, va_list ap)
{
	if (int r = check_define(prov, param_name, raw_type))
		return r;
	auto type = static_cast<enum fi_param_type>(raw_type);
	std::string help;
	if (help_fmt) {
		va_list cp;
		va_copy(cp, ap);
		int n = std::vsnprintf(nullptr, 0, help_fmt, cp);
		va_end(cp);
		if (n > 0) {
			help.resize(static_cast<std::size_t>(n) + 1);
			std::vsnprintf(help.data(), help.size(), help_fmt, ap);
			help.resize(static_cast<std::size_t>(n));
		}
	}
	help = prefixed_help(prov, help.c_str());
	enum fi_param_type old = type;
	int ret;
	{
		std::lock_guard lk(g_mu);
		ret = define_locked(prov, param_name, type, std::move(help), nullptr, &old);
	}
	return report_define(prov, param_name, type, old, ret);
}

} // namespace
} // namespace wu::param

using namespace wu;

extern "C" WU_EXPORT int fi_param_get(struct fi_provider *provider, const char *param_name,
				      void *value)
{
	return guard(__func__, [&] { return param::param_get(param::canon(provider), param_name, value); });
}

extern "C" WU_EXPORT int fi_param_define(const struct fi_provider *provider, const char *param_name,
					 enum fi_param_type type, const char *help_string_fmt, ...)
{
	/* Read the enum as an int so an out-of-range value is not UB. */
	int raw_type;
	static_assert(sizeof raw_type == sizeof type);
	std::memcpy(&raw_type, &type, sizeof raw_type);
	va_list ap;
	va_start(ap, help_string_fmt);
	int ret = guard(__func__, [&] {
		return param::param_define(param::canon(provider), param_name, raw_type,
					   help_string_fmt, ap);
	});
	va_end(ap);
	return ret;
}

extern "C" WU_EXPORT int fi_getparams(struct fi_param **params, int *count)
{
	return guard(__func__, [&]() -> int {
		if (!params || !count)
			return -FI_EINVAL;
		std::lock_guard lk(param::g_mu);
		auto &v = param::reg_locked().entries;
		/* One extra zeroed entry terminates the array for fi_freeparams. */
		auto *out = static_cast<struct fi_param *>(std::calloc(v.size() + 1, sizeof **params));
		if (!out)
			return -FI_ENOMEM;
		std::size_t i = 0;
		bool oom = false;
		for (const param::entry &e : v) {
			struct fi_param &p = out[i++];
			p.type = e.type;
			p.name = strdup(e.env.c_str());
			p.help_string = strdup(e.help.c_str());
			const char *val = std::getenv(e.env.c_str());
			p.value = val ? strdup(val) : nullptr;
			if (!p.name || !p.help_string || (val && !p.value))
				oom = true;
		}
		if (oom) {
			for (std::size_t k = 0; k < i; ++k) {
				std::free(const_cast<char *>(out[k].name));
				std::free(const_cast<char *>(out[k].help_string));
				std::free(const_cast<char *>(out[k].value));
			}
			std::free(out);
			return -FI_ENOMEM;
		}
		*params = out;
		*count = static_cast<int>(i);
		return 0;
	});
}

extern "C" WU_EXPORT void fi_freeparams(struct fi_param *params)
{
	if (!params)
		return;
	for (struct fi_param *p = params; p->name; ++p) {
		std::free(const_cast<char *>(p->name));
		std::free(const_cast<char *>(p->help_string));
		std::free(const_cast<char *>(p->value));
	}
	std::free(params);
}
