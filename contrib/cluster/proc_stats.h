/* SPDX-License-Identifier: BSD-3-Clause */
/* What a rank of the cluster jobs reports about itself from /proc: peak RSS
 * and the tcp connections it holds (its own socket inodes matched against
 * its network namespace's /proc/self/net/tcp).  Header-only, plain C, shared
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

/* Established tcp (IPv4) connections of this process: *conns of them, and
 * *dups that go to a remote address:port another one already goes to.  A
 * connection this process opened has the peer's listening address as its
 * remote end, so two to one peer endpoint show up as a duplicate. */
static inline void wu_tcp_conns(unsigned *conns, unsigned *dups)
{
	enum { max_socks = 4096 };
	static unsigned long inodes[max_socks];
	static char remotes[max_socks][24];
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
	FILE *f = fopen("/proc/self/net/tcp", "r");
	char line[512];
	if (!f)
		return;
	if (!fgets(line, sizeof line, f)) { /* header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof line, f) && nr < max_socks) {
		char local[24], remote[24];
		unsigned st;
		unsigned long ino;
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %23s %23s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &ino) != 4)
			continue;
		if (st != 1) /* TCP_ESTABLISHED */
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

#endif
