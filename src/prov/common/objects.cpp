/* SPDX-License-Identifier: BSD-3-Clause */
#include "prov/common/objects.h"

#include <cstring>
#include <memory>
#include <new>

#include "core/fid.h"
#include "core/info.h"
#include "core/log.h"
#include "core/shim.h"
#include "eq/eq.h"
#include "prov/common/cq.h"

namespace wu::prov {
namespace {

int fabric_close(struct fid *f) noexcept
{
	return guard("fi_close(fabric)", [&]() -> int {
		fabric *fab = fabric_of(reinterpret_cast<fid_fabric *>(f));
		if (!fab)
			return -FI_EINVAL;
		if (fab->children.busy()) {
			WU_WARN(fab->hooks->prov, FI_LOG_FABRIC,
				"fi_close(fabric): %d domain(s), EQ(s) or other objects are still open on it\n",
				fab->children.count());
			return -FI_EBUSY;
		}
		fab->magic = 0;
		std::unique_ptr<fabric> gone(fab);
		return 0;
	});
}

int fabric_domain2(fid_fabric *f, fi_info *info, fid_domain **dom, uint64_t flags, void *context) noexcept
{
	return guard("fi_domain", [&]() -> int {
		fabric *fab = fabric_of(f);
		if (!fab || !info || !dom) {
			WU_WARN(&core_prov, FI_LOG_DOMAIN, "fi_domain: %s is invalid\n",
				!fab ? "fabric" : !info ? "info" : "domain");
			return -FI_EINVAL;
		}
		if (flags) {
			WU_WARN(fab->hooks->prov, FI_LOG_DOMAIN, "fi_domain2: flags 0x%llx are not supported\n",
				(unsigned long long)flags);
			return -FI_EBADFLAGS;
		}
		*dom = nullptr;
		return fab->hooks->domain_open(fab, info, dom, context);
	});
}

int fabric_domain(fid_fabric *f, fi_info *info, fid_domain **dom, void *context) noexcept
{
	return fabric_domain2(f, info, dom, 0, context);
}

int fabric_passive_ep(fid_fabric *f, fi_info *info, fid_pep **pep, void *context) noexcept
{
	return guard("fi_passive_ep", [&]() -> int {
		fabric *fab = fabric_of(f);
		if (!fab || !info || !pep)
			return -FI_EINVAL;
		if (!fab->hooks->passive_ep) {
			WU_INFO(fab->hooks->prov, FI_LOG_FABRIC, "fi_passive_ep: %s has no passive endpoints\n",
				fab->hooks->prov->name);
			return -FI_ENOSYS;
		}
		return fab->hooks->passive_ep(fab, info, pep, context);
	});
}

int fabric_eq_open(fid_fabric *f, fi_eq_attr *attr, fid_eq **eq, void *context) noexcept
{
	fabric *fab = fabric_of(f);
	if (!fab) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_eq_open: fabric is not an open fabric\n");
		return -FI_EINVAL;
	}
	/* The EQ holds a reference on its fabric until it closes. */
	return eq_open(f, f->api_version, attr, eq, context, child_ref(fab->children));
}

int fabric_wait_open(fid_fabric *f, fi_wait_attr *attr, fid_wait **waitset) noexcept
{
	fabric *fab = fabric_of(f);
	if (!fab) {
		WU_WARN(&core_prov, FI_LOG_EQ, "fi_wait_open: fabric is not an open fabric\n");
		return -FI_EINVAL;
	}
	return wait_open(f, attr, waitset, child_ref(fab->children));
}

/* fi_trywait over any mix of EQs, wait sets, CQs and counters: each kind
 * answers for itself (CQs and counters also switch manually progressed
 * endpoints to progress on their own, see progress_fn::block). */
int fabric_trywait(fid_fabric *f, fid **fids, int count)
{
	if (count < 0 || (count > 0 && !fids))
		return trywait(f, fids, count); /* logs and refuses */
	for (int i = 0; i < count; i++) {
		fid *one = fids[i];
		bool cq = cq::is_cq(one), counter = !cq && cntr::is_cntr(one);
		if (!cq && !counter && (!one || (one->fclass != FI_CLASS_EQ && one->fclass != FI_CLASS_WAIT))) {
			WU_WARN(&core_prov, FI_LOG_FABRIC,
				"fi_trywait: fids[%d] is not an open EQ, wait set, CQ or counter\n", i);
			return -FI_EINVAL;
		}
		int r = cq ? cq::trywait(one) : counter ? cntr::trywait(one) : trywait(f, &one, 1);
		if (r)
			return r;
	}
	return 0;
}

fi_ops fabric_fi_ops = {
	sizeof(fi_ops),
	fabric_close,
	WU_NOSYS(fi_ops, bind),
	WU_NOSYS(fi_ops, control),
	WU_NOSYS(fi_ops, ops_open),
	WU_NOSYS(fi_ops, tostr),
	WU_NOSYS(fi_ops, ops_set),
};

fi_ops_fabric fabric_ops = {
	sizeof(fi_ops_fabric),
	fabric_domain,
	fabric_passive_ep,
	fabric_eq_open,
	fabric_wait_open,
	fabric_trywait,
	fabric_domain2,
};

} // namespace

