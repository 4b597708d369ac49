/* SPDX-License-Identifier: BSD-3-Clause */
/* The PMIx wire-up (issue 7): fills an AV with every rank of a PMIx job so
 * that fi_addr == rank.  Public face: include/rdma/fi_ext_wireup.h, reached
 * through fi_open_ops(&domain->fid, "wireup_pmix") (domain_ops_open below)
 * and through fi_av_open with a name starting "pmix:" (named_av_open,
 * registered with the AV engine).
 *
 * One session per process: the PMIx client (real or the fake of a test),
 * the own job's data, the mode in use and the counters reported in
 * fi_wireup_info.  Modes and records: see the public header and wire.h. */
#ifndef WU_PMIX_GLUE_SESSION_H
#define WU_PMIX_GLUE_SESSION_H

#include <cstddef>
#include <cstdint>
#include <memory>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_wireup.h>
#include <rdma/providers/fi_prov.h>

#include "pmix_glue/client.h"

namespace wu::av {
struct av_format;
}
namespace wu::prov {
struct domain;
}

namespace wu::pmix {

/* Owner of the wire-up's log lines and of the FI_PMIX_* knobs. */
extern fi_provider pmix_prov;

/* fi_ops::ops_open for a domain: "wireup_pmix" gives fi_ops_wireup_pmix. */
int domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context) noexcept;

/* The operations, by address format instead of domain (tests, bench). */
int publish(uint32_t addr_format, const void *name, size_t len, uint64_t flags) noexcept;
int av_fill(fid_av *av, uint32_t addr_format, const char *nspace, uint64_t flags,
	    fi_wireup_info *info) noexcept;
int job_info(const char *nspace, fi_wireup_info *info) noexcept;
int is_local(uint32_t rank) noexcept;
int close() noexcept;

/* Providers reach the next two through core/launcher.h (register_hooks).
 * An endpoint of this process got its name (fi_enable).
 * Publishes it for direct resolution when FI_PMIX_AUTO_PUBLISH is on and
 * the process runs under a PMIx launcher; silent otherwise. */
void endpoint_named(const void *name, size_t len, uint32_t addr_format) noexcept;

/* For providers: the port the first endpoint of a PMIx client listens on
 * in the symmetric layout, FI_PMIX_PORT_BASE + its slot on its node, when
 * FI_PMIX_MODE is symmetric or auto and the job has a layout; once per
 * process (later endpoints take any port).  0 and *port, or -FI_ENODATA. */
int symmetric_port(uint16_t *port) noexcept;

/* The tcp provider's job key: the job's shared secret (len random bytes), one
 * value per namespace: rank 0 generates and puts it, the others get it
 * from rank 0.  -FI_ENODATA when the process is not a PMIx client. */
int job_secret(unsigned char *out, size_t len) noexcept;

/* Registers named_av_open for "pmix:" with the AV engine and the hooks of
 * core/launcher.h (job_secret, endpoint_named, domain_ops_open), so every
 * provider reaches them without including this part.  src/api calls it
 * before the first fabric opens; calling it again changes nothing. */
void register_hooks() noexcept;
/* fi_av_open of "pmix:" / "pmix:<nspace>" (AV engine hook). */
int named_av_open(prov::domain *dom, const av::av_format *fmt, fi_av_attr *attr, fid_av **av,
		  void *context) noexcept;

/* Tests and the benchmark: the next session uses c (nullptr: the real PMIx
 * client); ends the current session without finalizing its client. */
void use_client_for_tests(std::unique_ptr<client> c);

} // namespace wu::pmix

#endif
