/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup provider interface: what a provider hands the core, and the
 * run-time parameter helpers providers use. */
#ifndef FI_PROV_H
#define FI_PROV_H

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loadable providers are named lib<name>-fi.so */
#define FI_LIB_EXTENSION	"fi"
#define FI_LIB_SUFFIX		FI_LIB_EXTENSION ".so"

struct fi_provider {
	uint32_t		version;	/* provider's own version */
	uint32_t		fi_version;	/* API version it was built for */
	struct fi_context	context;	/* reserved for the core */
	const char		*name;
	int	(*getinfo)(uint32_t version, const char *node,
			const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info **info);
	int	(*fabric)(struct fi_fabric_attr *attr,
			struct fid_fabric **fabric, void *context);
	void	(*cleanup)(void);
};

/* Entry point every loadable provider exports; the core looks it up by
 * name after dlopen().  Use FI_EXT_INI as the definition's head:
 *     FI_EXT_INI { return &my_provider; }                               */
struct fi_provider *fi_prov_ini(void);

#define FI_EXT_INI \
	__attribute__((visibility("default"), EXTERNALLY_VISIBLE)) \
	struct fi_provider *fi_prov_ini(void)

/* Declare a parameter; it is read from FI_<PROV>_<NAME> in the
 * environment and listed by fi_getparams(). */
int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...);

/* Fetch a parameter's value into *value, typed as it was defined.
 * Returns -FI_ENODATA when the parameter is unset. */
int fi_param_get(struct fi_provider *provider, const char *param_name,
		 void *value);

/* typed front ends, so callers get a compile-time type check */
static inline int fi_param_get_str(struct fi_provider *provider,
				   const char *param_name, char **value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_int(struct fi_provider *provider,
				   const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_bool(struct fi_provider *provider,
				    const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_size_t(struct fi_provider *provider,
				      const char *param_name, size_t *value)
{
	return fi_param_get(provider, param_name, value);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_PROV_H */
