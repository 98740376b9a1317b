#!/usr/bin/env bash
# The CUDA runtime's device check, in two halves (../shared/GPU.md):
#
#   scripts/cuda-runtime-check.sh prepare BUILD_DIR OUT_DIR
#       On the build machine: packs OUT_DIR with kiln-cuda-smoke (links only
#       the runtime: no protobuf, no MLIR), TestCudaModel.c's artifact with
#       real kernels (TestCudaKernels.cu by nvcc: sm_80, sm_90, PTX), an
#       artifact the device cannot load, and run.sh. Where kiln-compile
#       writes CUDA artifacts, also the demo models (mlp, transformer_block,
#       small_cnn) for cuda:sm_80 and cuda:sm_90, with the outputs of their
#       CPU builds (--cpu=generic) on the smoke's generated inputs. Then runs
#       the CPU half: the smoke checks on the fake driver must pass.
#   OUT_DIR/run.sh [RESULTS_DIR]
#       On the GPU host: the device list, the smoke checks (outputs with
#       and without CUDA graphs, device memory, event timing, the
#       unloadable fatbin's message) and, for the models of the device's
#       chip, their outputs against the CPU recordings; logs and JSON in
#       RESULTS_DIR (default OUT_DIR/results). Exit status 0 when all pass.
set -euo pipefail

usage() {
  sed -n '2,20p' "$0" >&2
  exit 2
}

[ $# -ge 1 ] || usage
case "$1" in
prepare)
  [ $# -eq 3 ] || usage
  build=$(cd "$2" && pwd)
  out=$3
  src=$(cd "$(dirname "$0")/.." && pwd)
  fatbin=$build/lib/kiln_test_cuda_kernels.fatbin
  smoke=$build/bin/kiln-cuda-smoke
  for f in "$smoke" "$build/bin/kiln-test-artifact" \
           "$build/lib/libkiln_fake_cuda.so" "$fatbin"; do
    [ -e "$f" ] || { echo "missing $f (build kiln-cuda-smoke," \
      "kiln-test-artifact, kiln_fake_cuda, kiln_test_cuda_fatbin)" >&2; exit 2; }
  done
  mkdir -p "$out/models"
  cp "$smoke" "$out/"
  "$build/bin/kiln-test-artifact" -o "$out/model.kiln" --cuda \
    --fatbin-file "$fatbin"
  "$build/bin/kiln-test-artifact" -o "$out/bad.kiln" --cuda \
    --fatbin NOTAFATBIN
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT

  # Compiled models, where kiln-compile writes CUDA artifacts.
  compile=$build/bin/kiln-compile
  python=${KILN_PYTHON:-$src/.venv/bin/python}
  help=$("$compile" --help 2>&1 || true)
  if [ -x "$compile" ] && [[ $help == *=fatbin* ]]; then
    "$python" "$src/models/generate_demo_models.py" --out "$tmp" \
      --only mlp,transformer_block,small_cnn --static-shapes > /dev/null
    for m in mlp transformer_block small_cnn; do
      if ! "$compile" "$tmp/$m.onnx" --cpu=generic -o "$tmp/$m-cpu.kiln" \
          > "$tmp/$m-cpu.log" 2>&1; then
        echo "note: $m: CPU build failed: $(tail -1 "$tmp/$m-cpu.log")"
        continue
      fi
      "$smoke" --record "$tmp/$m-cpu.kiln" "$out/models/$m.expected.bin" \
        > /dev/null
      for chip in sm_80 sm_90; do
        if "$compile" "$tmp/$m.onnx" --target=cuda:$chip \
            -o "$out/models/$m-$chip.kiln" > "$tmp/$m-$chip.log" 2>&1; then
          echo "packed $m for cuda:$chip"
        else
          echo "note: $m: cuda:$chip build failed: $(tail -1 "$tmp/$m-$chip.log")"
          rm -f "$out/models/$m-$chip.kiln"
        fi
      done
    done
  else
    echo "note: kiln-compile writes no CUDA artifacts yet: no models packed"
  fi

  cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the CUDA runtime's device check (scripts/cuda-runtime-check.sh).
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/results}
mkdir -p "$results"
smoke=$here/kiln-cuda-smoke
status=0
"$smoke" --list-devices > "$results/devices.txt" 2>&1
cat "$results/devices.txt"
"$smoke" "$here/model.kiln" "$here/bad.kiln" --runs 500 \
  --json "$results/smoke.json" > "$results/smoke.log" 2>&1 || status=1
cat "$results/smoke.log"
chip=$(sed -n 's/^cuda:0 .*(\(sm_[0-9]*\), .*/\1/p' "$results/devices.txt")
for model in "$here"/models/*-"$chip".kiln; do
  [ -e "$model" ] || continue
  name=$(basename "$model" "-$chip.kiln")
  echo "== $name ($chip)"
  "$smoke" --compare "$model" "$here/models/$name.expected.bin" \
    --rtol 1e-3 --atol 1e-4 --runs 200 --json "$results/$name.json" \
    > "$results/$name.log" 2>&1 || status=1
  cat "$results/$name.log"
done
echo "exit status $status" | tee -a "$results/smoke.log"
exit "$status"
RUN
  chmod +x "$out/run.sh"

  # The CPU half: the same checks on the fake driver (fake fatbin).
  "$build/bin/kiln-test-artifact" -o "$tmp/fake.kiln" --cuda
  KILN_LIBCUDA=$build/lib/libkiln_fake_cuda.so \
    "$out/kiln-cuda-smoke" "$tmp/fake.kiln" "$out/bad.kiln" --runs 20 \
    > "$tmp/log" || { cat "$tmp/log"; echo "CPU half failed" >&2; exit 1; }
  KILN_LIBCUDA=$build/lib/libkiln_fake_cuda.so \
    "$out/kiln-cuda-smoke" --record "$tmp/fake.kiln" "$tmp/fake.bin" > /dev/null
  KILN_LIBCUDA=$build/lib/libkiln_fake_cuda.so \
    "$out/kiln-cuda-smoke" --compare "$tmp/fake.kiln" "$tmp/fake.bin" \
    --runs 5 >> "$tmp/log" || { cat "$tmp/log"; echo "CPU half failed" >&2; exit 1; }
  echo "prepared $out ($(du -sh "$out" | cut -f1)); CPU half on the fake" \
    "driver: $(grep -c '^PASS' "$tmp/log") checks passed"
  ;;
*)
  usage
  ;;
esac
