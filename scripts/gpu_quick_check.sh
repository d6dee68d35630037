#!/usr/bin/env bash
# The GPU check for a short lease (15 device-minutes, one call): no build there. It runs the binaries
# that scripts/gpu_pack.sh packed into .gpu/ on the CPU machine, in one call of about 9 minutes:
#   env        GPU, driver, CUDA, torch, the packed commit; every packed binary's libraries resolve
#   zoo        models/export.py (all but nasnet_a_large), in the background from the start
#   correct    side by side (correctness only, not timed): every CUDA GoogleTest (those that skip
#              without a device, and CudaStageExecutor.* that register only with one); the CUDA
#              pytest tests; compute-sanitizer memcheck, racecheck and synccheck on
#              CudaSanitizer.*; the export path on CUDA (bench/torch_compile_bench.py --export-path);
#              aoti: one AOTInductor CUDA package, compiled by Inductor's defaults and by autograph's
#              settings, each loaded without autograph and with it (scripts/gpu_aoti_probe.py). Python parts run under scripts/segv_backtrace.c, so that a
#              crash leaves its native stack in the log
#   timed      alone on the GPU: the export path against torch.compile default and max-autotune
#              (bench/torch_compile_bench.py), one model of --others at a time; `autograph bench` of the
#              paper's methods at batch 1, one zoo model at a time while time is left. (The NVRTC
#              kernels against Triton's, bench/stitch_kernel_bench.py, and the plans per shape,
#              bench/shape_plans.py, were measured in bench/results/gpu-2026-11-26b-h100; run them by hand.)
# Each part runs under a timeout; a failing part does not stop the others. OUT_DIR gets summary.txt
# (a line per part) and logs.tar.gz (every log, env.txt and the benchmark's results.md/csv).
# Usage (on the GPU machine, .gpu carried):
#   scripts/gpu_quick_check.sh [--budget S] [--models "a b"] [--others "a b"] OUT_DIR
#   e.g. run(command="bash scripts/gpu_quick_check.sh \"$OUT\"", carry=[".gpu"], timeout_s=590)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
budget=540 models="nasnet_a_mobile squeezenet resnet50 inception_v3 randwire resnext50_32x4d bert_base" out=""
others="squeezenet bert_base"
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --others) others=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { sed -n '2,21p' "$0"; exit 2; }
[ -f .gpu/bin/libautograph.so ] || { echo "gpu_quick_check: no .gpu/ here: run scripts/gpu_pack.sh and carry .gpu" >&2; exit 2; }
start=$(date +%s) deadline=$(( $(date +%s) + budget ))
left() { echo $(( deadline - $(date +%s) )); }
mkdir -p "$out/logs" "$out/bench" && out=$(cd "$out" && pwd)
logs=$out/logs
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# The image's torch and CUDA libraries first, then the packed ones.
PY=${PYTHON:-python3}
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
libs="$site/torch/lib"
for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$d" ] && libs+=":$d"
done
export LD_LIBRARY_PATH="$libs:$root/.gpu/bin:$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$root/.gpu/bin
export AUTOGRAPH_LIBRARY=$bin/libautograph.so AUTOGRAPH_CLI=$bin/autograph
export AUTOGRAPH_ZOO_DIR=$root/models/zoo AUTOGRAPH_SOURCE_DIR=$root
export XDG_CACHE_HOME=$out/cache PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:$(dirname "$(command -v "$PY")")"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/compute-sanitizer/compute-sanitizer \
  /opt/nvidia/*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)

