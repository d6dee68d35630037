#!/usr/bin/env bash
# The GPU check: one command for a GPU machine that runs short commands only (torch preinstalled, no
# network, no apt; the .deps/ of scripts/bundle_deps.sh copied with the checkout) that fits in 10
# minutes and leaves everything in OUT_DIR. Steps, in order:
#   env        GPU, driver, CUDA, cuDNN, torch, compilers, commit                      -> env.txt
#   build      Release on all cores (scripts/build.sh); with .deps/, checks in CMakeCache.txt that
#              every bundled dependency came from it, and that libautograph.so's libraries resolve
#   zoo        the model zoo (models/export.py)
#   tests      scripts/test.sh: every GoogleTest (the CUDA ones register only when a device is
#              present) and pytest; on a GPU with --no-skips, so that a skipped test fails the step
#   sanitizer  compute-sanitizer memcheck, racecheck and synccheck, each on the GoogleTests
#              CudaSanitizer.MultiStreamEagerRun and CudaSanitizer.GraphReplay, each run with a timeout
#   bench      `autograph bench` of the paper's methods at batch 1, one zoo model at a time while time
#              is left; measured costs and optimized modules are cached under OUT_DIR/cache
#   others     the other tools' columns in the same table (bench/torch_compile_bench.py): torch.compile
#              default and max-autotune, and autograph's export path (torch.export, Inductor parts
#              compiled by Triton), one model at a time while time is left (compiles take minutes)
#   table      scripts/gpu_quick_check.sh on this build: every method of the one-call GPU table
#              (bench/gpu_table.py) side by side, timed first and checked after -> OUT_DIR/table/
# Calling again with the same OUT_DIR resumes: steps and sanitizer runs that passed on the same
# sources, and benchmarked models, are kept (the measured costs too, so searches do not re-measure).
# A failing step does not stop the later ones. Exit status 0 only when every step passed (or was
# skipped in a rehearsal); otherwise 1, also when the benchmark did not get through every model.
#
# OUT_DIR gets summary.txt (each step's result, time and why), env.txt, results.md (the table) and
# gpu_check.tar.gz (all of that plus logs/, bench/ and the measured costs; not the optimized modules).
#
# Usage: scripts/gpu_check.sh [--rehearse] [--budget S] [--steps env,build,...] [--models "a b"] OUT_DIR
#   --rehearse  the same steps on a machine without a GPU. The system's copies of the bundled
#               dependencies are hidden (mount namespace: needs root) so the build and the tests can
#               only use .deps/; what needs a device is skipped and said so (sanitizer, the no-skip and
#               CUDA-registration checks); the benchmark runs on CPU, squeezenet only, 3 timed runs;
#               the table on CPU, squeezenet only, 2 runs, without max-autotune (minutes on 2 cores).
#   --budget S  seconds for all the steps (default 540 on a GPU, leaving time to pack within a
#               10-minute command; 5400 when rehearsing); each step's timeout comes out of what is left
#   --steps     a subset of env,build,zoo,tests,sanitizer,bench,others,table
#   --models    the models to benchmark (default: the whole zoo, smallest first)
#   --verbose   each step's output on the console too, not only in OUT_DIR/logs/ (CI)
# On the GPU machine (.deps/ copied with the checkout), keeping /tmp/gpu_out/{summary.txt,gpu_check.tar.gz}:
#   scripts/gpu_check.sh /tmp/gpu_out
set -uo pipefail  # no -e: a failing step must not stop the later ones
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

ALL_STEPS="env build zoo tests sanitizer bench others table"
SANITIZER_TOOLS="memcheck racecheck synccheck"
SANITIZER_TESTS=${AUTOGRAPH_SANITIZER_TESTS:-CudaSanitizer.MultiStreamEagerRun CudaSanitizer.GraphReplay}
BENCH_METHODS="jit jit_frozen taso_jit nimble taso_nimble ios autograph"
# Roughly by cost, so that a short call still fills the table's first rows.
BENCH_MODELS="squeezenet resnet50 inception_v3 resnext50_32x4d randwire nasnet_a_mobile bert_base rnntc_sru nasnet_a_large"
RESERVE_S=20        # kept back from every step for the summary and the tarball
BENCH_MODEL_MAX_S=300
SANITIZER_RUN_MAX_S=240
# Exit codes of a step: 0 passed, 3 skipped, 4 incomplete (ran out of time, resumable), 124/137
# timed out (timeout(1)), anything else failed.
SKIPPED=3 INCOMPLETE=4

