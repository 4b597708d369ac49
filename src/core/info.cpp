/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_info allocation, deep copy and release, for every part; the exported
 * fi_getinfo / fi_dupinfo / fi_freeinfo live in src/api/info.cpp. */
#include "core/info.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/export.h"
#include "core/fid.h"
#include "core/log.h"
#include "core/shim.h"

namespace wu {

#if defined(__x86_64__)
/* The sizes man/fabric.7.md and libfabric's headers give on x86-64. */
static_assert(layout_1_0.info == 112 && layout_1_0.tx == 72 && layout_1_0.rx == 64 &&
	      layout_1_0.ep == 80 && layout_1_0.domain == 120 && layout_1_0.fabric == 28);
static_assert(layout_1_1.domain == 184 && layout_1_1.ep == 96 && layout_1_1.fabric == 32);
static_assert(layout_1_2.info == 120 && layout_1_2.tx == 72);
static_assert(layout_1_3.tx == 80 && layout_1_3.domain == 192);
static_assert(layout_1_7.domain == 200 && layout_1_8.domain == 208);
#endif

namespace {

template <class T>
T *zalloc() noexcept
{
	return static_cast<T *>(calloc(1, sizeof(T)));
}

bool dup_str(char **dst, const char *src) noexcept
{
	*dst = nullptr;
	if (!src)
		return true;
	*dst = strdup(src);
	return *dst != nullptr;
}


void nic_free(fid_nic *nic) noexcept
{
	if (!nic)
		return;
	if (nic->device_attr) {
		fi_device_attr *d = nic->device_attr;
		free(d->name);
		free(d->device_id);
		free(d->device_version);
		free(d->vendor_id);
		free(d->driver);
		free(d->firmware);
		free(d);
	}
	free(nic->bus_attr);
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic);
}

int nic_close(struct fid *fid) noexcept
{
	if (!fid || fid->fclass != FI_CLASS_NIC)
		return -FI_EINVAL;
	nic_free(reinterpret_cast<fid_nic *>(fid));
	return 0;
}

int nic_bind(struct fid *, struct fid *, uint64_t) noexcept { return -FI_ENOSYS; }
int nic_control(struct fid *, int, void *) noexcept { return -FI_ENOSYS; }
int nic_ops_open(struct fid *, const char *, uint64_t, void **, void *) noexcept { return -FI_ENOSYS; }
int nic_ops_set(struct fid *, const char *, uint64_t, void *, void *) noexcept { return -FI_ENOSYS; }

fi_ops nic_ops = {
	sizeof(fi_ops), nic_close, nic_bind, nic_control, nic_ops_open, wu::nic_tostr, nic_ops_set,
};

/* A copy made by nic_dup lives in one block (see there): a header holding
 * the block's size, then the fid_nic.  One free. */
struct packed_header {
	alignas(std::max_align_t) size_t size;
};

int nic_packed_close(struct fid *fid) noexcept
{
	if (!fid || fid->fclass != FI_CLASS_NIC)
		return -FI_EINVAL;
	free(reinterpret_cast<char *>(fid) - sizeof(packed_header));
	return 0;
}

fi_ops nic_packed_ops = {
	sizeof(fi_ops), nic_packed_close, nic_bind, nic_control, nic_ops_open, wu::nic_tostr, nic_ops_set,
};

/* A current-size copy of the first n bytes of *src, the rest zeroed: a
 * caller of an older layout owns only that prefix. */
template <class T>
T *widened_copy(const T *src, size_t n) noexcept
{
	if (n > sizeof(T))
		n = sizeof(T);
	T *p = static_cast<T *>(malloc(sizeof(T)));
	if (p) {
		memcpy(static_cast<void *>(p), src, n);
		memset(reinterpret_cast<char *>(p) + n, 0, sizeof(T) - n);
	}
	return p;
}

#define WU_LAYOUT_HAS(size, type, member) \
	layout_has(size, offsetof(type, member), sizeof(static_cast<type *>(nullptr)->member))

constexpr size_t align_up(size_t n, size_t a) noexcept
{
	return (n + a - 1) / a * a;
}

/* Places a copy of s (if any) at *cursor inside a packed block. */
char *pack_str(char *&cursor, const char *s) noexcept
{
	if (!s)
		return nullptr;
	size_t n = strlen(s) + 1;
	char *d = static_cast<char *>(memcpy(cursor, s, n));
	cursor += n;
	return d;
}

size_t str_size(const char *s) noexcept
{
	return s ? strlen(s) + 1 : 0;
}

} // namespace

bool dup_mem(void **dst, const void *src, size_t len) noexcept
{
	*dst = nullptr;
	if (!src || !len)
		return true;
	*dst = malloc(len);
	if (!*dst)
		return false;
	memcpy(*dst, src, len);
	return true;
}

