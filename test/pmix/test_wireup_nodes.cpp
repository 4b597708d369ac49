/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wireup_nodes: a job on several "nodes" of one machine, each node a
 * network namespace with its own address and its own PMIx server, for the
 * multi-node paths of the wire-up (test/pmix/netns.sh makes the namespaces).
 *
 *   test_wireup_nodes VARIANT MAP PPN PORT NETNS=ADDR [NETNS=ADDR ...]
 *
 * One process per node (forked here, moved into NETNS with setns, given its
 * own host name in a UTS namespace) plays the launcher's daemon: it runs a
 * PMIx server that registers the same namespace with the whole job (node
 * list, proc map, every rank's node id, local rank and host name) and this
 * node's local peers, then forks its PPN clients inside NETNS.  This parent
 * is the launcher's back end: it relays fence contributions between the
 * node servers (each server's blob, concatenated in node order) and direct
 * modex requests to the server that holds the rank.  MAP is block (ranks
 * k*PPN.. on node k) or cyclic (node k holds k, k+NODES, ...).  Fixed
 * endpoints (every variant but modex and direct) listen on PORT + slot.
 *
 * VARIANT selects the wire-up (environment of the clients):
 *   modex      FI_PMIX_MODE=modex: put, one cross-node fence with data
 *   direct     FI_PMIX_MODE=direct: no fence, remote ranks through the
 *              servers' direct modex
 *   symmetric  FI_PMIX_MODE=symmetric, FI_PMIX_PORT_BASE: node leaders
 *              fence one record per node
 *   hostname   as symmetric with FI_PMIX_SYM_NODE_ADDR=hostname: node
 *              addresses from the host names, nothing exchanged
 *   lpn        every server publishes one record per node (wireup.lpn)
 *   lp         every server publishes one record per rank (wireup.lp)
 *   wx, wxdirect  the wireup provider (shm on the node, tcp across), modex
 *              or direct: nothing fetched for local peers (nodes_wx.cpp)
 * Clients are this program again ("client" as first argument): see
 * client_main.  Exit status: the worst of the clients', 3 on a timeout. */
#include <pmix.h>
#include <pmix_server.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_wireup.h>
#include <rdma/fi_tagged.h>

#include "nodes_wx.h"
#include "pmix_glue/wire.h"

namespace {

using namespace wu::pmix;

uint16_t port_base = 31000; /* PORT: ports of the namespaces only */
constexpr int deadline_s = 15; /* a case takes about a second */

/* ---- the job's shape, alike in servers and clients ---- */

struct shape {
	uint32_t nn = 0, ppn = 0;
	bool cyclic = false;
	uint32_t size() const { return nn * ppn; }
	uint32_t node_of(uint32_t r) const { return cyclic ? r % nn : r / ppn; }
	uint32_t slot_of(uint32_t r) const { return cyclic ? r / nn : r % ppn; }
	uint32_t rank_at(uint32_t k, uint32_t s) const { return cyclic ? s * nn + k : k * ppn + s; }
};

double now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	size_t b = 0;
	for (;;) {
		size_t e = s.find(sep, b);
		out.push_back(s.substr(b, e == std::string::npos ? e : e - b));
		if (e == std::string::npos)
			return out;
		b = e + 1;
	}
}

/* ---- messages between the node servers and the relay (this parent) ---- */

enum msg_type : uint32_t {
	m_fence = 1,   /* server -> relay: this node's contribution */
	m_fence_done,  /* relay -> server: every node's, concatenated */
	m_dmx_req,     /* a: requesting node, b: request id, c: rank */
	m_dmx_rep,     /* a: requesting node, b: request id, c: PMIx status */
};

struct msg_hdr {
	uint32_t type, a, b, c;
	uint64_t len;
};

bool read_full(int fd, void *p, size_t n)
{
	auto *c = static_cast<char *>(p);
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		n -= size_t(r);
	}
	return true;
}

bool write_full(int fd, const void *p, size_t n)
{
	const auto *c = static_cast<const char *>(p);
	while (n) {
		ssize_t r = write(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		n -= size_t(r);
	}
	return true;
}

bool send_msg(int fd, msg_hdr h, const void *data)
{
	return write_full(fd, &h, sizeof h) && (!h.len || write_full(fd, data, h.len));
}

bool recv_msg(int fd, msg_hdr &h, std::vector<char> &data)
{
	if (!read_full(fd, &h, sizeof h))
		return false;
	data.resize(h.len);
	return !h.len || read_full(fd, data.data(), h.len);
}

/* ---- one node's server ---- */

namespace srv {

int relay_fd;
std::mutex relay_mu;
uint32_t my_node;
std::atomic<int> done;
std::mutex pend_mu;
std::deque<std::pair<pmix_modex_cbfunc_t, void *>> fences; /* waiting for the relay */
std::map<uint32_t, std::pair<pmix_modex_cbfunc_t, void *>> dmx;
uint32_t next_req;

void opcb(pmix_status_t, void *)
{
	done++;
}

void wait_done(int want)
{
	while (done < want)
		usleep(1000);
}

void relay(msg_hdr h, const void *data)
{
	std::lock_guard<std::mutex> g(relay_mu);
	if (!send_msg(relay_fd, h, data))
		fprintf(stderr, "test_wireup_nodes: node %u lost the relay\n", my_node);
}

void release(void *cbdata)
{
	delete static_cast<std::vector<char> *>(cbdata);
}

pmix_status_t fence_nb(const pmix_proc_t *, size_t, const pmix_info_t *, size_t, char *data,
		       size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	{
		std::lock_guard<std::mutex> g(pend_mu);
		fences.emplace_back(cbfunc, cbdata);
	}
	relay({m_fence, my_node, 0, 0, ndata}, data);
	return PMIX_SUCCESS;
}

pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t *, size_t,
			   pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	uint32_t id;
	{
		std::lock_guard<std::mutex> g(pend_mu);
		id = next_req++;
		dmx[id] = {cbfunc, cbdata};
	}
	relay({m_dmx_req, my_node, id, proc->rank, 0}, nullptr);
	return PMIX_SUCCESS;
}

struct dmx_reply {
	uint32_t node, id;
};

void dmx_local_cb(pmix_status_t st, char *data, size_t sz, void *cbdata)
{
	auto *r = static_cast<dmx_reply *>(cbdata);
	relay({m_dmx_rep, r->node, r->id, uint32_t(st), st == PMIX_SUCCESS ? sz : 0}, data);
	delete r;
}

/* Messages from the relay, until it closes the socket. */
void listen_relay(const char *nspace)
{
	msg_hdr h;
	std::vector<char> data;
	while (recv_msg(relay_fd, h, data)) {
		if (h.type == m_fence_done) {
			std::pair<pmix_modex_cbfunc_t, void *> f{};
			{
				std::lock_guard<std::mutex> g(pend_mu);
				if (fences.empty())
					continue;
				f = fences.front();
				fences.pop_front();
			}
			auto *keep = new std::vector<char>(std::move(data));
			data = {};
			if (f.first)
				f.first(PMIX_SUCCESS, keep->data(), keep->size(), f.second, release, keep);
			else
				delete keep;
		} else if (h.type == m_dmx_req) {
			/* A rank of this node: its server-side data, once it committed. */
			pmix_proc_t p;
			PMIX_LOAD_PROCID(&p, nspace, h.c);
			auto *r = new dmx_reply{h.a, h.b};
			pmix_status_t rc = PMIx_server_dmodex_request(&p, dmx_local_cb, r);
			if (rc != PMIX_SUCCESS)
				dmx_local_cb(rc, nullptr, 0, r);
		} else if (h.type == m_dmx_rep) {
			std::pair<pmix_modex_cbfunc_t, void *> f{};
			{
				std::lock_guard<std::mutex> g(pend_mu);
				auto it = dmx.find(h.b);
				if (it == dmx.end())
					continue;
				f = it->second;
				dmx.erase(it);
			}
			auto *keep = new std::vector<char>(std::move(data));
			data = {};
			if (f.first)
				f.first(pmix_status_t(h.c), keep->data(), keep->size(), f.second, release,
					keep);
			else
				delete keep;
		}
	}
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

pmix_status_t abort_fn(const pmix_proc_t *p, void *, int, const char *msg, pmix_proc_t *, size_t,
		       pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	fprintf(stderr, "test_wireup_nodes: rank %u aborted: %s\n", p ? p->rank : 0, msg ? msg : "");
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

sockaddr_in v4(const std::string &ip, uint16_t port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
	a.sin_port = htons(port);
	return a;
}

struct node_args {
	uint32_t k;
	std::string netns, variant, nspace, tmpdir, hosts_file, self;
	shape sh;
	std::vector<std::string> addrs, hosts;
};

/* Into the node's network namespace, with its own host name (and, when the
 * relay wrote one, a hosts file naming every node). */
bool enter_node(const node_args &a)
{
	std::string path = "/run/netns/" + a.netns;
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, "test_wireup_nodes: node %u: entering %s: %s\n", a.k, path.c_str(),
			strerror(errno));
		return false;
	}
	close(fd);
	if (unshare(CLONE_NEWUTS) != 0 || sethostname(a.hosts[a.k].c_str(), a.hosts[a.k].size()) != 0) {
		fprintf(stderr, "test_wireup_nodes: node %u: own host name: %s\n", a.k, strerror(errno));
		return false;
	}
	if (!a.hosts_file.empty()) {
		if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
		    mount(a.hosts_file.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr)) {
			fprintf(stderr, "test_wireup_nodes: node %u: private /etc/hosts: %s\n", a.k,
				strerror(errno));
			return false;
		}
	}
	return true;
}

int run_node(const node_args &a)
{
	my_node = a.k;
	if (!enter_node(a))
		return 2;
	const shape &sh = a.sh;
	const uint32_t n = sh.size();
	pmix_server_module_t mod{};
	mod.client_connected = client_connected;
	mod.client_finalized = client_finalized;
	mod.abort = abort_fn;
	mod.fence_nb = fence_nb;
	mod.direct_modex = direct_modex;
	pmix_info_t sinfo[3];
	PMIX_INFO_LOAD(&sinfo[0], PMIX_SERVER_TMPDIR, a.tmpdir.c_str(), PMIX_STRING);
	PMIX_INFO_LOAD(&sinfo[1], PMIX_SYSTEM_TMPDIR, a.tmpdir.c_str(), PMIX_STRING);
	PMIX_INFO_LOAD(&sinfo[2], PMIX_HOSTNAME, a.hosts[a.k].c_str(), PMIX_STRING);
	pmix_status_t rc = PMIx_server_init(&mod, sinfo, 3);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_nodes: node %u: PMIx_server_init: %s\n", a.k,
			PMIx_Error_string(rc));
		return 2;
	}
	std::thread listener(listen_relay, a.nspace.c_str());
	listener.detach();

	const uint64_t job = wire::job_id(a.nspace);
	std::string nodelist, procmap, peers;
	for (uint32_t k = 0; k < sh.nn; k++) {
		nodelist += (k ? "," : "") + a.hosts[k];
		procmap += k ? ";" : "";
		for (uint32_t s = 0; s < sh.ppn; s++)
			procmap += (s ? "," : "") + std::to_string(sh.rank_at(k, s));
	}
	for (uint32_t s = 0; s < sh.ppn; s++)
		peers += (s ? "," : "") + std::to_string(sh.rank_at(a.k, s));
	char *node_regex = nullptr, *ppn_regex = nullptr;
	PMIx_generate_regex(nodelist.c_str(), &node_regex);
	PMIx_generate_ppn(procmap.c_str(), &ppn_regex);

	std::vector<pmix_info_t> info(9 + n);
	size_t ni = 0;
	uint32_t u = n, lsz = sh.ppn, nn = sh.nn, nid = a.k;
	PMIX_INFO_LOAD(&info[ni++], PMIX_UNIV_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_JOB_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_LOCAL_SIZE, &lsz, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_NUM_NODES, &nn, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_NODEID, &nid, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[ni++], PMIX_LOCAL_PEERS, peers.c_str(), PMIX_STRING);
	PMIX_INFO_LOAD(&info[ni++], PMIX_NODE_MAP, node_regex, PMIX_REGEX);
	PMIX_INFO_LOAD(&info[ni++], PMIX_PROC_MAP, ppn_regex, PMIX_REGEX);
	std::vector<uint8_t> table;
	if (a.variant == "lpn") {
		/* Every node's record, in the launcher's node order. */
		table.resize(4);
		memcpy(table.data(), &nn, 4);
		for (uint32_t k = 0; k < sh.nn; k++) {
			sockaddr_in s = v4(a.addrs[k], port_base);
			auto rec = wire::encode_node(FI_SOCKADDR_IN, job, k, port_base, &s, sizeof s, {});
			table.insert(table.end(), rec.begin(), rec.end());
		}
		pmix_byte_object_t bo;
		bo.bytes = reinterpret_cast<char *>(table.data());
		bo.size = table.size();
		PMIX_INFO_LOAD(&info[ni++], wire::key_lpn, &bo, PMIX_BYTE_OBJECT);
	}
	std::vector<std::vector<uint8_t>> recs(n);
	for (uint32_t r = 0; r < n; r++) {
		const uint32_t k = sh.node_of(r), s = sh.slot_of(r);
		const bool with_lp = a.variant == "lp";
		pmix_data_array_t *darray;
		PMIX_DATA_ARRAY_CREATE(darray, with_lp ? 6 : 5, PMIX_INFO);
		auto *pi = static_cast<pmix_info_t *>(darray->array);
		pmix_rank_t rank = r;
		uint16_t lr = uint16_t(s);
		uint32_t rk = k;
		PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &lr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[3], PMIX_NODEID, &rk, PMIX_UINT32);
		PMIX_INFO_LOAD(&pi[4], PMIX_HOSTNAME, a.hosts[k].c_str(), PMIX_STRING);
		if (with_lp) {
			sockaddr_in sa = v4(a.addrs[k], uint16_t(port_base + s));
			recs[r] = wire::encode_ep(FI_SOCKADDR_IN, job, r, &sa, sizeof sa);
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
	rc = PMIx_server_register_nspace(a.nspace.c_str(), int(sh.ppn), info.data(), ni, opcb, nullptr);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_nodes: node %u: register_nspace: %s\n", a.k,
			PMIx_Error_string(rc));
		return 2;
	}
	wait_done(1);

	/* The clients' environment: the wire-up's knobs for the variant. */
	std::vector<std::string> extra = {
		"WU_NODE_ADDRS=" + [&] {
			std::string s;
			for (uint32_t k = 0; k < sh.nn; k++)
				s += (k ? "," : "") + a.addrs[k];
			return s;
		}(),
	};
	const std::string pb = "FI_PMIX_PORT_BASE=" + std::to_string(port_base);
	if (a.variant == "modex" || a.variant == "direct")
		extra.push_back("FI_PMIX_MODE=" + a.variant);
	else if (a.variant == "wx" || a.variant == "wxdirect") /* nodes_wx.cpp */
		extra.push_back(a.variant == "wx" ? "FI_PMIX_MODE=modex" : "FI_PMIX_MODE=direct");
	else if (a.variant == "symmetric")
		extra.insert(extra.end(), {"FI_PMIX_MODE=symmetric", pb});
	else if (a.variant == "hostname")
		extra.insert(extra.end(), {"FI_PMIX_MODE=symmetric", pb, "FI_PMIX_SYM_NODE_ADDR=hostname"});
	/* Modes without exchange: no automatic publish at fi_enable either, so
	 * that the client can check that nothing at all was put. */
	if (a.variant == "hostname" || a.variant == "lpn" || a.variant == "lp")
		extra.push_back("FI_PMIX_AUTO_PUBLISH=0");
	std::vector<pid_t> kids;
	for (uint32_t s = 0; s < sh.ppn; s++) {
		pmix_proc_t proc;
		PMIX_LOAD_PROCID(&proc, a.nspace.c_str(), sh.rank_at(a.k, s));
		done = 0;
		PMIx_server_register_client(&proc, getuid(), getgid(), nullptr, opcb, nullptr);
		wait_done(1);
		char **env = nullptr;
		for (char **e = environ; *e; e++)
			if (strncmp(*e, "FI_PMIX_", 8) != 0)
				pmix_argv_append_nosize(&env, *e);
		for (const std::string &e : extra)
			pmix_argv_append_nosize(&env, e.c_str());
		if ((rc = PMIx_server_setup_fork(&proc, &env)) != PMIX_SUCCESS) {
			fprintf(stderr, "test_wireup_nodes: setup_fork: %s\n", PMIx_Error_string(rc));
			return 2;
		}
		std::string sz = std::to_string(sh.ppn);
		std::string pstr = std::to_string(port_base);
		const char *args[] = {a.self.c_str(), "client", a.variant.c_str(),
				      sh.cyclic ? "cyclic" : "block", sz.c_str(), pstr.c_str(), nullptr};
		pid_t pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* no rank outlives its server */
			execve(args[0], const_cast<char **>(args), env);
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
	return worst;
}

} // namespace srv

