#!/usr/bin/env bash
# The GPU table in one short command on a GPU machine (570 s by default, no build there): the
# binaries scripts/gpu_pack.sh packed into .gpu/ on the CPU machine, timing first and checks after:
#   env    GPU, driver, CUDA, cuDNN, torch, the packed commit, the command; every binary's libraries
#          resolve                                                                      -> env.txt
#   zoo    models/export.py of the --models only, while Inductor's one-time costs (its CPU vector-ISA
#          check, slow in a fresh cache) are paid into OUT_DIR/cache beside it, and meanwhile
#   stage 0 the preflight (bench/gpu_preflight.py: a small conv+add+relu model through the export path,
#          two inputs, a weight written in place, the TF32 switches given back) and the CUDA backend's
#          GoogleTests (CudaStageBackend.*, CudaSanitizer.*), each line in summary.txt
#   table  bench/gpu_table.py: per model, eager, torch.compile default / reduce-overhead / max-autotune,
#          jit_frozen, nimble, autograph_graph and autograph_export built, timed side by side on the
#          GPU alone, then checked on the timed input and on a second one against eager with TF32 off;
#          then below float32: autograph_export at precision bf16 / fp16 beside torch.compile under
#          autocast to the same dtype (its precision step);
#          each step under its own cap, max-autotune last with what is left; what does not fit is
#          skipped and said so in summary.txt
#   tests  only with --tests, after the table and with what is left: scripts/gpu_tests.sh (the CUDA
#          GoogleTests, compute-sanitizer and the CUDA pytest tests; correctness only)
# A failing part does not stop the others. OUT_DIR gets results.csv (one row per model and method),
# results.md and speedup.svg (bench/report.py, speedups over eager), summary.txt, env.txt and
# logs.tar.gz (every step's log and its rows); the compile caches are removed unless --keep-cache.
# Exit 0 when the table is complete (a row of every method for every model).
# Usage (on the GPU machine, .gpu copied there; or any GPU machine after scripts/build.sh with --bin build):
#   scripts/gpu_quick_check.sh [--stage N] [--budget S] [--models "a b c"] [--methods "m ..."] [--cache-dir DIR]
#                              [--keep-cache] [--bin DIR] [--tests] [--rehearse] OUT_DIR
#   --stage N: the models and methods of stage N of the GPU check (bench/gpu_table_rows.py STAGES; on a
#   GPU stage 1 by default: the core table), --models and --methods over them. The caps' arithmetic of
#   the table (bench/gpu_table.py --plan) is printed first, into summary.txt.
#   --rehearse: on a machine without a GPU (scripts/gpu_check.sh --rehearse runs it in CI): CPU,
#   squeezenet, 2 runs, no max-autotune, the binaries of build/; the harness end to end, not a measurement.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
command_line="scripts/gpu_quick_check.sh $*"
budget="" models="" methods="" out="" bin="" cache_dir="" keep_cache=0 tests=0 rehearse=0 stage=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --stage) stage=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --cache-dir) cache_dir=$2; shift 2 ;;
    --keep-cache) keep_cache=1; shift ;;
    --bin) bin=$2; shift 2 ;;
    --tests) tests=1; shift ;;
    --rehearse) rehearse=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) echo "gpu_quick_check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { sed -n '2,31p' "$0"; exit 2; }
if [ $rehearse -eq 1 ]; then
  budget=${budget:-300} models=${models:-squeezenet} bin=${bin:-${AUTOGRAPH_BUILD_DIR:-$root/build}} device=cpu
  # One intra-op thread: on 2 shared cores, ATen's, Inductor's and OpenVINO's thread pools spinning against
  # each other made every call many times slower.
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
else
  budget=${budget:-570} stage=${stage:-1} bin=${bin:-$root/.gpu/bin} device=cuda
