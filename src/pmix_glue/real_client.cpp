/* SPDX-License-Identifier: BSD-3-Clause */
/* The real PMIx client behind wu::pmix::client. */
#include <pmix.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <cstring>

#include <rdma/fi_errno.h>

#include "core/log.h"
#include "pmix_glue/client.h"
#include "pmix_glue/session.h"

namespace wu::pmix {
static_assert(wildcard_rank == PMIX_RANK_WILDCARD);
namespace {

int to_fi(pmix_status_t rc)
{
	switch (rc) {
	case PMIX_SUCCESS:
		return 0;
	case PMIX_ERR_NOT_FOUND:
		return -FI_ENODATA;
	case PMIX_ERR_TIMEOUT:
		return -FI_ETIMEDOUT;
	default:
		return -FI_EOTHER;
	}
}

bool as_u32(const pmix_value_t *v, uint32_t &out)
{
	int64_t x;
	switch (v->type) {
	case PMIX_INT: x = v->data.integer; break;
	case PMIX_INT8: x = v->data.int8; break;
	case PMIX_INT16: x = v->data.int16; break;
	case PMIX_INT32: x = v->data.int32; break;
	case PMIX_INT64: x = v->data.int64; break;
	case PMIX_UINT: x = v->data.uint; break;
	case PMIX_UINT8: x = v->data.uint8; break;
	case PMIX_UINT16: x = v->data.uint16; break;
	case PMIX_UINT32: x = v->data.uint32; break;
	case PMIX_UINT64: x = int64_t(v->data.uint64); break;
	case PMIX_SIZE: x = int64_t(v->data.size); break;
	case PMIX_PROC_RANK: x = v->data.rank; break;
	default: return false;
	}
	if (x < 0 || x > int64_t(UINT32_MAX))
		return false;
	out = uint32_t(x);
	return true;
}

class real_client final : public client {
public:
	int init(std::string &nspace, uint32_t &rank) override
	{
		guest_ = PMIx_Initialized();
		pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
		if (rc != PMIX_SUCCESS) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"PMIx_Init: %s: this process was not started by a PMIx launcher (mpirun, srun --mpi=pmix, prun)\n",
				PMIx_Error_string(rc));
			return -FI_ENODATA;
		}
		nspace = me_.nspace;
		rank = me_.rank;
		return 0;
	}

	int finalize() override { return to_fi(PMIx_Finalize(nullptr, 0)); }
	bool guest() const override { return guest_; }

	int value(const std::string &ns, pmix_rank_t rank, const char *key, pmix_value_t **v,
		  pmix_info_t *info = nullptr, size_t ninfo = 0)
	{
		pmix_proc_t p;
		PMIX_LOAD_PROCID(&p, ns.c_str(), rank);
		pmix_status_t rc = PMIx_Get(&p, key, info, ninfo, v);
		if (rc != PMIX_SUCCESS || !*v) {
			if (rc != PMIX_ERR_NOT_FOUND)
				WU_INFO(&pmix_prov, FI_LOG_CORE, "PMIx_Get(%s rank %u, %s): %s\n", ns.c_str(),
					unsigned(rank), key, PMIx_Error_string(rc));
			return rc == PMIX_SUCCESS ? -FI_ENODATA : to_fi(rc);
		}
		return 0;
	}