# ------------------------------------------------------------------------------------------------
# The steps. Each runs in its own process under timeout(1), so that a step that hangs is killed
# with its children; it writes a one-line note for the summary with note().
note() { echo "$*" > "$GC_OUT/state/$GC_STEP.note"; }
joined() { local out="" x; for x in "$@"; do out+="${out:+; }$x"; done; echo "$out"; }
cache_value() { sed -n "s|^$1:[A-Z]*=||p" "$GC_BUILD_DIR/CMakeCache.txt" 2>/dev/null; }
# Seconds a run inside a step may take: it must end (timeout -k 10 included) before the step's own
# timeout, which would kill the step but not the run (timeout(1) gives it its own process group).
run_time_left() { echo $((GC_DEADLINE - RESERVE_S - 15 - $(date +%s))); }

step_env() {
  local f=$GC_OUT/env.txt
  {
    echo "mode: $([ "$GC_REHEARSE" = 1 ] && echo "rehearsal (no GPU)" || echo "GPU check")"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), kernel $(uname -r)"
    echo "commit: $GC_COMMIT"
    echo "sources: $GC_SOURCES"
    echo "python: $GC_PYTHON"
    "$GC_PYTHON" - <<'PY' 2>&1
import platform, torch
print(f"python version: {platform.python_version()}")
print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})")
try:
    import torchvision
    print(f"torchvision: {torchvision.__version__}")
except ImportError:
    print("torchvision: missing")
print(f"cuda available: {torch.cuda.is_available()}, {torch.cuda.device_count()} device(s)")
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"gpu {i}: {p.name}, {p.total_memory // 2**20} MiB, {p.multi_processor_count} SMs, compute capability {p.major}.{p.minor}")
PY
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/nvidia-smi: /'
    else
      echo "nvidia-smi: missing"
    fi
    echo "nvcc: $("$GC_NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*' || echo missing)"
    echo "compute-sanitizer: $("$GC_SANITIZER" --version 2>/dev/null | grep -o 'Version [0-9.]*' | head -n 1 || echo missing)"
    echo "c++: $(c++ --version 2>/dev/null | head -n 1 || echo missing)"
    echo "cmake: $(PATH="$PATH:$(dirname "$GC_PYTHON")" cmake --version 2>/dev/null | head -n 1 || echo missing)"
    echo "ninja: $(PATH="$PATH:$(dirname "$GC_PYTHON")" ninja --version 2>/dev/null || echo missing)"
    echo "ccache: $(command -v ccache || echo missing)"
    echo "bundled dependencies: ${AUTOGRAPH_DEPS_PREFIX:-none (system packages)}"
    [ -z "${AUTOGRAPH_DEPS_PREFIX:-}" ] || grep -v '^#' "${AUTOGRAPH_DEPS_DIR:-$root/.deps}/MANIFEST" | cut -d' ' -f1,2 | sed 's/^/  /'
    echo "hidden system copies: $GC_HIDDEN"
    if command -v nvidia-smi >/dev/null; then echo; nvidia-smi; fi
  } > "$f" 2>&1
  local torch gpu
  torch=$(sed -n 's/^torch: //p' "$f")
  gpu=$(sed -n 's/^gpu 0: \([^,]*\),.*/\1/p' "$f")
  local driver nvcc
  driver=$(sed -n 's/^nvidia-smi: [^,]*, *\([^,]*\),.*/\1/p' "$f" | head -n 1)
  nvcc=$(sed -n 's/^nvcc: release \([0-9.]*\),.*/\1/p' "$f")
  note "${gpu:-no GPU}${driver:+, driver $driver}; nvcc ${nvcc:-missing}; torch ${torch:-missing}"
  [ -n "$torch" ] || return 1
  if [ "$GC_REHEARSE" = 0 ] && [ -z "$gpu" ]; then
    note "torch sees no CUDA device: this is no GPU machine (use --rehearse); torch $torch"
    return 1
  fi
}

