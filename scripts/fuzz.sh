#!/usr/bin/env bash
# libFuzzer on what users hand autograph: stitch-program text, schedule JSON, device-model JSON and
# the Program's pickled state (its graph IR and plan JSON). Builds build-fuzz/ with clang (the library
# instrumented for coverage, AddressSanitizer and UndefinedBehaviorSanitizer), seeds each target from
# tools/fuzz/seeds/ and from the zoo (schedules and program states of optimized squeezenet and
# rnntc_sru), runs each for SECONDS, and prints executions and crashes per target. A crash leaves its
# input in build-fuzz/crashes/TARGET/: fix it and keep it as a regression test.
# Usage: scripts/fuzz.sh SECONDS
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-}
[[ "$seconds" =~ ^[0-9]+$ ]] || { sed -n '2,8p' "$0"; exit 2; }
PYTHON=$(bash "$root/scripts/setup.sh" | tail -n 1) || exit 1
if ! command -v clang++ >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null ||
    { echo "fuzz.sh: cannot install clang" >&2; exit 1; }
fi
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"
autograph_deps_env "$root"
dir=$root/build-fuzz
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer"
AUTOGRAPH_BUILD_DIR=$dir bash "$root/scripts/build.sh" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DAUTOGRAPH_CUDA=OFF -DAUTOGRAPH_BUILD_TESTS=OFF -DAUTOGRAPH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" >/dev/null ||
  { echo "fuzz.sh: build failed" >&2; exit 1; }

# Seeds: the checked-in ones, plus what optimizing zoo models writes (the normal build's CLI).
bash "$root/scripts/build.sh" >/dev/null || { echo "fuzz.sh: build failed" >&2; exit 1; }
export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
"$PYTHON" "$root/models/export.py" --out "$AUTOGRAPH_ZOO_DIR" --only squeezenet rnntc_sru >/dev/null || exit 1
corpus=$dir/corpus
rm -rf "$corpus" && mkdir -p "$corpus"
# program_state/ keeps inputs that once crashed (against squeezenet's constants): regressions.
for t in stitch_program schedule_json device_model_json program_state; do cp -r "$root/tools/fuzz/seeds/$t" "$corpus/$t"; done
for m in squeezenet rnntc_sru; do
  "$root/build/autograph" optimize "$AUTOGRAPH_ZOO_DIR/$m.pt" -o "$dir/$m.opt.pt" --method nimble --json \
    > "$dir/$m.report.json" 2>/dev/null || { echo "fuzz.sh: optimizing $m failed" >&2; exit 1; }
  AUTOGRAPH_LIBRARY=$root/build/libautograph.so "$PYTHON" - "$dir/$m.opt.pt" "$dir/$m.report.json" "$corpus" "$m" <<'PY'
import json, os, sys, torch
module, report, corpus, name = sys.argv[1:]
torch.ops.load_library(os.environ["AUTOGRAPH_LIBRARY"])
state = torch.jit.load(module).program.__getstate__()
version, ir, constants, plan = state[0] if isinstance(state[0], tuple) else state  # (state, class name) here
open(f"{corpus}/program_state/{name}", "wb").write(ir.encode() + b"\0" + plan.encode())
open(f"{corpus}/schedule_json/{name}.json", "w").write(json.dumps(json.load(open(report))["schedule"]))
PY
done

status=0
printf '%-22s %12s %8s\n' target executions crashes
for t in stitch_program schedule_json device_model_json program_state; do
  crashes=$dir/crashes/$t
  rm -rf "$crashes" && mkdir -p "$crashes"
  AUTOGRAPH_FUZZ_MODULE=$dir/squeezenet.opt.pt ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0 \
    "$dir/fuzz_$t" "$corpus/$t" -max_total_time="$seconds" -artifact_prefix="$crashes/" -print_final_stats=1 \
    > "$dir/fuzz_$t.log" 2>&1
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/fuzz_$t.log" | grep -oE '[0-9]+$')
  found=$(find "$crashes" -type f | wc -l)
  printf '%-22s %12s %8s\n' "$t" "${runs:-?}" "$found"
  [ "$found" -eq 0 ] && [ -n "$runs" ] || status=1
done
[ $status -eq 0 ] && echo "fuzz.sh: no crash" || echo "fuzz.sh: crashes or failures (logs: build-fuzz/fuzz_*.log)"
exit $status
