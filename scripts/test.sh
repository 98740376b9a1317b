#!/usr/bin/env bash
#===- scripts/test.sh - Build Kiln and run the whole test suite ------------===#
# Does its own set-up (packages, venv, configure, build). Runs every ctest
# test: the lit suite (which includes the import and conformance runners) and
# the C++ unit tests. Extra arguments go to ctest (e.g. -L lit, -R conformance).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/build.sh"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
