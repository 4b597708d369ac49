/* SPDX-License-Identifier: BSD-3-Clause */
/* The provider registry: built-in providers in preference order, then
 * external lib<name>-fi.so providers from FI_PROVIDER_PATH (issue 3). */
#ifndef WU_PROV_REGISTRY_H
#define WU_PROV_REGISTRY_H

#include <vector>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

namespace wu::prov {

/* Snapshot of the registered providers, best first. */
std::vector<const fi_provider *> providers();
/* The provider with this exact name, or nullptr. */
const fi_provider *find(const char *name);

/* Test seam: add a provider (fakes) at the front or back; remove it again. */
void add_for_test(const fi_provider *prov, bool front = false);
void remove_for_test(const fi_provider *prov);
/* Test seam: scan FI_PROVIDER_PATH again (normally read once). */
void reload_external_for_test();

} // namespace wu::prov

#endif
