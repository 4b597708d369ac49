/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_server: a PMIx server of our own (PMIx server API) that plays
 * a launcher publishing endpoint data before its clients start, for the
 * launcher-published mode and its fault cases.
 *
 *   test_wireup_server N NODES VARIANT CLIENT [ARGS...]
 *
 * Describes a job of N ranks on NODES "nodes" (node map, proc map, local
 * ranks, node ids; all clients run on this machine and attach to this
 * server) and publishes, VARIANT:
 *   nodes    job key wireup.lpn: one node record per node (127.0.0.1 + node,
 *            port 30000 + slot): no exchange, symmetric AV
 *   ranks    per-rank key wireup.lp (PMIX_PROC_DATA): 127.0.0.1:30000+rank
 *   corrupt  as ranks, but rank 1's record is 7 bytes
 *   silent   as ranks, but rank N-1 has none
 * then forks N clients (CLIENT ARGS... VARIANT N) and exits with the highest
 * client status.  Clients get PMIx_Fence from the server module below. */
#include <pmix.h>
#include <pmix_server.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>

#include "pmix_glue/wire.h"

namespace {

using namespace wu::pmix;

std::atomic<int> done;

void opcb(pmix_status_t, void *)
{
	done++;
}

pmix_status_t fence_nb(const pmix_proc_t *, size_t, const pmix_info_t *, size_t, char *data,
		       size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	/* One server holds every process: the local contributions are all. */
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
	return PMIX_SUCCESS;
}

pmix_status_t client_connected(const pmix_proc_t *, void *, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

pmix_status_t client_finalized(const pmix_proc_t *, void *, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

pmix_status_t abort_fn(const pmix_proc_t *, void *, int, const char *msg, pmix_proc_t *, size_t,
		       pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	fprintf(stderr, "test_wireup_server: a client aborted: %s\n", msg ? msg : "");
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

sockaddr_in v4(uint32_t host, uint16_t port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(host);
	a.sin_port = htons(port);
	return a;
}

void wait_done(int want)
{
	while (done < want)
		usleep(1000);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s N NODES nodes|ranks|corrupt|silent CLIENT [ARGS...]\n", argv[0]);
		return 2;
	}
	const uint32_t n = uint32_t(atoi(argv[1])), nodes = uint32_t(atoi(argv[2]));
	const std::string variant = argv[3];
	if (n == 0 || nodes == 0 || n % nodes) {
		fprintf(stderr, "test_wireup_server: N must be a multiple of NODES\n");
		return 2;
	}
	const uint32_t ppn = n / nodes;
	char tmpl[] = "/tmp/wu-pmix-srv.XXXXXX";
	const char *tmpdir = mkdtemp(tmpl);
	if (!tmpdir)
		return 2;

	pmix_server_module_t mod{};
	mod.client_connected = client_connected;
	mod.client_finalized = client_finalized;
	mod.abort = abort_fn;
	mod.fence_nb = fence_nb;
	pmix_info_t sinfo[2];
	PMIX_INFO_LOAD(&sinfo[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&sinfo[1], PMIX_SYSTEM_TMPDIR, tmpdir, PMIX_STRING);
	pmix_status_t rc = PMIx_server_init(&mod, sinfo, 2);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_server: PMIx_server_init: %s\n", PMIx_Error_string(rc));
		return 2;
	}

	const char *nspace = "wu-lp-job";
	const uint64_t job = wire::job_id(nspace);
	std::vector<std::string> hosts;
	std::string nodelist, procmap, peers;
	for (uint32_t k = 0; k < nodes; k++) {
		hosts.push_back("wunode" + std::to_string(k));
		nodelist += (k ? "," : "") + hosts[k];
		procmap += k ? ";" : "";
		for (uint32_t s = 0; s < ppn; s++)
			procmap += (s ? "," : "") + std::to_string(k * ppn + s);
	}
	for (uint32_t s = 0; s < ppn; s++) /* the server's own node: node 0 */
		peers += (s ? "," : "") + std::to_string(s);
	char *node_regex = nullptr, *ppn_regex = nullptr;
	PMIx_generate_regex(nodelist.c_str(), &node_regex);
	PMIx_generate_ppn(procmap.c_str(), &ppn_regex);

	/* Job-level data, then one PMIX_PROC_DATA array per rank. */
	std::vector<pmix_info_t> info(9 + n);
	size_t ni = 0;
	uint32_t u = n, lsz = ppn, nn = nodes;
	PMIX_INFO_LOAD(&info[ni++], PMIX_UNIV_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_JOB_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_LOCAL_SIZE, &lsz, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_NUM_NODES, &nn, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_LOCAL_PEERS, peers.c_str(), PMIX_STRING);
	PMIX_INFO_LOAD(&info[ni++], PMIX_NODE_MAP, node_regex, PMIX_REGEX);
	PMIX_INFO_LOAD(&info[ni++], PMIX_PROC_MAP, ppn_regex, PMIX_REGEX);
	std::vector<uint8_t> table;
	if (variant == "nodes") {
		table.resize(4);
		memcpy(table.data(), &nodes, 4);
		for (uint32_t k = 0; k < nodes; k++) {
			sockaddr_in a = v4(INADDR_LOOPBACK + k, 30000);
			auto rec = wire::encode_node(FI_SOCKADDR_IN, job, k, 30000, &a, sizeof a, {});
			table.insert(table.end(), rec.begin(), rec.end());
		}
		pmix_byte_object_t bo;
		bo.bytes = reinterpret_cast<char *>(table.data());
		bo.size = table.size();
		PMIX_INFO_LOAD(&info[ni++], wire::key_lpn, &bo, PMIX_BYTE_OBJECT);
	}
	std::vector<std::vector<uint8_t>> recs(n);
	for (uint32_t r = 0; r < n; r++) {
		const uint32_t k = r / ppn, s = r % ppn;
		bool with_lp = variant != "nodes" && !(variant == "silent" && r == n - 1);
		pmix_data_array_t *darray;
		PMIX_DATA_ARRAY_CREATE(darray, with_lp ? 6 : 5, PMIX_INFO);
		auto *pi = static_cast<pmix_info_t *>(darray->array);
		pmix_rank_t rank = r;
		uint16_t lr = uint16_t(s), nr = uint16_t(s);
		uint32_t nid = k;
		PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &nr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[3], PMIX_NODEID, &nid, PMIX_UINT32);
		/* Every client attaches to this one server, whose job-level
		 * PMIX_LOCAL_PEERS are node 0's: PMIx answers Resolve_peers of
		 * a client's own host name from them, so all carry node 0's
		 * name (the node map and node ids still say where they run). */
		PMIX_INFO_LOAD(&pi[4], PMIX_HOSTNAME, hosts[0].c_str(), PMIX_STRING);
		if (with_lp) {
			sockaddr_in a = v4(INADDR_LOOPBACK, uint16_t(30000 + r));
			recs[r] = wire::encode_ep(FI_SOCKADDR_IN, job, r, &a, sizeof a);
			if (variant == "corrupt" && r == 1)
				recs[r].resize(7);
			pmix_byte_object_t bo;
			bo.bytes = reinterpret_cast<char *>(recs[r].data());
			bo.size = recs[r].size();
			PMIX_INFO_LOAD(&pi[5], wire::key_lp, &bo, PMIX_BYTE_OBJECT);
		}
		PMIX_INFO_LOAD(&info[ni], PMIX_PROC_DATA, darray, PMIX_DATA_ARRAY);
		PMIX_DATA_ARRAY_FREE(darray);
		ni++;
	}
	done = 0;
	rc = PMIx_server_register_nspace(nspace, int(n), info.data(), ni, opcb, nullptr);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_server: register_nspace: %s\n", PMIx_Error_string(rc));
		return 2;
	}
	wait_done(1);

	std::vector<pid_t> kids;
	for (uint32_t r = 0; r < n; r++) {
		pmix_proc_t proc;
		PMIX_LOAD_PROCID(&proc, nspace, r);
		done = 0;
		PMIx_server_register_client(&proc, getuid(), getgid(), nullptr, opcb, nullptr);
		wait_done(1);
		char **env = nullptr;
		for (char **e = environ; *e; e++)
			pmix_argv_append_nosize(&env, *e);
		if ((rc = PMIx_server_setup_fork(&proc, &env)) != PMIX_SUCCESS) {
			fprintf(stderr, "test_wireup_server: setup_fork: %s\n", PMIx_Error_string(rc));
			return 2;
		}
		std::vector<char *> args(argv + 4, argv + argc);
		std::string nstr = std::to_string(n);
		args.push_back(const_cast<char *>(variant.c_str()));
		args.push_back(nstr.data());
		args.push_back(nullptr);
		pid_t pid = fork();
		if (pid == 0) {
			execve(args[0], args.data(), env);
			perror("execve");
			_exit(127);
		}
		pmix_argv_free(env);
		kids.push_back(pid);
	}
	int worst = 0;
	for (pid_t p : kids) {
		int st = 0;
		waitpid(p, &st, 0);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		worst = std::max(worst, code);
	}
	PMIx_server_finalize();
	free(node_regex);
	free(ppn_regex);
	std::string rm = std::string("rm -rf ") + tmpdir;
	if (system(rm.c_str()) != 0)
		worst = std::max(worst, 1);
	return worst;
}