/* ---- the relay: this process ---- */

pid_t node_pids[64];
uint32_t node_count;

void on_signal(int sig)
{
	for (uint32_t k = 0; k < node_count; k++)
		if (node_pids[k] > 0)
			kill(-node_pids[k], SIGKILL);
	_exit(128 + sig);
}

int launch(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr,
			"usage: %s modex|direct|symmetric|hostname|lpn|lp block|cyclic PPN PORT NETNS=ADDR...\n",
			argv[0]);
		return 2;
	}
	srv::node_args base;
	base.variant = argv[1];
	base.sh.cyclic = std::string(argv[2]) == "cyclic";
	base.sh.ppn = uint32_t(atoi(argv[3]));
	std::vector<std::string> nets;
	port_base = uint16_t(atoi(argv[4]));
	for (int i = 5; i < argc; i++) {
		auto kv = split(argv[i], '=');
		if (kv.size() != 2) {
			fprintf(stderr, "test_wireup_nodes: %s is not NETNS=ADDR\n", argv[i]);
			return 2;
		}
		nets.push_back(kv[0]);
		base.addrs.push_back(kv[1]);
	}
	base.sh.nn = uint32_t(nets.size());
	if (!base.sh.ppn || base.sh.nn > 64) {
		fprintf(stderr, "test_wireup_nodes: PPN must be at least 1, NETNS at most 64\n");
		return 2;
	}
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl <= 0)
		return 2;
	self[sl] = 0;
	base.self = self;
	base.nspace = "wu-nodes-" + std::to_string(getpid());
	char tmpl[] = "/tmp/wu-nodes.XXXXXX";
	const char *top = mkdtemp(tmpl);
	if (!top)
		return 2;
	/* Host names wu-nodeK from a hosts file that each node mounts
	 * privately; FI_PMIX_SYM_NODE_ADDR=hostname resolves them. */
	base.hosts_file = std::string(top) + "/hosts";
	FILE *hf = fopen(base.hosts_file.c_str(), "w");
	if (!hf)
		return 2;
	fprintf(hf, "127.0.0.1 localhost\n");
	for (uint32_t k = 0; k < base.sh.nn; k++) {
		base.hosts.push_back("wu-node" + std::to_string(k));
		fprintf(hf, "%s %s\n", base.addrs[k].c_str(), base.hosts[k].c_str());
	}
	fclose(hf);

	const uint32_t nn = base.sh.nn;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	std::vector<int> fds(nn, -1);
	std::vector<pid_t> pids(nn, -1);
	for (uint32_t k = 0; k < nn; k++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
			return 2;
		srv::node_args a = base;
		a.k = k;
		a.netns = nets[k];
		a.tmpdir = std::string(top) + "/n" + std::to_string(k);
		mkdir(a.tmpdir.c_str(), 0700);
		pid_t pid = fork();
		if (pid == 0) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* nor a server the relay */
			for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE})
				signal(sig, SIG_DFL);
			for (int fd : fds)
				if (fd >= 0)
					close(fd);
			close(sv[0]);
			srv::relay_fd = sv[1];
			fflush(stdout);
			_exit(srv::run_node(a));
		}
		setpgid(pid, pid);
		node_pids[k] = pid;
		node_count = k + 1;
		close(sv[1]);
		fds[k] = sv[0];
		pids[k] = pid;
	}

	/* Relay until every node server hung up. */
	std::vector<std::deque<std::vector<char>>> contrib(nn);
	std::vector<bool> open(nn, true);
	uint32_t alive = nn;
	int worst = 0;
	const double end = now_s() + deadline_s;
	auto fail_all = [&](const char *why) {
		fprintf(stderr, "test_wireup_nodes: %s; stopping every node\n", why);
		for (pid_t p : pids)
			kill(-p, SIGKILL);
		worst = 3;
	};
	while (alive) {
		std::vector<pollfd> pf;
		std::vector<uint32_t> who;
		for (uint32_t k = 0; k < nn; k++)
			if (open[k]) {
				pf.push_back({fds[k], POLLIN, 0});
				who.push_back(k);
			}
		int left_ms = int((end - now_s()) * 1000);
		if (left_ms <= 0) {
			fail_all("no end within the deadline");
			break;
		}
		int r = poll(pf.data(), pf.size(), std::min(left_ms, 500));
		if (r < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < pf.size(); i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			const uint32_t k = who[i];
			msg_hdr h;
			std::vector<char> data;
			if (!recv_msg(fds[k], h, data)) {
				open[k] = false;
				alive--;
				continue;
			}
			if (h.type == m_fence) {
				contrib[k].push_back(std::move(data));
				bool all = true;
				for (uint32_t j = 0; j < nn; j++)
					all = all && !contrib[j].empty();
				if (!all)
					continue;
				std::vector<char> cat;
				for (uint32_t j = 0; j < nn; j++) {
					cat.insert(cat.end(), contrib[j].front().begin(),
						   contrib[j].front().end());
					contrib[j].pop_front();
				}
				for (uint32_t j = 0; j < nn; j++)
					if (open[j])
						send_msg(fds[j], {m_fence_done, 0, 0, 0, cat.size()}, cat.data());
			} else if (h.type == m_dmx_req) {
				const uint32_t owner = base.sh.node_of(h.c);
				if (h.c < base.sh.size() && open[owner]) {
					send_msg(fds[owner], h, nullptr);
				} else {
					msg_hdr e{m_dmx_rep, h.a, h.b, uint32_t(PMIX_ERR_NOT_FOUND), 0};
					if (open[h.a])
						send_msg(fds[h.a], e, nullptr);
				}
			} else if (h.type == m_dmx_rep) {
				if (h.a < nn && open[h.a])
					send_msg(fds[h.a], h, data.data());
			}
		}
	}
	for (uint32_t k = 0; k < nn; k++) {
		int st = 0;
		if (worst == 3)
			kill(-pids[k], SIGKILL);
		waitpid(pids[k], &st, 0);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (code)
			fprintf(stderr, "test_wireup_nodes: node %u ended with status %d\n", k, code);
		worst = std::max(worst, code);
		close(fds[k]);
	}
	std::string rm = std::string("rm -rf ") + top;
	if (system(rm.c_str()) != 0)
		worst = std::max(worst, 1);
	return worst;
}

