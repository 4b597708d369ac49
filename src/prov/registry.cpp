/* SPDX-License-Identifier: BSD-3-Clause */
#include "prov/registry.h"

#include "config.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "core/log.h"

#if WU_PROV_SHM
#include "prov/shm/shm.h"
#endif
#if WU_PROV_TCP
#include "prov/tcp/tcp.h"
#endif
#if WU_PROV_WIREUP
#include "prov/wireup/wireup.h"
#endif
#if WU_PROV_UCX
#include "prov/ucx/ucx.h"
#endif

namespace wu::prov {
namespace {

/* Built-in providers, best first: the multiplexing RDM provider (shm on the
 * node, tcp beyond) is what an RDM request without a provider gets.  ucx
 * comes last: only FI_PROVIDER=ucx or a prov_name hint picks it.  Each is
 * here when configure builds it (--enable-<name>, config.h's WU_PROV_*). */
const fi_provider *(*const builtin[])() noexcept = {
#if WU_PROV_WIREUP
	wu::wireup::provider,
#endif
#if WU_PROV_TCP
	wu::tcp::provider,
#endif
#if WU_PROV_SHM
	wu::shm::provider,
#endif
#if WU_PROV_UCX
	wu::ucx::provider,
#endif
	nullptr, /* the end; the list may be empty (configure --enable-<name>=no) */
};

struct state {
	std::mutex lock;
	std::vector<const fi_provider *> list;
	bool loaded = false;
};

bool known(const std::vector<const fi_provider *> &list, const char *name)
{
	for (const fi_provider *p : list)
		if (p->name && strcmp(p->name, name) == 0)
			return true;
	return false;
}

/* Loads lib<name>-fi.so files exporting fi_prov_ini from each directory
 * of FI_PROVIDER_PATH (colon separated).  Nothing is loaded without it:
 * other libfabric builds' provider libraries link against their own core. */
void load_external(std::vector<const fi_provider *> &list)
{
	const char *path = getenv("FI_PROVIDER_PATH");
	if (!path || !*path)
		return;
	std::string_view rest(path);
	while (!rest.empty()) {
		size_t colon = rest.find(':');
		std::string dir(rest.substr(0, colon));
		rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
		if (dir.empty())
			continue;
		dirent **names = nullptr;
		int n = scandir(dir.c_str(), &names, nullptr, alphasort);
		if (n < 0) {
			WU_WARN(&core_prov, FI_LOG_CORE, "FI_PROVIDER_PATH: cannot read directory %s\n",
				dir.c_str());
			continue;
		}
		for (int k = 0; k < n; k++) {
			std::string_view f(names[k]->d_name);
			if (f.size() > 9 && f.substr(0, 3) == "lib" && f.substr(f.size() - 6) == "-fi.so") {
				std::string file = dir + "/" + std::string(f);
				void *h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
				if (!h) {
					WU_WARN(&core_prov, FI_LOG_CORE, "provider %s: dlopen failed: %s\n",
						file.c_str(), dlerror());
				} else if (auto ini = reinterpret_cast<fi_provider *(*)()>(dlsym(h, "fi_prov_ini"))) {
					fi_provider *p = ini();
					if (!p || !p->name || !p->getinfo || !p->fabric) {
						WU_WARN(&core_prov, FI_LOG_CORE,
							"provider %s: fi_prov_ini returned an incomplete provider\n",
							file.c_str());
						dlclose(h);
					} else if (FI_MAJOR(p->fi_version) > FI_MAJOR_VERSION ||
						   p->fi_version > FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)) {
						WU_WARN(&core_prov, FI_LOG_CORE,
							"provider %s (%s) needs API %u.%u, newer than ours\n",
							p->name, file.c_str(), FI_MAJOR(p->fi_version), FI_MINOR(p->fi_version));
						dlclose(h);
					} else if (known(list, p->name)) {
						WU_WARN(&core_prov, FI_LOG_CORE,
							"provider %s from %s ignored: a provider of that name is loaded\n",
							p->name, file.c_str());
						dlclose(h);
					} else {
						WU_INFO(&core_prov, FI_LOG_CORE, "loaded provider %s from %s\n", p->name,
							file.c_str());
						list.push_back(p); /* kept loaded for the process's life */
					}
				} else {
					WU_WARN(&core_prov, FI_LOG_CORE, "provider %s has no fi_prov_ini\n", file.c_str());
					dlclose(h);
				}
			}
			free(names[k]);
		}
		free(names);
	}
}

state &get()
{
	/* Function-local: no static constructor runs at load (embedded rule). */
	static state s;
	std::lock_guard g(s.lock);
	if (!s.loaded) {
		for (auto make : builtin)
			if (const fi_provider *p = make ? make() : nullptr)
				s.list.push_back(p);
		load_external(s.list);
		s.loaded = true;
	}
	return s;
}

} // namespace

std::vector<const fi_provider *> providers()
{
	state &s = get();
	std::lock_guard g(s.lock);
	return s.list;
}

const fi_provider *find(const char *name)
{
	if (!name)
		return nullptr;
	for (const fi_provider *p : providers())
		if (p->name && strcmp(p->name, name) == 0)
			return p;
	return nullptr;
}

void add_for_test(const fi_provider *prov, bool front)
{
	state &s = get();
	std::lock_guard g(s.lock);
	if (front)
		s.list.insert(s.list.begin(), prov);
	else
		s.list.push_back(prov);
}

void reload_external_for_test()
{
	state &s = get();
	std::lock_guard g(s.lock);
	load_external(s.list);
}

void remove_for_test(const fi_provider *prov)
{
	state &s = get();
	std::lock_guard g(s.lock);
	s.list.erase(std::remove(s.list.begin(), s.list.end(), prov), s.list.end());
}

} // namespace wu::prov
