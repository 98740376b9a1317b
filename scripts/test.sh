#!/usr/bin/env bash
#===- scripts/test.sh - Build Kiln and run the whole test suite ------------===#
# Does its own set-up (packages, venv, configure, build). Runs every ctest
# test: the lit suite (which includes the import and conformance runners),
# the C++ unit tests, the kernel tests, the e2e tests and the bounded fuzz
# runs. Extra arguments go to ctest (e.g. -L lit, -R conformance).
#
#   scripts/test.sh --sanitize [ctest args]
#
# builds with AddressSanitizer + UBSan (C++ code; -DKILN_SANITIZE=ON) in
# build-sanitize/ ($KILN_SANITIZE_BUILD_DIR) and runs the lit, unit, kernel
# and e2e tests there, and the Python package's tests (not the conformance
# runs over the 1072 backend tests, nor the fuzz label: scripts/fuzz.sh runs
# ASan itself). Any sanitizer
# report fails the test that triggered it (recovery off, leaks checked).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ "${1:-}" = "--sanitize" ]; then
  shift
  export KILN_BUILD_DIR="${KILN_SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
  # clang-22 and LLVM 22's sanitizer runtime (CMakeLists.txt says why).
  export KILN_CMAKE_ARGS="-DKILN_SANITIZE=ON -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22"
  # UBSan reports are fatal (-fno-sanitize-recover); ASan's and LSan's end
  # the process with an error exit too. libomp's and the loader's one-time
  # allocations are not Kiln's leaks.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_odr_violation=0:suppressions=$ROOT/test/sanitizer-suppressions.txt"
  export LSAN_OPTIONS="suppressions=$ROOT/test/lsan-suppressions.txt:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  "$ROOT/scripts/build.sh"
  cd "$KILN_BUILD_DIR"
  ctest --output-on-failure -j"$(nproc)" -L "lit|unit|kernels|e2e|python-api" "$@"
  exit
fi

BUILD="${KILN_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/build.sh"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
