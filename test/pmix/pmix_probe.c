/* SPDX-License-Identifier: BSD-3-Clause */
/* pmix_probe: a plain PMIx client that checks, under a real launcher, every
 * PMIx service the Wireup wire-up relies on:
 *   - job-level keys (rank PMIX_RANK_WILDCARD): PMIX_JOB_SIZE, PMIX_LOCAL_SIZE,
 *     PMIX_LOCAL_PEERS, PMIX_NUM_NODES;
 *   - per-process keys (own rank): PMIX_LOCAL_RANK, PMIX_NODE_RANK,
 *     PMIX_NODEID, PMIX_HOSTNAME, PMIX_APPNUM, whatever integer type they have;
 *   - direct modex: Put + Commit of a blob, then a Get of every peer's blob
 *     with no fence before it (PMIX_DATA_SCOPE=PMIX_GLOBAL, bounded retry);
 *   - full modex: Put + Commit of another blob, Fence with PMIX_COLLECT_DATA,
 *     then a Get of every peer's blob.
 * Every fetched blob is compared byte for byte with what that rank must have
 * put.  Each rank prints one line; the exit status is non-zero on any failure.
 *
 * usage: pmix_probe [EXPECTED_JOB_SIZE]
 */
#include <pmix.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_FENCE "wireup.ep"
#define KEY_DMODEX "wireup.ep.dm"
#define BLOB_LEN 72
#define DMODEX_TRIES 100 /* x 20 ms between tries: 2 s at most per peer */
#define GET_TIMEOUT_S 10

static pmix_proc_t me;
static int failures;
static char problems[1024];

static void fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	failures++;
	fprintf(stderr, "pmix_probe rank %u: FAIL %s\n", me.rank, msg);
	size_t used = strlen(problems);
	if (used < sizeof problems - 1)
		snprintf(problems + used, sizeof problems - used, "%s%s", used ? "; " : "", msg);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Any integer-typed pmix_value_t as int64; false for every other type. */
static bool value_as_int(const pmix_value_t *v, int64_t *out)
{
	switch (v->type) {
	case PMIX_BOOL: *out = v->data.flag; return true;
	case PMIX_INT: *out = v->data.integer; return true;
	case PMIX_INT8: *out = v->data.int8; return true;
	case PMIX_INT16: *out = v->data.int16; return true;
	case PMIX_INT32: *out = v->data.int32; return true;
	case PMIX_INT64: *out = v->data.int64; return true;
	case PMIX_UINT: *out = v->data.uint; return true;
	case PMIX_UINT8: *out = v->data.uint8; return true;
	case PMIX_UINT16: *out = v->data.uint16; return true;
	case PMIX_UINT32: *out = v->data.uint32; return true;
	case PMIX_UINT64: *out = (int64_t)v->data.uint64; return true;
	case PMIX_SIZE: *out = (int64_t)v->data.size; return true;
	case PMIX_PID: *out = v->data.pid; return true;
	case PMIX_PROC_RANK: *out = v->data.rank; return true;
	default: return false;
	}
}

/* Get an integer key of proc (nspace of me, given rank); -1 when missing. */
static int64_t get_int(pmix_rank_t rank, const char *key, const char **type_out)
{
	pmix_proc_t p;
	pmix_value_t *v = NULL;
	int64_t out = -1;
	PMIX_LOAD_PROCID(&p, me.nspace, rank);
	pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || v == NULL) {
		fail("%s: %s", key, PMIx_Error_string(rc));
		return -1;
	}
	if (type_out)
		*type_out = PMIx_Data_type_string(v->type);
	if (!value_as_int(v, &out)) {
		fail("%s: not an integer (type %s)", key, PMIx_Data_type_string(v->type));
		out = -1;
	}
	PMIX_VALUE_RELEASE(v);
	return out;
}

/* Get a string key into buf; empty string when missing. */
static void get_string(pmix_rank_t rank, const char *key, char *buf, size_t len)
{
	pmix_proc_t p;
	pmix_value_t *v = NULL;
	buf[0] = '\0';
	PMIX_LOAD_PROCID(&p, me.nspace, rank);
	pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || v == NULL) {
		fail("%s: %s", key, PMIx_Error_string(rc));
		return;
	}
	if (v->type == PMIX_STRING && v->data.string)
		snprintf(buf, len, "%s", v->data.string);
	else
		fail("%s: not a string (type %s)", key, PMIx_Data_type_string(v->type));
	PMIX_VALUE_RELEASE(v);
}

/* The blob rank r publishes under key: a readable header, then bytes that
 * depend on rank and position, so truncation or mix-ups show. */
