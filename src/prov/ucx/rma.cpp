/* SPDX-License-Identifier: BSD-3-Clause */
/* ucx provider: memory regions (fi_mr_reg on the common MR table, plus
 * ucp_mem_map and a packed rkey) and fi_read / fi_write over ucp_get_nbx /
 * ucp_put_nbx.
 *
 * Keys stay the common 64-bit MR keys (requested, or FI_MR_PROV_KEY), so
 * applications and fi_pingpong need no FI_MR_RAW handling.  The packed
 * rkey a UCP put needs travels once per (peer, key): the first RMA with a
 * key sends the target an rkey request in the reserved tag space (kind
 * rkey_req: key and the requester's worker address); the target's
 * progress answers (kind rkey_rep: the region's base, address, length,
 * access and packed rkey, or an error); the initiator unpacks it on that
 * peer's UCP endpoint, keeps it, and checks every later transfer's range
 * and access against the answer itself.  A key closed at the target and
 * registered again is not noticed by initiators that kept the old rkey
 * (UCX then fails the transfer).  A write completes once ucp_ep_flush_nbx
 * says it reached the target (FI_DELIVERY_COMPLETE), so the target reads
 * the data as soon as the initiator sees the completion. */
#include "config.h"

#include <cstring>
#include <mutex>

#include "core/shim.h"
#include "prov/common/cq.h"
#include "prov/ucx/ucx_ep.h"

