#include "prov/registry.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "prov/tcp/tcp.h"

namespace wu::prov {
namespace {

/* Built-in providers, best first.  The multiplexing RDM provider (shm on the
 * node, tcp beyond) will come first, then shm, tcp, verbs and ucx. */
const fi_provider *(*const builtin[])() noexcept = {
	wu::tcp::provider,
};

struct state {
	std::mutex lock;
	std::vector<const fi_provider *> list;
	bool loaded = false;
};

state &get()
{
	/* Function-local: no static constructor runs at load (embedded rule). */
	static state s;
	std::lock_guard g(s.lock);
	if (!s.loaded) {
		for (auto make : builtin)
			if (const fi_provider *p = make())
				s.list.push_back(p);
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

void remove_for_test(const fi_provider *prov)
{
	state &s = get();
	std::lock_guard g(s.lock);
	s.list.erase(std::remove(s.list.begin(), s.list.end(), prov), s.list.end());
}

} // namespace wu::prov
