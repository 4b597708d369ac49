/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory regions (fi_mr(3)) for every provider.
 *
 * One process-wide table maps (domain, key) to regions, so an RMA target
 * check is one hash lookup under a shared lock.  Which mr_mode rules apply
 * comes from the domain's fi_info: FI_MR_PROV_KEY (we pick keys: a
 * bijective scramble of a counter, unique and not guessable from the
 * previous one), FI_MR_VIRT_ADDR (peers address by virtual address, else by
 * offset from the region start plus fi_mr_attr.offset), FI_MR_RMA_EVENT and
 * FI_MR_ENDPOINT (regions start disabled until fi_mr_enable).  mem_desc is
 * the region itself, found again through the table for FI_MR_LOCAL checks. */
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/uio.h>

#include <rdma/fi_errno.h>

#include "core/fid.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/owned.h"
#include "core/shim.h"
#include "core/sync.h"
#include "prov/common/cq.h"
#include "prov/common/dom_progress.h"

namespace wu::mr {
namespace {

constexpr uint32_t mr_magic = 0x57554d52; /* "WUMR" */
constexpr uint64_t known_access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				  FI_REMOTE_WRITE | FI_COLLECTIVE;

struct cntr_binding {
	fid_cntr *cntr;
	uint64_t flags; /* FI_REMOTE_WRITE / FI_REMOTE_READ */
};

struct region {
	fid_mr fid; /* first: the C view */
	uint32_t magic;
	prov::domain *dom;
	child_ref parent; /* on dom->children */
	uint64_t access;
	uint64_t flags;
	uint64_t serial; /* unique per registration (mr::ref) */
	uint64_t base;	/* remote address of byte 0 of the region */
	size_t total;	/* bytes over all segments */
	bool starts_disabled;
	std::atomic<bool> enabled;
	eqd::spinlock lk; /* bindings */
	std::vector<iovec> iov;
	std::vector<cntr_binding> cntrs;
	struct fid *ep;
};

struct key_hash {
	size_t operator()(const std::pair<const prov::domain *, uint64_t> &k) const noexcept
	{
		uint64_t h = fib_hash(k.second);
		return static_cast<size_t>(h ^ (reinterpret_cast<uintptr_t>(k.first) >> 4));
	}
};

struct registry {
	std::shared_mutex m;
	std::unordered_map<std::pair<const prov::domain *, uint64_t>, region *, key_hash> by_key;
	std::unordered_set<const void *> live;
};

/* Never destroyed: regions may be closed from atexit handlers. */
registry &reg_table()
{
	static registry &r = make_immortal<registry>();
	return r;
}

/* Effective mr_mode bits, the deprecated enum values spelled out. */
int mode_of(const prov::domain *d) noexcept
{
	int m = d->info && d->info->domain_attr ? d->info->domain_attr->mr_mode : 0;
	if (m == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (m == FI_MR_SCALABLE)
		return 0;
	return m;
}

std::atomic<uint64_t> next_key{1};
std::atomic<uint64_t> next_serial{1};

region *region_of(fid *f) noexcept
{
	if (!f || f->fclass != FI_CLASS_MR)
		return nullptr;
	region *r = container_of_fid<region>(reinterpret_cast<fid_mr *>(f));
	return r->magic == mr_magic ? r : nullptr;
}

int mr_close(fid *f);
int mr_bind(fid *f, fid *bfid, uint64_t flags);
int mr_control(fid *f, int command, void *arg);

fi_ops mr_fi_ops = {
	sizeof(fi_ops), mr_close,		 mr_bind, mr_control, WU_NOSYS(fi_ops, ops_open),
	WU_NOSYS(fi_ops, tostr), WU_NOSYS(fi_ops, ops_set),
};

int mr_close(fid *f)
{
	return WU_GUARD({
		region *r = region_of(f);
		if (!r)
			return -FI_EINVAL;
		{
			registry &t = reg_table();
			std::unique_lock g(t.m);
			t.by_key.erase({r->dom, r->fid.key});
			t.live.erase(r);
		}
		/* Counter bindings end with the region (there is no unbind call). */
		for (const cntr_binding &b : r->cntrs)
			cntr::unbind(&b.cntr->fid, prov::dom_progress::of(r->dom));
		r->magic = 0;
		std::unique_ptr<region> gone(r);
		return 0;
	});
}

int bind_cntr(region *r, fid *bfid, uint64_t flags)
{
	const fi_provider *prov = r->dom->fab->hooks->prov;
	if (!cntr::is_cntr(bfid)) {
		WU_WARN(prov, FI_LOG_MR, "fi_mr_bind: %p is not an open counter\n",
			static_cast<void *>(bfid));
		return -FI_EINVAL;
	}
	constexpr uint64_t ok = FI_REMOTE_WRITE | FI_REMOTE_READ;
	if (!flags || (flags & ~ok)) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_bind: flags 0x%llx for a counter; use FI_REMOTE_WRITE and/or "
			"FI_REMOTE_READ\n",
			static_cast<unsigned long long>(flags));
		return -FI_EBADFLAGS;
	}
	/* fi_mr(3): counting remote accesses is the FI_RMA_EVENT capability;
	 * a domain opened without it (or a provider that cannot count) says no. */
	if (!(r->dom->info->caps & FI_RMA_EVENT)) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_bind: a counter on a region needs FI_RMA_EVENT, which the domain's "
			"fi_info does not carry (ask for it in the hints' caps)\n");
		return -FI_EOPNOTSUPP;
	}
	if ((mode_of(r->dom) & FI_MR_RMA_EVENT) && !(r->flags & FI_RMA_EVENT)) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_bind: the domain requires FI_MR_RMA_EVENT: register the region with "
			"the FI_RMA_EVENT flag to bind counters to it\n");
		return -FI_EINVAL;
	}
	eqd::lock_guard g(r->lk);
	auto it = std::find_if(r->cntrs.begin(), r->cntrs.end(),
			       [&](const cntr_binding &b) { return &b.cntr->fid == bfid; });
	if (it != r->cntrs.end()) {
		it->flags |= flags;
		return 0;
	}
	r->cntrs.reserve(r->cntrs.size() + 1); /* may throw before anything changed */
	if (int e = cntr::bind(bfid, prov::dom_progress::of(r->dom)))
		return e;
	r->cntrs.push_back({reinterpret_cast<fid_cntr *>(bfid), flags});
	return 0;
}