namespace wu::ucx {
namespace {

/* Wire form of the control messages (native byte order: a UCX job is
 * one architecture). */
struct rkey_req {
	uint64_t key;
	uint32_t wlen; /* requester's worker address follows */
	/* The requester's sender id: here, not in the tag, whose id field
	 * is 0 so that the standing receive of requests matches it whole
	 * (a masked receive would make every message search UCP's wildcard
	 * list: ucx_addr.h). */
	uint32_t id;
};
struct rkey_rep {
	uint64_t key;
	int32_t err; /* positive FI_E*, 0: an rkey follows */
	uint32_t rklen;
	uint64_t base, addr, len, access;
};
constexpr size_t ctrl_max = sizeof(rkey_req) + worker_max;
constexpr size_t rkey_max = 4096;

/* ---- memory regions ---- */

std::mutex mr_map_lock;
/* fid_mr -> its domain: fi_close(mr) finds the UCX mapping to undo. */
std::unordered_map<const fid_mr *, ucx_domain *> &mr_map()
{
	static auto &m = make_immortal<std::unordered_map<const fid_mr *, ucx_domain *>>();
	return m;
}

fi_ops mr_fi_ops_wrapped;
int (*common_close)(fid *) = nullptr;

int ucx_mr_close(fid *f) noexcept
{
	return guard("fi_close(mr)", [&]() -> int {
		auto *mr = reinterpret_cast<fid_mr *>(f);
		ucx_domain *d = nullptr;
		{
			std::lock_guard g(mr_map_lock);
			auto it = mr_map().find(mr);
			if (it != mr_map().end())
				d = it->second;
		}
		uint64_t key = mr->key;
		int r = common_close(f);
		if (r || !d)
			return r;
		{
			std::lock_guard g(mr_map_lock);
			mr_map().erase(mr);
		}
		std::lock_guard g(d->mr_lock);
		auto it = d->regions.find(key);
		if (it != d->regions.end()) {
			if (it->second.memh)
				ucp_mem_unmap(d->ctx, it->second.memh);
			d->regions.erase(it);
		}
		return 0;
	});
}

int mr_regattr(fid *fid_dom, const fi_mr_attr *attr, uint64_t flags, fid_mr **out) noexcept
{
	return guard("fi_mr_regattr", [&]() -> int {
		prov::domain *pd = fid_dom && fid_dom->fclass == FI_CLASS_DOMAIN
					   ? prov::domain_of(reinterpret_cast<fid_domain *>(fid_dom))
					   : nullptr;
		ucx_domain *d = pd ? ucx_domain_of(pd) : nullptr;
		if (!d || !attr || !out)
			return -FI_EINVAL;
		if (int r = wu::mr::ops.regattr(fid_dom, attr, flags, out))
			return r;
		fid_mr *mr = *out;
		region rg;
		rg.addr = reinterpret_cast<uintptr_t>(attr->mr_iov[0].iov_base);
		rg.len = attr->mr_iov[0].iov_len;
		rg.access = attr->access;
		int mode = d->d.info->domain_attr->mr_mode;
		rg.base = (mode & FI_MR_VIRT_ADDR) ? rg.addr : attr->offset;
		int err = 0;
		if (rg.len && (attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && d->rma) {
			/* Only what peers reach needs UCX's mapping; a domain
			 * without RMA has none, and refuses peers' rkey requests. */
			ucp_mem_map_params_t mp{};
			mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
			mp.address = attr->mr_iov[0].iov_base;
			mp.length = rg.len;
			err = fi_err(ucp_mem_map(d->ctx, &mp, &rg.memh), "fi_mr_reg: ucp_mem_map");
			void *packed = nullptr;
			size_t plen = 0;
			if (!err) {
				err = fi_err(ucp_rkey_pack(d->ctx, rg.memh, &packed, &plen), "fi_mr_reg: ucp_rkey_pack");
				if (!err && plen > rkey_max) {
					WU_WARN(P(), FI_LOG_MR, "fi_mr_reg: the packed rkey is %zu bytes (at most %zu)\n", plen,
						rkey_max);
					err = -FI_ENOSPC;
				}
				if (packed) {
					if (!err)
						rg.rkey.assign(static_cast<char *>(packed), static_cast<char *>(packed) + plen);
					ucp_rkey_buffer_release(packed);
				}
				if (err)
					ucp_mem_unmap(d->ctx, rg.memh);
			}
		}
		if (err) {
			fi_close(&mr->fid);
			*out = nullptr;
			return err;
		}
		{
			static std::once_flag once;
			std::call_once(once, [&] {
				mr_fi_ops_wrapped = *mr->fid.ops;
				common_close = mr->fid.ops->close;
				mr_fi_ops_wrapped.close = ucx_mr_close;
			});
			std::lock_guard g(mr_map_lock);
			mr_map()[mr] = d;
		}
		mr->fid.ops = &mr_fi_ops_wrapped;
		std::lock_guard g(d->mr_lock);
		d->regions[mr->key] = std::move(rg);
		return 0;
	});
}

/* ---- control messages ---- */

void ctrl_cb(void *req, ucs_status_t s, const ucp_tag_recv_info_t *info, void *user) noexcept;

void ctrl_send_cb(void *req, ucs_status_t, void *user) noexcept
{
	guard_void("ucx control send", [&] {
		free_op(static_cast<op *>(user));
		ucp_request_free(req);
	});
}

/* Sends o->copy with tag on uep; o is freed when done. */
void send_ctrl(ucx_ep *ep, ucp_ep_h uep, op *o, uint64_t tag)
{
	ucp_request_param_t prm{};
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	prm.cb.send = ctrl_send_cb;
	prm.user_data = o;
	ucs_status_ptr_t r = ucp_tag_send_nbx(uep, o->copy.data(), o->copy.size(), tag, &prm);
	if (r == nullptr) {
		free_op(o);
	} else if (UCS_PTR_IS_ERR(r)) {
		fi_err(UCS_PTR_STATUS(r), "ucx: control message");
		free_op(o);
	} else {
		o->req = r;
	}
	(void)ep;
}

/* Posts a receive of one control message of kind k from sender id
 * (requests: 0, the id is inside) into o. */
int post_ctrl_recv(ucx_ep *ep, uint64_t k, uint32_t id, op *o)
{
	o->copy.resize(k == kind_rkey_req ? ctrl_max : sizeof(rkey_rep) + rkey_max);
	uint64_t tag = make_tag(true, id, k);
	uint64_t mask = tag_reserved | user_mask | id_mask;
	ucp_request_param_t prm{};
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
	prm.cb.recv = ctrl_cb;
	prm.user_data = o;
	prm.recv_info.tag_info = &o->info;
	ucs_status_ptr_t r = ucp_tag_recv_nbx(ep->worker, o->copy.data(), o->copy.size(), tag, mask, &prm);
	if (UCS_PTR_IS_ERR(r)) {
		int e = fi_err(UCS_PTR_STATUS(r), "ucx: control receive");
		free_op(o);
		return e;
	}
	if (r == nullptr) {
		ctrl_cb(nullptr, UCS_OK, &o->info, o);
		return 0;
	}
	o->req = r;
	return 0;
}

void start(ucx_ep *ep, op *o, const peer::rkey_ent &rk);

/* A request came: answer from this domain's regions. */
void answer(ucx_ep *ep, const op *in)
{
	size_t n = in->info.length;
	rkey_req q;
	if (n < sizeof q) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: a %zu-byte rkey request is too short; dropped\n", n);
		return;
	}
	memcpy(&q, in->copy.data(), sizeof q);
	if (q.wlen == 0 || q.wlen > worker_max || sizeof q + q.wlen != n) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: an rkey request names a %u-byte worker address in %zu bytes; dropped\n",
			q.wlen, n);
		return;
	}
	uint32_t id = q.id;
	if (id == 0 || id > id_max) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: an rkey request carries sender id %u; dropped\n", id);
		return;
	}
	ucp_ep_h uep;
	auto it = ep->repliers.find(id);
	if (it != ep->repliers.end()) {
		uep = it->second;
	} else {
		int err = 0;
		uep = connect(ep, in->copy.data() + sizeof q, nullptr, "ucx: answering an rkey request", &err);
		if (!uep)
			return;
		ep->repliers[id] = uep;
	}
	rkey_rep a{};
	a.key = q.key;
	std::vector<char> rk;
	{
		std::lock_guard g(ep->dom->mr_lock);
		auto r = ep->dom->regions.find(q.key);
		if (r == ep->dom->regions.end() || r->second.rkey.empty()) {
			a.err = FI_EACCES;
		} else {
			a.base = r->second.base;
			a.addr = r->second.addr;
			a.len = r->second.len;
			a.access = r->second.access;
			rk = r->second.rkey;
			a.rklen = uint32_t(rk.size());
		}
	}
	op *o = new_op(ep, op_kind::CTRL_TX);
	o->copy.resize(sizeof a + rk.size());
	memcpy(o->copy.data(), &a, sizeof a);
	if (!rk.empty())
		memcpy(o->copy.data() + sizeof a, rk.data(), rk.size());
	send_ctrl(ep, uep, o, make_tag(true, ep->id, kind_rkey_rep));
}

