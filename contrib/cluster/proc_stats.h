/* SPDX-License-Identifier: BSD-3-Clause */
/* What a rank of the cluster jobs reports about itself from /proc: peak RSS
 * and the tcp connections it holds (its own socket inodes matched against
 * its network namespace's /proc/self/net/tcp and tcp6).  Header-only, plain C, shared
 * by contrib/cluster/cluster_mpi.c and contrib/wireup_pingpong.c. */
#ifndef WU_CLUSTER_PROC_STATS_H
#define WU_CLUSTER_PROC_STATS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* VmHWM in kB, 0 when unknown. */
static inline long wu_peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Established tcp connections (IPv4 and IPv6, not loopback) of this process: *conns of them, and
 * *dups that go to a remote address:port another one already goes to.  A
 * connection this process opened has the peer's listening address as its
 * remote end, so two to one peer endpoint show up as a duplicate. */
static inline void wu_tcp_conns(unsigned *conns, unsigned *dups)
{
	enum { max_socks = 4096 };
	static unsigned long inodes[max_socks];
	static char remotes[max_socks][48];
	unsigned ni = 0, nr = 0;
	*conns = *dups = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d)) && ni < max_socks) {
		char p[300], t[64];
		unsigned long ino;
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, t, sizeof t - 1);
		if (n <= 0)
			continue;
		t[n] = 0;
		if (sscanf(t, "socket:[%lu]", &ino) == 1)
			inodes[ni++] = ino;
	}
	closedir(d);
	for (int v6 = 0; v6 < 2; v6++) {
		FILE *f = fopen(v6 ? "/proc/self/net/tcp6" : "/proc/self/net/tcp", "r");
		char line[512];
		if (!f)
			continue;
		if (!fgets(line, sizeof line, f)) { /* header */
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof line, f) && nr < max_socks) {
			char local[48], remote[48];
			unsigned st;
			unsigned long ino;
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, " %*s %47s %47s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
				   &ino) != 4)
				continue;
			/* Established, and not on loopback (the PMIx server's). */
			if (st != 1 || !strncmp(remote, "0100007F", 8) ||
			    strstr(remote, "FFFF00000100007F") ||
			    !strncmp(remote, "00000000000000000000000001000000", 32))
				continue;
			for (unsigned i = 0; i < ni; i++) {
				if (inodes[i] != ino)
					continue;
				(*conns)++;
				for (unsigned k = 0; k < nr; k++)
					if (!strcmp(remotes[k], remote)) {
						(*dups)++;
						break;
					}
				strcpy(remotes[nr++], remote);
				break;
			}
		}
		fclose(f);
	}
}

#endif