int mr_bind_impl(fid *f, fid *bfid, uint64_t flags)
{
	region *r = region_of(f);
	if (!r || !bfid)
		return -FI_EINVAL;
	const fi_provider *prov = r->dom->fab->hooks->prov;
	if (r->starts_disabled && r->enabled.load(std::memory_order_acquire)) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_bind: the region is already enabled; bind before fi_mr_enable\n");
		return -FI_EINVAL;
	}
	switch (bfid->fclass) {
	case FI_CLASS_CNTR:
		return bind_cntr(r, bfid, flags);
	case FI_CLASS_EP:
		if (flags) {
			WU_WARN(prov, FI_LOG_MR,
				"fi_mr_bind: flags must be 0 when binding to an endpoint\n");
			return -FI_EBADFLAGS;
		}
		{
			eqd::lock_guard g(r->lk);
			r->ep = bfid;
		}
		return 0;
	default:
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_bind: a region binds to a counter or an endpoint, not fid class %zu\n",
			bfid->fclass);
		return -FI_EINVAL;
	}
}

int mr_bind(fid *f, fid *bfid, uint64_t flags)
{
	return WU_GUARD(return mr_bind_impl(f, bfid, flags););
}

int mr_enable(region *r)
{
	if ((mode_of(r->dom) & FI_MR_ENDPOINT)) {
		eqd::lock_guard g(r->lk);
		if (!r->ep) {
			WU_WARN(r->dom->fab->hooks->prov, FI_LOG_MR,
				"fi_mr_enable: the domain uses FI_MR_ENDPOINT: fi_mr_bind the region to "
				"an endpoint first\n");
			return -FI_EINVAL;
		}
	}
	r->enabled.store(true, std::memory_order_release);
	return 0;
}