/* An answer came: unpack, then start what waited for it. */
void answered(ucx_ep *ep, const op *in)
{
	size_t n = in->info.length;
	rkey_rep a;
	if (n < sizeof a) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: a %zu-byte rkey answer is too short; dropped\n", n);
		return;
	}
	memcpy(&a, in->copy.data(), sizeof a);
	uint32_t id = tag_id(in->info.sender_tag);
	peer *p = nullptr;
	for (auto &[fa, pp] : ep->peers)
		if (pp->id == id && pp->rkeys.count(a.key))
			p = pp.get();
	if (!p) {
		WU_INFO(P(), FI_LOG_EP_DATA, "ucx: an rkey answer for key 0x%llx nobody waits for; dropped\n",
			static_cast<unsigned long long>(a.key));
		return;
	}
	peer::rkey_ent &rk = p->rkeys[a.key];
	if (rk.rkey || rk.err)
		return;
	if (a.err == 0 && (a.rklen == 0 || a.rklen > rkey_max || sizeof a + a.rklen != n)) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: an rkey answer's rkey length %u does not match its %zu bytes\n",
			a.rklen, n);
		a.err = FI_EIO;
	}
	if (a.err == 0 && p->ep) {
		int e = fi_err(ucp_ep_rkey_unpack(p->ep, in->copy.data() + sizeof a, &rk.rkey), "ucx: ucp_ep_rkey_unpack");
		if (e)
			a.err = -e;
	} else if (a.err == 0) {
		a.err = FI_EIO;
	}
	if (a.err) {
		WU_WARN(P(), FI_LOG_EP_DATA, "ucx: the target refused key 0x%llx: %s\n",
			static_cast<unsigned long long>(a.key), fi_strerror(a.err));
		rk.err = a.err;
	} else {
		rk.base = a.base;
		rk.len = a.len;
		rk.access = a.access;
		rk.addr = a.addr;
	}
	std::vector<op *> w = std::move(rk.waiting);
	rk.waiting.clear();
	for (op *o : w) {
		if (rk.err)
			complete_tx(o, rk.err);
		else
			start(ep, o, rk);
	}
}

void ctrl_cb(void *req, ucs_status_t s, const ucp_tag_recv_info_t *info, void *user) noexcept
{
	guard_void("ucx control message", [&] {
		auto *o = static_cast<op *>(user);
		ucx_ep *ep = o->ep;
		o->req = nullptr;
		if (info)
			o->info = *info;
		bool is_req = o == ep->ctrl;
		if (!ep->closing && s == UCS_OK) {
			if ((o->info.sender_tag & user_mask) == kind_rkey_req)
				answer(ep, o);
			else
				answered(ep, o);
		} else if (s != UCS_OK && s != UCS_ERR_CANCELED) {
			fi_err(s, "ucx: control message");
		}
		if (req)
			ucp_request_free(req);
		if (is_req) {
			ep->ctrl = nullptr;
			free_op(o);
			if (!ep->closing) /* the next request */
				post_ctrl(ep);
		} else {
			free_op(o);
		}
	});
}

