#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Generates configure and Makefile.in; works standalone or from a parent's autogen.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf -fi
