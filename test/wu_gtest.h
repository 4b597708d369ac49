/* SPDX-License-Identifier: BSD-3-Clause */
/* Put first into every GoogleTest object (GTEST_CPPFLAGS_ALL's -include)
 * and precompiled once per build into test/wu_gtest.h.gch: parsing
 * GoogleTest and GoogleMock was most of a test object's compile time. */
#ifndef WU_TEST_GTEST_H
#define WU_TEST_GTEST_H
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#endif