static void make_blob(const char *nspace, pmix_rank_t r, const char *key, unsigned char *b)
{
	memset(b, 0, BLOB_LEN);
	int n = snprintf((char *)b, BLOB_LEN, "%s r%u %s", key, r, nspace);
	for (int i = n < 0 ? 0 : n + 1; i < BLOB_LEN; i++)
		b[i] = (unsigned char)(r * 31u + (unsigned)i * 7u + 1u);
}

static pmix_status_t put_blob(const char *key)
{
	unsigned char blob[BLOB_LEN];
	pmix_value_t v;
	make_blob(me.nspace, me.rank, key, blob);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = (char *)blob;
	v.data.bo.size = BLOB_LEN;
	pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	/* v borrows blob: nothing to release (PMIx_Put copies). */
	return rc;
}

/* Compare what came back with what rank r must have published. */
static bool check_blob(pmix_rank_t r, const char *key, const pmix_value_t *v)
{
	unsigned char want[BLOB_LEN];
	make_blob(me.nspace, r, key, want);
	if (v->type != PMIX_BYTE_OBJECT) {
		fail("%s of rank %u: type %s", key, r, PMIx_Data_type_string(v->type));
		return false;
	}
	if (v->data.bo.size != BLOB_LEN || memcmp(v->data.bo.bytes, want, BLOB_LEN) != 0) {
		fail("%s of rank %u: %zu bytes, content differs", key, r, v->data.bo.size);
		return false;
	}
	return true;
}

/* Get key of every rank; direct modex retries NOT-FOUND a bounded number of times. */
static int get_all(const char *key, uint32_t size, bool dmodex, int *retries)
{
	pmix_info_t info[2];
	size_t ninfo = 0;
	int ok = 0;
	int timeout = GET_TIMEOUT_S;
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	if (dmodex) {
		pmix_scope_t scope = PMIX_GLOBAL;
		PMIX_INFO_LOAD(&info[ninfo], PMIX_DATA_SCOPE, &scope, PMIX_SCOPE);
		ninfo++;
		PMIX_INFO_LOAD(&info[ninfo], PMIX_TIMEOUT, &timeout, PMIX_INT);
		ninfo++;
	}
	for (uint32_t r = 0; r < size; r++) {
		pmix_proc_t p;
		pmix_value_t *v = NULL;
		pmix_status_t rc;
		PMIX_LOAD_PROCID(&p, me.nspace, r);
		for (int attempt = 0;; attempt++) {
			rc = PMIx_Get(&p, key, ninfo ? info : NULL, ninfo, &v);
			if (rc == PMIX_SUCCESS || !dmodex || attempt + 1 >= DMODEX_TRIES)
				break;
			if (rc != PMIX_ERR_NOT_FOUND && rc != PMIX_ERR_TIMEOUT)
				break;
			(*retries)++;
			usleep(20000);
		}
		if (rc != PMIX_SUCCESS || v == NULL) {
			fail("get %s of rank %u: %s", key, r, PMIx_Error_string(rc));
			continue;
		}
		if (check_blob(r, key, v))
			ok++;
		PMIX_VALUE_RELEASE(v);
	}
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	return ok;
}

static pmix_status_t fence(bool collect)
{
	pmix_info_t info;
	bool flag = true;
	PMIX_INFO_CONSTRUCT(&info);
	if (collect)
		PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
	pmix_status_t rc = PMIx_Fence(NULL, 0, collect ? &info : NULL, collect ? 1 : 0);
	PMIX_INFO_DESTRUCT(&info);
	return rc;
}

