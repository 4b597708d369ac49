/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_av benchmark: one binary for Debian's libfabric and for Wireup.
 * Built against the system (Debian 1.17) headers and -lfabric, so it
 * imports only 1.17 symbol versions; av_bench.sh swaps the library with
 * LD_LIBRARY_PATH.
 *
 *   av_bench PROV N [sym]
 * prints one line of key=value pairs for N sockaddr_in addresses:
 *   insert_ns   one fi_av_insert of N addresses, per address
 *   remove_ns   single-address fi_av_remove, mean over up to 1000
 *   lookup_ns   fi_av_lookup of random entries
 *   bytes       anonymous resident bytes per entry (process delta over the AV)
 *   reverse_ps  reverse lookups per second (Wireup's "wireup:av_ext"
 *               ops; "na" elsewhere)
 * With "sym": a FI_SYMMETRIC AV filled by one fi_av_insertsym of
 * 1024 nodes x 1024 services; prints its resident bytes in all. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

struct wireup_av_ext {
	size_t size;
	fi_addr_t (*reverse)(struct fid_av *av, const void *addr, size_t len);
	size_t (*resident)(struct fid_av *av);
};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Anonymous resident bytes (statm resident - shared): what the AV itself
 * holds.  File-backed pages are left out because touching a new page of
 * library code inside the measured window would otherwise be charged to
 * the AV; the same rule applies to both libraries. */
static long rss_bytes(void)
{
	long pages = 0, res = 0, shared = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld %ld", &pages, &res, &shared) != 3)
		res = shared = 0;
	if (f)
		fclose(f);
	return (res - shared) * sysconf(_SC_PAGESIZE);
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void die(const char *what, int r)
{
	fprintf(stderr, "av_bench: %s: %s\n", what, fi_strerror(-r));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: av_bench PROV N [sym]\n");
		return 2;
	}
	const char *prov = argv[1];
	size_t n = strtoull(argv[2], NULL, 0);
	int sym = argc > 3 && strcmp(argv[3], "sym") == 0;

	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->addr_format = FI_SOCKADDR_IN;
	int r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (r)
		die("fi_getinfo", r);
	struct fid_fabric *fab;
	struct fid_domain *dom;
	if ((r = fi_fabric(info->fabric_attr, &fab, NULL)))
		die("fi_fabric", r);
	if ((r = fi_domain(fab, info, &dom, NULL)))
		die("fi_domain", r);

	struct fi_av_attr attr;
	struct fid_av *av;
	if (sym) {
		memset(&attr, 0, sizeof attr);
		attr.type = FI_AV_TABLE;
		attr.flags = FI_SYMMETRIC;
		long before = rss_bytes();
		if ((r = fi_av_open(dom, &attr, &av, NULL)))
			die("fi_av_open", r);
		double t0 = now_ns();
		r = fi_av_insertsym(av, "10.0.0.0", 1024, "1024", 1024, NULL, 0, NULL);
		double t1 = now_ns();
		if (r != 1024 * 1024)
			die("fi_av_insertsym", r < 0 ? r : -FI_EOTHER);
		printf("prov=%s sym_entries=%d sym_bytes=%ld sym_insert_ms=%.1f\n", info->fabric_attr->prov_name,
		       r, rss_bytes() - before, (t1 - t0) / 1e6);
		fi_close(&av->fid);
		return 0;
	}

	struct sockaddr_in *addrs = calloc(n, sizeof *addrs);
	fi_addr_t *fa = calloc(n, sizeof *fa);
	for (size_t i = 0; i < n; i++) {
		addrs[i].sin_family = AF_INET;
		addrs[i].sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)(i / 50000));
		addrs[i].sin_port = htons((uint16_t)(1024 + i % 50000));
		fa[i] = FI_ADDR_NOTAVAIL; /* touched now, not during the insert */
	}
	size_t nlook = n < 1000000 ? 1000000 : n;
	size_t *pick = calloc(nlook, sizeof *pick);
	for (size_t i = 0; i < nlook; i++)
		pick[i] = next_rand() % n;

	memset(&attr, 0, sizeof attr);
	attr.type = FI_AV_TABLE;
	attr.count = n;
	long before = rss_bytes();
	if ((r = fi_av_open(dom, &attr, &av, NULL)))
		die("fi_av_open", r);
	double t0 = now_ns();
	r = fi_av_insert(av, addrs, n, fa, 0, NULL);
	double t1 = now_ns();
	if (r != (int)n)
		die("fi_av_insert", r < 0 ? r : -FI_EOTHER);
	double insert_ns = (t1 - t0) / n;

	/* Lookups of random entries. */
	struct sockaddr_in out;
	size_t len;
	unsigned sink = 0;
	t0 = now_ns();
	for (size_t i = 0; i < nlook; i++) {
		len = sizeof out;
		fi_av_lookup(av, fa[pick[i]], &out, &len);
		sink += out.sin_port;
	}
	t1 = now_ns();
	double lookup_ns = (t1 - t0) / nlook;

	/* Reverse lookups (address to fi_addr), where the library offers them. */
	struct wireup_av_ext *ext = NULL;
	char rev[32] = "na";
	if (fi_open_ops(&av->fid, "wireup:av_ext", 0, (void **)&ext, NULL) == 0 && ext) {
		ext->reverse(av, &addrs[0], sizeof addrs[0]); /* builds the index */
		t0 = now_ns();
		for (size_t i = 0; i < nlook; i++)
			sink += (unsigned)ext->reverse(av, &addrs[pick[i]], sizeof addrs[0]);
		t1 = now_ns();
		snprintf(rev, sizeof rev, "%.0f", nlook / ((t1 - t0) / 1e9));
	}
	long bytes = rss_bytes() - before;

	/* Single removes of distinct random entries (slow AVs: fewer). */
	size_t nrm = n < 1000 ? n : 1000;
	if (n >= 100000 && strcmp(argv[1], "sockets") != 0)
		nrm = 200;
	double rm_total = 0;
	size_t done = 0;
	for (size_t i = 0; i < nrm; i++) {
		size_t k = (size_t)(next_rand() % n);
		if (fa[k] == FI_ADDR_NOTAVAIL)
			continue;
		t0 = now_ns();
		r = fi_av_remove(av, &fa[k], 1, 0);
		t1 = now_ns();
		if (r)
			die("fi_av_remove", r);
		fa[k] = FI_ADDR_NOTAVAIL;
		rm_total += t1 - t0;
		done++;
	}
	printf("prov=%s n=%zu insert_ns=%.1f remove_ns=%.1f lookup_ns=%.1f bytes=%.1f reverse_ps=%s sink=%u\n",
	       info->fabric_attr->prov_name, n, insert_ns, rm_total / (done ? done : 1), lookup_ns,
	       (double)bytes / n, rev, sink & 1);
	fi_close(&av->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
