#!/usr/bin/env bash
#===- scripts/build.sh - Set up (when needed), configure and build Kiln ----===#
# Usage: scripts/build.sh [ninja targets...]     (build folder: $KILN_BUILD_DIR or build/)
# $KILN_CMAKE_ARGS: extra arguments of the first configure (e.g. -DKILN_SANITIZE=ON).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DKILN_PYTHON="$ROOT/.venv/bin/python" ${KILN_CMAKE_ARGS:-}
fi
cmake --build "$BUILD" -- "$@"