/* PMIX_LOCAL_PEERS is a comma-separated rank list: count it, find own rank. */
static int count_peers(const char *list, bool *has_me)
{
	int n = 0;
	const char *s = list;
	*has_me = false;
	while (*s) {
		char *end;
		errno = 0;
		unsigned long r = strtoul(s, &end, 10);
		if (end == s || errno)
			return -1;
		if (r == me.rank)
			*has_me = true;
		n++;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	long expected = argc > 1 ? strtol(argv[1], NULL, 10) : -1;
	pmix_status_t rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix_probe: PMIx_Init: %s (not started by a PMIx launcher?)\n",
		        PMIx_Error_string(rc));
		return 2;
	}

	/* Job-level data. */
	int64_t job_size = get_int(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, NULL);
	int64_t local_size = get_int(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, NULL);
	int64_t num_nodes = get_int(PMIX_RANK_WILDCARD, PMIX_NUM_NODES, NULL);
	char peers[4096];
	get_string(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, peers, sizeof peers);

	/* Own data. */
	const char *appnum_type = "?";
	int64_t local_rank = get_int(me.rank, PMIX_LOCAL_RANK, NULL);
	int64_t node_rank = get_int(me.rank, PMIX_NODE_RANK, NULL);
	int64_t node_id = get_int(me.rank, PMIX_NODEID, NULL);
	int64_t appnum = get_int(me.rank, PMIX_APPNUM, &appnum_type);
	char host[256];
	get_string(me.rank, PMIX_HOSTNAME, host, sizeof host);

	if (expected > 0 && job_size != expected)
		fail("job size %" PRId64 ", expected %ld", job_size, expected);
	if (job_size < 1 || me.rank >= (uint64_t)job_size)
		fail("rank %u outside job size %" PRId64, me.rank, job_size);
	if (num_nodes < 1)
		fail("num nodes %" PRId64, num_nodes);
	if (local_size < 1 || local_size > job_size)
		fail("local size %" PRId64 " of job size %" PRId64, local_size, job_size);
	if (num_nodes == 1 && local_size != job_size)
		fail("one node but local size %" PRId64 " != job size %" PRId64, local_size, job_size);
	bool has_me = false;
	int npeers = count_peers(peers, &has_me);
	if (npeers != local_size || !has_me)
		fail("local peers \"%s\": %d entries (local size %" PRId64 ")%s", peers, npeers,
		     local_size, has_me ? "" : ", own rank missing");
	if (local_rank < 0 || local_rank >= local_size)
		fail("local rank %" PRId64 " of %" PRId64, local_rank, local_size);
	if (node_rank < 0 || node_rank >= job_size)
		fail("node rank %" PRId64, node_rank);
	if (node_id < 0 || (num_nodes > 0 && node_id >= num_nodes))
		fail("node id %" PRId64 " of %" PRId64 " nodes", node_id, num_nodes);
	if (appnum != 0)
		fail("appnum %" PRId64 " (one application expected)", appnum);
	if (host[0] == '\0')
		fail("empty hostname");

	uint32_t size = job_size > 0 ? (uint32_t)job_size : 0;

	/* Direct modex: nobody fences before these gets. */
	int dm_retries = 0, dm_ok = 0;
	double t0 = now_ms();
	if ((rc = put_blob(KEY_DMODEX)) != PMIX_SUCCESS)
		fail("put %s: %s", KEY_DMODEX, PMIx_Error_string(rc));
	else if ((rc = PMIx_Commit()) != PMIX_SUCCESS)
		fail("commit: %s", PMIx_Error_string(rc));
	else
		dm_ok = get_all(KEY_DMODEX, size, true, &dm_retries);
	double t_dm = now_ms() - t0;

	/* Full modex: fence with data collection, then every peer from the local cache. */
	int fx_ok = 0, unused = 0;
	double t_fence = 0, t_get = 0;
	t0 = now_ms();
	if ((rc = put_blob(KEY_FENCE)) != PMIX_SUCCESS)
		fail("put %s: %s", KEY_FENCE, PMIx_Error_string(rc));
	else if ((rc = PMIx_Commit()) != PMIX_SUCCESS)
		fail("commit: %s", PMIx_Error_string(rc));
	else if ((rc = fence(true)) != PMIX_SUCCESS)
		fail("fence (collect): %s", PMIx_Error_string(rc));
	else {
		t_fence = now_ms() - t0;
		t0 = now_ms();
		fx_ok = get_all(KEY_FENCE, size, false, &unused);
		t_get = now_ms() - t0;
	}

	/* Nobody leaves while a peer may still be fetching from it. */
	if ((rc = fence(false)) != PMIX_SUCCESS)
		fail("final fence: %s", PMIx_Error_string(rc));

	printf("pmix_probe rank %u/%" PRId64 " ns=%s host=%s node=%" PRId64 "/%" PRId64
	       " local_rank=%" PRId64 "/%" PRId64 " node_rank=%" PRId64 " peers=%s appnum=%" PRId64
	       "(%s) dmodex=%d/%u(retries %d, %.2f ms) fence=%d/%u(%.2f+%.2f ms) %s%s\n",
	       me.rank, job_size, me.nspace, host, node_id, num_nodes, local_rank, local_size,
	       node_rank, peers, appnum, appnum_type, dm_ok, size, dm_retries, t_dm, fx_ok, size,
	       t_fence, t_get, failures ? "FAIL: " : "OK", problems);
	fflush(stdout);

	rc = PMIx_Finalize(NULL, 0);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix_probe rank %u: PMIx_Finalize: %s\n", me.rank,
		        PMIx_Error_string(rc));
		failures++;
	}
	return failures ? 1 : 0;
}
