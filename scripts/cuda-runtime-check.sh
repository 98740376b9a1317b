#!/usr/bin/env bash
# The CUDA runtime's device check, in two halves (../shared/GPU.md):
#
#   scripts/cuda-runtime-check.sh prepare BUILD_DIR OUT_DIR
#       On the build machine: packs OUT_DIR (a few hundred KiB) with
#       kiln-cuda-smoke (links only the runtime), TestCudaModel.c's artifact
#       with real kernels (nvcc-built TestCudaKernels.cu, sm_80 + sm_90 +
#       PTX), an artifact the device cannot load, and run.sh. Then runs the
#       check's CPU half: kiln-cuda-smoke on the fake driver must pass.
#   OUT_DIR/run.sh [RESULTS_DIR]
#       On the GPU host: runs kiln-cuda-smoke on the real driver and writes
#       smoke.log and smoke.json (device, checks, median run time with and
#       without CUDA graphs) into RESULTS_DIR (default OUT_DIR/results).
#       Exit status: kiln-cuda-smoke's (0 pass, 1 a check failed, 2 no
#       device).
set -euo pipefail

usage() {
  sed -n '2,16p' "$0" >&2
  exit 2
}

[ $# -ge 1 ] || usage
case "$1" in
prepare)
  [ $# -eq 3 ] || usage
  build=$(cd "$2" && pwd)
  out=$3
  fatbin=$build/lib/kiln_test_cuda_kernels.fatbin
  for f in "$build/bin/kiln-cuda-smoke" "$build/bin/kiln-test-artifact" \
           "$build/lib/libkiln_fake_cuda.so" "$fatbin"; do
    [ -e "$f" ] || { echo "missing $f (build kiln-cuda-smoke," \
      "kiln-test-artifact, kiln_fake_cuda, kiln_test_cuda_fatbin)" >&2; exit 2; }
  done
  mkdir -p "$out"
  cp "$build/bin/kiln-cuda-smoke" "$out/"
  "$build/bin/kiln-test-artifact" -o "$out/model.kiln" --cuda \
    --fatbin-file "$fatbin"
  "$build/bin/kiln-test-artifact" -o "$out/bad.kiln" --cuda \
    --fatbin NOTAFATBIN
  cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the CUDA runtime's device check (scripts/cuda-runtime-check.sh).
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/results}
mkdir -p "$results"
set +e
"$here/kiln-cuda-smoke" "$here/model.kiln" "$here/bad.kiln" --runs 500 \
  --json "$results/smoke.json" 2>&1 | tee "$results/smoke.log"
rc=${PIPESTATUS[0]}
echo "exit status $rc" >> "$results/smoke.log"
exit "$rc"
RUN
  chmod +x "$out/run.sh"
  # The CPU half: the same checks on the fake driver (fake fatbin).
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$build/bin/kiln-test-artifact" -o "$tmp/fake.kiln" --cuda
  KILN_LIBCUDA=$build/lib/libkiln_fake_cuda.so \
    "$out/kiln-cuda-smoke" "$tmp/fake.kiln" "$out/bad.kiln" --runs 20 \
    > "$tmp/log" || { cat "$tmp/log"; echo "CPU half failed" >&2; exit 1; }
  echo "prepared $out ($(du -sh "$out" | cut -f1)); CPU half on the fake" \
    "driver: $(tail -1 "$tmp/log")"
  ;;
*)
  usage
  ;;
esac
