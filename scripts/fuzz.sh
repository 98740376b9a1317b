#!/usr/bin/env bash
#===- scripts/fuzz.sh - Build and run Kiln's libFuzzer harnesses ----------===#
#
# Usage: scripts/fuzz.sh [--seconds N] [--skip-without-clang] [harness ...]
#
# Builds test/Fuzz (a CMake project of its own: clang-22, libFuzzer, ASan,
# UBSan) into $KILN_BUILD_DIR/fuzz against the main build's generated
# headers (the main build must exist: scripts/build.sh), then runs each
# harness (default: all four) for N seconds (default 60) on a copy of its
# seed corpus (test/Fuzz/corpus/<name>). Prints per harness the executions,
# executions per second and the corpus size; a crash, leak, sanitizer
# report or time-out ends that harness, its input is kept in
# $KILN_BUILD_DIR/fuzz/findings/<harness>/ and the script exits 1. Every
# input found so far is a regression input under test/ (fuzz-regressions).
# --skip-without-clang exits 77 (ctest's skip) instead of 1 when clang-22
# is missing; the ctest `fuzz-harnesses` (label fuzz) runs it that way.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "$ROOT" && realpath -m "${KILN_BUILD_DIR:-$ROOT/build}")"
FUZZ="$BUILD/fuzz"
SECONDS_PER=60
NO_CLANG_STATUS=1
HARNESSES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER="$2"; shift 2 ;;
    --skip-without-clang) NO_CLANG_STATUS=77; shift ;;
    -h|--help) sed -n 3,16p "$0"; exit 0 ;;
    *) HARNESSES+=("$1"); shift ;;
  esac
done
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(json artifact tensor-files onnx-import)

CXX=clang++-22
CC=clang-22
command -v "$CXX" > /dev/null || {
  echo "fuzz: $CXX not found (scripts/setup.sh installs clang-22)"; exit "$NO_CLANG_STATUS"; }
[ -f "$BUILD/dialects/kiln/include/kiln/Dialect/KilnDialect.h.inc" ] || {
  echo "fuzz: no main build at $BUILD (run scripts/build.sh first)"; exit 1; }

if [ ! -f "$FUZZ/build.ninja" ]; then
  launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=$CC CXX=$CXX cmake -S "$ROOT/test/Fuzz" -B "$FUZZ" -G Ninja "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_MAIN_BUILD="$BUILD" > "$FUZZ.configure.log" 2>&1 || {
    cat "$FUZZ.configure.log"; exit 1; }
fi
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz-$h"); done
cmake --build "$FUZZ" --target "${targets[@]}" > "$FUZZ/build.log" 2>&1 || {
  tail -40 "$FUZZ/build.log"; exit 1; }

status=0
total_runs=0
for h in "${HARNESSES[@]}"; do
  work="$FUZZ/run/$h"
  findings="$FUZZ/findings/$h"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$findings"
  cp "$ROOT/test/Fuzz/corpus/$h/"* "$work/corpus/"
  log="$work/log.txt"
  # The importer forks per libonnx step: its children are not leaks.
  set +e
  (cd "$work" && TMPDIR="$work" ASAN_OPTIONS=detect_leaks=1 \
    "$FUZZ/fuzz-$h" -max_total_time="$SECONDS_PER" -timeout=60 \
    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" corpus > "$log" 2>&1)
  rc=$?
  set -e
  runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo 0)
  speed=$(grep -oE "stat::average_exec_per_sec: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo 0)
  units=$(ls "$work/corpus" | wc -l)
  total_runs=$((total_runs + runs))
  if [ $rc -ne 0 ]; then
    echo "FAIL fuzz-$h: exit $rc after $runs executions; input kept in $findings"
    grep -E "ERROR|SUMMARY|==[0-9]+==|deadly signal|Test unit written" "$log" | head -8
    status=1
  else
    echo "PASS fuzz-$h: $runs executions in ${SECONDS_PER} s ($speed/s), corpus $units inputs, no findings"
  fi
done
echo "fuzz: ${#HARNESSES[@]} harnesses, $total_runs executions, $([ $status = 0 ] && echo 0 || echo some) findings"
exit $status