step_build() {
  local t0=$SECONDS jobs=${AUTOGRAPH_JOBS:-$(nproc)} problems=()
  if [ "$GC_REHEARSE" = 1 ] && [ -z "${AUTOGRAPH_DEPS_PREFIX:-}" ]; then
    note "no .deps/ to rehearse with: run scripts/bundle_deps.sh first"
    return 1
  fi
  AUTOGRAPH_JOBS=$jobs bash scripts/build.sh "${GC_CMAKE_ARGS[@]}" || { note "scripts/build.sh failed (see logs/build.log)"; return 1; }
  local cuda=off
  grep -q -- '-DAUTOGRAPH_WITH_CUDA' "$GC_BUILD_DIR/compile_commands.json" 2>/dev/null && cuda=on
  [ "$GC_REHEARSE" = 1 ] || [ $cuda = on ] || problems+=("built without CUDA")
  local deps="the system's"
  if [ -n "${AUTOGRAPH_DEPS_PREFIX:-}" ]; then
    # Every dependency that .deps/ bundles must have been found there, not on the system.
    local entry value n=0
    for entry in nlohmann_json_DIR CLI11_DIR Boost_DIR boost_headers_DIR GTest_DIR GLPK_INCLUDE_DIR GLPK_LIBRARY; do
      value=$(cache_value "$entry")
      echo "CMakeCache.txt: $entry=$value"
      case "$value" in
        "$AUTOGRAPH_DEPS_PREFIX"/*|"$AUTOGRAPH_DEPS_PREFIX") n=$((n + 1)) ;;
        *) problems+=("$entry=${value:-unset} is not under $AUTOGRAPH_DEPS_PREFIX") ;;
      esac
    done
    deps=".deps ($n of 7 found there)"
  fi
  # The libraries must resolve as the tests will load them (LD_LIBRARY_PATH as scripts/test.sh sets it).
  echo "ldd $GC_BUILD_DIR/libautograph.so:"
  ldd "$GC_BUILD_DIR/libautograph.so" | tee "$GC_OUT/state/ldd.txt" | grep -E 'glpk|amd|ltdl|not found'
  grep -q 'not found' "$GC_OUT/state/ldd.txt" && problems+=("libautograph.so: $(grep 'not found' "$GC_OUT/state/ldd.txt" | awk '{print $1}' | tr '\n' ' ')not found")
  local glpk
  glpk=$(awk '/libglpk/ {print $3}' "$GC_OUT/state/ldd.txt")
  note "Release, -j $jobs, $((SECONDS - t0)) s; CUDA $cuda; dependencies from $deps; libglpk ${glpk:-not linked}${problems:+; PROBLEMS: ${problems[*]}}"
  [ ${#problems[@]} -eq 0 ]
}

step_zoo() {
  "$GC_PYTHON" models/export.py --out "$GC_ZOO" || { note "models/export.py failed"; return 1; }
  note "$(ls "$GC_ZOO"/*.pt 2>/dev/null | wc -l) models in $GC_ZOO"
}

step_tests() {
  local flags=() rc
  [ "$GC_REHEARSE" = 1 ] || flags=(--no-skips)
  # On the GPU machine, half its cores (at most 8) run tests side by side: GPU tests share the device.
  local jobs=$(( $(nproc) / 2 )); [ $jobs -ge 2 ] || jobs=2; [ $jobs -le 8 ] || jobs=8
  [ "$GC_REHEARSE" = 0 ] || jobs=2
  AUTOGRAPH_TEST_JOBS=${AUTOGRAPH_TEST_JOBS:-$jobs} bash scripts/test.sh "${flags[@]}"
  rc=$?
  local summary
  # test.sh prints "ctest: ..." and "pytest: ..." in its summary: the last ones in this step's log.
  summary="ctest: $(sed -n 's/^ctest: *//p' "$GC_OUT/logs/tests.log" | tail -n 1); pytest: $(sed -n 's/^pytest: *//p' "$GC_OUT/logs/tests.log" | tail -n 1)"
  if [ "$GC_REHEARSE" = 0 ]; then
    # The CUDA GoogleTests register themselves only when they see a device: make sure they did.
    local n
    n=$("$GC_BUILD_DIR/autograph_tests" --gtest_list_tests 2>/dev/null | grep -c '^CudaStageExecutor\.')
    echo "CudaStageExecutor tests registered: $n"
    [ "$n" -gt 0 ] || { note "no CudaStageExecutor test registered on a GPU machine; $summary"; return 1; }
    note "$summary; none skipped"
  else
    note "$summary (skips expected without a device; --no-skips applies on a GPU)"
  fi
  return $rc
}