# ---- env
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "packed commit: $(cat .gpu/COMMIT 2>/dev/null | tr '\n' ' ')"
  echo "host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $(. /etc/os-release && echo "$PRETTY_NAME"); kernel $(uname -r)"
  "$PY" -c 'import torch, torchvision, platform; p = torch.cuda.get_device_properties(0); print(f"python {platform.python_version()}; torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}); torchvision {torchvision.__version__}; gpu {p.name}, {p.total_memory >> 20} MiB, {p.multi_processor_count} SMs, cc {p.major}.{p.minor}")'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "compute-sanitizer: ${sanitizer:-missing} $("${sanitizer:-false}" --version 2>/dev/null | grep -o 'Version [0-9.]*' | head -n 1)"
  echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
  for f in "$bin"/*; do
    echo "ldd $(basename "$f"):"; ldd "$f" | grep -E 'not found|torch_cuda|cudart|nvrtc|glpk|stdc\+\+|libc\.so'
  done
} > "$out/env.txt" 2>&1
say "env: $(sed -n 's/^python .*; \(gpu [^,]*\),.*/\1/p' "$out/env.txt"); driver $(grep -m1 -oE ', [0-9]+\.[0-9]+\.[0-9]+,' "$out/env.txt" | tr -d ', '); $(grep -m1 -o 'torch [^ ]* (CUDA [0-9.]*' "$out/env.txt")); packed $(cut -c1-12 .gpu/COMMIT | head -n 1)"
if grep -q '=> not found' "$out/env.txt"; then say "env: LIBRARIES NOT FOUND: $(grep '=> not found' "$out/env.txt" | awk '{print $1}' | sort -u | tr '\n' ' ')"; fi

# ---- zoo, in the background; the parts that need a model wait for it
( "$PY" models/export.py --out "$AUTOGRAPH_ZOO_DIR" --only squeezenet resnet50 inception_v3 randwire nasnet_a_mobile \
    rnntc_sru resnext50_32x4d bert_base > "$logs/zoo.log" 2>&1; echo $? > "$logs/zoo.rc" ) &
zoo_pid=$!

# ---- correct: every part in the background at once (the GPU is shared, nothing is timed)
gtest() {  # NAME FILTER TIMEOUT
  timeout -k 5 "$3" "$bin/autograph_tests" --gtest_filter="$2" --gtest_brief=1 > "$logs/gtest-$1.log" 2>&1
  local rc=$?
  echo "gtest $1: rc $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/gtest-$1.log" | tr '\n' ' ')" > "$logs/gtest-$1.res"
}
sanitize() {  # TOOL TEST TIMEOUT
  timeout -k 5 "$3" "${sanitizer:-compute-sanitizer}" --tool "$1" --error-exitcode 99 "$bin/autograph_tests" --gtest_filter="$2" \
    > "$logs/sanitizer-$1-$2.log" 2>&1
  local rc=$?
  echo "sanitizer $1 $2: rc $rc; $(grep -o 'ERROR SUMMARY: [0-9]* errors*' "$logs/sanitizer-$1-$2.log" | tail -n 1); $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/sanitizer-$1-$2.log" | tr '\n' ' ')" \
    > "$logs/sanitizer-$1-$2.res"
}
t_correct=$(( $(left) * 45 / 100 ))  # the rest is the benchmark's
gtest nozoo 'CudaStageBackend.*:CudaSanitizer.*:StitchedCuda.*' "$t_correct" &
for tool in memcheck racecheck synccheck; do
  for test in CudaSanitizer.MultiStreamEagerRun CudaSanitizer.GraphReplay; do
    sanitize "$tool" "$test" $(( t_correct * 2 / 3 )) &
  done
done
wait $zoo_pid
say "zoo: rc $(cat "$logs/zoo.rc"); $(ls "$AUTOGRAPH_ZOO_DIR"/*.pt 2>/dev/null | wc -l) models ($(( $(date +%s) - start )) s in)"
gtest zoo 'CudaStageExecutor.*:CudaMeasuredCostModel.*:CudaOptimize.*:FoldConvolutionAddRelu.*Cuda*' $(( t_correct - ($(date +%s) - start) )) &
# One pytest per file, tracebacks as they happen (-rfs --tb=short in the summary, -v for the names):
# a crash in one file keeps the other's summary.
for file in test_optimized_module test_export_path; do
  ( timeout -k 5 $(( t_correct - ($(date +%s) - start) )) env LD_PRELOAD="$bin/segv_backtrace.so" "$PY" -m pytest -v \
      -rfs --tb=short -p no:cacheprovider "tests/python/$file.py" -k cuda > "$logs/pytest-cuda-$file.log" 2>&1
    echo "pytest cuda $file: rc $?; $(grep -E '^(FAILED|ERROR) ' "$logs/pytest-cuda-$file.log" | tr '\n' ' ')$(tail -n 1 "$logs/pytest-cuda-$file.log")" \
      > "$logs/pytest-cuda-$file.res" ) &
done
( timeout -k 5 $(( t_correct - ($(date +%s) - start) )) env LD_PRELOAD="$bin/segv_backtrace.so" "$PY" bench/torch_compile_bench.py --zoo "$AUTOGRAPH_ZOO_DIR" \
    --models squeezenet resnet50 --device cuda --batch 1 --modes default --export-path --warmup 10 --runs 20 \
    --out "$out/export_path" > "$logs/export-path.log" 2>&1
  echo "export path on cuda (correctness, squeezenet resnet50): rc $?; $(grep -ciE 'error|mismatch|failed' "$logs/export-path.log") error lines" > "$logs/export-path.res" ) &