fid_nic *nic_alloc() noexcept
{
	fid_nic *nic = zalloc<fid_nic>();
	if (!nic)
		return nullptr;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &nic_ops;
	nic->device_attr = zalloc<fi_device_attr>();
	nic->bus_attr = zalloc<fi_bus_attr>();
	nic->link_attr = zalloc<fi_link_attr>();
	if (!nic->device_attr || !nic->bus_attr || !nic->link_attr) {
		nic_free(nic);
		return nullptr;
	}
	return nic;
}

fid_nic *nic_dup(const fid_nic *src) noexcept
{
	/* fi_getinfo hands out one NIC per entry, so this copy is on the hot
	 * path.  The fid, its three attribute structs and their strings share
	 * one allocation, released by this copy's own close slot; a NIC is
	 * read-only to applications (fi_nic(3)), which release it only through
	 * fi_close.  prov_attr is provider-private and has no generic copy. */
	if (src->fid.ops == &nic_packed_ops) {
		/* A packed source (fi_getinfo's templates): copy the block and
		 * move its inner pointers along. */
		const char *from = reinterpret_cast<const char *>(src) - sizeof(packed_header);
		size_t size = reinterpret_cast<const packed_header *>(from)->size;
		char *block = static_cast<char *>(malloc(size));
		if (!block)
			return nullptr;
		memcpy(block, from, size);
		fid_nic *nic = reinterpret_cast<fid_nic *>(block + sizeof(packed_header));
		auto move = [&](auto *&p) {
			if (p)
				p = reinterpret_cast<std::remove_reference_t<decltype(p)>>(
					block + (reinterpret_cast<const char *>(p) - from));
		};
		move(nic->device_attr);
		move(nic->bus_attr);
		move(nic->link_attr);
		if (fi_device_attr *d = nic->device_attr) {
			move(d->name);
			move(d->device_id);
			move(d->device_version);
			move(d->vendor_id);
			move(d->driver);
			move(d->firmware);
		}
		if (fi_link_attr *l = nic->link_attr) {
			move(l->address);
			move(l->network_type);
		}
		return nic;
	}
	const fi_device_attr *sd = src->device_attr;
	const fi_link_attr *sl = src->link_attr;
	size_t off_nic = sizeof(packed_header);
	size_t off_dev = align_up(off_nic + sizeof(fid_nic), alignof(fi_device_attr));
	size_t off_bus = align_up(off_dev + (sd ? sizeof(fi_device_attr) : 0), alignof(fi_bus_attr));
	size_t off_link = align_up(off_bus + (src->bus_attr ? sizeof(fi_bus_attr) : 0),
				   alignof(fi_link_attr));
	size_t off_str = off_link + (sl ? sizeof(fi_link_attr) : 0);
	size_t strings = 0;
	if (sd)
		strings += str_size(sd->name) + str_size(sd->device_id) + str_size(sd->device_version) +
			   str_size(sd->vendor_id) + str_size(sd->driver) + str_size(sd->firmware);
	if (sl)
		strings += str_size(sl->address) + str_size(sl->network_type);
	char *block = static_cast<char *>(malloc(off_str + strings));
	if (!block)
		return nullptr;
	reinterpret_cast<packed_header *>(block)->size = off_str + strings;
	fid_nic *nic = reinterpret_cast<fid_nic *>(block + off_nic);
	memset(nic, 0, sizeof(*nic));
	set_fid(nic->fid, FI_CLASS_NIC, src->fid.context, &nic_packed_ops);
	char *cursor = block + off_str;
	if (sd) {
		fi_device_attr *d = nic->device_attr = reinterpret_cast<fi_device_attr *>(block + off_dev);
		d->name = pack_str(cursor, sd->name);
		d->device_id = pack_str(cursor, sd->device_id);
		d->device_version = pack_str(cursor, sd->device_version);
		d->vendor_id = pack_str(cursor, sd->vendor_id);
		d->driver = pack_str(cursor, sd->driver);
		d->firmware = pack_str(cursor, sd->firmware);
	}
	if (src->bus_attr) {
		nic->bus_attr = reinterpret_cast<fi_bus_attr *>(block + off_bus);
		*nic->bus_attr = *src->bus_attr;
	}
	if (sl) {
		fi_link_attr *l = nic->link_attr = reinterpret_cast<fi_link_attr *>(block + off_link);
		*l = *sl;
		l->address = pack_str(cursor, sl->address);
		l->network_type = pack_str(cursor, sl->network_type);
	}
	return nic;
}

fi_info *info_alloc() noexcept
{
	fi_info *info = zalloc<fi_info>();
	if (!info)
		return nullptr;
	info->tx_attr = zalloc<fi_tx_attr>();
	info->rx_attr = zalloc<fi_rx_attr>();
	info->ep_attr = zalloc<fi_ep_attr>();
	info->domain_attr = zalloc<fi_domain_attr>();
	info->fabric_attr = zalloc<fi_fabric_attr>();
	if (!info->tx_attr || !info->rx_attr || !info->ep_attr || !info->domain_attr ||
	    !info->fabric_attr) {
		info_free(info);
		return nullptr;
	}
	return info;
}

