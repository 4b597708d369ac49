/* SPDX-License-Identifier: BSD-3-Clause */
/* Wireup provider interface: logging.
 * The macros test fi_log_enabled() first so disabled levels cost one call
 * and no formatting; errno is preserved across the log call so logging in
 * an error path never clobbers the error being reported. */
#ifndef FI_LOG_H
#define FI_LOG_H

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fi_log_subsys {
	FI_LOG_CORE,
	FI_LOG_FABRIC,
	FI_LOG_DOMAIN,
	FI_LOG_EP_CTRL,
	FI_LOG_EP_DATA,
	FI_LOG_AV,
	FI_LOG_CQ,
	FI_LOG_EQ,
	FI_LOG_MR,
	FI_LOG_CNTR,
	FI_LOG_SUBSYS_MAX
};

enum fi_log_level {
	FI_LOG_WARN,
	FI_LOG_TRACE,
	FI_LOG_INFO,
	FI_LOG_DEBUG,
	FI_LOG_MAX
};

int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys);
/* like fi_log_enabled, but also rate-limits through *showtime */
int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime);
void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...) FI_FORMAT_PRINTF(6, 7);

/* shared body: emit one record with errno kept intact */
#define FI_LOG_EMIT_(prov, level, subsys, ...)				\
	do {								\
		int fi_log_saved_errno_ = errno;			\
		fi_log(prov, level, subsys, __func__, __LINE__,		\
		       __VA_ARGS__);					\
		errno = fi_log_saved_errno_;				\
	} while (0)

#define FI_LOG(prov, level, subsystem, ...)				\
	do {								\
		if (fi_log_enabled(prov, level, subsystem))		\
			FI_LOG_EMIT_(prov, level, subsystem,		\
				     __VA_ARGS__);			\
	} while (0)

/* at most one record per rate-limit period, per call site */
#define FI_LOG_SPARSE(prov, level, subsystem, ...)			\
	do {								\
		static uint64_t fi_log_next_show_;			\
		if (fi_log_ready(prov, level, subsystem,		\
				 &fi_log_next_show_))			\
			FI_LOG_EMIT_(prov, level, subsystem,		\
				     __VA_ARGS__);			\
	} while (0)

#define FI_WARN(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_WARN_SPARSE(prov, subsystem, ...)				\
	FI_LOG_SPARSE(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_TRACE(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#define FI_INFO(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_INFO, subsystem, __VA_ARGS__)

/* debug records exist only in ENABLE_DEBUG builds */
#if defined(ENABLE_DEBUG) && ENABLE_DEBUG
#define FI_DBG(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_DEBUG, subsystem, __VA_ARGS__)
#define FI_DBG_TRACE(prov, subsystem, ...)				\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#else
#define FI_DBG(prov, subsystem, ...)		do { } while (0)
#define FI_DBG_TRACE(prov, subsystem, ...)	do { } while (0)
#endif

/* first warning from this call site only */
#define FI_WARN_ONCE(prov, subsystem, ...)				\
	do {								\
		static int fi_log_warned_;				\
		if (!fi_log_warned_ &&					\
		    fi_log_enabled(prov, FI_LOG_WARN, subsystem)) {	\
			fi_log_warned_ = 1;				\
			FI_LOG_EMIT_(prov, FI_LOG_WARN, subsystem,	\
				     __VA_ARGS__);			\
		}							\
	} while (0)

#ifdef __cplusplus
}
#endif

#endif /* FI_LOG_H */