step_sanitizer() {
  if [ "$GC_REHEARSE" = 1 ]; then
    local listed
    listed=$("$GC_BUILD_DIR/autograph_tests" --gtest_list_tests --gtest_filter='CudaSanitizer.*' 2>/dev/null | grep -c '^  ')
    note "needs a CUDA device; compute-sanitizer $("$GC_SANITIZER" --version 2>/dev/null | grep -o 'Version [0-9.]*' | head -n 1 || echo missing); CudaSanitizer tests listed without a device: $listed"
    return $SKIPPED
  fi
  [ -x "$GC_SANITIZER" ] || { note "compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda)"; return 1; }
  local tool test run log t ok=0 failed=() left=() state
  for tool in $SANITIZER_TOOLS; do
    for test in $SANITIZER_TESTS; do
      run="$tool:${test#CudaSanitizer.}"
      state=$GC_OUT/state/sanitizer-$tool-$test
      log=$GC_OUT/logs/sanitizer-$tool-${test#CudaSanitizer.}.log
      if [ "$(cat "$state" 2>/dev/null)" = "passed $GC_SOURCES" ]; then
        echo "$run: passed in an earlier call"; ok=$((ok + 1)); continue
      fi
      t=$(run_time_left); [ $t -le $SANITIZER_RUN_MAX_S ] || t=$SANITIZER_RUN_MAX_S
      if [ $t -lt 30 ]; then left+=("$run"); continue; fi
      echo "$run (timeout ${t}s)"
      timeout -k 10 "$t" "$GC_SANITIZER" --tool "$tool" --error-exitcode 99 \
        "$GC_BUILD_DIR/autograph_tests" --gtest_filter="$test" > "$log" 2>&1
      local rc=$?
      tail -n 3 "$log"
      if [ $rc -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$log" && grep -q '\[  PASSED  \] 1 test' "$log"; then
        echo "passed $GC_SOURCES" > "$state"; ok=$((ok + 1))
      elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        failed+=("$run timed out after ${t}s")
      elif grep -q '\[  SKIPPED \] 1 test' "$log"; then
        failed+=("$run: $test skipped itself")
      elif grep -q '\[  PASSED  \] 0 tests' "$log"; then
        failed+=("$run: $test is not registered")
      else
        failed+=("$run: $(grep -o 'ERROR SUMMARY: [0-9]* errors*' "$log" | tail -n 1 || echo "exit $rc")")
      fi
    done
  done
  note "$ok of $(( $(echo $SANITIZER_TOOLS | wc -w) * $(echo $SANITIZER_TESTS | wc -w) )) runs clean${failed:+; FAILED: $(joined "${failed[@]}")}${left:+; no time left for ${left[*]}: call again}"
  [ ${#failed[@]} -eq 0 ] || return 1
  [ ${#left[@]} -eq 0 ] || return $INCOMPLETE
}

# One zoo model at a time while time is left, resumable: `$2 MODEL DIR TIMEOUT LOG` runs one model
# of step $1 into DIR=OUT_DIR/$1/MODEL (exit 0: done; 124/137: timed out; else failed); a model done or
# failed on the same sources in an earlier call is not run again. Fills the calling step's done_,
# failed, timed_out and left.
each_model() {
  local kind=$1 run=$2 m dir log rc t
  for m in $3; do
    dir=$GC_OUT/$kind/$m log=$GC_OUT/logs/$kind-$m.log
    mkdir -p "$dir"
    case "$(cat "$dir/status" 2>/dev/null)" in
      "done $GC_SOURCES") done_+=("$m"); echo "$m: done in an earlier call"; continue ;;
      "failed $GC_SOURCES") failed+=("$m"); echo "$m: failed in an earlier call (see logs/$kind-$m.log)"; continue ;;
    esac
    t=$(run_time_left); [ $t -le $BENCH_MODEL_MAX_S ] || t=$BENCH_MODEL_MAX_S
    if [ $t -lt 60 ]; then left+=("$m"); continue; fi
    echo "== $m (timeout ${t}s)"
    "$run" "$m" "$dir" "$t" "$log"
    rc=$?
    grep -E ' ms \(p10|failed|skipped' "$log"
    case $rc in
      0) echo "done $GC_SOURCES" > "$dir/status"; done_+=("$m") ;;
      124|137) echo "timed out $GC_SOURCES" > "$dir/status"; timed_out+=("$m") ;;
      *) echo "failed $GC_SOURCES" > "$dir/status"; failed+=("$m") ;;
    esac
  done
}

# What a benchmark step's summary line ends with, and its exit status.
models_note() {
  echo "${#done_[@]} of $(echo $1 | wc -w) models done${failed:+; some methods FAILED on ${failed[*]}}${timed_out:+; timed out: ${timed_out[*]}}${left:+; not reached: ${left[*]}}$([ ${#timed_out[@]} -gt 0 ] || [ ${#left[@]} -gt 0 ] && echo ': call again with the same OUT_DIR to resume')$([ "$GC_REHEARSE" = 1 ] && echo ' (CPU rehearsal of the harness: 3 runs, not a measurement)')"
}
models_status() {
  [ ${#failed[@]} -eq 0 ] || return 1
  [ ${#timed_out[@]} -eq 0 ] && [ ${#left[@]} -eq 0 ] || return $INCOMPLETE
}

# One table from every model's rows of both benchmark steps (report.py keeps the last row per model,
# method and batch).
merge_tables() {
  local csv=$GC_OUT/bench/results.csv first=1 f m
  mkdir -p "$GC_OUT/bench"
  rm -f "$csv"
  for m in $1; do
    for f in "$GC_OUT/bench/$m/results.csv" "$GC_OUT/others/$m/results.csv"; do
      [ -s "$f" ] || continue
      if [ $first -eq 1 ]; then cat "$f" > "$csv"; first=0; else tail -n +2 "$f" >> "$csv"; fi
    done
  done
  if [ -f "$csv" ]; then
    "$GC_PYTHON" bench/report.py "$GC_OUT/bench" > /dev/null && cp "$GC_OUT/bench/results.md" "$GC_OUT/results.md"
  fi
}

step_bench() {
  local device=cuda runs=() models=$GC_MODELS done_=() failed=() timed_out=() left=()
  if [ "$GC_REHEARSE" = 1 ]; then
    # The harness end to end on CPU, not a measurement: one small model, few runs.
    device=cpu runs=(--runs 3 --warmup 1) models=${GC_MODELS_GIVEN:-squeezenet}
  fi
  # XDG_CACHE_HOME: the measured-cost cache (autograph/costs/) goes under OUT_DIR too.
  bench_model() {
    XDG_CACHE_HOME=$GC_OUT/cache timeout -k 10 "$3" "$GC_BUILD_DIR/autograph" bench "$1" --zoo "$GC_ZOO" \
      --device "$device" --methods $BENCH_METHODS --batch 1 "${runs[@]}" --out "$2" --cache "$GC_OUT/cache/bench" \
      > "$4" 2>&1
  }
  each_model bench bench_model "$models"
  merge_tables "$models"
  note "$device, batch 1: $(models_note "$models")"
  models_status
}

step_others() {
  local device=cuda runs=() modes=(default max-autotune) models=$GC_MODELS done_=() failed=() timed_out=() left=()
  if [ "$GC_REHEARSE" = 1 ]; then
    # The harness end to end on CPU, not a measurement: one small model, the export path only.
    device=cpu runs=(--runs 3 --warmup 1) modes=() models=${GC_MODELS_GIVEN:-squeezenet}
  fi
  others_model() {
    rm -f "$2/results.csv"  # a rerun replaces the model's rows
    AUTOGRAPH_LIBRARY=$GC_BUILD_DIR/libautograph.so XDG_CACHE_HOME=$GC_OUT/cache timeout -k 10 "$3" \
      "$GC_PYTHON" bench/torch_compile_bench.py --zoo "$GC_ZOO" --models "$1" --device "$device" --batch 1 \
      --modes "${modes[@]}" --export-path "${runs[@]}" --out "$2" > "$4" 2>&1
  }
  each_model others others_model "$models"
  merge_tables "$models"
  note "$device, batch 1, torch.compile (${modes[*]:-none}) and the export path: $(models_note "$models")"
  models_status
}

# The one-call GPU table (scripts/gpu_quick_check.sh with this build's binaries). Rehearsed on CPU so
# that the one short command a GPU machine runs cannot rot: its driver fails the step when
# results.csv lacks a column or a method's row.
step_table() {
  local args=(--budget "$(run_time_left)" --bin "$GC_BUILD_DIR") rc
  [ "$GC_REHEARSE" = 0 ] || args+=(--rehearse)
  [ -z "$GC_MODELS_GIVEN" ] || args+=(--models "$GC_MODELS_GIVEN")
  PYTHON=$GC_PYTHON bash scripts/gpu_quick_check.sh "${args[@]}" "$GC_OUT/table"
  rc=$?
  note "$(grep -m 1 '^table: ' "$GC_OUT/table/summary.txt" 2>/dev/null || echo 'no summary') (table/summary.txt)"
  # Rows missing only because the budget ran out: a later call with more time completes them.
  if [ $rc -ne 0 ] && grep -q 'not reached: ' "$GC_OUT/table/summary.txt" 2>/dev/null &&
     ! grep -qE '(FAILED|timed out) ' "$GC_OUT/table/summary.txt"; then
    return $INCOMPLETE
  fi
  return $rc
}

if [ "${1:-}" = --step ]; then  # one step, in its own process (see run_step)
  GC_STEP=$2
  read -r -a GC_CMAKE_ARGS <<< "$GC_CMAKE_ARGS_STR"
  "step_$GC_STEP"
  exit $?
fi

# ------------------------------------------------------------------------------------------------
# Arguments
usage() { sed -n '2,40p' "$0"; exit "${1:-0}"; }
args=("$@")
rehearse=0 budget="" steps=$ALL_STEPS models="" out="" verbose=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rehearse) rehearse=1; shift ;;
    --budget) budget=$2; shift 2 ;;
    --steps) steps=${2//,/ }; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --verbose) verbose=1; shift ;;
    -h|--help) usage 0 ;;
    -*) echo "gpu_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "gpu_check.sh: one OUT_DIR only" >&2; exit 2; }; out=$1; shift ;;
  esac
done
[ -n "$out" ] || usage 2
for s in $steps; do
  case " $ALL_STEPS " in *" $s "*) ;; *) echo "gpu_check.sh: unknown step '$s' (steps: $ALL_STEPS)" >&2; exit 2 ;; esac
