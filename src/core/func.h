/* SPDX-License-Identifier: BSD-3-Clause */
/* The function name log lines and exception reports carry.  Inside a
 * WU_GUARD body it is the guarded entry point, which the lambda captures
 * under this name: a lambda's own __func__ is only "operator()". */
#ifndef WU_CORE_FUNC_H
#define WU_CORE_FUNC_H

inline constexpr const char *wu_log_fn_ = nullptr;
#define WU_FUNC_ (wu_log_fn_ ? wu_log_fn_ : __func__)

#endif