/* ---- a client: one rank, inside its node's namespace ---- */

uint32_t my_rank = ~0u;
int failures;

void fail(const std::string &m)
{
	failures++;
	fprintf(stderr, "test_wireup_nodes rank %u: FAIL %s\n", my_rank, m.c_str());
}

#define CHECK(call)                                                                         \
	do {                                                                                \
		int rc_ = int(call);                                                        \
		if (rc_ < 0) {                                                              \
			fprintf(stderr, "test_wireup_nodes rank %u: %s: %s\n", my_rank, #call, \
				fi_strerror(-rc_));                                         \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

bool is_own_address(const std::string &ip)
{
	ifaddrs *ifa = nullptr;
	if (getifaddrs(&ifa) != 0)
		return false;
	bool found = false;
	char buf[INET_ADDRSTRLEN];
	for (ifaddrs *p = ifa; p; p = p->ifa_next)
		if (p->ifa_addr && p->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(p->ifa_addr)->sin_addr, buf,
			      sizeof buf) &&
		    ip == buf)
			found = true;
	freeifaddrs(ifa);
	return found;
}

fid_cq *cq;

void wait_one()
{
	fi_cq_tagged_entry e;
	const double limit = now_s() + 10;
	for (;;) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "test_wireup_nodes rank %u: completion error %s\n", my_rank,
				fi_strerror(err.err));
			exit(1);
		}
		if (n != -FI_EAGAIN || now_s() > limit) {
			fprintf(stderr, "test_wireup_nodes rank %u: %s\n", my_rank,
				n == -FI_EAGAIN ? "no completion within 10 s" : fi_strerror(int(-n)));
			exit(1);
		}
	}
}