# Compiled as Inductor's defaults would (the image's CXX linked libstdc++ statically into it, and it
# crashed on load) and with autograph's settings (the runtime linked shared); each loaded alone and
# after autograph. A load that outlives its time gets SIGSEGV: the native and the Python stack.
( t=$(( t_correct - ($(date +%s) - start) ))
  for how in plain autograph; do
    probe=$out/aoti/$how && mkdir -p "$probe"
    echo "== compile $how"
    timeout -k 5 "$(( t / 3 ))" "$PY" scripts/gpu_aoti_probe.py compile "$probe" \
      $([ $how = autograph ] && echo --autograph-configs) || continue
    for with in "" --with-autograph; do
      echo "== load $how $with"
      timeout -k 5 -s SEGV 90 env LD_PRELOAD="$bin/segv_backtrace.so" "$PY" -X faulthandler scripts/gpu_aoti_probe.py \
        load "$probe" $with
      echo "rc $how${with:+ with autograph}: $?"
    done
  done > "$logs/aoti.log" 2>&1
  echo "aoti probe (a CUDA package loaded alone, then with autograph): $(grep -E '^rc ' "$logs/aoti.log" | tr '\n' ' ')" > "$logs/aoti.res" ) &
wait
cat "$logs"/*.res | tee -a "$summary"

# ---- timed, alone on the GPU: the export path against torch.compile default and max-autotune (issue 28),
# then the paper's methods
for m in $others; do
  t=$(( $(left) * 2 / 5 )); [ $t -le 180 ] || t=180
  if [ $t -lt 60 ]; then say "others $m: not reached (budget)"; continue; fi
  timeout -k 5 "$t" env LD_PRELOAD="$bin/segv_backtrace.so" "$PY" bench/torch_compile_bench.py --zoo "$AUTOGRAPH_ZOO_DIR" \
    --models "$m" --device cuda --batch 1 --modes default max-autotune --export-path --warmup 20 --runs 50 \
    --out "$out/bench/others-$m" > "$logs/others-$m.log" 2>&1
  say "others $m (torch.compile default, max-autotune, export path): rc $? ($t s allowed);" \
    "$(tail -n +2 "$out/bench/others-$m/results.csv" 2>/dev/null | wc -l) rows in results.csv"
done
# One zoo model at a time while time is left.
for m in $models; do
  t=$(( $(left) - 25 ))
  if [ $t -lt 45 ]; then say "bench $m: not reached (budget)"; continue; fi
  [ $t -le 150 ] || t=150
  # ios builds for 42-58 s on inception_v3 and randwire; nasnet_a_mobile did not finish its 138-150 s
  # with it on the H200 or the H100, so it runs without ios there.
  methods="jit jit_frozen nimble ios autograph autograph_graph"
  [ "$m" = nasnet_a_mobile ] && methods="jit jit_frozen nimble autograph autograph_graph"
  timeout -k 5 "$t" "$bin/autograph" bench "$m" --zoo "$AUTOGRAPH_ZOO_DIR" --device cuda --batch 1 \
    --methods $methods --warmup 20 --runs 50 \
    --out "$out/bench/$m" --cache none > "$logs/bench-$m.log" 2>&1
  rc=$?
  # Failed captures run eagerly (correct, slower); nasnet_a_mobile's search once hit 317 for want of memory.
  say "bench $m: rc $rc ($t s allowed); $(grep -c 'capturing a CUDA Graph failed' "$logs/bench-$m.log") failed captures;" \
    "$(grep -E ' ms \(p10' "$logs/bench-$m.log" | sed 's/  */ /g' | tr '\n' ';')"
done
say "used $(( $(date +%s) - start )) s of ${budget} s"
cp "$out/env.txt" "$logs/"
find "$out/bench" "$out/export_path" -name 'results.*' -o -name 'stitch_kernel.md' 2>/dev/null | while read -r f; do cp "$f" "$logs/$(basename "$(dirname "$f")")-$(basename "$f")"; done
tar -czf "$out/logs.tar.gz" -C "$out" logs
rm -rf "$out/cache" "$out/bench" "$out/export_path" "$out/stitch_packages" "$logs" "$out"/aoti/*/unpacked