done
start=$(date +%s)

# The rehearsal runs in a private mount namespace, where the system's copies of the bundled
# dependencies are hidden below (root only; elsewhere it goes on without, and says so).
hidden="none (not rehearsing)"
if [ $rehearse -eq 1 ] && [ -z "${GC_IN_NAMESPACE:-}" ]; then
  if unshare -m --propagation private true 2>/dev/null; then
    GC_IN_NAMESPACE=1 GC_START=$start exec unshare -m --propagation private bash "$0" "${args[@]}"
  fi
  hidden="NOT hidden: unshare -m is not permitted here, so only CMakeCache.txt shows that .deps/ was used"
fi
start=${GC_START:-$start}
[ -n "$budget" ] || budget=$([ $rehearse -eq 1 ] && echo 5400 || echo 540)

mkdir -p "$out"/{logs,state,bench,cache}
out=$(cd "$out" && pwd)
export GC_OUT=$out GC_REHEARSE=$rehearse GC_DEADLINE=$((start + budget)) GC_MODELS=${models:-$BENCH_MODELS}
export GC_MODELS_GIVEN=$models
export GC_BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build} GC_ZOO=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
export AUTOGRAPH_BUILD_DIR=$GC_BUILD_DIR AUTOGRAPH_ZOO_DIR=$GC_ZOO AUTOGRAPH_SOURCE_DIR=$root
export GC_CMAKE_ARGS_STR="-DCMAKE_BUILD_TYPE=Release"  # the same in CI's build (.ci/run) and on the GPU
export GC_COMMIT GC_SOURCES GC_PYTHON GC_NVCC GC_SANITIZER GC_HIDDEN
if GC_COMMIT=$(git rev-parse HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || GC_COMMIT+=" + uncommitted changes"
else
  GC_COMMIT="unknown (no git here)"
fi
# What the results belong to, without git (the device's copy may have none): a hash of the sources.
GC_SOURCES=$(find CMakeLists.txt csrc include tools tests python models bench scripts -type f \
  ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path 'models/zoo/*' ! -path 'bench/results/*' -print0 2>/dev/null |
  sort -z | xargs -0 sha1sum | sha1sum | cut -c1-12)

echo "gpu_check: $([ $rehearse -eq 1 ] && echo rehearsal || echo GPU check), steps: $steps, budget ${budget}s, OUT_DIR $out"
GC_PYTHON=$(bash scripts/setup.sh 2> "$out/logs/setup.log" | tail -n 1)
[ -n "$GC_PYTHON" ] || { echo "gpu_check: scripts/setup.sh failed:" >&2; cat "$out/logs/setup.log" >&2; GC_PYTHON=python3; }
# CUDA's tools: on PATH, else in the toolkit (bin/, or compute-sanitizer/ where bin/ has no link).
cuda_tool() {
  local d
  command -v "$1" 2>/dev/null && return
  for d in ${CUDA_HOME:-} ${CUDA_PATH:-} /usr/local/cuda /opt/cuda; do
    if [ -x "$d/bin/$1" ]; then echo "$d/bin/$1"; return; fi
    if [ -x "$d/$1/$1" ]; then echo "$d/$1/$1"; return; fi
  done
  echo "$1"  # not found: the steps say so
}
GC_NVCC=$(cuda_tool nvcc)
GC_SANITIZER=$(cuda_tool compute-sanitizer)
# shellcheck source=scripts/deps_env.sh
source scripts/deps_env.sh
autograph_deps_env "$root" 2>> "$out/logs/setup.log" || echo "gpu_check: cannot unpack .deps/ (logs/setup.log)" >&2

if [ $rehearse -eq 1 ] && [ -n "${GC_IN_NAMESPACE:-}" ]; then
  if [ -n "${AUTOGRAPH_DEPS_PREFIX:-}" ]; then
    # Hide every system file or directory that .deps/ also provides: header directories, CMake
    # package directories and libraries. Directories get an empty tmpfs; files /dev/null, so that a
    # build or a test that still used them would fail instead of passing unnoticed.
    declare -A seen=()
    n=0
    for p in "$AUTOGRAPH_DEPS_PREFIX"/include/* "$AUTOGRAPH_DEPS_PREFIX"/share/cmake/* \
             "$AUTOGRAPH_DEPS_PREFIX"/lib/*/cmake/* "$AUTOGRAPH_DEPS_PREFIX"/lib/*-linux-gnu/*; do
      sys=/usr${p#"$AUTOGRAPH_DEPS_PREFIX"}
      [ -e "$sys" ] || continue
      if [ -d "$p" ] && [ ! -L "$p" ]; then
        case "$sys" in */lib/*-linux-gnu/cmake|*/lib/*-linux-gnu/pkgconfig) continue ;; esac
        mount -t tmpfs -o ro,size=4k none "$sys"
      else
        sys=$(realpath "$sys")
        [ -z "${seen[$sys]:-}" ] || continue
        seen[$sys]=1
        mount --bind /dev/null "$sys"
      fi && n=$((n + 1))
    done
    hidden="$n system paths hidden in a mount namespace (/usr/include/boost, glpk.h, libglpk, ... see logs/setup.log)"
    findmnt -rn -o TARGET | grep '^/usr/' >> "$out/logs/setup.log"
  else
    hidden="nothing to hide: no .deps/"
  fi
fi
GC_HIDDEN=$hidden

# ------------------------------------------------------------------------------------------------
# Running the steps and the summary
declare -A result=() seconds=()
summary() {
  local s
  {
    echo "autograph $([ $rehearse -eq 1 ] && echo "GPU check REHEARSAL (no GPU)" || echo "GPU check") — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit $GC_COMMIT, sources $GC_SOURCES; budget ${budget}s, used $(( $(date +%s) - start ))s; OUT_DIR $out"
    [ $rehearse -eq 0 ] || echo "system copies of the bundled dependencies: $GC_HIDDEN"
    echo
    printf '%-10s %-12s %7s  %s\n' step result seconds details
    for s in $ALL_STEPS; do
      [ -n "${result[$s]:-}" ] || continue
      printf '%-10s %-12s %7s  %s\n' "$s" "${result[$s]}" "${seconds[$s]:--}" "$(cat "$out/state/$s.note" 2>/dev/null)"
    done
  } > "$out/summary.txt"
}

run_step() {
  local s=$1 t rc t0
  rm -f "$out/state/$s.note"
  # Tests that passed on these very sources in an earlier call are not run again (resume).
  if [ "$s" = tests ] && [ "$(cat "$out/state/$s.passed" 2>/dev/null)" = "$GC_SOURCES" ]; then
    result[$s]="passed"; seconds[$s]=0
    echo "passed in an earlier call on the same sources" > "$out/state/$s.note"
    echo "== $s: passed in an earlier call"; summary; return
  fi
  t=$(( GC_DEADLINE - $(date +%s) - RESERVE_S ))
  if [ $t -lt 15 ]; then
    result[$s]="not run"; echo "no time left in the ${budget}s budget: call again" > "$out/state/$s.note"
    echo "== $s: no time left"; summary; return
  fi
  echo "== $s (timeout ${t}s, log logs/$s.log)"
  t0=$(date +%s)
  if [ $verbose -eq 1 ]; then
    timeout -k 15 "$t" bash "$0" --step "$s" 2>&1 | tee "$out/logs/$s.log"
    rc=${PIPESTATUS[0]}
  else
    timeout -k 15 "$t" bash "$0" --step "$s" > "$out/logs/$s.log" 2>&1
    rc=$?
  fi
  seconds[$s]=$(( $(date +%s) - t0 ))
  case $rc in
    0) result[$s]=passed; [ "$s" != tests ] || echo "$GC_SOURCES" > "$out/state/$s.passed" ;;
    "$SKIPPED") result[$s]=skipped ;;
    "$INCOMPLETE") result[$s]=incomplete ;;
    124|137) result[$s]="timed out"; echo "killed after ${t}s (what is left of the budget); see logs/$s.log" >> "$out/state/$s.note" ;;
    *) result[$s]=FAILED ;;
  esac
  echo "   ${result[$s]} in ${seconds[$s]}s: $(cat "$out/state/$s.note" 2>/dev/null | head -n 2 | tr '\n' ' ')"
  summary
}

for s in $ALL_STEPS; do
  case " $steps " in *" $s "*) run_step "$s" ;; esac
done

# ------------------------------------------------------------------------------------------------
# The tarball: OUT_DIR as it is, but for the optimized modules (large, and tied to this build), so
# that unpacked into a folder copied to a fresh machine it resumes there too. Logs over 4 MiB (a
# sanitizer reporting thousands of errors) are cut to their first and last 2 MiB.
status=0
for s in $steps; do
  case "${result[$s]:-}" in
    passed) ;;
    skipped) [ $rehearse -eq 1 ] || status=1 ;;
    *) status=1 ;;
  esac
done
summary
echo >> "$out/summary.txt"
echo "overall: $([ $status -eq 0 ] && echo PASSED || echo "FAILED (or not finished: see above)"); logs in gpu_check.tar.gz (logs/STEP.log)" >> "$out/summary.txt"
stage=$(mktemp -d)
mkdir -p "$stage/gpu_check"
cp -r "$out/summary.txt" "$out/env.txt" "$out/logs" "$out/state" "$out/bench" "$out/table" "$stage/gpu_check/" 2>/dev/null
if [ -d "$out/cache/autograph" ]; then mkdir -p "$stage/gpu_check/cache" && cp -r "$out/cache/autograph" "$stage/gpu_check/cache/"; fi
[ ! -f "$out/results.md" ] || cp "$out/results.md" "$stage/gpu_check/"
find "$stage/gpu_check/logs" -type f -size +4M | while read -r f; do
  { head -c 2M "$f"; printf '\n[... cut by gpu_check.sh ...]\n'; tail -c 2M "$f"; } > "$f.cut" && mv "$f.cut" "$f"
done
tar -czf "$out/gpu_check.tar.gz" -C "$stage" gpu_check
rm -rf "$stage"
echo
cat "$out/summary.txt"
echo "tarball: $out/gpu_check.tar.gz ($(du -h "$out/gpu_check.tar.gz" | cut -f1))"
exit $status
