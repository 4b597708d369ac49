/* SPDX-License-Identifier: BSD-3-Clause */
/* What each attached peer costs a process (issue 14: "resident memory per
 * attached peer", goal under 64 KiB at 1,024 peers), on the shm transport
 * alone.  A child creates N regions (default 1,024, default layout); this
 * process attaches every one and pushes one cell into each, and prints
 * the growth of its own memory per peer:
 *
 *   shm_peer_cost N -> "shm_peer_cost peers N private_B PTE_B rss_shared_B object_B"
 *
 * private_B: private memory (heap, the peer objects) from smaps_rollup;
 * PTE_B: page tables (VmPTE); rss_shared_B: pages of the peers' regions
 * now mapped here (the owners' memory, counted once on the machine, not
 * ours: only what this process touched); object_B: sizeof(peer). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "prov/shm/region.h"

using namespace wu::shm_tp;

namespace {

/* A field of /proc/self/smaps_rollup or /proc/self/status, in kB. */
long kb(const char *file, const char *field)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = atol(line + n + 1);
			break;
		}
	fclose(f);
	return v;
}

struct mem {
	long priv, pte, rss_shared;
};

mem now()
{
	const char *r = "/proc/self/smaps_rollup";
	return mem{kb(r, "Private_Clean") + kb(r, "Private_Dirty"), kb("/proc/self/status", "VmPTE"),
		   kb(r, "Shared_Clean") + kb(r, "Shared_Dirty")};
}

} // namespace

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1024;
	if (n < 1 || n > 100000)
		return 2;
	std::string base = "wu-cost-" + std::to_string(getpid()) + "-";
	int ready[2];
	if (pipe(ready))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(600);
		std::vector<region *> rs;
		char ok = 1;
		for (int i = 0; i < n && ok; i++) {
			region *r = nullptr;
			ok = region::create((base + std::to_string(i)).c_str(), layout{}, &r) == 0;
			rs.push_back(r);
		}
		if (write(ready[1], &ok, 1) != 1 || !ok)
			_exit(1);
		char b;
		(void)!read(ready[0], &b, 1); /* until the parent is done */
		for (region *r : rs)
			delete r;
		_exit(0);
	}
	char ok = 0;
	if (read(ready[0], &ok, 1) != 1 || !ok) {
		fprintf(stderr, "shm_peer_cost: the owner could not create %d regions (/dev/shm full?)\n", n);
		return 1;
	}
	std::vector<peer *> ps;
	ps.reserve(size_t(n)); /* the vector is not the peers' cost */
	mem before = now();
	cell c{};
	c.kind = 1;
	for (int i = 0; i < n; i++) {
		peer *p = nullptr;
		if (peer::attach((base + std::to_string(i)).c_str(), &p) != 0 || p->push(c) != 0) {
			fprintf(stderr, "shm_peer_cost: attach/push %d failed\n", i);
			break;
		}
		ps.push_back(p);
	}
	mem after = now();
	double k = 1024.0 / double(ps.size());
	printf("shm_peer_cost peers %zu private_B %.0f PTE_B %.0f rss_shared_B %.0f object_B %zu\n", ps.size(),
	       double(after.priv - before.priv) * k, double(after.pte - before.pte) * k,
	       double(after.rss_shared - before.rss_shared) * k, sizeof(peer));
	for (peer *p : ps)
		delete p;
	(void)!write(ready[1], "x", 1);
	close(ready[1]);
	waitpid(pid, nullptr, 0);
	return ps.size() == size_t(n) ? 0 : 1;
}
