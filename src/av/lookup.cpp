/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_av_remove, fi_av_lookup, fi_av_straddr, auth keys and user ids. */
#include "av/av_impl.h"

#include <algorithm>

#include "core/log.h"

namespace wu::av::detail {

/* ---- remove ---- */

int remove_auth_keys(av_obj *a, const fi_addr_t *fi_addr, size_t count)
{
	std::lock_guard<std::mutex> g(*a->local);
	for (size_t i = 0; i < count; i++) {
		uint64_t idx = fi_addr[i] & ~auth_handle_bit;
		if (!(fi_addr[i] & auth_handle_bit) || idx >= a->keys->size() || !(*a->keys)[idx].live)
			return -FI_EINVAL;
		if ((*a->keys)[idx].in_use) {
			WU_WARN(a->prov, FI_LOG_AV,
				"fi_av_remove: auth key handle %zu is used by %d enabled endpoint(s)\n",
				size_t(idx), (*a->keys)[idx].in_use);
			return -FI_EBUSY;
		}
	}
	for (size_t i = 0; i < count; i++) {
		auth_key_slot &k = (*a->keys)[fi_addr[i] & ~auth_handle_bit];
		k.live = false;
		k.key.clear();
	}
	return 0;
}

int av_remove_entries(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags,
		      std::vector<fi_addr_t> *gone);

/* Removes, then tells the endpoints that watch (outside the arena lock). */
int av_remove_body(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	if (flags || a->nwatch.load(std::memory_order_acquire) == 0)
		return av_remove_entries(a, fi_addr, count, flags, nullptr);
	std::vector<fi_addr_t> gone;
	int ret = av_remove_entries(a, fi_addr, count, flags, &gone);
	std::lock_guard<std::mutex> g(a->watch_mtx);
	for (fi_addr_t f : gone)
		for (auto &w : a->watchers)
			w.first(w.second, f);
	return ret;
}

int av_remove_entries(av_obj *a, fi_addr_t *fi_addr, size_t count, uint64_t flags,
		      std::vector<fi_addr_t> *gone)
{
	if (flags & ~uint64_t(FI_AUTH_KEY)) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_remove: flags 0x%llx are not supported\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (count && !fi_addr)
		return -FI_EINVAL;
	if (flags & FI_AUTH_KEY)
		return remove_auth_keys(a, fi_addr, count);
	if (a->reg->read_only)
		return -FI_EACCES;
	arena &r = *a->reg;
	int ret = 0;
	/* No writer here: a remove leaves the reverse index alone (stale slots
	 * are checked on use), so it needs neither a->local nor ins_gen. */
	wlock lk(r);
	const uint64_t end = r.hdr->end;
	const uint32_t nranges = r.hdr->nranges;
	for (size_t i = 0; i < count; i++) {
		if (fi_addr[i] & auth_handle_bit) {
			WU_WARN(a->prov, FI_LOG_AV, "fi_av_remove: 0x%llx is an auth key handle; pass FI_AUTH_KEY\n",
				(unsigned long long)fi_addr[i]);
			ret = -FI_EINVAL;
			continue;
		}
		uint64_t f = index_of(a, fi_addr[i]);
		if (f >= end) {
			ret = -FI_EINVAL;
			continue;
		}
		if (const sym_range *s = nranges ? range_of(r, f, nranges) : nullptr) {
			(void)s;
			if (sym_gone(r, f)) {
				ret = -FI_EINVAL;
				continue;
			}
			__atomic_or_fetch(&r.symgone[f / 64], uint64_t{1} << (f % 64), __ATOMIC_RELEASE);
			__atomic_store_n(&r.hdr->sym_removed, 1, __ATOMIC_RELEASE);
			if (a->uids)
				a->uids[f] = 0;
			if (gone)
				gone->push_back(fi_addr[i]);
			continue;
		}
		if (!r.rec[f]) {
			ret = -FI_EINVAL;
			continue;
		}
		st(&r.rec[f], 0);
		set_free(r, f);
		r.hdr->nfree++;
		if (a->uids)
			a->uids[f] = 0;
		if (a->auth_of)
			a->auth_of[f] = 0;
		if (gone)
			gone->push_back(fi_addr[i]);
	}
	__atomic_add_fetch(&r.hdr->gen, 1, __ATOMIC_RELEASE);
	return ret;
}

/* ---- lookup / straddr ---- */

int av_lookup_body(av_obj *a, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	/* Fast path: a packed IPv4 record in an AV without generators. */
	const arena &r = *a->reg;
	uint64_t f = index_of(a, fi_addr);
	if (a->fmt->addr_format != FI_ADDR_STR && f < ld(&r.hdr->end) && !ld32(&r.hdr->nranges)) {
		uint64_t v = ld(&r.rec[f]);
		if (rec_kind(v) == rec_packed) {
			sockaddr_in sin;
			size_t len = a->fmt->unpack(v & payload_mask, &sin);
			memcpy(addr, &sin, std::min(*addrlen, len));
			*addrlen = len;
			return 0;
		}
	}
	key k;
	if (!lookup_key(a, fi_addr, k))
		return -FI_EINVAL;
	unsigned char bin[max_blob];
	size_t len = key_binary(a, k, bin);
	if (a->fmt->addr_format == FI_ADDR_STR) {
		char text[256];
		/* A provider's own strings are stored as their text. */
		ssize_t n;
		if (a->fmt->print_format == FI_ADDR_STR) {
			n = ssize_t(strnlen(reinterpret_cast<const char *>(bin), len ? len - 1 : 0));
			memcpy(text, bin, size_t(n));
			text[n++] = '\0';
		} else {
			n = addr::format(a->fmt->print_format, bin, len, text, sizeof text);
		}
		if (n < 0)
			return int(n);
		size_t need = size_t(n);
		if (*addrlen) {
			size_t c = std::min(*addrlen, need);
			memcpy(addr, text, c);
			if (c < need)
				static_cast<char *>(addr)[c - 1] = '\0';
		}
		*addrlen = need;
		return 0;
	}
	memcpy(addr, bin, std::min(*addrlen, len));
	*addrlen = len;
	return 0;
}

const char *av_straddr_body(av_obj *a, const void *addr, char *buf, size_t *len)
{
	if (!len || !addr)
		return nullptr;
	if (a->fmt->addr_format == FI_ADDR_STR) {
		auto *s = static_cast<const char *>(addr);
		size_t need = strnlen(s, addr::max_str_len) + 1;
		if (*len && buf) {
			size_t c = std::min(*len, need);
			memcpy(buf, s, c - 1);
			buf[c - 1] = '\0';
		}
		*len = need;
		return buf;
	}
	ssize_t alen = a->fmt->validate(addr, a->fmt->max_addrlen);
	if (alen < 0)
		return nullptr;
	ssize_t n = a->fmt->print ? a->fmt->print(addr, size_t(alen), buf, buf ? *len : 0)
				  : addr::format(a->fmt->print_format, addr, size_t(alen), buf, buf ? *len : 0);
	if (n < 0)
		return nullptr;
	*len = size_t(n);
	return buf;
}

/* ---- auth keys and user ids ---- */

int av_insert_auth_key_body(av_obj *a, const void *key_bytes, size_t size, fi_addr_t *fi_addr,
			    uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (!a->auth_av) {
		WU_WARN(a->prov, FI_LOG_AV,
			"fi_av_insert_auth_key: open the domain with domain_attr->auth_key_size = FI_AV_AUTH_KEY\n");
		return -FI_EINVAL;
	}
	if (!key_bytes || !size || !fi_addr || size > 4096)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(*a->local);
	std::vector<auth_key_slot> &keys = *a->keys;
	size_t idx = 0, live = 0;
	while (idx < keys.size() && keys[idx].live)
		idx++;
	for (auto &k : keys)
		live += k.live;
	if (live >= a->max_auth_keys) {
		WU_WARN(a->prov, FI_LOG_AV, "fi_av_insert_auth_key: max_ep_auth_key (%zu) keys already inserted\n",
			a->max_auth_keys);
		return -FI_ENOSPC;
	}
	if (idx == keys.size())
		keys.emplace_back();
	keys[idx].key.assign(static_cast<const char *>(key_bytes), size);
	keys[idx].live = true;
	keys[idx].in_use = 0;
	*fi_addr = auth_handle_bit | idx;
	return 0;
}

int av_lookup_auth_key_body(av_obj *a, fi_addr_t fi_addr, void *out, size_t *size)
{
	if (!size || (*size && !out))
		return -FI_EINVAL;
	if (!a->auth_av)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> g(*a->local);
	uint64_t idx;
	if (fi_addr & auth_handle_bit) {
		idx = fi_addr & ~auth_handle_bit;
	} else {
		uint64_t f = index_of(a, fi_addr);
		if (f >= ld(&a->reg->hdr->end) || !a->auth_of || !a->auth_of[f])
			return -FI_EINVAL;
		idx = a->auth_of[f] - 1;
	}
	if (idx >= a->keys->size() || !(*a->keys)[idx].live)
		return -FI_EINVAL;
	const std::string &k = (*a->keys)[idx].key;
	memcpy(out, k.data(), std::min(*size, k.size()));
	*size = k.size();
	return 0;
}

bool entry_exists(av_obj *a, uint64_t f)
{
	arena &r = *a->reg;
	if (f >= ld(&r.hdr->end))
		return false;
	uint32_t n = ld32(&r.hdr->nranges);
	if (range_of(r, f, n))
		return !sym_gone(r, f);
	return ld(&r.rec[f]) != 0;
}

int av_set_user_id_body(av_obj *a, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	uint64_t f = index_of(a, fi_addr);
	if (!entry_exists(a, f))
		return -FI_EINVAL;
	set_uid(a, f, user_id);
	/* What endpoints derived from the entry (change_count) is stale. */
	__atomic_add_fetch(&a->reg->hdr->gen, 1, __ATOMIC_RELEASE);
	return 0;
}

} // namespace wu::av::detail
