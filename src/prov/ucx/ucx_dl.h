/* SPDX-License-Identifier: BSD-3-Clause */
/* UCX, loaded when a ucx domain is first opened (dlopen of libucp), not
 * linked: a process that never opens one (an MPI job on the wireup
 * provider) maps no UCX library and runs none of its constructors, which
 * cost every rank about 1.7 MB of RSS and tens of ms at start.
 *
 * Included after UCX's headers; the provider's files then call UCX's
 * functions by their own names, which this header turns into calls through
 * the loaded table. */
#ifndef WU_PROV_UCX_UCX_DL_H
#define WU_PROV_UCX_UCX_DL_H

#include <ucp/api/ucp.h>
#include <ucs/config/global_opts.h>

namespace wu::ucx {

#define WU_UCX_FUNCS(X)                                                                                       \
	X(ucp_cleanup) X(ucp_config_modify) X(ucp_config_read) X(ucp_config_release) X(ucp_context_query)     \
	X(ucp_dt_create_generic) X(ucp_ep_close_nbx) X(ucp_ep_create) X(ucp_ep_flush_nbx)                     \
	X(ucp_ep_rkey_unpack) X(ucp_get_nbx) X(ucp_init_version) X(ucp_mem_map) X(ucp_mem_unmap)              \
	X(ucp_put_nbx) X(ucp_request_cancel) X(ucp_request_check_status) X(ucp_request_free)                  \
	X(ucp_rkey_buffer_release) X(ucp_rkey_destroy) X(ucp_rkey_pack) X(ucp_tag_msg_recv_nbx)               \
	X(ucp_tag_probe_nb) X(ucp_tag_recv_nbx) X(ucp_tag_send_nbx) X(ucp_tag_send_sync_nbx)                  \
	X(ucp_worker_arm) X(ucp_worker_create) X(ucp_worker_destroy) X(ucp_worker_get_address)                \
	X(ucp_worker_get_efd) X(ucp_worker_progress) X(ucp_worker_release_address) X(ucs_status_string)

struct ucx_api {
#define WU_UCX_MEMBER(f) decltype(&::f) f = nullptr;
	WU_UCX_FUNCS(WU_UCX_MEMBER)
#undef WU_UCX_MEMBER
	ucs_global_opts_t *global_opts = nullptr;
	bool ok = false;
};

/* The table; loaded by load(), never unloaded (UCX keeps atexit handlers). */
const ucx_api &api() noexcept;
/* Loads UCX once (thread safe); false, logged with dlerror's reason, if
 * libucp or a symbol is missing.  Every path into UCX starts with it. */
bool load() noexcept;

} // namespace wu::ucx

/* UCX's names, from here on, call through the table (not in ucx_dl.cpp,
 * which fills it). */
#ifndef WU_UCX_DL_IMPL
#define ucp_cleanup wu::ucx::api().ucp_cleanup
#define ucp_config_modify wu::ucx::api().ucp_config_modify
#define ucp_config_read wu::ucx::api().ucp_config_read
#define ucp_config_release wu::ucx::api().ucp_config_release
#define ucp_context_query wu::ucx::api().ucp_context_query
#define ucp_dt_create_generic wu::ucx::api().ucp_dt_create_generic
#define ucp_ep_close_nbx wu::ucx::api().ucp_ep_close_nbx
#define ucp_ep_create wu::ucx::api().ucp_ep_create
#define ucp_ep_flush_nbx wu::ucx::api().ucp_ep_flush_nbx
#define ucp_ep_rkey_unpack wu::ucx::api().ucp_ep_rkey_unpack
#define ucp_get_nbx wu::ucx::api().ucp_get_nbx
#define ucp_init(params, config, ctx) wu::ucx::api().ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, params, config, ctx)
#define ucp_mem_map wu::ucx::api().ucp_mem_map
#define ucp_mem_unmap wu::ucx::api().ucp_mem_unmap
#define ucp_put_nbx wu::ucx::api().ucp_put_nbx
#define ucp_request_cancel wu::ucx::api().ucp_request_cancel
#define ucp_request_check_status wu::ucx::api().ucp_request_check_status
#define ucp_request_free wu::ucx::api().ucp_request_free
#define ucp_rkey_buffer_release wu::ucx::api().ucp_rkey_buffer_release
#define ucp_rkey_destroy wu::ucx::api().ucp_rkey_destroy
#define ucp_rkey_pack wu::ucx::api().ucp_rkey_pack
#define ucp_tag_msg_recv_nbx wu::ucx::api().ucp_tag_msg_recv_nbx
#define ucp_tag_probe_nb wu::ucx::api().ucp_tag_probe_nb
#define ucp_tag_recv_nbx wu::ucx::api().ucp_tag_recv_nbx
#define ucp_tag_send_nbx wu::ucx::api().ucp_tag_send_nbx
#define ucp_tag_send_sync_nbx wu::ucx::api().ucp_tag_send_sync_nbx
#define ucp_worker_arm wu::ucx::api().ucp_worker_arm
#define ucp_worker_create wu::ucx::api().ucp_worker_create
#define ucp_worker_destroy wu::ucx::api().ucp_worker_destroy
#define ucp_worker_get_address wu::ucx::api().ucp_worker_get_address
#define ucp_worker_get_efd wu::ucx::api().ucp_worker_get_efd
#define ucp_worker_progress wu::ucx::api().ucp_worker_progress
#define ucp_worker_release_address wu::ucx::api().ucp_worker_release_address
#define ucs_status_string wu::ucx::api().ucs_status_string
#define ucs_global_opts (*wu::ucx::api().global_opts)
#endif

#endif