/* ---- transfers ---- */

void rma_cb(void *req, ucs_status_t s, void *user) noexcept;

void flush_cb(void *req, ucs_status_t s, void *user) noexcept
{
	rma_cb(req, s, user);
}

/* The put or get is done (locally); a write then waits for a flush. */
void rma_cb(void *req, ucs_status_t s, void *user) noexcept
{
	guard_void("ucx RMA completion", [&] {
		auto *o = static_cast<op *>(user);
		ucx_ep *ep = o->ep;
		o->req = nullptr;
		if (req)
			ucp_request_free(req);
		if (s == UCS_OK && o->write && o->liov.size() && !ep->closing && o->to && o->to->ep) {
			o->liov.clear(); /* marks "flushing" */
			ucp_request_param_t prm{};
			prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
			prm.cb.send = flush_cb;
			prm.user_data = o;
			if (int e = tx_issued(o, ucp_ep_flush_nbx(o->to->ep, &prm), "ucx: ucp_ep_flush_nbx"); e < 0)
				complete_tx(o, -e);
			return;
		}
		tx_done(o, s, o->write ? "ucx write" : "ucx read");
	});
}

void start(ucx_ep *, op *o, const peer::rkey_ent &rk)
{
	uint64_t need = o->write ? FI_REMOTE_WRITE : FI_REMOTE_READ;
	if (!(rk.access & need) || o->raddr < rk.base || o->len > rk.len || o->raddr - rk.base > rk.len - o->len) {
		WU_WARN(P(), FI_LOG_EP_DATA,
			"ucx: %s of %zu bytes at 0x%llx with key 0x%llx is outside the target's region or its access\n",
			o->write ? "write" : "read", o->len, static_cast<unsigned long long>(o->raddr),
			static_cast<unsigned long long>(o->rkey_key));
		complete_tx(o, FI_EACCES);
		return;
	}
	uint64_t remote = rk.addr + (o->raddr - rk.base);
	ucp_request_param_t prm{};
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	prm.cb.send = rma_cb;
	prm.user_data = o;
	void *buf;
	size_t count;
	if (!o->copy.empty()) {
		buf = o->copy.data();
		count = o->copy.size();
	} else if (o->liov.size() == 1) {
		buf = o->liov[0].iov_base;
		count = o->liov[0].iov_len;
	} else {
		for (size_t i = 0; i < o->liov.size(); i++)
			o->iov[i] = {o->liov[i].iov_base, o->liov[i].iov_len};
		prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
		prm.datatype = ucp_dt_make_iov();
		buf = o->iov;
		count = o->liov.size();
	}
	if (o->liov.empty())
		o->liov.push_back({buf, 0}); /* inject: still flushes */
	ucs_status_ptr_t r = o->write ? ucp_put_nbx(o->to->ep, buf, count, remote, rk.rkey, &prm)
				      : ucp_get_nbx(o->to->ep, buf, count, remote, rk.rkey, &prm);
	/* Done at once: a write still flushes (rma_cb), so not tx_issued's
	 * completion. */
	if (r == nullptr)
		rma_cb(nullptr, UCS_OK, o);
	else if (int e = tx_issued(o, r, o->write ? "ucx: ucp_put_nbx" : "ucx: ucp_get_nbx"); e < 0)
		complete_tx(o, -e);
}

/* Asks p for key's rkey. */
int ask(ucx_ep *ep, peer *p, uint64_t key)
{
	op *rx = new_op(ep, op_kind::CTRL_RX);
	if (int e = post_ctrl_recv(ep, kind_rkey_rep, p->id, rx))
		return e;
	op *o = new_op(ep, op_kind::CTRL_TX);
	rkey_req q{};
	q.key = key;
	size_t wlen = 0;
	const void *w = addr_worker(ep->name.data(), &wlen);
	q.wlen = uint32_t(wlen);
	q.id = ep->id;
	o->copy.resize(sizeof q + wlen);
	memcpy(o->copy.data(), &q, sizeof q);
	memcpy(o->copy.data() + sizeof q, w, wlen);
	send_ctrl(ep, p->ep, o, make_tag(true, 0, kind_rkey_req));
	return 0;
}

} // namespace

