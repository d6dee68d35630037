#!/usr/bin/env bash
# The CUDA tests on a GPU machine as one short command (no build there: the binaries scripts/gpu_pack.sh
# packed into .gpu/), correctness only (nothing is timed), within a budget:
#   lane 1     every zoo model the CUDA tests read, exported first (models/export.py keeps those present,
#              so that no test fails or skips for a missing file), then the CUDA GoogleTests (Cuda*,
#              StitchedCuda.*, FoldConvolutionAddRelu.*Cuda*), then compute-sanitizer memcheck,
#              racecheck and synccheck on CudaSanitizer.*
#   lane 2     the CUDA tests of each pytest file (-k cuda), one file after another by priority: the
#              export path's cuDNN rewrite, TF32, the export path, the release of compiled parts,
#              lowered weights, the TorchScript path; the one reading the zoo last
# The two lanes run side by side; each part gets what is left of the budget; a part the budget does not
# reach is listed as not run. The compilers' caches are the GPU table's (bench/gpu_table_steps.child_env:
# one folder for Inductor, Triton and autograph; pass the table's --cache-dir to start warm).
# OUT_DIR gets tests.txt (one line per part) and tests-logs.tar.gz. Exit 0 when every part ran and passed.
# Usage: scripts/gpu_tests.sh [--budget S] [--bin DIR] [--cache-dir DIR] OUT_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
budget=240 bin=$root/.gpu/bin cache_dir="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --cache-dir) cache_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "gpu_tests: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { sed -n '2,16p' "$0"; exit 2; }
[ -f "$bin/autograph_tests" ] || { echo "gpu_tests: no $bin/autograph_tests: run scripts/gpu_pack.sh and carry .gpu (or --bin DIR)" >&2; exit 2; }
bin=$(cd "$bin" && pwd)
deadline=$(( $(date +%s) + budget ))
left() { echo $(( deadline - $(date +%s) - 10 )); }
mkdir -p "$out/tests-logs" && out=$(cd "$out" && pwd)
logs=$out/tests-logs results=$out/tests.txt
cache_dir=${cache_dir:-$out/cache}
mkdir -p "$cache_dir" && cache_dir=$(cd "$cache_dir" && pwd)
export XDG_CACHE_HOME=$cache_dir TORCHINDUCTOR_CACHE_DIR=$cache_dir/inductor TRITON_CACHE_DIR=$cache_dir/triton
# shellcheck source=scripts/gpu_env.sh
source "$root/scripts/gpu_env.sh"
export PYTHONPATH="$root/python:$root/tests/python${PYTHONPATH:+:$PYTHONPATH}"
: > "$results"
say() { echo "$*" | tee -a "$results"; }
say "gpu_tests: commit $(tr '\n' ' ' < .gpu/COMMIT 2>/dev/null || git rev-parse HEAD); budget ${budget} s"

# One part under what is left of the budget: `part NAME CMD...`, its log in logs/NAME.log.
part() {
  local name=$1; shift
  local t; t=$(left)
  if [ "$t" -lt 15 ]; then say "$name: NOT RUN (${t} s left of the budget)"; return; fi
  local t0; t0=$(date +%s)
  timeout -k 5 "$t" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  say "$name: rc $rc in $(( $(date +%s) - t0 )) s$([ $rc -eq 124 ] && echo " (killed at the budget's end)"); $(grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \] [A-Z]|ERROR SUMMARY|^(FAILED|ERROR) |[0-9]+ (passed|failed|skipped|deselected)' "$logs/$name.log" | tail -n 12 | tr '\n' ' ')"
}

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
# Lane 1: the models the CUDA GoogleTests (CudaStageExecutor) and the pytest tests (the zoo fixture, the
# substitutions test) read, exported first; then the GoogleTests and compute-sanitizer.
(
  part zoo "$PY" models/export.py --out "$AUTOGRAPH_ZOO_DIR" --only squeezenet resnet50 resnext50_32x4d \
    inception_v3 nasnet_a_mobile randwire bert_base rnntc_sru
  part gtest-cuda "$bin/autograph_tests" --gtest_filter='Cuda*:StitchedCuda.*:FoldConvolutionAddRelu.*Cuda*' --gtest_brief=1
  for tool in memcheck racecheck synccheck; do
    part "sanitizer-$tool" "${sanitizer:-compute-sanitizer}" --tool $tool --error-exitcode 99 "$bin/autograph_tests" \
      --gtest_filter='CudaSanitizer.*'
  done
) &
lane1=$!
# Lane 2, meanwhile: the pytest files by priority, those reading no zoo model first.
for file in test_export_rewrites test_tf32 test_export_path test_compiled_part_release test_lowered_weights \
            test_torchscript_precision test_candidate_check test_optimized_module; do
  part "pytest-$file" "$PY" -m pytest -q -rfs --tb=short -p no:cacheprovider "tests/python/$file.py" -k cuda
done
wait $lane1
tar -czf "$out/tests-logs.tar.gz" -C "$out" tests-logs && rm -rf "$logs"
! grep -qE ': (NOT RUN|rc [1-9])' "$results"
