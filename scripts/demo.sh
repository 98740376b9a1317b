#!/usr/bin/env bash
#===- scripts/demo.sh - Kiln's main job on the demo models -----------------===#
# Does its own set-up, generates the demo models (fixed seeds) into
# build/models, imports each, runs the default graph pipeline and prints a
# per-model summary. The optimized IR goes to build/demo/<model>.mlir.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/build.sh" kiln-compile
"$ROOT/.venv/bin/python" "$ROOT/models/generate_demo_models.py" --out "$BUILD/models"
mkdir -p "$BUILD/demo"
for model in "$BUILD"/models/*.onnx; do
  name="$(basename "$model" .onnx)"
  echo "=== $name"
  "$BUILD/bin/kiln-compile" "$model" --emit=graph --summary \
    -o "$BUILD/demo/$name.mlir"
done