int client_main(int argc, char **argv)
{
	if (argc < 6)
		return 2;
	const std::string variant = argv[2];
	port_base = uint16_t(atoi(argv[5]));
	shape sh;
	sh.cyclic = std::string(argv[3]) == "cyclic";
	sh.ppn = uint32_t(atoi(argv[4]));
	const char *al = getenv("WU_NODE_ADDRS");
	const std::vector<std::string> addrs = split(al ? al : "", ',');
	sh.nn = uint32_t(addrs.size());
	const uint32_t n = sh.size();
	if (variant == "wx" || variant == "wxdirect")
		return wu::test::wx_client(variant, sh.ppn, sh.cyclic, addrs);

	pmix_proc_t me;
	if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
		fprintf(stderr, "test_wireup_nodes: PMIx_Init failed\n");
		return 2;
	}
	my_rank = me.rank;
	const uint32_t my_node = sh.node_of(my_rank), my_slot = sh.slot_of(my_rank);
	const std::string &my_addr = addrs[my_node];
	/* Distinct nodes: this namespace holds its own address, no other node's. */
	for (uint32_t k = 0; k < sh.nn; k++)
		if (is_own_address(addrs[k]) != (k == my_node))
			fail("address " + addrs[k] + (k == my_node ? " is missing here" : " is local here"));

	const bool fixed = variant != "modex" && variant != "direct";
	const bool exchange_free = variant == "hostname" || variant == "lpn" || variant == "lp";
	fi_info *hints = fi_allocinfo(), *info = nullptr;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("tcp");
	std::string svc = std::to_string(port_base + my_slot);
	CHECK(fi_getinfo(FI_VERSION(2, 0), my_addr.c_str(), fixed ? svc.c_str() : nullptr, FI_SOURCE,
			 hints, &info));
	fid_fabric *fabric;
	fid_domain *domain;
	fid_av *av;
	fid_ep *ep;
	CHECK(fi_fabric(info->fabric_attr, &fabric, nullptr));
	CHECK(fi_domain(fabric, info, &domain, nullptr));
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	CHECK(fi_cq_open(domain, &cq_attr, &cq, nullptr));
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	if (fixed)
		av_attr.flags = FI_SYMMETRIC;
	CHECK(fi_av_open(domain, &av_attr, &av, nullptr));
	CHECK(fi_endpoint(domain, info, &ep, nullptr));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
	sockaddr_in mine{};
	size_t len = sizeof mine;
	CHECK(fi_getname(&ep->fid, &mine, &len));

	fi_ops_wireup_pmix *w;
	CHECK(fi_open_ops(&domain->fid, FI_WIREUP_PMIX_OPS, 0, (void **)&w, nullptr));
	/* Job data as this node's server describes it. */
	fi_wireup_info ji{};
	ji.size = sizeof ji;
	CHECK(w->job_info(domain, nullptr, &ji));
	if (ji.job_size != n || ji.num_nodes != sh.nn || ji.node_id != my_node ||
	    ji.local_size != sh.ppn || ji.local_rank != my_slot)
		fail("job data: size " + std::to_string(ji.job_size) + " nodes " +
		     std::to_string(ji.num_nodes) + " node id " + std::to_string(ji.node_id) +
		     " local " + std::to_string(ji.local_rank) + "/" + std::to_string(ji.local_size));
	for (uint32_t s = 0; s < sh.ppn && s < ji.local_size; s++)
		if (ji.local_peers[s] != sh.rank_at(my_node, s))
			fail("local peer " + std::to_string(s) + " is rank " +
			     std::to_string(ji.local_peers[s]));
	for (uint32_t r = 0; r < n; r++)
		if (w->is_local(domain, r) != (sh.node_of(r) == my_node ? 1 : 0))
			fail("is_local(" + std::to_string(r) + ") is wrong");

	CHECK(w->publish(domain, &mine, len, info->addr_format, 0));
	fi_wireup_info wi{};
	wi.size = sizeof wi;
	const double t0 = now_s();
	int r = w->av_fill(domain, av, nullptr, 0, &wi);
	const double t_fill = now_s() - t0;
	if (r) {
		fail(std::string("av_fill: ") + fi_strerror(-r));
		printf("test_wireup_nodes rank %u %s FAIL\n", my_rank, variant.c_str());
		return 1;
	}
	const fi_wireup_mode want_mode = variant == "modex"    ? FI_WIREUP_MODEX
				       : variant == "direct"   ? FI_WIREUP_DIRECT
				       : variant == "lpn" || variant == "lp" ? FI_WIREUP_LAUNCHER
							       : FI_WIREUP_SYMMETRIC;
	if (wi.mode != want_mode)
		fail("mode " + std::to_string(wi.mode) + ", expected " + std::to_string(want_mode));
	if (exchange_free && (wi.bytes_put || wi.fences))
		fail("a mode without exchange put " + std::to_string(wi.bytes_put) + " bytes, fenced " +
		     std::to_string(wi.fences) + " times");
	if ((variant == "modex" || variant == "symmetric") && wi.fences != 1)
		fail(std::to_string(wi.fences) + " fences, expected 1");
	if (variant == "direct" && wi.fences)
		fail("the direct mode fenced");

	/* fi_addr == base + rank: rank r's own node address (and slot port). */
	auto check = [&](fid_av *a, fi_addr_t b, const char *what) {
		for (uint32_t p = 0; p < n; p++) {
			sockaddr_in got{};
			size_t gl = sizeof got;
			int e = fi_av_lookup(a, b + p, &got, &gl);
			char ip[INET_ADDRSTRLEN] = "?";
			inet_ntop(AF_INET, &got.sin_addr, ip, sizeof ip);
			const unsigned port = ntohs(got.sin_port);
			if (e || got.sin_family != AF_INET || addrs[sh.node_of(p)] != ip ||
			    (fixed && port != port_base + sh.slot_of(p)) || port == 0 ||
			    (p == my_rank && memcmp(&got, &mine, sizeof got) != 0))
				fail(std::string(what) + ": rank " + std::to_string(p) + " -> " + ip + ":" +
				     std::to_string(port) + (e ? " (lookup failed)" : "") +
				     ", expected " + addrs[sh.node_of(p)]);
		}
	};
	check(av, wi.base, "av_fill");
	if (exchange_free) {
		/* The zero-code AV says the same, with nothing exchanged either. */
		fi_av_attr na{};
		na.type = FI_AV_TABLE;
		na.name = const_cast<char *>(FI_WIREUP_AV_PREFIX);
		fid_av *nav = nullptr;
		if ((r = fi_av_open(domain, &na, &nav, nullptr)))
			fail(std::string("fi_av_open(pmix:): ") + fi_strerror(-r));
		else {
			check(nav, 0, "pmix: AV");
			fi_close(&nav->fid);
		}
	}

	/* Nothing synchronised the ranks of a mode without exchange: a peer may
	 * not listen yet (the tcp provider retries a refused connect only for
	 * FI_TCP_CONN_TIMEOUT).  The application's start-up barrier (MPI_Init
	 * has one). */
	if (exchange_free && PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		fail("start-up barrier");
	/* A tagged message to every peer, most on other nodes. */
	std::vector<char> in(size_t(n) * 32), out(size_t(n) * 32);
	for (uint32_t p = 0; p < n; p++)
		if (p != my_rank)
			CHECK(fi_trecv(ep, &in[32 * p], 32, nullptr, FI_ADDR_UNSPEC, p, 0, nullptr));
	for (uint32_t p = 0; p < n; p++) {
		if (p == my_rank)
			continue;
		snprintf(&out[32 * p], 32, "from %u to %u", my_rank, p);
		ssize_t s;
		while ((s = fi_tsend(ep, &out[32 * p], 32, nullptr, wi.base + p, my_rank, nullptr)) ==
		       -FI_EAGAIN)
			fi_cq_read(cq, nullptr, 0);
		CHECK(s);
	}
	for (uint32_t k = 0; k + 1 < n; k++) /* n - 1 sends, n - 1 receives */
		wait_one(), wait_one();
	uint32_t remote = 0;
	for (uint32_t p = 0; p < n; p++) {
		if (p == my_rank)
			continue;
		char want[32];
		snprintf(want, sizeof want, "from %u to %u", p, my_rank);
		if (strcmp(&in[32 * p], want) != 0)
			fail("from rank " + std::to_string(p) + " got \"" + std::string(&in[32 * p], 0, 31) +
			     "\"");
		else if (sh.node_of(p) != my_node)
			remote++;
	}
	/* Nobody closes before every message arrived (a plain barrier). */
	if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS)
		fail("closing barrier");
	printf("test_wireup_nodes rank %u node %u (%s) %s mode=%d put=%llu fences=%llu fill=%.2fms "
	       "remote_msgs=%u %s\n",
	       my_rank, my_node, my_addr.c_str(), variant.c_str(), int(wi.mode),
	       (unsigned long long)wi.bytes_put, (unsigned long long)wi.fences, t_fill * 1e3, remote,
	       failures ? "FAIL" : "OK");
	fflush(stdout);
	w->close(domain);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	PMIx_Finalize(nullptr, 0);
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && std::string(argv[1]) == "client")
		return client_main(argc, argv);
	return launch(argc, argv);
}
