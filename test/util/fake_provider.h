/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake provider for unit tests: registered through the registry's test
 * seam, it answers fi_getinfo with one entry and opens a minimal fabric. */
#ifndef WU_TEST_FAKE_PROVIDER_H
#define WU_TEST_FAKE_PROVIDER_H

#include <cstdlib>
#include <cstring>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include "core/info.h"
#include "prov/registry.h"

namespace wu::test {

struct fake_fabric {
	fid_fabric fabric;
	int *closed;
};

inline int fake_fabric_close(struct fid *fid)
{
	auto *f = reinterpret_cast<fake_fabric *>(fid);
	if (f->closed)
		++*f->closed;
	delete f;
	return 0;
}

inline fi_ops fake_fabric_fi_ops = {sizeof(fi_ops), fake_fabric_close, nullptr, nullptr,
				    nullptr, nullptr, nullptr};

inline int fake_closed = 0;
inline thread_local const fi_info *fake_last_hints = nullptr;
inline thread_local uint64_t fake_last_max_group_id = ~0ull;
inline thread_local size_t fake_last_domain_mr_count = ~0ul;
inline thread_local uint64_t fake_last_max_cntr_value = ~0ull;

inline int fake_getinfo(uint32_t, const char *, const char *, uint64_t, const fi_info *hints,
			fi_info **info)
{
	fake_last_hints = hints;
	if (hints && hints->domain_attr) {
		fake_last_max_group_id = hints->domain_attr->max_group_id;
		fake_last_domain_mr_count = hints->domain_attr->mr_cnt;
		fake_last_max_cntr_value = hints->domain_attr->max_cntr_value;
	}
	fi_info *i = wu::info_alloc();
	if (!i)
		return -FI_ENOMEM;
	i->caps = FI_MSG;
	i->ep_attr->type = FI_EP_RDM;
	i->fabric_attr->name = strdup("fake-fabric");
	i->domain_attr->name = strdup("fake-domain");
	i->domain_attr->max_group_id = 7;
	*info = i;
	return 0;
}

inline int fake_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	(void)attr;
	auto *f = new fake_fabric{};
	f->fabric.fid.fclass = FI_CLASS_FABRIC;
	f->fabric.fid.context = context;
	f->fabric.fid.ops = &fake_fabric_fi_ops;
	f->closed = &fake_closed;
	*fabric = &f->fabric;
	return 0;
}

inline fi_provider make_fake(const char *name)
{
	fi_provider p{};
	p.version = FI_VERSION(1, 0);
	p.fi_version = FI_VERSION(2, 0);
	p.name = name;
	p.getinfo = fake_getinfo;
	p.fabric = fake_fabric_open;
	return p;
}

/* RAII registration. */
struct scoped_provider {
	fi_provider prov;
	explicit scoped_provider(const char *name, bool front = false) : prov(make_fake(name))
	{
		wu::prov::add_for_test(&prov, front);
	}
	~scoped_provider() { wu::prov::remove_for_test(&prov); }
	scoped_provider(const scoped_provider &) = delete;
	scoped_provider &operator=(const scoped_provider &) = delete;
};

} // namespace wu::test

#endif
