#!/usr/bin/env bash
#===- scripts/gpu-check.sh - Every GPU test and benchmark, in one script ---===#
# Two halves (docs/cuda-backend.md, "GPU check"; ../shared/GPU.md):
#
#   scripts/gpu-check.sh prepare [--chip sm_90] [--quick] [--bundle DIR]
#       on the build machine: builds kiln-compile/kiln-run, compiles the
#       check models for CUDA (codegen and library kernels), computes the CPU
#       backend's reference outputs and writes a self-contained bundle
#       (default build/gpu-bundle: kiln-run, its libraries, artifacts, data,
#       manifest, the GPU half's scripts).
#   scripts/gpu-check.sh run [--bundle DIR] [--out DIR] [--require-gpu]
#       on the GPU host (no MLIR, no venv: python3's standard library, and
#       PyTorch when installed): runs every check and writes JSON results and
#       summary.md into one folder (default build/gpu-check). Without a
#       device every check is SKIPPED (exit 0; --require-gpu: exit 2).
#   scripts/gpu-check.sh [all] ...
#       both, one after the other. --fake-driver runs the artifacts on the
#       CUDA runtime's stand-in driver (build/lib; kernels do nothing, so
#       outputs are not compared; each artifact must load and run). The
#       ctest gpu-check-cpu-half runs `all --quick --fake-driver`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

mode=all
case "${1:-}" in prepare|run|all) mode="$1"; shift ;; esac
BUNDLE="$BUILD/gpu-bundle"
OUT="$BUILD/gpu-check"
PREPARE_ARGS=()
RUN_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle) BUNDLE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --chip) PREPARE_ARGS+=(--chip "$2"); shift 2 ;;
    --quick) PREPARE_ARGS+=(--quick); shift ;;
    --require-gpu) RUN_ARGS+=(--require-gpu); shift ;;
    --fake-driver) RUN_ARGS+=(--fake-driver "$BUILD/lib"); shift ;;
    --iterations|--warmup) RUN_ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ "$mode" != run ]]; then
  if [[ -z "${KILN_SKIP_BUILD:-}" ]]; then
    # Everything: kiln-cuda-bench, kiln-cuda-smoke, the fake driver, the
    # nvcc-built test kernels besides kiln-compile and kiln-run.
    "$ROOT/scripts/build.sh"
  fi
  "$ROOT/.venv/bin/python" "$ROOT/scripts/gpu_check/prepare.py" \
    --build "$BUILD" --bundle "$BUNDLE" "${PREPARE_ARGS[@]+"${PREPARE_ARGS[@]}"}"
fi
if [[ "$mode" != prepare ]]; then
  # The GPU host may have no venv: the GPU half is standard-library Python.
  PY="$(command -v python3 || command -v python)"
  "$PY" "$BUNDLE/run.py" "$BUNDLE" "$OUT" "${RUN_ARGS[@]+"${RUN_ARGS[@]}"}"
fi
