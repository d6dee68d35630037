#!/usr/bin/env bash
# The C++ library and its GoogleTests under sanitizers, each in a build directory of its own:
#   address: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), every GoogleTest;
#   thread:  ThreadSanitizer (build-tsan/), the executor, Program and stress tests (the code that
#            runs on several threads), with one ATen intra-op thread: libtorch is not instrumented, so
#            its OpenMP regions would only produce reports about code we cannot see.
# CPU-only builds (AUTOGRAPH_CUDA=OFF): the CUDA backend needs a device and compute-sanitizer
# (scripts/gpu_check.sh). LeakSanitizer is off: libtorch's static registries are never freed, and
# memory growth is what scripts/stress.sh measures. Exits non-zero on any report or failure.
# Usage: scripts/sanitize.sh [address|thread|all (default)] [--filter GTEST_FILTER]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
filter=""
[ "${2:-}" = "--filter" ] && filter=${3:-}
case "$which" in address|thread|all) ;; *) sed -n '2,10p' "$0"; exit 2 ;; esac
PYTHON=$(bash "$root/scripts/setup.sh" | tail -n 1) || exit 1
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"
autograph_deps_env "$root"
export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
"$PYTHON" "$root/models/export.py" --out "$AUTOGRAPH_ZOO_DIR" >/dev/null || exit 1

build() {  # build DIR FLAGS
  local dir=$1 flags=$2
  AUTOGRAPH_BUILD_DIR=$dir bash "$root/scripts/build.sh" -DAUTOGRAPH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" >/dev/null
}

status=0
if [ "$which" != thread ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer =="
  dir=$root/build-asan
  # vptr: libtorch's classes come from an uninstrumented library, whose type info UBSan cannot check.
  build "$dir" "-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer" ||
    { echo "sanitize.sh: address build failed" >&2; exit 1; }
  # protect_shadow_gap=0: the CUDA runtime that torch loads maps memory where ASan keeps its gap.
  ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$dir/autograph_tests" ${filter:+--gtest_filter="$filter"} 2>&1 | tee "$dir/sanitize.log" | grep -E '^\[  (PASSED|FAILED)|tests? ran|ERROR: AddressSanitizer|runtime error' 
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -qE 'ERROR: AddressSanitizer|runtime error' "$dir/sanitize.log" && status=1
fi
if [ "$which" != address ]; then
  echo "== ThreadSanitizer =="
  dir=$root/build-tsan
  build "$dir" "-fsanitize=thread -fno-omit-frame-pointer" || { echo "sanitize.sh: thread build failed" >&2; exit 1; }
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
    "$dir/autograph_tests" --gtest_filter="${filter:-*StageExecutor*:*CpuStageBackend*:*OptimizedModule*:*Program*:*StreamPool*:*StructuredIo*}" \
    2>&1 | tee "$dir/sanitize.log" | grep -E '^\[  (PASSED|FAILED)|tests? ran|WARNING: ThreadSanitizer'
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -q 'WARNING: ThreadSanitizer' "$dir/sanitize.log" && status=1
fi
[ $status -eq 0 ] && echo "sanitize.sh: clean" || echo "sanitize.sh: reports or failures above (logs: build-*/sanitize.log)"
exit $status