void info_free(fi_info *info, const info_layout &l) noexcept
{
	const bool has_nic = WU_LAYOUT_HAS(l.info, fi_info, nic);
	const bool has_ep_key = WU_LAYOUT_HAS(l.ep, fi_ep_attr, auth_key);
	const bool has_dom_key = WU_LAYOUT_HAS(l.domain, fi_domain_attr, auth_key);
	while (info) {
		fi_info *next = info->next;
		free(info->src_addr);
		free(info->dest_addr);
		free(info->tx_attr);
		free(info->rx_attr);
		if (info->ep_attr) {
			if (has_ep_key)
				free(info->ep_attr->auth_key);
			free(info->ep_attr);
		}
		if (info->domain_attr) {
			free(info->domain_attr->name);
			if (has_dom_key)
				free(info->domain_attr->auth_key);
			free(info->domain_attr);
		}
		if (info->fabric_attr) {
			free(info->fabric_attr->name);
			free(info->fabric_attr->prov_name);
			free(info->fabric_attr);
		}
		if (has_nic && info->nic)
			fi_close(&info->nic->fid);
		free(info);
		info = next;
	}
}

void info_free(fi_info *info) noexcept
{
	info_free(info, layout_current);
}

void info_trim(fi_info *list, const info_layout &l) noexcept
{
	for (fi_info *i = list; i; i = i->next) {
		if (!WU_LAYOUT_HAS(l.info, fi_info, nic) && i->nic) {
			fi_close(&i->nic->fid);
			i->nic = nullptr;
		}
		if (i->ep_attr && !WU_LAYOUT_HAS(l.ep, fi_ep_attr, auth_key)) {
			free(i->ep_attr->auth_key);
			i->ep_attr->auth_key = nullptr;
			i->ep_attr->auth_key_size = 0;
		}
		if (i->domain_attr && !WU_LAYOUT_HAS(l.domain, fi_domain_attr, auth_key)) {
			free(i->domain_attr->auth_key);
			i->domain_attr->auth_key = nullptr;
			i->domain_attr->auth_key_size = 0;
		}
	}
}

fi_info *info_dup(const fi_info *src, const info_layout &l) noexcept
{
	fi_info *dst = widened_copy(src, l.info);
	if (!dst)
		return nullptr;
	dst->next = nullptr;
	dst->src_addr = dst->dest_addr = nullptr;
	dst->tx_attr = nullptr;
	dst->rx_attr = nullptr;
	dst->ep_attr = nullptr;
	dst->domain_attr = nullptr;
	dst->fabric_attr = nullptr;
	dst->nic = nullptr;

	bool ok = dup_mem(&dst->src_addr, src->src_addr, src->src_addrlen) &&
		  dup_mem(&dst->dest_addr, src->dest_addr, src->dest_addrlen);
	if (ok && src->tx_attr)
		ok = (dst->tx_attr = widened_copy(src->tx_attr, l.tx)) != nullptr;
	if (ok && src->rx_attr)
		ok = (dst->rx_attr = widened_copy(src->rx_attr, l.rx)) != nullptr;
	if (ok && src->ep_attr) {
		ok = (dst->ep_attr = widened_copy(src->ep_attr, l.ep)) != nullptr;
		if (ok && dst->ep_attr->auth_key) {
			dst->ep_attr->auth_key = nullptr;
			ok = dup_mem(reinterpret_cast<void **>(&dst->ep_attr->auth_key),
				     src->ep_attr->auth_key, src->ep_attr->auth_key_size);
		}
	}
	if (ok && src->domain_attr) {
		ok = (dst->domain_attr = widened_copy(src->domain_attr, l.domain)) != nullptr;
		if (ok) {
			fi_domain_attr *d = dst->domain_attr;
			d->name = nullptr;
			ok = dup_str(&d->name, src->domain_attr->name);
			if (ok && d->auth_key) {
				d->auth_key = nullptr;
				ok = dup_mem(reinterpret_cast<void **>(&d->auth_key), src->domain_attr->auth_key,
					     src->domain_attr->auth_key_size);
			}
		}
	}
	if (ok && src->fabric_attr) {
		ok = (dst->fabric_attr = widened_copy(src->fabric_attr, l.fabric)) != nullptr;
		if (ok) {
			dst->fabric_attr->name = nullptr;
			dst->fabric_attr->prov_name = nullptr;
			ok = dup_str(&dst->fabric_attr->name, src->fabric_attr->name) &&
			     dup_str(&dst->fabric_attr->prov_name, src->fabric_attr->prov_name);
		}
	}
	if (ok && WU_LAYOUT_HAS(l.info, fi_info, nic) && src->nic)
		ok = (dst->nic = nic_dup(src->nic)) != nullptr;
	if (!ok) {
		info_free(dst);
		return nullptr;
	}
	return dst;
}

fi_info *info_dup_list(const fi_info *src) noexcept
{
	fi_info *head = nullptr, **tail = &head;
	for (; src; src = src->next) {
		fi_info *d = info_dup(src);
		if (!d) {
			info_free(head);
			return nullptr;
		}
		*tail = d;
		tail = &d->next;
	}
	return head;
}

} // namespace wu