int mr_control_impl(fid *f, int command, void *arg)
{
	region *r = region_of(f);
	if (!r)
		return -FI_EINVAL;
	const fi_provider *prov = r->dom->fab->hooks->prov;
	switch (command) {
	case FI_ENABLE:
		return mr_enable(r);
	case FI_REFRESH:
		/* Data moves through the application's virtual addresses, so
		 * a change of the pages behind them needs no update here. */
		if (!arg) {
			WU_WARN(prov, FI_LOG_MR, "fi_mr_refresh: arg is NULL\n");
			return -FI_EINVAL;
		}
		return 0;
	case FI_GET_RAW_MR: {
		auto *req = static_cast<struct fi_mr_raw_attr *>(arg);
		if (!req || !req->key_size || !req->base_addr) {
			WU_WARN(prov, FI_LOG_MR, "fi_mr_raw_attr: an argument is NULL\n");
			return -FI_EINVAL;
		}
		size_t room = *req->key_size;
		*req->key_size = sizeof(uint64_t);
		if (room < sizeof(uint64_t) || !req->raw_key)
			return -FI_ETOOSMALL;
		memcpy(req->raw_key, &r->fid.key, sizeof(uint64_t));
		*req->base_addr = r->base;
		return 0;
	}
	default:
		WU_INFO(prov, FI_LOG_MR, "fi_control command %d is not supported by memory regions\n",
			command);
		return -FI_ENOSYS;
	}
}

int mr_control(fid *f, int command, void *arg)
{
	return WU_GUARD(return mr_control_impl(f, command, arg););
}

