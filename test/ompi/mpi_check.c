/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI behaviour issue 15 asks of Open MPI on Wireup, with every byte
 * checked: ping-pong between every pair of ranks at several sizes,
 * MPI_Alltoall and MPI_Alltoallv of varied sizes, wildcard receives
 * (MPI_ANY_SOURCE, MPI_ANY_TAG, both), MPI_Cancel of posted receives and,
 * with "rma", one-sided MPI_Put / MPI_Get / MPI_Accumulate /
 * MPI_Fetch_and_op in fence and lock epochs.  Run by the scripts in test/ompi.
 *   mpi_check [rma]
 * Every rank prints "mpi_check: rank R of N on HOST", "mpi_check: rank R
 * pid PID" (to match it with its FI_LOG lines) and the path of the
 * libfabric.so it loaded ("mpi_check: rank R libfabric PATH"); rank 0 prints
 * "mpi_check: CHECK ok" per check and "mpi_check: PASS N ranks" at the end.
 * A mismatch is named on stderr by the rank that saw it, and the exit code
 * is 1 on every rank. */
#define _GNU_SOURCE
#include <link.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me, np;
static long failures;

#define FAIL(...)                                                       \
	do {                                                            \
		fprintf(stderr, "mpi_check: rank %d: ", me);            \
		fprintf(stderr, __VA_ARGS__);                           \
		fprintf(stderr, "\n");                                  \
		failures++;                                             \
	} while (0)

/* One byte of a pattern that depends on who wrote it, for whom, in which
 * round and where: a message delivered to the wrong buffer, at the wrong
 * offset or from the wrong round differs. */
static unsigned char pat(int from, int to, int round, size_t k)
{
	return (unsigned char)(k * 131 + (k >> 8) * 7 + from * 29 + to * 17 + round * 53 + 1);
}

static void fill(unsigned char *b, size_t n, int from, int to, int round)
{
	for (size_t k = 0; k < n; k++)
		b[k] = pat(from, to, round, k);
}

