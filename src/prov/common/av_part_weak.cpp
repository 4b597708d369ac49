/* Weak stand-ins for av::addr_of_part / av::reverse_part (src/av, written
 * on the wxaddr branch) so that the library links while ep_base's
 * peer_addr / peer_lookup call them and that branch is not merged: the
 * AV engine's definitions replace these at link time.  Until then a
 * composite address has no parts (every sub-endpoint send fails with
 * "no address" and sources are FI_ADDR_NOTAVAIL, logged).  Delete this
 * file once src/av defines both. */
#include "config.h"

#include "av/av.h"
#include <atomic>

#include "core/log.h"

namespace wu::av {

__attribute__((weak)) size_t addr_of_part(fid_av *, fi_addr_t, int which, void *, size_t) noexcept
{
	WU_WARN_ONCE(&core_prov, FI_LOG_AV, "composite AV addresses (part %d) are not supported by this build\n", which);
	return 0;
}

__attribute__((weak)) fi_addr_t reverse_part(fid_av *, int which, const void *, size_t) noexcept
{
	WU_WARN_ONCE(&core_prov, FI_LOG_AV, "composite AV addresses (part %d) are not supported by this build\n", which);
	return FI_ADDR_NOTAVAIL;
}

} // namespace wu::av