int regattr_impl(fid *fid_dom, const fi_mr_attr *attr, uint64_t flags, fid_mr **out)
{
	prov::domain *dom = fid_dom && fid_dom->fclass == FI_CLASS_DOMAIN
				    ? prov::domain_of(reinterpret_cast<fid_domain *>(fid_dom))
				    : nullptr;
	if (!dom || !attr || !out) {
		WU_WARN(&core_prov, FI_LOG_MR, "fi_mr_reg: %s is NULL or invalid\n",
			!dom ? "domain" : !attr ? "attr" : "mr");
		return -FI_EINVAL;
	}
	*out = nullptr;
	const fi_provider *prov = dom->fab->hooks->prov;
	const fi_domain_attr *da = dom->info->domain_attr;
	const int mode = mode_of(dom);
	const uint32_t api = dom->api_version;

	if (flags & FI_MR_DMABUF) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_regattr: FI_MR_DMABUF: %s registers host memory only; there is no "
			"device memory to take a dma-buf of\n",
			prov->name);
		return -FI_EOPNOTSUPP;
	}
	if (!attr->iov_count || !attr->mr_iov) {
		WU_WARN(prov, FI_LOG_MR, "fi_mr_reg: no buffer (iov_count %zu, mr_iov %p)\n",
			attr->iov_count, static_cast<const void *>(attr->mr_iov));
		return -FI_EINVAL;
	}
	if (da->mr_iov_limit && attr->iov_count > da->mr_iov_limit) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_regv: %zu buffers in one region; this domain allows %zu "
			"(fi_domain_attr.mr_iov_limit)\n",
			attr->iov_count, da->mr_iov_limit);
		return -FI_EINVAL;
	}
	if (flags & ~FI_RMA_EVENT) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_reg: flags 0x%llx are not supported (only FI_RMA_EVENT; no "
			"FI_RMA_PMEM, FI_HMEM_* or FI_MR_DMABUF here)\n",
			static_cast<unsigned long long>(flags & ~FI_RMA_EVENT));
		return -FI_EBADFLAGS;
	}
	if (attr->access & ~known_access) {
		WU_WARN(prov, FI_LOG_MR, "fi_mr_reg: access bits 0x%llx are not defined\n",
			static_cast<unsigned long long>(attr->access & ~known_access));
		return -FI_EINVAL;
	}
	/* Fields an older caller's struct may not have (fi_mr(3)). */
	if (api >= FI_VERSION(1, 5) && attr->auth_key_size) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_regattr: authorization keys are not supported by %s regions; pass "
			"auth_key_size 0\n",
			prov->name);
		return -FI_EINVAL;
	}
	if (api >= FI_VERSION(1, 10) && attr->iface != FI_HMEM_SYSTEM) {
		WU_WARN(prov, FI_LOG_MR,
			"fi_mr_regattr: iface %d: %s registers host memory only (FI_HMEM_SYSTEM)\n",
			static_cast<int>(attr->iface), prov->name);
		return -FI_ENOSYS;
	}
	/* The members past the 1.17 struct (80 bytes) exist only in a newer
	 * caller's: hmem_data (1.19) goes with a device iface, refused above;
	 * page_size (1.22) is a hint; base_mr (2.0) asks for a sub-region. */
	if (api >= FI_VERSION(2, 0) && attr->base_mr) {
		WU_WARN(prov, FI_LOG_MR, "fi_mr_regattr: base_mr: %s has no sub-regions; pass base_mr NULL\n",
			prov->name);
		return -FI_ENOSYS;
	}

	auto r = std::make_unique<region>();
	set_fid(r->fid.fid, FI_CLASS_MR, attr->context, &mr_fi_ops);
	r->fid.mem_desc = &r->fid;
	r->magic = mr_magic;
	r->dom = dom;
	r->access = attr->access;
	r->flags = flags;
	r->iov.assign(attr->mr_iov, attr->mr_iov + attr->iov_count);
	r->total = 0;
	for (const iovec &v : r->iov) {
		if (v.iov_len > SIZE_MAX - r->total) {
			WU_WARN(prov, FI_LOG_MR, "fi_mr_regv: the buffers' lengths overflow\n");
			return -FI_EINVAL;
		}
		r->total += v.iov_len;
	}
	r->base = (mode & FI_MR_VIRT_ADDR) ? reinterpret_cast<uintptr_t>(r->iov[0].iov_base)
					   : attr->offset;
	r->starts_disabled = (mode & FI_MR_ENDPOINT) ||
			     ((mode & FI_MR_RMA_EVENT) && (flags & FI_RMA_EVENT));
	r->enabled.store(!r->starts_disabled, std::memory_order_relaxed);
	r->ep = nullptr;
	r->serial = next_serial.fetch_add(1, std::memory_order_relaxed);

	const size_t key_bytes = da->mr_key_size ? std::min<size_t>(da->mr_key_size, 8) : 8;
	const uint64_t key_mask = key_bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * key_bytes)) - 1;
	registry &t = reg_table();
	std::unique_lock g(t.m);
	if (mode & FI_MR_PROV_KEY) {
		for (;;) {
			/* wu::mix64 is a bijection: distinct counters give distinct keys. */
			uint64_t k = wu::mix64(next_key.fetch_add(1, std::memory_order_relaxed)) & key_mask;
			if (k == FI_KEY_NOTAVAIL)
				continue;
			if (t.by_key.emplace(std::make_pair(dom, k), r.get()).second) {
				r->fid.key = k;
				break;
			}
		}
	} else {
		uint64_t k = attr->requested_key;
		if ((k & ~key_mask) || k == FI_KEY_NOTAVAIL) {
			WU_WARN(prov, FI_LOG_MR,
				"fi_mr_reg: requested_key 0x%llx does not fit the domain's %zu-byte keys\n",
				static_cast<unsigned long long>(k), key_bytes);
			return -FI_EKEYREJECTED;
		}
		if (!t.by_key.emplace(std::make_pair(dom, k), r.get()).second) {
			WU_WARN(prov, FI_LOG_MR,
				"fi_mr_reg: requested_key 0x%llx is already used by another region of this "
				"domain\n",
				static_cast<unsigned long long>(k));
			return -FI_ENOKEY;
		}
		r->fid.key = k;
	}
	try {
		t.live.insert(r.get());
	} catch (...) {
		t.by_key.erase({dom, r->fid.key});
		throw;
	}
	r->parent = child_ref(dom->children);
	*out = &r.release()->fid;
	return 0;
}