fi
[ -f "$bin/libautograph.so" ] || { echo "gpu_quick_check: no $bin/libautograph.so: run scripts/build.sh and scripts/gpu_pack.sh, carry .gpu (or --bin DIR)" >&2; exit 2; }
bin=$(cd "$bin" && pwd)
start=$(date +%s) deadline=$(( $(date +%s) + budget ))
left() { echo $(( deadline - $(date +%s) )); }
mkdir -p "$out/logs" && out=$(cd "$out" && pwd)
logs=$out/logs summary=$out/summary.txt
cache_dir=${cache_dir:-$out/cache}
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# shellcheck source=scripts/gpu_env.sh
source "$root/scripts/gpu_env.sh"

[ -n "$models" ] || models=$("$PY" bench/gpu_table.py ${stage:+--stage $stage} --stage-models)
stage_flag=(); [ -z "$stage" ] || stage_flag=(--stage "$stage")

# ---- env
commit=""
[ ! -f .gpu/COMMIT ] || [ "$bin" != "$root/.gpu/bin" ] || commit=$(tr '\n' ' ' < .gpu/COMMIT)
[ -n "$commit" ] || commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes')"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: $command_line"
  echo "commit: $commit (binaries: $bin)"
  echo "host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $(. /etc/os-release && echo "$PRETTY_NAME"); kernel $(uname -r)"
  "$PY" - <<'PY'
import platform, torch, torchvision
line = (f"python {platform.python_version()}; torch {torch.__version__} (CUDA {torch.version.cuda}, "
        f"cuDNN {torch.backends.cudnn.version()}); torchvision {torchvision.__version__}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    line += f"; gpu {p.name}, {p.total_memory >> 20} MiB, {p.multi_processor_count} SMs, cc {p.major}.{p.minor}"
else:
    line += "; no gpu"
print(line)
PY
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi: /'
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
  for f in "$bin"/libautograph.so "$bin"/autograph; do
    echo "ldd $(basename "$f"):"; ldd "$f" | grep -E 'not found|torch_cuda|cudart|nvrtc|glpk|stdc\+\+|libc\.so'
  done
} > "$out/env.txt" 2>&1
driver=$(sed -n 's/^nvidia-smi: [^,]*, *\([^,]*\),.*/\1/p' "$out/env.txt" | head -n 1)
say "env: $(sed -n 's/^python .*; \(gpu [^,]*\),.*/\1/p; s/^python .*; \(no gpu\)$/\1/p' "$out/env.txt")${driver:+, driver $driver}; $(grep -m1 -o 'torch [^ ]* (CUDA [^,]*' "$out/env.txt")); commit $(echo "$commit" | cut -c1-12)"
if grep -q '=> not found' "$out/env.txt"; then say "env: LIBRARIES NOT FOUND: $(grep '=> not found' "$out/env.txt" | awk '{print $1}' | sort -u | tr '\n' ' ')"; fi
if [ $rehearse -eq 0 ] && ! grep -q '; gpu ' "$out/env.txt"; then say "env: torch sees no CUDA device here (use --rehearse on a machine without one)"; fi

# ---- zoo (only the models of the table) and the compilers' one-time costs, in the background while
# stage 0 (the preflight) says whether the export path runs on this device at all
timeout -k 5 150 "$PY" bench/gpu_table.py --warm-only --out "$out" --device $device --cache-dir "$cache_dir" \
  > "$logs/warm.log" 2>&1 &
warm_pid=$!
# shellcheck disable=SC2086
( timeout -k 5 $(( $(left) / 4 )) "$PY" models/export.py --out "$AUTOGRAPH_ZOO_DIR" --only $models > "$logs/zoo.log" 2>&1
  echo $? > "$logs/zoo.rc" ) &
zoo_pid=$!
# Stage 0: a small conv+add+relu model through the export path (bench/gpu_preflight.py: two inputs, a weight
# written in place, the TF32 switches given back) and, side by side, the CUDA backend's GoogleTests; each
# line in summary.txt.
gtest_pid=""
if [ "$device" = cuda ]; then
  ( timeout -k 5 70 "$bin/autograph_tests" --gtest_filter='CudaStageBackend.*:CudaSanitizer.*' --gtest_brief=1 \
      > "$logs/gtest-stage0.log" 2>&1; echo $? > "$logs/gtest-stage0.rc" ) &
  gtest_pid=$!
