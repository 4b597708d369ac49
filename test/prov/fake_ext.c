/* SPDX-License-Identifier: BSD-3-Clause */
/* An external provider as a third party would build it: lib<name>-fi.so
 * exporting fi_prov_ini, loaded from FI_PROVIDER_PATH. */
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

static int ext_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	(void)version; (void)node; (void)service; (void)flags; (void)hints;
	struct fi_info *i = calloc(1, sizeof(*i));
	if (!i)
		return -FI_ENOMEM;
	i->tx_attr = calloc(1, sizeof(*i->tx_attr));
	i->rx_attr = calloc(1, sizeof(*i->rx_attr));
	i->ep_attr = calloc(1, sizeof(*i->ep_attr));
	i->domain_attr = calloc(1, sizeof(*i->domain_attr));
	i->fabric_attr = calloc(1, sizeof(*i->fabric_attr));
	i->caps = FI_MSG;
	i->ep_attr->type = FI_EP_DGRAM;
	i->fabric_attr->name = strdup("fakeext-fabric");
	i->domain_attr->name = strdup("fakeext-domain");
	*info = i;
	return 0;
}

static int ext_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	(void)attr; (void)fabric; (void)context;
	return -FI_ENOSYS;
}

static struct fi_provider ext = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "fakeext",
	.getinfo = ext_getinfo,
	.fabric = ext_fabric,
};

FI_EXT_INI
{
	return &ext;
}
