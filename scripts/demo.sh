#!/usr/bin/env bash
#===- scripts/demo.sh - Kiln's main job on the demo models -----------------===#
# Does its own set-up, generates the demo models (fixed seeds, static input
# shapes) into build/models, compiles each with the -O2 graph pipeline and
# prints a per-model summary: ops by type before and after, parameters,
# FLOPs. The optimized IR goes to build/demo/<model>.mlir and the per-pass
# report (op counts, FLOPs, weight bytes and statistics after every pass) to
# build/demo/<model>.report.json. Extra arguments go to kiln-compile (e.g.
# -O3, --disable-pass=kiln-fuse-attention).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/build.sh" kiln-compile
"$ROOT/.venv/bin/python" "$ROOT/models/generate_demo_models.py" \
  --out "$BUILD/models" --static-shapes
mkdir -p "$BUILD/demo"
for model in "$BUILD"/models/*.onnx; do
  name="$(basename "$model" .onnx)"
  echo "=== $name"
  "$BUILD/bin/kiln-compile" "$model" --emit=graph -O2 --summary \
    --report="$BUILD/demo/$name.report.json" -o "$BUILD/demo/$name.mlir" "$@"
done
