/* SPDX-License-Identifier: BSD-3-Clause */
/* The user's secret: 32 random bytes in a 0600 file of the user's
 * ($XDG_CONFIG_HOME/wireup/tcp-job-key, else ~/.config/wireup/tcp-job-key,
 * or FI_TCP_JOB_KEY_FILE), created on first use.  The tcp provider proves
 * it when no job key is given; shm keys its rank names with it, so that
 * every process of the user on a node computes them and no other user can.
 * In core because both providers need it and neither may include the
 * other. */
#ifndef WU_CORE_USER_KEY_H
#define WU_CORE_USER_KEY_H

#include <cstddef>
#include <string>

struct fi_provider;

namespace wu::user_key {

inline constexpr size_t key_len = 32;

struct key {
	unsigned char b[key_len] = {};
	bool set = false;
};

/* Fresh random bytes (getrandom); false, logged as prov, if it
 * failed. */
bool random_bytes(unsigned char *out, size_t n, const fi_provider *prov);
/* The key file in use: FI_TCP_JOB_KEY_FILE when set, else the default; ""
 * if no home directory is known. */
std::string file_path();
/* Reads the key file at path, creating it (mode 0600, O_EXCL, atomically
 * complete) when it does not exist.  Refuses a file not owned by this user,
 * readable or writable by others, or malformed.  0 or -FI_E*, logged as
 * prov. */
int read_or_create(const std::string &path, key &out, const fi_provider *prov);
/* This process's user key from file_path(), read once; unset (after a log
 * line) when there is no usable file. */
const key &of_process(const fi_provider *prov);

} // namespace wu::user_key

#endif