int mr_regattr(fid *fid_dom, const fi_mr_attr *attr, uint64_t flags, fid_mr **mr)
{
	return WU_GUARD(return regattr_impl(fid_dom, attr, flags, mr););
}

/* Under the table's shared lock. */
void *locate(const region *r, uint64_t addr, size_t len) noexcept
{
	if (addr < r->base)
		return nullptr;
	uint64_t off = addr - r->base;
	if (off > r->total || len > r->total - off)
		return nullptr;
	for (const iovec &v : r->iov) {
		if (off < v.iov_len || (off == v.iov_len && len == 0)) {
			if (len > v.iov_len - off)
				return nullptr; /* spans two buffers: one pointer cannot say it */
			return static_cast<char *>(v.iov_base) + off;
		}
		off -= v.iov_len;
	}
	return nullptr;
}

} // namespace

using mr_by_attr = reg_as_attr<mr_regattr>;

fi_ops_mr ops = {sizeof(fi_ops_mr), mr_by_attr::reg, mr_by_attr::regv, mr_regattr};

void *check(prov::domain *dom, uint64_t key, uint64_t addr, size_t len, uint64_t access, ref &out) noexcept
{
	registry &t = reg_table();
	std::shared_lock g(t.m);
	auto it = t.by_key.find({dom, key});
	if (it == t.by_key.end()) [[unlikely]]
		return nullptr;
	const region *r = it->second;
	if ((r->access & access) != access || !r->enabled.load(std::memory_order_acquire))
		return nullptr;
	void *p = locate(r, addr, len);
	if (p)
		out = {dom, key, r->serial};
	return p;
}

void *check(prov::domain *dom, uint64_t key, uint64_t addr, size_t len, uint64_t access) noexcept
{
	ref unused;
	return check(dom, key, addr, len, access, unused);
}

/* The table's shared lock is the guard: mr_close erases the region under
 * the exclusive lock, so it waits for guards taken before and makes every
 * later one dead. */
guard::guard(const ref &r) noexcept
{
	if (!r.serial)
		return;
	registry &t = reg_table();
	t.m.lock_shared();
	auto it = t.by_key.find({r.dom, r.key});
	live_ = it != t.by_key.end() && it->second->serial == r.serial;
	if (!live_)
		t.m.unlock_shared();
}

guard::~guard()
{
	if (live_)
		reg_table().m.unlock_shared();
}

void remote_access(prov::domain *dom, uint64_t key, uint64_t access) noexcept
{
	registry &t = reg_table();
	std::shared_lock g(t.m);
	auto it = t.by_key.find({dom, key});
	if (it == t.by_key.end())
		return;
	region *r = it->second;
	eqd::lock_guard lg(r->lk);
	for (const cntr_binding &b : r->cntrs)
		if (b.flags & access)
			cntr::add(b.cntr, 1);
}

bool check_desc(prov::domain *dom, void *desc, const void *buf, size_t len, uint64_t access) noexcept
{
	registry &t = reg_table();
	std::shared_lock g(t.m);
	if (!desc || !t.live.count(desc))
		return false;
	const region *r = static_cast<const region *>(desc);
	if (r->dom != dom || (r->access & access) != access)
		return false;
	auto a = reinterpret_cast<uintptr_t>(buf);
	for (const iovec &v : r->iov) {
		auto b = reinterpret_cast<uintptr_t>(v.iov_base);
		if (a >= b && a - b <= v.iov_len && len <= v.iov_len - (a - b))
			return true;
	}
	return false;
}

bool is_mr(const fid *f) noexcept
{
	return region_of(const_cast<fid *>(f)) != nullptr;
}

} // namespace wu::mr