int fabric_open(const fabric_hooks *hooks, fi_fabric_attr *attr, fid_fabric **out, void *context) noexcept
{
	return guard("fi_fabric", [&]() -> int {
		const char *prov = hooks->prov->name;
		if (!attr || !out)
			return -FI_EINVAL;
		if (hooks->known && (!attr->name || !hooks->known(attr->name, false))) {
			WU_WARN(hooks->prov, FI_LOG_FABRIC,
				"fi_fabric: no %s fabric named \"%s\"; use a fabric fi_getinfo reported\n", prov,
				attr->name ? attr->name : "(null)");
			return -FI_ENODATA;
		}
		auto fab = std::make_unique<fabric>();
		set_fid(fab->fid.fid, FI_CLASS_FABRIC, context, &fabric_fi_ops);
		fab->fid.ops = &fabric_ops;
		/* Kept as asked, 0 included (libfabric does the same): an info from
		 * fi_getinfo(FI_VERSION(0,0)) must get the oldest rules, e.g. the
		 * 80-byte fi_cq_err_entry, not ours. */
		fab->fid.api_version = attr->api_version;
		fab->magic = fabric_magic;
		fab->hooks = hooks;
		fab->name = attr->name ? attr->name : "";
		*out = &fab.release()->fid;
		return 0;
	});
}

bool describe(fi_provider &p, const char *name, decltype(fi_provider::getinfo) getinfo,
	      decltype(fi_provider::fabric) fabric, decltype(fi_provider::cleanup) cleanup) noexcept
{
	if (p.name)
		return false;
	p.version = prov_version;
	p.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	p.getinfo = getinfo;
	p.fabric = fabric;
	p.cleanup = cleanup;
	p.name = name;
	return true;
}

int domain_init(domain *d, fabric *fab, const fi_info *info, fi_ops_domain *ops, fi_ops_mr *mr,
		fi_ops *fi_ops_tbl, void *context)
{
	const char *prov = fab->hooks->prov->name;
	if (!info->domain_attr || !info->fabric_attr) {
		WU_WARN(fab->hooks->prov, FI_LOG_DOMAIN,
			"fi_domain: info lacks domain_attr or fabric_attr; pass an entry from fi_getinfo\n");
		return -FI_EINVAL;
	}
	if (info->fabric_attr->prov_name && !strstr(info->fabric_attr->prov_name, prov)) {
		WU_WARN(fab->hooks->prov, FI_LOG_DOMAIN, "fi_domain: info is for provider %s, not %s\n",
			info->fabric_attr->prov_name, prov);
		return -FI_EINVAL;
	}
	if (fab->hooks->known && info->domain_attr->name && !fab->hooks->known(info->domain_attr->name, true)) {
		WU_WARN(fab->hooks->prov, FI_LOG_DOMAIN,
			"fi_domain: no %s domain named \"%s\"; use a domain fi_getinfo reported\n", prov,
			info->domain_attr->name);
		return -FI_ENODEV;
	}
	if (info->fabric_attr->name && fab->name != info->fabric_attr->name) {
		WU_WARN(fab->hooks->prov, FI_LOG_DOMAIN, "fi_domain: info is for fabric %s, this fabric is %s\n",
			info->fabric_attr->name, fab->name.c_str());
		return -FI_EINVAL;
	}
	d->info = info_dup(info);
	if (!d->info)
		return -FI_ENOMEM;
	set_fid(d->fid.fid, FI_CLASS_DOMAIN, context, fi_ops_tbl);
	d->fid.ops = ops;
	d->fid.mr = mr;
	d->magic = domain_magic;
	d->fab = fab;
	d->api_version = fab->fid.api_version;
	d->parent = child_ref(fab->children);
	return 0;
}

int domain_fini(domain *d)
{
	if (d->children.busy()) {
		WU_WARN(d->fab->hooks->prov, FI_LOG_DOMAIN,
			"fi_close(domain): %d endpoint(s), AV(s), CQ(s) or MRs are still open on it\n",
			d->children.count());
		return -FI_EBUSY;
	}
	info_free(d->info);
	d->info = nullptr;
	d->magic = 0;
	d->parent.reset();
	return 0;
}

int domain_open(fabric *fab, const fi_info *info, fi_ops_domain *ops, fi_ops_mr *mr, fi_ops *fi_ops_tbl,
		void *context, fid_domain **out)
{
	auto d = std::make_unique<domain>();
	if (int ret = domain_init(d.get(), fab, info, ops, mr, fi_ops_tbl, context))
		return ret;
	*out = &d.release()->fid;
	return 0;
}

int domain_close(struct fid *f) noexcept
{
	return guard("fi_close(domain)", [&]() -> int {
		domain *d = domain_of(reinterpret_cast<fid_domain *>(f));
		if (!d)
			return -FI_EINVAL;
		if (int ret = domain_fini(d))
			return ret;
		std::unique_ptr<domain> gone(d);
		return 0;
	});
}

} // namespace wu::prov