	int u32(const std::string &ns, pmix_rank_t rank, const char *key, uint32_t &out)
	{
		pmix_value_t *v = nullptr;
		if (int r = value(ns, rank, key, &v))
			return r;
		bool ok = as_u32(v, out);
		if (!ok)
			WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx key %s of %s is of type %s, not an integer\n",
				key, ns.c_str(), PMIx_Data_type_string(v->type));
		PMIX_VALUE_RELEASE(v);
		return ok ? 0 : -FI_EINVAL;
	}

	int job_u32(const std::string &ns, const char *key, uint32_t &out) override
	{
		return u32(ns, PMIX_RANK_WILDCARD, key, out);
	}

	int proc_u32(const std::string &ns, uint32_t rank, const char *key, uint32_t &out) override
	{
		return u32(ns, rank, key, out);
	}

	int job_string(const std::string &ns, const char *key, std::string &out) override
	{
		pmix_value_t *v = nullptr;
		if (int r = value(ns, PMIX_RANK_WILDCARD, key, &v))
			return r;
		bool ok = v->type == PMIX_STRING && v->data.string;
		if (ok)
			out = v->data.string;
		PMIX_VALUE_RELEASE(v);
		return ok ? 0 : -FI_EINVAL;
	}

	/* Ranks by node from every rank's PMIX_HOSTNAME, in the order of
	 * PMIx_Resolve_nodes.  Not PMIx_Resolve_peers: under Open MPI 4.1.4's
	 * mpirun with PMIx 4.2.2, asked for another node it can block for
	 * good (the client's progress thread waits on a lock in the dstor
	 * fetch; issue 30: the symmetric mode's hang across nodes), and
	 * PMIX_NODEID of a rank on another node is not found there.  Only
	 * when the host names do not tell the nodes apart (one PMIx server
	 * standing for several nodes, as in test_wireup_server) is
	 * PMIx_Resolve_peers asked. */
	int nodes(const std::string &ns, node_map &out) override
	{
		char *list = nullptr;
		pmix_status_t rc = PMIx_Resolve_nodes(ns.c_str(), &list);
		if (rc != PMIX_SUCCESS || !list) {
			WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx_Resolve_nodes(%s): %s\n", ns.c_str(),
				PMIx_Error_string(rc));
			free(list);
			return to_fi(rc ? rc : PMIX_ERR_NOT_FOUND);
		}
		out = {};
		for (char *save = nullptr, *t = strtok_r(list, ",", &save); t;
		     t = strtok_r(nullptr, ",", &save))
			out.nodes.emplace_back(t);
		free(list);
		uint32_t size = 0;
		if (int r = job_u32(ns, PMIX_JOB_SIZE, size))
			return r;
		std::vector<std::string> host(size);
		std::map<std::string, size_t> index;
		for (size_t k = 0; k < out.nodes.size(); k++)
			index.emplace(out.nodes[k], k);
		bool listed = true;
		std::map<std::string, size_t> seen; /* host -> order of first rank */
		for (uint32_t r = 0; r < size; r++) {
			pmix_value_t *v = nullptr;
			if (value(ns, r, PMIX_HOSTNAME, &v) == 0) {
				if (v->type == PMIX_STRING && v->data.string)
					host[r] = v->data.string;
				PMIX_VALUE_RELEASE(v);
			}
			if (host[r].empty())
				return resolve_peers(ns, out);
			listed = listed && index.count(host[r]);
			seen.emplace(host[r], seen.size());
		}
		if (seen.size() != out.nodes.size())
			return resolve_peers(ns, out);
		if (!listed) { /* other spellings of the names: first rank's order */
			out.nodes.assign(seen.size(), {});
			for (const auto &[h, k] : seen)
				out.nodes[k] = h;
			index = std::move(seen);
		}
		out.ranks.assign(out.nodes.size(), {});
		for (uint32_t r = 0; r < size; r++)
			out.ranks[index[host[r]]].push_back(r);
		return 0;
	}

	int resolve_peers(const std::string &ns, node_map &out)
	{
		out.ranks.clear();
		for (const std::string &n : out.nodes) {
			pmix_proc_t *procs = nullptr;
			size_t np = 0;
			pmix_status_t rc = PMIx_Resolve_peers(n.c_str(), ns.c_str(), &procs, &np);
			if (rc != PMIX_SUCCESS) {
				WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx_Resolve_peers(%s, %s): %s\n", n.c_str(),
					ns.c_str(), PMIx_Error_string(rc));
				return to_fi(rc);
			}
			std::vector<uint32_t> r(np);
			for (size_t i = 0; i < np; i++)
				r[i] = procs[i].rank;
			if (procs)
				PMIX_PROC_FREE(procs, np);
			std::sort(r.begin(), r.end());
			out.ranks.push_back(std::move(r));
		}
		return 0;
	}

	int put(const char *key, const void *data, size_t len, bool local_only) override
	{
		pmix_value_t v;
		PMIX_VALUE_CONSTRUCT(&v);
		v.type = PMIX_BYTE_OBJECT;
		v.data.bo.bytes = static_cast<char *>(const_cast<void *>(data));
		v.data.bo.size = len;
		pmix_status_t rc = PMIx_Put(local_only ? PMIX_LOCAL : PMIX_GLOBAL, key, &v); /* copies */
		if (rc != PMIX_SUCCESS)
			WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx_Put(%s, %zu bytes): %s\n", key, len,
				PMIx_Error_string(rc));
		return to_fi(rc);
	}

	int commit() override
	{
		pmix_status_t rc = PMIx_Commit();
		if (rc != PMIX_SUCCESS)
			WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx_Commit: %s\n", PMIx_Error_string(rc));
		return to_fi(rc);
	}

	int fence(bool collect, const std::vector<uint32_t> &procs) override
	{
		pmix_info_t info;
		bool flag = true;
		PMIX_INFO_CONSTRUCT(&info);
		if (collect)
			PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
		std::vector<pmix_proc_t> p(procs.size());
		for (size_t i = 0; i < procs.size(); i++)
			PMIX_LOAD_PROCID(&p[i], me_.nspace, procs[i]);
		pmix_status_t rc = PMIx_Fence(p.empty() ? nullptr : p.data(), p.size(),
					      collect ? &info : nullptr, collect ? 1 : 0);
		PMIX_INFO_DESTRUCT(&info);
		if (rc != PMIX_SUCCESS)
			WU_WARN(&pmix_prov, FI_LOG_CORE, "PMIx_Fence(%zu procs%s): %s\n",
				procs.size(), collect ? ", collect data" : "", PMIx_Error_string(rc));
		return to_fi(rc);
	}

	int get(const std::string &ns, uint32_t rank, const char *key, get_kind kind,
		std::vector<uint8_t> &out) override
	{
		pmix_info_t info[2];
		size_t ninfo = 0;
		PMIX_INFO_CONSTRUCT(&info[0]);
		PMIX_INFO_CONSTRUCT(&info[1]);
		if (kind == get_kind::direct || kind == get_kind::local) {
			pmix_scope_t scope = kind == get_kind::local ? PMIX_LOCAL : PMIX_GLOBAL;
			int timeout = 5;
			PMIX_INFO_LOAD(&info[ninfo], PMIX_DATA_SCOPE, &scope, PMIX_SCOPE);
			ninfo++;
			PMIX_INFO_LOAD(&info[ninfo], PMIX_TIMEOUT, &timeout, PMIX_INT);
			ninfo++;
		} else if (kind == get_kind::optional) {
			bool flag = true;
			PMIX_INFO_LOAD(&info[ninfo], PMIX_OPTIONAL, &flag, PMIX_BOOL);
			ninfo++;
		}
		pmix_value_t *v = nullptr;
		int r = value(ns, rank, key, &v, ninfo ? info : nullptr, ninfo);
		PMIX_INFO_DESTRUCT(&info[0]);
		PMIX_INFO_DESTRUCT(&info[1]);
		if (r)
			return r;
		if (v->type != PMIX_BYTE_OBJECT) {
			WU_WARN(&pmix_prov, FI_LOG_CORE,
				"PMIx key %s of %s rank %u is of type %s, not a byte object\n", key,
				ns.c_str(), rank, PMIx_Data_type_string(v->type));
			PMIX_VALUE_RELEASE(v);
			return -FI_EINVAL;
		}
		const auto *b = reinterpret_cast<const uint8_t *>(v->data.bo.bytes);
		out.assign(b, b + v->data.bo.size);
		PMIX_VALUE_RELEASE(v);
		return 0;
	}

private:
	pmix_proc_t me_{};
	bool guest_ = false;
};

} // namespace

std::unique_ptr<client> make_real_client()
{
	return std::make_unique<real_client>();
}

} // namespace wu::pmix