fi
timeout -k 5 75 "$PY" bench/gpu_preflight.py --device $device > "$logs/preflight.log" 2>&1
preflight_rc=$?
grep '^preflight' "$logs/preflight.log" >> "$summary"
say "stage 0 preflight: rc $preflight_rc; $(grep -c ': PASS' "$logs/preflight.log") passed, $(grep -c ': FAIL' "$logs/preflight.log") failed ($(( $(date +%s) - start )) s in)"
if [ -n "$gtest_pid" ]; then
  wait $gtest_pid
  say "stage 0 gtest CudaStageBackend/CudaSanitizer: rc $(cat "$logs/gtest-stage0.rc"); $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Z]' "$logs/gtest-stage0.log" | tr '\n' ' ')"
fi
wait $zoo_pid
say "zoo: rc $(cat "$logs/zoo.rc" 2>/dev/null || echo '?'); $(for m in $models; do [ -f "$AUTOGRAPH_ZOO_DIR/$m.pt" ] && printf '%s ' "$m"; done)exported ($(( $(date +%s) - start )) s in)"
wait $warm_pid
say "warm: rc $?; $(grep -o 'CPU vector ISA check: .*' "$logs/warm.log" | sed 's/\[.*\] //') ($(( $(date +%s) - start )) s in)"

# ---- table, alone on the GPU
reserve=25; [ $tests -eq 0 ] || reserve=200  # the tarball; with --tests, time for them
rehearse_flag=(); [ $rehearse -eq 0 ] || rehearse_flag=(--rehearse)
# A crash leaves its native stack in the step's log (scripts/segv_backtrace.c; the GPU image has no gdb).
preload=""; [ ! -f "$bin/segv_backtrace.so" ] || preload=$bin/segv_backtrace.so
# shellcheck disable=SC2086
table_args=(--device $device --models $models ${methods:+--methods $methods} "${stage_flag[@]}"
            --budget $(( $(left) - reserve )) --no-warm "${rehearse_flag[@]}")
# The caps' arithmetic first: what each step gets if every step takes its whole cap.
"$PY" bench/gpu_table.py --plan "${table_args[@]}" | tee -a "$summary"
# A TERM (the command's time running out) goes on to the table, which writes what finished; the rest of
# this script (the summary, the tarball) still runs.
stopped=0 table_pid=""
trap 'stopped=1; [ -z "$table_pid" ] || kill -TERM "$table_pid" 2>/dev/null' TERM
LD_PRELOAD=$preload "$PY" bench/gpu_table.py --out "$out" "${table_args[@]}" --cache-dir "$cache_dir" \
  --cli "$bin/autograph" > "$logs/table.log" 2>&1 &
table_pid=$!
wait $table_pid
table_rc=$?
if [ $stopped -eq 1 ]; then wait $table_pid; table_rc=$?; say "table: stopped by TERM; what finished is kept"; fi
sed -n '/^== one table/,$p' "$summary"  # the driver's part of the summary, on the console too
say "table: rc $table_rc; $(tail -n +2 "$out/results.csv" 2>/dev/null | wc -l) rows in results.csv (the table's own lines above)"

# ---- tests (--tests), with what is left: correctness only (scripts/gpu_tests.sh), the table's caches warm
if [ $tests -eq 1 ] && [ $rehearse -eq 0 ]; then
  t=$(( $(left) - 20 ))
  if [ $t -lt 60 ]; then
    say "tests: not run (${t} s left of the budget)"
  else
    bash scripts/gpu_tests.sh --budget $t --bin "$bin" --cache-dir "$cache_dir" "$out" > /dev/null 2>&1
    say "tests: rc $?"; cat "$out/tests.txt" >> "$summary"
  fi
fi

say "used $(( $(date +%s) - start )) s of ${budget} s"
cp "$out/env.txt" "$logs/"
[ ! -d "$out/steps" ] || cp -r "$out/steps" "$logs/steps"
tar -czf "$out/logs.tar.gz" -C "$out" logs
rm -rf "$out/steps" "$logs"
[ $keep_cache -eq 1 ] || [ "$cache_dir" != "$out/cache" ] || rm -rf "$out/cache"
exit $table_rc