using mr_by_attr = mr::reg_as_attr<mr_regattr>;

fi_ops_mr mr_ops = {sizeof(fi_ops_mr), mr_by_attr::reg, mr_by_attr::regv, mr_regattr};

int post_ctrl(ucx_ep *ep)
{
	if (ep->ctrl)
		return 0;
	op *o = new_op(ep, op_kind::CTRL_RX);
	ep->ctrl = o;
	int e = post_ctrl_recv(ep, kind_rkey_req, 0, o);
	if (e)
		ep->ctrl = nullptr;
	return e;
}

ssize_t do_rma(ucx_ep *ep, const prov::rma_xfer &x)
{
	return ep->b.locked([&]() -> ssize_t {
		if (!ep->b.enabled) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the endpoint is not enabled (fi_enable)\n", x.where);
			return -FI_EOPBADSTATE;
		}
		if (!ep->dom->rma) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the domain was opened without RMA in its caps\n", x.where);
			return -FI_EOPNOTSUPP;
		}
		if (x.count > ep->b.info->tx_attr->iov_limit || (x.count && !x.iov) || x.rma_count != 1 || !x.rma) {
			WU_WARN(P(), FI_LOG_EP_DATA,
				"%s: %zu local buffers and %zu remote ones; this endpoint takes up to %zu and exactly 1\n",
				x.where, x.count, x.rma_count, size_t(ep->b.info->tx_attr->iov_limit));
			return -FI_EINVAL;
		}
		if (x.flags & FI_REMOTE_CQ_DATA) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: the ucx provider carries no remote CQ data\n", x.where);
			return -FI_EINVAL;
		}
		size_t len = 0;
		for (size_t i = 0; i < x.count; i++)
			len += x.iov[i].iov_len;
		if (len != x.rma[0].len) {
			WU_WARN(P(), FI_LOG_EP_DATA, "%s: %zu local bytes against a %zu-byte remote buffer\n", x.where,
				len, size_t(x.rma[0].len));
			return -FI_EINVAL;
		}
		const bool inject = x.inject_api || (x.flags & FI_INJECT);
		peer *p;
		if (int r = tx_checks(ep, x.where, inject && (!x.write || len > ep->b.info->tx_attr->inject_size), len,
				      x.addr, &p))
			return r;
		op *o = new_op(ep, op_kind::RMA);
		o->context = x.context;
		o->flags = x.flags;
		o->write = x.write;
		o->len = len;
		o->want_comp = !x.inject_api && ep->b.tx_wants(x.flags);
		o->to = p;
		o->raddr = x.rma[0].addr;
		o->rkey_key = x.rma[0].key;
		ep->tx_busy++;
		if (inject) {
			gather(o, x.iov, x.count, len);
		} else {
			o->liov.assign(x.iov, x.iov + x.count);
			if (o->liov.empty())
				o->liov.push_back({nullptr, 0});
		}
		peer::rkey_ent &rk = p->rkeys[o->rkey_key];
		if (rk.rkey) {
			start(ep, o, rk);
		} else if (rk.err) {
			complete_tx(o, rk.err);
		} else {
			rk.waiting.push_back(o);
			if (!rk.asked) {
				rk.asked = true;
				if (int e = ask(ep, p, o->rkey_key)) {
					rk.asked = false;
					rk.waiting.pop_back();
					ep->tx_busy--;
					free_op(o);
					return e;
				}
			}
		}
		return 0;
	});
}

void peer_rma_failed(ucx_ep *ep, peer *p, int err)
{
	for (auto &[k, rk] : p->rkeys) {
		std::vector<op *> w = std::move(rk.waiting);
		rk.waiting.clear();
		for (op *o : w)
			complete_tx(o, err);
		if (rk.rkey)
			ucp_rkey_destroy(rk.rkey);
	}
	p->rkeys.clear();
	/* RMA in flight on p's UCP endpoint is failed by UCP itself. */
	for (op *o : ep->live)
		if (o->kind == op_kind::RMA && o->to == p)
			o->to = nullptr;
}

void free_rma(ucx_ep *ep) noexcept
{
	for (auto &[a, p] : ep->peers) {
		for (auto &[k, rk] : p->rkeys) {
			if (rk.rkey)
				ucp_rkey_destroy(rk.rkey);
			rk.rkey = nullptr;
			rk.waiting.clear(); /* the ops themselves are freed with the live list */
		}
		p->rkeys.clear();
	}
}

} // namespace wu::ucx
