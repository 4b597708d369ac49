/* SPDX-License-Identifier: BSD-3-Clause */
/* Leak checks a test can assert on.  Under AddressSanitizer (LeakSanitizer)
 * leaks_now() runs a full leak check at that point and says whether it found
 * anything (reported on stderr); elsewhere there is no checker and it is
 * false, so a test must also assert what it can observe without one. */
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define WU_TEST_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WU_TEST_HAVE_LSAN 1
#endif
#endif

#ifdef WU_TEST_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace wu::test {

inline bool leaks_now()
{
#ifdef WU_TEST_HAVE_LSAN
	return __lsan_do_recoverable_leak_check() != 0;
#else
	return false;
#endif
}

} // namespace wu::test
