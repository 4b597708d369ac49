/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_getinfo: which providers are asked (FI_PROVIDER, hints' prov_name,
 * layered names), FI_PROV_ATTR_ONLY, and why nothing matched. */
#include "getinfo/getinfo.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/info.h"
#include "core/log.h"
#include "getinfo/filter.h"

namespace wu::getinfo {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep)
{
	std::vector<std::string_view> out;
	while (!s.empty()) {
		size_t i = s.find(sep);
		out.push_back(s.substr(0, i));
		if (i == std::string_view::npos)
			break;
		s.remove_prefix(i + 1);
	}
	return out;
}

/* A requested name matches a provider when equal to it or, for a layered
 * request "core;util", when one of its layers is this provider (our
 * providers implement RDM themselves, without a utility layer). */
bool name_matches(std::string_view want, const char *have)
{
	if (!have)
		return false;
	if (want == have)
		return true;
	for (std::string_view part : split(want, ';'))
		if (part == have)
			return true;
	return false;
}

/* FI_PROVIDER (env, read once per call): "a,b" keeps only those, "^a,b"
 * drops those. */
bool env_allows(const char *env, const char *name)
{
	if (!env || !*env)
		return true;
	std::string_view v(env);
	bool exclude = v.front() == '^';
	if (exclude)
		v.remove_prefix(1);
	bool listed = false;
	for (std::string_view n : split(v, ','))
		if (!n.empty() && name_matches(n, name))
			listed = true;
	return exclude ? !listed : listed;
}

fi_info *attr_only_entry(const fi_provider &p, uint32_t version)
{
	fi_info *i = info_alloc();
	if (!i)
		return nullptr;
	i->fabric_attr->prov_name = strdup(p.name);
	i->fabric_attr->prov_version = p.version;
	i->fabric_attr->api_version = version;
	if (!i->fabric_attr->prov_name) {
		info_free(i);
		return nullptr;
	}
	return i;
}

} // namespace

int run(const std::vector<const fi_provider *> &providers, uint32_t version, const char *node,
	const char *service, uint64_t flags, const fi_info *hints, fi_info **info)
{
	/* Like libfabric, any version up to ours is accepted, 0.0 included:
	 * MPICH 4.0's first call passes 0.0 before its settings are read.  An
	 * old version only changes what is reported (mr_mode before 1.5). */
	if (version > FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)) {
		WU_WARN(&core_prov, FI_LOG_CORE,
			"fi_getinfo: API version %u.%u is newer than this library's %d.%d\n",
			FI_MAJOR(version), FI_MINOR(version), FI_MAJOR_VERSION, FI_MINOR_VERSION);
		return -FI_ENOSYS;
	}
	if ((flags & FI_SOURCE) && !node && !service) {
		WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: FI_SOURCE given without node or service\n");
		return -FI_EINVAL;
	}
	const char *want = hints && hints->fabric_attr ? hints->fabric_attr->prov_name : nullptr;
	/* Read per call: applications (and tests) change it between calls. */
	const char *env = getenv("FI_PROVIDER");
	fi_info *head = nullptr, **tail = &head;
	int hard_err = 0;
	/* Why each provider gave nothing, in provider order; the text of a
	 * skip by name is only built if nothing matches. */
	enum class skip { env, prov_name, getinfo };
	struct miss {
		const fi_provider *p;
		skip kind;
		std::string why; /* skip::getinfo only */
	};
	std::vector<miss> misses;
	for (const fi_provider *p : providers) {
		if (!p->name)
			continue;
		if (!env_allows(env, p->name)) {
			misses.push_back({p, skip::env, {}});
			continue;
		}
		if (want && !name_matches(want, p->name)) {
			misses.push_back({p, skip::prov_name, {}});
			continue;
		}
		if (flags & FI_PROV_ATTR_ONLY) {
			fi_info *i = attr_only_entry(*p, version);
			if (!i) {
				info_free(head);
				return -FI_ENOMEM;
			}
			*tail = i;
			tail = &i->next;
			continue;
		}
		if (!p->getinfo)
			continue;
		fi_info *got = nullptr;
		take_reason();
		int ret = p->getinfo(version, node, service, flags, hints, &got);
		if (ret) {
			std::string why = take_reason();
			if (why.empty())
				why = std::string("its getinfo returned ") + fi_strerror(-ret);
			misses.push_back({p, skip::getinfo, std::move(why)});
			if (ret != -FI_ENODATA && !hard_err)
				hard_err = ret;
			continue;
		}
		for (fi_info *i = got; i; i = i->next) {
			if (!i->fabric_attr)
				continue;
			if (!i->fabric_attr->prov_name)
				i->fabric_attr->prov_name = strdup(p->name);
			if (!i->fabric_attr->prov_version)
				i->fabric_attr->prov_version = p->version;
			if (!i->fabric_attr->api_version)
				i->fabric_attr->api_version = version;
		}
		*tail = got;
		while (*tail)
			tail = &(*tail)->next;
	}
	if (!head) {
		/* One line per provider, at info level: an unmatched fi_getinfo
		 * is an answer, and MPI stacks probe on purpose at every start
		 * (provider names, atomic ordering, ...), so warn level would
		 * print in every process of every job.  Only having no
		 * provider at all is a warning. */
		if (misses.empty())
			WU_WARN(&core_prov, FI_LOG_CORE, "fi_getinfo: no providers are available\n");
		for (const miss &m : misses) {
			std::string r = std::string(m.p->name) + ": " +
					(m.kind == skip::env	     ? std::string("excluded by FI_PROVIDER=") + env
					 : m.kind == skip::prov_name ? std::string("fabric_attr->prov_name: asked ") + want
								     : m.why);
			WU_INFO(&core_prov, FI_LOG_CORE, "fi_getinfo: no match: %s\n", r.c_str());
		}
		return hard_err ? hard_err : -FI_ENODATA;
	}
	*info = head;
	return 0;
}

} // namespace wu::getinfo
