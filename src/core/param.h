/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal side of the parameter registry behind fi_param_define,
 * fi_param_get and fi_getparams.
 *
 * Every knob is declared once as data (type, name, default, help):
 *   - core knobs in core/params.def (variables FI_<NAME>), read with
 *     wu::param::get_int(wu::param::knob::log_interval) etc.;
 *   - a provider's knobs in its own table, e.g.
 *       static constexpr wu::param::def tcp_knobs[] = {
 *           {FI_PARAM_SIZE_T, "rx_size", "256", "Receive queue depth (default: 256)"},
 *       };
 *       wu::param::define_all(&tcp_prov, tcp_knobs);   // at provider init
 *       auto depth = wu::param::get_size(&tcp_prov, "rx_size");  // FI_TCP_RX_SIZE
 *     depth.value is the environment's value if set and valid, else the
 *     default; depth.src says which.
 * Everything defined shows up in fi_getparams (fi_info -e).
 *
 * Parsing is Debian libfabric 1.17's: integers and size_t via strtol base
 * 0 (0x.., 0..), booleans 0/1 yes/no true/false on/off (any case).  Where
 * Debian silently accepts junk ("12abc" is 12) we accept it too but warn. */
#ifndef WU_CORE_PARAM_H
#define WU_CORE_PARAM_H

#include <cstddef>
#include <cstdint>
#include <string>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

namespace wu::param {

enum class source : std::uint8_t {
	unset, /* neither environment nor default */
	env,   /* from the FI_* environment variable */
	dflt,  /* from the definition's default */
};
const char *to_string(source s) noexcept;

/* One knob.  Strings must outlive the registry (string literals). */
struct def {
	enum fi_param_type type;
	const char *name;   /* lower case, without FI_<PROV>_ */
	const char *dflt;   /* parsed like the environment; nullptr: none */
	const char *help;   /* used verbatim (no printf) */
};

enum class knob : unsigned {
#define WU_PARAM(type, name, dflt, help) name,
#include "core/params.def"
#undef WU_PARAM
	count_
};
const def &core_def(knob k) noexcept;

/* Defines d for prov (nullptr: core).  0, or -FI_EINVAL for a bad
 * definition, -FI_EALREADY if the name exists with another type.  A
 * repeated identical definition is accepted and kept once. */
int define(const struct fi_provider *prov, const def &d) noexcept;
template <std::size_t N>
int define_all(const struct fi_provider *prov, const def (&defs)[N]) noexcept
{
	int ret = 0;
	for (const def &d : defs)
		if (int r = define(prov, d); r && !ret)
			ret = r;
	return ret;
}

template <class T> struct got {
	T value{};
	source src = source::unset;
};

/* Reads a defined knob (environment first, then default).  An undefined
 * name or a wrong type yields src == unset and a warning.  quiet: no log
 * lines (used by the logger's own initialisation).  May throw bad_alloc. */
got<std::string> get_string(const struct fi_provider *prov, const char *name, bool quiet = false);
got<int> get_int(const struct fi_provider *prov, const char *name, bool quiet = false);
got<bool> get_bool(const struct fi_provider *prov, const char *name, bool quiet = false);
got<std::size_t> get_size(const struct fi_provider *prov, const char *name, bool quiet = false);

got<std::string> get_string(knob k, bool quiet = false);
got<int> get_int(knob k, bool quiet = false);
got<bool> get_bool(knob k, bool quiet = false);
got<std::size_t> get_size(knob k, bool quiet = false);

/* Where the last read of this knob came from (unset if never read). */
source last_source(const struct fi_provider *prov, const char *name) noexcept;

/* "FI_<PROV>_<NAME>" (core: "FI_<NAME>"), upper-cased. */
std::string env_name(const struct fi_provider *prov, const char *name);

/* Debian-compatible parsers.  *exact is false when the text had junk,
 * was empty or out of range (the value is still what Debian would use). */
bool parse_bool(const char *text, int *out) noexcept;
int parse_int(const char *text, bool *exact) noexcept;
std::size_t parse_size(const char *text, bool *exact) noexcept;

/* Tests only: drop every knob defined at run time (core knobs stay) and
 * forget recorded sources.  Not safe while other threads use params. */
void reset_for_tests() noexcept;

} // namespace wu::param

#endif
