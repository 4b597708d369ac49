/* SPDX-License-Identifier: BSD-3-Clause */
/* The launcher hooks and the local-format registry (launcher.h). */
#include "core/launcher.h"

#include <atomic>
#include <iterator>

#include <rdma/fi_errno.h>

#include "core/log.h"

namespace wu::launcher {

namespace {

std::atomic<const hooks *> g_hooks{nullptr};
std::atomic<const local_format *> g_formats[4];

} // namespace

void set_hooks(const hooks *h) noexcept
{
	g_hooks.store(h, std::memory_order_release);
}

int job_secret(unsigned char *out, size_t len) noexcept
{
	const hooks *h = g_hooks.load(std::memory_order_acquire);
	return h && h->job_secret ? h->job_secret(out, len) : -FI_ENODATA;
}

void endpoint_named(const void *name, size_t len, uint32_t addr_format) noexcept
{
	const hooks *h = g_hooks.load(std::memory_order_acquire);
	if (h && h->endpoint_named)
		h->endpoint_named(name, len, addr_format);
}

int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context) noexcept
{
	const hooks *h = g_hooks.load(std::memory_order_acquire);
	if (h && h->domain_ops_open)
		return h->domain_ops_open(fid, name, flags, ops, context);
	WU_INFO(&core_prov, FI_LOG_DOMAIN,
		"fi_open_ops: a domain has no interface \"%s\" (this library was built without PMIx)\n",
		name ? name : "(null)");
	return -FI_ENOSYS;
}

int symmetric_port(uint16_t *port) noexcept
{
	const hooks *h = g_hooks.load(std::memory_order_acquire);
	return h && h->symmetric_port ? h->symmetric_port(port) : -FI_ENODATA;
}

int register_local_format(const local_format *f) noexcept
{
	if (!f || !f->local_addr || !f->computable) {
		WU_WARN(&core_prov, FI_LOG_CORE, "register_local_format: %s\n",
			!f ? "format is NULL" : "local_addr and computable are required");
		return -FI_EINVAL;
	}
	for (auto &slot : g_formats) {
		const local_format *cur = slot.load();
		if (cur && cur->addr_format == f->addr_format) {
			slot.store(f);
			return 0;
		}
	}
	for (auto &slot : g_formats) {
		const local_format *none = nullptr;
		if (slot.compare_exchange_strong(none, f))
			return 0;
	}
	WU_WARN(&core_prov, FI_LOG_CORE, "register_local_format: more than %zu formats\n",
		std::size(g_formats));
	return -FI_ENOSPC;
}

const local_format *local_format_for(uint32_t addr_format) noexcept
{
	for (auto &slot : g_formats) {
		const local_format *f = slot.load();
		if (f && f->addr_format == addr_format)
			return f;
	}
	return nullptr;
}

} // namespace wu::launcher
