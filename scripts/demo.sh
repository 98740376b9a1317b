#!/usr/bin/env bash
#===- scripts/demo.sh - Kiln's main job on the demo models -----------------===#
# Does its own set-up, generates the demo models (fixed seeds, static input
# shapes) into build/models, and for each:
#   1. the graph pipeline's summary (ops by type before and after -O2,
#      parameters, FLOPs; IR in build/demo/<model>.mlir, per-pass report in
#      build/demo/<model>.report.json);
#   2. compiles it for this CPU (-O3) into build/demo/<model>.kiln and runs it
#      with kiln-run on its test data set (outputs checked against ONNX
#      Runtime's, PASS/FAIL per output);
# then runs the seed's study with kiln-bench (tools/kiln-bench/studies/
# seed-small.toml: the 2x2 grid of Standard/Flash variants, both kernel
# strategies, ONNX Runtime, the pass ablation and the sweeps) and prints its
# table; the report is in build/bench/seed-small/report.md. Last, the seed's
# real task: the same variants as decoders generating 128 tokens after a
# 128-token prompt (studies/seed-generation-small.toml, docs/generation.md),
# beside ONNX Runtime's step loop and onnxruntime-genai; the report is in
# build/bench/seed-generation-small/report.md. With Open MPI installed (the
# set-up installs it), the task once more over 2 MPI ranks with the
# decoders split by tensor parallelism (studies/seed-generation-cluster.toml,
# docs/cluster.md; build/bench/seed-generation-cluster/report.md).
#   --full   the study at full size instead (build/bench/seed-small-full/)
# Other arguments go to kiln-compile in step 1 (e.g. -O3,
# --disable-pass=kiln-fuse-attention).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KILN_BUILD_DIR:-$ROOT/build}"

BENCH_ARGS=()
COMPILE_ARGS=()
for arg in "$@"; do
  if [[ "$arg" == --full ]]; then BENCH_ARGS+=(--full); else COMPILE_ARGS+=("$arg"); fi
done
set -- "${COMPILE_ARGS[@]+"${COMPILE_ARGS[@]}"}"
"$ROOT/scripts/build.sh" kiln-compile kiln-run kiln-generate
"$ROOT/.venv/bin/python" "$ROOT/models/generate_demo_models.py" \
  --out "$BUILD/models" --static-shapes
mkdir -p "$BUILD/demo"
for model in "$BUILD"/models/*.onnx; do
  name="$(basename "$model" .onnx)"
  echo "=== $name"
  "$BUILD/bin/kiln-compile" "$model" --emit=graph -O2 --summary \
    --report="$BUILD/demo/$name.report.json" -o "$BUILD/demo/$name.mlir" "$@"
  start=$(date +%s%N)
  "$BUILD/bin/kiln-compile" "$model" -O3 -o "$BUILD/demo/$name.kiln"
  end=$(date +%s%N)
  echo "  compiled for the CPU in $(( (end - start) / 1000000 )) ms -> $BUILD/demo/$name.kiln"
  "$BUILD/bin/kiln-run" "$BUILD/demo/$name.kiln" --threads 2 \
    --inputs "$BUILD/models/$name/test_data_set_0" --rtol 1e-3 --atol 1e-4 \
    --warmup 1 --iterations 5 | sed 's/^/  /'
done
echo "=== the seed's study: Standard vs Flash, and what makes the difference"
"$BUILD/bin/kiln-bench" "$ROOT/tools/kiln-bench/studies/seed-small.toml" \
  "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
echo "=== the seed's real task: generating text (prompt 128, generate 128)"
"$BUILD/bin/kiln-bench" \
  "$ROOT/tools/kiln-bench/studies/seed-generation-small.toml" \
  "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
# The same task over two MPI ranks on this machine (docs/cluster.md), the
# decoders split by tensor parallelism: a functional run (the ranks share
# this machine's cores), with the shards' ids checked against one process.
if command -v mpirun > /dev/null; then
  echo "=== the seed's task over 2 MPI ranks, tensor parallel (functional)"
  MPI_FLAGS=(-n 2 --oversubscribe)
  if [ "$(id -u)" = 0 ]; then MPI_FLAGS+=(--allow-run-as-root); fi
  OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun "${MPI_FLAGS[@]}" \
    "$BUILD/bin/kiln-bench" \
    "$ROOT/tools/kiln-bench/studies/seed-generation-cluster.toml" \
    --tensor-parallel 2
fi
