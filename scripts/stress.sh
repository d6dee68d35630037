#!/usr/bin/env bash
# Stress: 8 threads call optimized programs of several schedules (three random, Nimble's) on the zoo's
# squeezenet, rnntc_sru and bert_base for long, every output checked against sequential execution,
# resident memory compared between the first fifth of the calls and the end (the GoogleTest
# Zoo/ProgramStress.*, run long). Builds first. Writes OUT_DIR/stress.log and OUT_DIR/README.md.
# Usage: scripts/stress.sh OUT_DIR [CALLS_PER_THREAD (default 10000)] [MODEL ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,6p' "$0"; exit 2; }
out=$1
calls=${2:-10000}
shift $(( $# >= 2 ? 2 : 1 ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(squeezenet rnntc_sru bert_base)
PYTHON=$(bash "$root/scripts/setup.sh" | tail -n 1)
bash "$root/scripts/build.sh" >/dev/null
BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build}
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"
autograph_deps_env "$root"
export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
"$PYTHON" "$root/models/export.py" --out "$AUTOGRAPH_ZOO_DIR" --only "${models[@]}" >/dev/null
mkdir -p "$out"
filter=$(printf 'Zoo/ProgramStress.*/%s:' "${models[@]}")
status=0
run_log=$(mktemp)
AUTOGRAPH_STRESS_CALLS=$calls "$BUILD_DIR/autograph_tests" --gtest_filter="${filter%:}" 2>&1 | tee "$run_log" ||
  status=1
cat "$run_log" >> "$out/stress.log"
{
  echo "# Stress run $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Command: \`scripts/stress.sh $out $calls ${models[*]}\` at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), torch $("$PYTHON" -c 'import torch; print(torch.__version__)')."
  echo
  grep '^stress ' "$run_log" | sed 's/^/- /'
  echo
  [ $status -eq 0 ] && echo "All passed: no mismatch, growth within the bound." || echo "FAILED: see stress.log."
} >> "$out/README.md"
rm -f "$run_log"
exit $status