/* Number of bytes that differ; the first is reported. */
static size_t verify(const char *what, const unsigned char *b, size_t n, int from, int to, int round)
{
	size_t bad = 0;
	for (size_t k = 0; k < n; k++) {
		if (b[k] != pat(from, to, round, k)) {
			if (!bad)
				FAIL("%s: byte %zu of %zu from rank %d (round %d) is %u, expected %u", what, k, n,
				     from, round, b[k], pat(from, to, round, k));
			bad++;
		}
	}
	return bad;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "mpi_check: rank %d: out of memory (%zu bytes)\n", me, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* Ends a check: every rank learns whether any rank failed in it. */
static void done(const char *check)
{
	long mine = failures, all = 0;
	MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (me == 0)
		printf("mpi_check: %s %s\n", check, all ? "FAILED" : "ok");
	fflush(stdout);
}

static void check_count(const char *what, MPI_Status *st, size_t want)
{
	int n = -1;
	MPI_Get_count(st, MPI_BYTE, &n);
	if (n != (int)want)
		FAIL("%s: received %d bytes, expected %zu", what, n, want);
}

/* Ping-pong between every pair, one pair at a time, so that on two
 * "nodes" both the node-local and the remote pairs are covered; blocking,
 * nonblocking and synchronous sends. */
static void pingpong(void)
{
	static const size_t sizes[] = {0, 1, 8, 127, 4096, 65536, 262144 + 3, 1 << 20, 4 << 20};
	const int iters = 3;
	size_t max = 4 << 20;
	unsigned char *buf = xmalloc(max);
	for (int a = 0; a < np; a++) {
		for (int b = a + 1; b < np; b++) {
			if (me != a && me != b)
				continue;
			int peer = me == a ? b : a;
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				size_t n = sizes[s];
				for (int it = 0; it < iters; it++) {
					int round = (int)s * iters + it;
					MPI_Status st;
					char what[64];
					snprintf(what, sizeof(what), "pingpong %d<->%d %zu B", a, b, n);
					if (me == a) {
						fill(buf, n, a, b, round);
						if (it == 1)
							MPI_Ssend(buf, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
						else
							MPI_Send(buf, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
						memset(buf, 0xee, n);
						MPI_Recv(buf, (int)n, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &st);
						check_count(what, &st, n);
						verify(what, buf, n, b, a, round);
					} else {
						MPI_Request rq;
						memset(buf, 0xee, n);
						MPI_Irecv(buf, (int)max, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq);
						MPI_Wait(&rq, &st);
						check_count(what, &st, n);
						verify(what, buf, n, a, b, round);
						fill(buf, n, b, a, round);
						MPI_Isend(buf, (int)n, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &rq);
						MPI_Wait(&rq, MPI_STATUS_IGNORE);
					}
				}
			}
		}
	}
	free(buf);
	done("pingpong (every pair, 0 B to 4 MiB)");
}

static void alltoall(void)
{
	static const size_t blocks[] = {1, 8, 100, 1024, 8192, 70000, 300000};
	for (size_t r = 0; r < sizeof(blocks) / sizeof(blocks[0]); r++) {
		size_t n = blocks[r];
		unsigned char *sb = xmalloc(n * np), *rb = xmalloc(n * np);
		for (int d = 0; d < np; d++)
			fill(sb + d * n, n, me, d, (int)r);
		memset(rb, 0xee, n * np);
		MPI_Alltoall(sb, (int)n, MPI_BYTE, rb, (int)n, MPI_BYTE, MPI_COMM_WORLD);
		for (int s = 0; s < np; s++) {
			char what[64];
			snprintf(what, sizeof(what), "alltoall %zu B blocks", n);
			verify(what, rb + s * n, n, s, me, (int)r);
		}
		free(sb);
		free(rb);
	}
	done("alltoall (1 B to 300000 B blocks)");
}

/* Bytes rank s sends rank d in round r: zero for some pairs, up to a few
 * hundred KiB for others. */
static size_t vcount(int s, int d, int r)
{
	static const size_t unit[] = {1, 33, 1000, 20000, 65536};
	return (size_t)((s * 5 + d * 3 + r) % 4) * unit[r % 5] + (size_t)(s == d);
}

static void alltoallv(void)
{
	const size_t gap = 7; /* untouched bytes between blocks */
	for (int r = 0; r < 10; r++) {
		int *sc = xmalloc(sizeof(int) * np), *sd = xmalloc(sizeof(int) * np);
		int *rc = xmalloc(sizeof(int) * np), *rd = xmalloc(sizeof(int) * np);
		size_t stot = 0, rtot = 0;
		for (int p = 0; p < np; p++) {
			sc[p] = (int)vcount(me, p, r);
			sd[p] = (int)stot;
			stot += sc[p] + gap;
			rc[p] = (int)vcount(p, me, r);
			rd[p] = (int)rtot;
			rtot += rc[p] + gap;
		}
		unsigned char *sb = xmalloc(stot), *rb = xmalloc(rtot);
		memset(sb, 0x55, stot);
		for (int p = 0; p < np; p++)
			fill(sb + sd[p], sc[p], me, p, r + 100);
		memset(rb, 0xee, rtot);
		MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
		for (int p = 0; p < np; p++) {
			char what[64];
			snprintf(what, sizeof(what), "alltoallv round %d, %d B", r, rc[p]);
			verify(what, rb + rd[p], rc[p], p, me, r + 100);
			for (size_t k = 0; k < gap; k++)
				if (rb[rd[p] + rc[p] + k] != 0xee) {
					FAIL("alltoallv round %d: byte %zu after the block from rank %d was written", r,
					     k, p);
					break;
				}
		}
		free(sb);
		free(rb);
		free(sc);
		free(sd);
		free(rc);
		free(rd);
	}
	done("alltoallv (10 rounds, 0 B to 196609 B per pair)");
}

/* Wildcard receives on rank 0 of messages from every other rank: each
 * message carries its sender, tag and sequence number, which must match
 * the status; per sender the sequence is in order (MPI's non-overtaking
 * rule holds for a receive that matches either). */
#define WC_MSGS 24
static int wc_tag(int src, int i)
{
	return 100 + (src * 37 + i * 11) % 50;
}
static size_t wc_len(int i)
{
	return 3 * sizeof(int) + (size_t)(i % 6) * 997;
}
#define WC_MAX (3 * sizeof(int) + 5 * 997)

/* Nonblocking: rank 0 takes the messages in another order than they were
 * sent, and a blocking send of a large one may wait for its receive. */
static void wildcard_send(int round)
{
	unsigned char *b = xmalloc(WC_MAX * WC_MSGS);
	MPI_Request rq[WC_MSGS];
	for (int i = 0; i < WC_MSGS; i++) {
		int hdr[3] = {me, wc_tag(me, i), i};
		size_t n = wc_len(i);
		unsigned char *m = b + i * WC_MAX;
		memcpy(m, hdr, sizeof(hdr));
		fill(m + sizeof(hdr), n - sizeof(hdr), me, 0, round + i);
		MPI_Isend(m, (int)n, MPI_BYTE, 0, wc_tag(me, i), MPI_COMM_WORLD, &rq[i]);
	}
	MPI_Waitall(WC_MSGS, rq, MPI_STATUSES_IGNORE);
	free(b);
}

/* Receives and checks one wildcard message; returns its sender. */
static int wildcard_recv_one(const char *what, int src, int tag, int *next, int round, unsigned char *b)
{
	MPI_Status st;
	MPI_Recv(b, (int)WC_MAX, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
	int hdr[3];
	memcpy(hdr, b, sizeof(hdr));
	int s = st.MPI_SOURCE;
	if (s <= 0 || s >= np || hdr[0] != s || hdr[1] != st.MPI_TAG) {
		FAIL("%s: status says source %d tag %d, the message says source %d tag %d", what, s, st.MPI_TAG,
		     hdr[0], hdr[1]);
		return -1;
	}
	if (src != MPI_ANY_SOURCE && s != src)
		FAIL("%s: asked for source %d, got %d", what, src, s);
	if (tag != MPI_ANY_TAG && st.MPI_TAG != tag)
		FAIL("%s: asked for tag %d, got %d", what, tag, st.MPI_TAG);
	if (next && hdr[2] != next[s])
		FAIL("%s: message %d of rank %d arrived when %d was next (overtaken)", what, hdr[2], s, next[s]);
	if (next)
		next[s] = hdr[2] + 1;
	check_count(what, &st, wc_len(hdr[2]));
	verify(what, b + sizeof(hdr), wc_len(hdr[2]) - sizeof(hdr), s, 0, round + hdr[2]);
	return s;
}

static void wildcards(void)
{
	unsigned char *b = xmalloc(WC_MAX);
	int *next = xmalloc(sizeof(int) * np);

	/* 1: MPI_ANY_SOURCE and MPI_ANY_TAG together, every message. */
	memset(next, 0, sizeof(int) * np);
	if (me == 0) {
		for (int k = 0; k < (np - 1) * WC_MSGS; k++)
			wildcard_recv_one("any source, any tag", MPI_ANY_SOURCE, MPI_ANY_TAG, next, 1000, b);
		for (int s = 1; s < np; s++)
			if (next[s] != WC_MSGS)
				FAIL("any source, any tag: %d of %d messages from rank %d", next[s], WC_MSGS, s);
	} else {
		wildcard_send(1000);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* 2: MPI_ANY_TAG from each source in turn, then MPI_ANY_SOURCE with
	 * each tag: the messages wait unexpected while others are taken. */
	if (me == 0) {
		memset(next, 0, sizeof(int) * np);
		for (int s = np - 1; s > 0; s--)
			for (int i = 0; i < WC_MSGS; i++)
				wildcard_recv_one("any tag, one source", s, MPI_ANY_TAG, next, 2000, b);
	} else {
		wildcard_send(2000);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0) {
		/* Per tag, in the order each sender sent that tag. */
		int got = 0;
		for (int tag = 100; tag < 150; tag++) {
			for (int s = 1; s < np; s++)
				for (int i = 0; i < WC_MSGS; i++)
					if (wc_tag(s, i) == tag) {
						wildcard_recv_one("any source, one tag", MPI_ANY_SOURCE, tag, NULL, 3000, b);
						got++;
					}
		}
		if (got != (np - 1) * WC_MSGS)
			FAIL("any source, one tag: %d messages, expected %d", got, (np - 1) * WC_MSGS);
	} else {
		wildcard_send(3000);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* 3: wildcard receives posted before anything is sent. */
	if (me == 0) {
		int n = np - 1;
		MPI_Request *rq = xmalloc(sizeof(MPI_Request) * n);
		MPI_Status *st = xmalloc(sizeof(MPI_Status) * n);
		int *v = xmalloc(sizeof(int) * n), *seen = xmalloc(sizeof(int) * np);
		memset(seen, 0, sizeof(int) * np);
		for (int k = 0; k < n; k++)
			MPI_Irecv(&v[k], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[k]);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(n, rq, st);
		for (int k = 0; k < n; k++) {
			int s = st[k].MPI_SOURCE;
			if (s <= 0 || s >= np || v[k] != s * 1000 + 7 || st[k].MPI_TAG != 500 + s)
				FAIL("preposted wildcard: source %d tag %d value %d", s, st[k].MPI_TAG, v[k]);
			else
				seen[s]++;
		}
		for (int s = 1; s < np; s++)
			if (seen[s] != 1)
				FAIL("preposted wildcard: %d messages from rank %d, expected 1", seen[s], s);
		free(rq);
		free(st);
		free(v);
		free(seen);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		int v = me * 1000 + 7;
		MPI_Send(&v, 1, MPI_INT, 0, 500 + me, MPI_COMM_WORLD);
	}
	free(b);
	free(next);
	done("wildcard receives (any source, any tag, both; posted before and after)");
}

/* MPI_Cancel of receives nobody sends to: cancelled, and the buffer is
 * untouched.  Then a receive whose message already arrived: either the
 * receive completed (not cancelled, data right) or the cancel won and the
 * message is still there for the next receive - never both, never lost. */
static void cancels(void)
{
	int peer = (me + 1) % np, from = (me + np - 1) % np;
	int v[3] = {-1, -1, -1}, flag;
	MPI_Request rq[3];
	MPI_Status st;
	MPI_Irecv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 990, MPI_COMM_WORLD, &rq[0]);
	MPI_Irecv(&v[1], 1, MPI_INT, from, 991, MPI_COMM_WORLD, &rq[1]);
	MPI_Irecv(&v[2], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[2]);
	for (int k = 0; k < 3; k++) {
		MPI_Cancel(&rq[k]);
		MPI_Wait(&rq[k], &st);
		MPI_Test_cancelled(&st, &flag);
		if (!flag)
			FAIL("cancel: posted receive %d (nothing sent to it) not cancelled", k);
		if (v[k] != -1)
			FAIL("cancel: cancelled receive %d wrote %d", k, v[k]);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* The cancelled receives took nothing: messages to the same tags now
	 * reach new receives. */
	int out = me * 10 + 1, in = -1;
	MPI_Sendrecv(&out, 1, MPI_INT, peer, 990, &in, 1, MPI_INT, from, 990, MPI_COMM_WORLD, &st);
	if (in != from * 10 + 1 || st.MPI_SOURCE != from)
		FAIL("cancel: after the cancels, a receive from %d got %d from %d", from, in, st.MPI_SOURCE);

	/* A receive posted after its message arrived (MPI_Probe saw it). */
	out = me * 10 + 2;
	MPI_Send(&out, 1, MPI_INT, peer, 992, MPI_COMM_WORLD);
	MPI_Probe(from, 992, MPI_COMM_WORLD, &st);
	in = -1;
	MPI_Irecv(&in, 1, MPI_INT, from, 992, MPI_COMM_WORLD, &rq[0]);
	MPI_Cancel(&rq[0]);
	MPI_Wait(&rq[0], &st);
	MPI_Test_cancelled(&st, &flag);
	if (flag) {
		if (in != -1)
			FAIL("cancel: a cancelled receive wrote %d", in);
		MPI_Recv(&in, 1, MPI_INT, from, 992, MPI_COMM_WORLD, &st);
	}
	if (in != from * 10 + 2)
		FAIL("cancel: the matched message from %d is %d, expected %d (cancelled: %d)", from, in,
		     from * 10 + 2, flag);
	long won = flag, wins = 0;
	MPI_Reduce(&won, &wins, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (me == 0)
		printf("mpi_check: cancel of a matched receive: cancelled on %ld of %d ranks\n", wins, np);
	done("cancel (posted receives cancelled; a matched one completes or stays receivable)");
}

/* One-sided: every rank owns np blocks; rank o writes block o of every
 * target.  Put and Get in fence epochs, Put in passive lock epochs,
 * Accumulate and Fetch_and_op. */
static void rma(void)
{
	static const size_t blks[] = {8, 4096, 200000};
	/* MPI_Win_allocate, whose memory Open MPI's osc rdma shares between
	 * the ranks of a node (it reaches them without the BTL), and
	 * MPI_Win_create over the program's own memory (every peer through
	 * the BTL). */
	for (size_t k = 0; k < 2 * sizeof(blks) / sizeof(blks[0]); k++) {
		size_t r = k % (sizeof(blks) / sizeof(blks[0]));
		int created = k >= sizeof(blks) / sizeof(blks[0]);
		size_t n = blks[r];
		unsigned char *base;
		MPI_Win win;
		if (created) {
			base = xmalloc(n * np);
			MPI_Win_create(base, (MPI_Aint)(n * np), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
		} else {
			MPI_Win_allocate((MPI_Aint)(n * np), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
		}
		memset(base, 0xee, n * np);
		unsigned char *src = xmalloc(n * np), *got = xmalloc(n * np);
		MPI_Win_fence(0, win);
		for (int t = 0; t < np; t++) {
			fill(src + t * n, n, me, t, (int)r);
			MPI_Put(src + t * n, (int)n, MPI_BYTE, t, (MPI_Aint)(me * n), (int)n, MPI_BYTE, win);
		}
		MPI_Win_fence(0, win);
		char what[80];
		snprintf(what, sizeof(what), "put (fence) %zu B, %s", n, created ? "created" : "allocated");
		for (int o = 0; o < np; o++)
			verify(what, base + o * n, n, o, me, (int)r);
		/* Get back what this rank put at every target. */
		memset(got, 0, n * np);
		for (int t = 0; t < np; t++)
			MPI_Get(got + t * n, (int)n, MPI_BYTE, t, (MPI_Aint)(me * n), (int)n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		snprintf(what, sizeof(what), "get (fence) %zu B, %s", n, created ? "created" : "allocated");
		for (int t = 0; t < np; t++)
			verify(what, got + t * n, n, me, t, (int)r);
		/* Passive target: a new round in each target under a shared lock. */
		for (int t = 0; t < np; t++) {
			fill(src + t * n, n, me, t, (int)r + 10);
			MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
			MPI_Put(src + t * n, (int)n, MPI_BYTE, t, (MPI_Aint)(me * n), (int)n, MPI_BYTE, win);
			MPI_Win_unlock(t, win);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
		snprintf(what, sizeof(what), "put (lock) %zu B, %s", n, created ? "created" : "allocated");
		for (int o = 0; o < np; o++)
			verify(what, base + o * n, n, o, me, (int)r + 10);
		MPI_Win_unlock(me, win);
		MPI_Barrier(MPI_COMM_WORLD);
		for (int t = 0; t < np; t++) {
			memset(got + t * n, 0, n);
			MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
			MPI_Get(got + t * n, (int)n, MPI_BYTE, t, (MPI_Aint)(((me + 1) % np) * n), (int)n, MPI_BYTE,
				win);
			MPI_Win_unlock(t, win);
		}
		snprintf(what, sizeof(what), "get (lock) %zu B, %s", n, created ? "created" : "allocated");
		for (int t = 0; t < np; t++)
			verify(what, got + t * n, n, (me + 1) % np, t, (int)r + 10);
		MPI_Win_free(&win);
		if (created)
			free(base);
		free(src);
		free(got);
	}

	/* Accumulate (sum) and fetch-and-add on rank 0's window. */
	long *acc;
	MPI_Win win;
	enum { ACC_N = 64 };
	MPI_Win_allocate(sizeof(long) * (ACC_N + 1), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &acc, &win);
	memset(acc, 0, sizeof(long) * (ACC_N + 1));
	MPI_Barrier(MPI_COMM_WORLD);
	long add[ACC_N];
	for (int k = 0; k < ACC_N; k++)
		add[k] = (long)(me + 1) * (k + 1);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Accumulate(add, ACC_N, MPI_LONG, 0, 0, ACC_N, MPI_LONG, MPI_SUM, win);
	MPI_Win_unlock(0, win);
	long one = 1, before = -1;
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Fetch_and_op(&one, &before, MPI_LONG, 0, ACC_N, MPI_SUM, win);
	MPI_Win_unlock(0, win);
	MPI_Barrier(MPI_COMM_WORLD);
	long *befores = xmalloc(sizeof(long) * np);
	MPI_Gather(&before, 1, MPI_LONG, befores, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	if (me == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		long ranks = (long)np * (np + 1) / 2;
		for (int k = 0; k < ACC_N; k++)
			if (acc[k] != ranks * (k + 1)) {
				FAIL("accumulate: element %d is %ld, expected %ld", k, acc[k], ranks * (k + 1));
				break;
			}
		if (acc[ACC_N] != np)
			FAIL("fetch_and_op: counter is %ld after %d increments", acc[ACC_N], np);
		MPI_Win_unlock(0, win);
		/* The values fetched are 0 .. np-1, each once. */
		long seen = 0;
		for (int p = 0; p < np; p++) {
			if (befores[p] < 0 || befores[p] >= np || (seen >> befores[p]) & 1)
				FAIL("fetch_and_op: rank %d fetched %ld", p, befores[p]);
			else
				seen |= 1L << befores[p];
		}
	}
	free(befores);
	MPI_Win_free(&win);
	done("one-sided (put/get in fence and lock epochs, 8 B to 200000 B, allocated and created windows; accumulate; fetch_and_op)");
}

/* Which libfabric the MPI library loaded: the scripts check it is ours. */
static int print_libfabric(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libfabric.so")) {
		printf("mpi_check: rank %d libfabric %s\n", me, info->dlpi_name);
		++*(int *)data;
	}
	return 0;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	int want_rma = argc > 1 && !strcmp(argv[1], "rma");
	char host[MPI_MAX_PROCESSOR_NAME];
	int len = 0;
	MPI_Get_processor_name(host, &len);
	printf("mpi_check: rank %d of %d on %s\n", me, np, host);
	printf("mpi_check: rank %d pid %ld\n", me, (long)getpid());
	int libs = 0;
	dl_iterate_phdr(print_libfabric, &libs);
	if (!libs)
		printf("mpi_check: rank %d libfabric none\n", me);
	fflush(stdout);
	if (np < 2) {
		if (me == 0)
			fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
		MPI_Finalize();
		return 1;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	pingpong();
	alltoall();
	alltoallv();
	wildcards();
	cancels();
	if (want_rma)
		rma();
	long all = 0;
	MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (me == 0)
		printf("mpi_check: %s %d ranks (%ld mismatches)\n", all ? "FAIL" : "PASS", np, all);
	MPI_Finalize();
	return all ? 1 : 0;
}
